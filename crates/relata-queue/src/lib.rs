//! relata's broker layer: the only crate that knows lapin (or AMQP at all).
//!
//! # Topology
//! [`Topology`] names every queue from a prefix (default `relata`) and declares them
//! idempotently at every connect: a durable **quorum** work queue per task
//! (`relata.extract`, `relata.classify`) with `x-delivery-limit` and a dead-letter
//! exchange, so that a message that keeps killing workers ends dead-lettered by the
//! broker; a **classic** delayed-retry queue per task and delay tier
//! (`relata.extract.retry.5s`) whose `x-message-ttl` dead-letters messages back to the
//! work queue; and a fanout exchange `relata.dlx` with its quorum queue `relata.dead`.
//! Retry queues are classic because RabbitMQ 3.10 quorum queues support neither queue
//! nor per-message TTL. A queue that exists with other arguments is reported by name and
//! argument ([`QueueError::TopologyMismatch`]) and never deleted.
//!
//! # Publishing
//! Every publish is `mandatory`, persistent, and waits for the broker's confirm: an
//! unroutable message or a nack is an error, never a silent loss. [`Broker::publish`]
//! waits for one; [`Broker::publish_batch`] pipelines many and then awaits them all.
//!
//! # Consuming and outcomes
//! [`Broker::consume`] yields [`Delivery`] values, bounded by a prefetch tied to the
//! worker's concurrency. A delivery is settled once, after its outcome is committed:
//! `ack`, `retry_later` (a confirmed copy to a retry queue, then ack), `dead_letter` (a
//! confirmed copy with the [`DeadReason`] in headers, then ack) or `requeue`. Copies are
//! published before the original is acked, so a crash in between duplicates a job and
//! never loses one; workers are idempotent by job id (the message id).
//!
//! # Reconnection
//! A lost connection is replaced on next use (publishing retries with bounded backoff);
//! consumer streams reconnect by themselves and resume. Unsettled deliveries of a lost
//! connection are redelivered by the broker.
//!
//! Metrics are the worker's concern: this crate logs with `tracing` and knows nothing of
//! Prometheus.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod broker;
mod config;
mod consume;
mod error;
mod retry;
mod topology;

pub use broker::{
    ATTEMPT_HEADER, Broker, DEAD_DETAIL_HEADER, DEAD_DETAIL_MAX_BYTES, DEAD_REASON_HEADER,
    DELIVERY_COUNT_HEADER, OutgoingJob, QueueDepth, TASK_HEADER,
};
pub use config::{BrokerConfig, TopologyConfig, check_amqp_url, redact_url};
pub use consume::{Deliveries, Delivery};
pub use error::QueueError;
pub use relata_core::dead::DeadReason;
pub use retry::{RetryDecision, RetryPolicy};
pub use topology::{QueueRole, QueueSpec, RetryTier, Topology};

/// Compile-time checks: the handles and the futures of their methods cross tasks, as a
/// worker spawning one task per job needs.
#[cfg(test)]
mod send_checks {
    use super::*;
    use relata_core::task::{JobId, Task};

    fn send<T: Send>(_: &T) {}
    fn send_sync<T: Send + Sync>() {}

    #[allow(dead_code)]
    async fn futures_are_send(
        b: Broker,
        d: Delivery,
        e: Delivery,
        id: JobId,
        jobs: Vec<OutgoingJob>,
    ) {
        send(&b.publish(Task::Extract, &id, b""));
        send(&b.publish_batch(&jobs));
        send(&b.consume(Task::Extract, 1));
        send(&b.queue_depths());
        send(&d.dead_letter(DeadReason::Poison, ""));
        send(&e.retry_later(2, RetryTier::from_millis(1)));
    }

    #[test]
    fn handles_are_send() {
        send_sync::<Broker>();
        send_sync::<Delivery>();
        send_sync::<QueueError>();
        fn send_only<T: Send + Unpin>() {}
        send_only::<Deliveries>();
    }
}
