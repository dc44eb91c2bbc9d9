//! Consuming: a stream of deliveries that survives reconnects, and the outcome of each.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use backon::BackoffBuilder;
use futures::{Stream, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Channel};
use relata_core::dead::DeadReason;
use relata_core::task::{JobId, Task};
use relata_core::text::cut as bounded;
use tokio::sync::{mpsc, oneshot};

use crate::broker::{
    ATTEMPT_HEADER, Broker, DEAD_DETAIL_HEADER, DEAD_DETAIL_MAX_BYTES, DEAD_REASON_HEADER,
    DELIVERY_COUNT_HEADER, job_properties, open_channel,
};
use crate::error::QueueError;
use crate::topology::RetryTier;

impl Broker {
    /// Consume `task`'s work queue with at most `prefetch` unacknowledged deliveries
    /// (tie it to the worker's concurrency).
    ///
    /// Returns once the first consumer is registered. From then on the stream survives
    /// connection and channel loss: it reconnects with backoff (forever, pausing at most
    /// `reconnect_max_delay_ms`) and resumes. Deliveries received before a loss can no
    /// longer be settled (their methods return a retryable error); the broker redelivers
    /// them.
    pub async fn consume(&self, task: Task, prefetch: u16) -> Result<Deliveries, QueueError> {
        if prefetch == 0 {
            return Err(QueueError::Config(
                "prefetch must be at least 1 (0 would mean unbounded)".to_owned(),
            ));
        }
        let first = self.open_consumer(task, prefetch).await?;
        let (tx, rx) = mpsc::channel(usize::from(prefetch));
        let (stop_tx, stop_rx) = oneshot::channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let supervisor = Supervisor {
            broker: self.clone(),
            task,
            prefetch,
            tx: Some(tx),
        };
        let handle = tokio::spawn(supervisor.run(first, stop_rx, closed_rx));
        Ok(Deliveries {
            rx,
            stop: Some(stop_tx),
            closed: Some(closed_tx),
            supervisor: Some(handle),
        })
    }

    async fn open_consumer(
        &self,
        task: Task,
        prefetch: u16,
    ) -> Result<(Channel, lapin::Consumer), QueueError> {
        let live = self.live().await?;
        let channel = open_channel(&live.connection).await?;
        let lapin_err = |e: lapin::Error| QueueError::from_lapin(&e);
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .map_err(lapin_err)?;
        let queue = self.inner.topology.work_queue(task);
        let consumer = channel
            .basic_consume(
                queue.as_str().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(lapin_err)?;
        Ok((channel, consumer))
    }
}

/// The deliveries of one task's work queue. Ends only after [`Deliveries::stop`] (once
/// the deliveries already received have been yielded) or when dropped.
///
/// The consumer's channel stays open (so deliveries can still be settled) until this is
/// dropped or [`closed`](Deliveries::close).
#[derive(Debug)]
pub struct Deliveries {
    rx: mpsc::Receiver<Delivery>,
    stop: Option<oneshot::Sender<()>>,
    /// Dropped when this is dropped: the supervisor then closes the channel.
    closed: Option<oneshot::Sender<()>>,
    supervisor: Option<tokio::task::JoinHandle<()>>,
}

impl Deliveries {
    /// Stop consuming (graceful shutdown): the broker sends nothing more; deliveries
    /// already received are still yielded and stay valid until settled. Keep polling
    /// the stream until it ends.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Deliveries {
    /// Stop consuming and close the consumer's channel, waiting until it is closed.
    /// Deliveries not settled by then are returned to the queue by the broker. Call it
    /// after every delivery has been settled or dropped, and before closing the broker:
    /// a channel left to close itself on drop races the connection's close, and lapin
    /// reports that as a channel-state error on a clean shutdown.
    pub async fn close(mut self) {
        self.stop();
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        drop(self.closed.take());
        if let Some(handle) = self.supervisor.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), handle).await;
        }
    }
}

impl Stream for Deliveries {
    type Item = Delivery;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        self.rx.poll_recv(cx)
    }
}

struct Supervisor {
    broker: Broker,
    task: Task,
    prefetch: u16,
    /// Taken (dropped) once consumption has stopped, which ends the stream.
    tx: Option<mpsc::Sender<Delivery>>,
}

impl Supervisor {
    async fn run(
        mut self,
        first: (Channel, lapin::Consumer),
        stop: oneshot::Receiver<()>,
        closed: oneshot::Receiver<()>,
    ) {
        if let Some(channel) = self.consume(first, stop).await {
            // The stream has ended; deliveries may still be settled on this channel
            // until the owner lets go of it. Then close it here, explicitly, rather
            // than letting lapin close it on drop in a race with the connection.
            self.tx = None;
            let _ = closed.await;
            let _ = channel.close(200, "OK".into()).await;
        }
    }

    /// Feed the stream until stopped; returns the last channel to close, if any.
    async fn consume(
        &self,
        first: (Channel, lapin::Consumer),
        mut stop: oneshot::Receiver<()>,
    ) -> Option<Channel> {
        let tx = self.tx.clone()?;
        let mut current = Some(first);
        let max_pause = Duration::from_millis(self.broker.inner.config.reconnect_max_delay_ms);
        loop {
            let (channel, mut consumer) = match current.take() {
                Some(c) => c,
                None => {
                    let mut pauses = backon::ExponentialBuilder::default()
                        .with_jitter()
                        .with_min_delay(Duration::from_millis(100))
                        .with_max_delay(max_pause)
                        .without_max_times()
                        .build();
                    loop {
                        let pause = pauses.next().unwrap_or(max_pause);
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => {}
                            _ = &mut stop => return None,
                            _ = tx.closed() => return None,
                        }
                        match self.broker.open_consumer(self.task, self.prefetch).await {
                            Ok(c) => {
                                tracing::info!(task = %self.task, "consumer resumed");
                                break c;
                            }
                            Err(e) => {
                                tracing::warn!(task = %self.task, error = %e, "consumer cannot resume yet");
                            }
                        }
                    }
                }
            };
            let mut stopping = false;
            loop {
                tokio::select! {
                    _ = &mut stop, if !stopping => {
                        stopping = true;
                        if let Err(e) = channel
                            .basic_cancel(consumer.tag(), BasicCancelOptions::default())
                            .await
                        {
                            tracing::warn!(task = %self.task, error = %e, "basic.cancel failed");
                            return Some(channel);
                        }
                    }
                    _ = tx.closed() => return Some(channel),
                    next = consumer.next() => match next {
                        Some(Ok(d)) => {
                            let delivery = Delivery {
                                task: self.task,
                                inner: d,
                                _channel: channel.clone(),
                                broker: self.broker.clone(),
                            };
                            if tx.send(delivery).await.is_err() {
                                return Some(channel);
                            }
                        }
                        Some(Err(e)) => {
                            tracing::warn!(task = %self.task, error = %e, "consumer interrupted");
                        }
                        None => break,
                    }
                }
            }
            if stopping {
                return Some(channel);
            }
            tracing::warn!(task = %self.task, "consumer ended; reconnecting");
        }
    }
}

/// One job delivered to a worker. Settle it exactly once, after its outcome is
/// committed: [`ack`](Delivery::ack), [`retry_later`](Delivery::retry_later),
/// [`dead_letter`](Delivery::dead_letter) or [`requeue`](Delivery::requeue). A delivery
/// dropped unsettled stays unacknowledged until its channel closes, then is redelivered.
pub struct Delivery {
    task: Task,
    inner: lapin::message::Delivery,
    /// Keeps the channel open until the delivery is settled (a closed channel would
    /// return the message to the queue).
    _channel: Channel,
    broker: Broker,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("task", &self.task)
            .field("message_id", &self.message_id())
            .field("attempt", &self.attempt())
            .field("redelivered", &self.redelivered())
            .field("delivery_count", &self.delivery_count())
            .field("bytes", &self.inner.data.len())
            .finish()
    }
}

impl Delivery {
    pub fn task(&self) -> Task {
        self.task
    }

    /// The job message bytes.
    pub fn payload(&self) -> &[u8] {
        &self.inner.data
    }

    /// The AMQP message id (relata sets it to the job id).
    pub fn message_id(&self) -> Option<&str> {
        self.inner
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.as_str())
    }

    /// The message id, if it is a well-formed job id.
    pub fn job_id(&self) -> Option<JobId> {
        self.message_id().and_then(JobId::parse)
    }

    /// Our attempt counter (`x-relata-attempt`), 1 for a first publish or when absent.
    pub fn attempt(&self) -> u32 {
        header(&self.inner.properties, ATTEMPT_HEADER)
            .and_then(as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
            .max(1)
    }

    /// The broker's redelivered flag: this message was delivered before and not settled.
    pub fn redelivered(&self) -> bool {
        self.inner.redelivered
    }

    /// The quorum queue's `x-delivery-count` (how many times it was returned unsettled),
    /// absent on a first delivery.
    pub fn delivery_count(&self) -> Option<u64> {
        header(&self.inner.properties, DELIVERY_COUNT_HEADER).and_then(as_u64)
    }

    /// The job is done (its outcome is committed).
    pub async fn ack(self) -> Result<(), QueueError> {
        settled(self.inner.acker.ack(BasicAckOptions::default()).await)
    }

    /// Publish a copy to `tier`'s retry queue with attempt `next_attempt` (waiting for
    /// the confirm), then ack this delivery. A crash between the two duplicates the job,
    /// never loses it. If the copy cannot be published the delivery is requeued, so that
    /// it is neither lost nor stuck unacknowledged.
    pub async fn retry_later(self, next_attempt: u32, tier: RetryTier) -> Result<(), QueueError> {
        let topology = &self.broker.inner.topology;
        if let Err(e) = topology.check_tier(tier) {
            self.requeue_after_failure(&e).await;
            return Err(e);
        }
        let queue = topology.retry_queue(self.task, tier);
        let props = self.copy_properties(next_attempt, None);
        self.forward("", &queue, props).await
    }

    /// Publish a copy to the dead-letter exchange with `reason` and `detail` (cut to
    /// [`DEAD_DETAIL_MAX_BYTES`] at a character boundary) in headers, waiting for the
    /// confirm, then ack this delivery. On failure to publish the delivery is requeued.
    pub async fn dead_letter(self, reason: DeadReason, detail: &str) -> Result<(), QueueError> {
        let topology = &self.broker.inner.topology;
        let exchange = topology.dead_exchange();
        let routing_key = topology.work_queue(self.task);
        let props = self.copy_properties(self.attempt(), Some((reason, detail)));
        self.forward(&exchange, &routing_key, props).await
    }

    /// Put the job back at the tail of its work queue as it was — same attempt, a fresh
    /// delivery count — then ack this delivery (a crash between the two duplicates the
    /// job, never loses it). For a job that could not be tried at all (the provider
    /// refuses the deployment): unlike [`requeue`](Delivery::requeue), this does not count
    /// towards `x-delivery-limit`, so a misconfiguration cannot dead-letter a backlog.
    /// If the copy cannot be published the delivery is requeued.
    pub async fn return_unharmed(self) -> Result<(), QueueError> {
        let queue = self.broker.inner.topology.work_queue(self.task);
        let props = self.copy_properties(self.attempt(), None);
        self.forward("", &queue, props).await
    }

    /// Return the job to its queue now (nack with requeue), e.g. when the store stayed
    /// unavailable. The quorum queue counts it towards `x-delivery-limit`.
    pub async fn requeue(self) -> Result<(), QueueError> {
        settled(
            self.inner
                .acker
                .nack(BasicNackOptions {
                    multiple: false,
                    requeue: true,
                })
                .await,
        )
    }

    /// Publish a copy of this delivery with `props`, wait for the confirm, then ack this
    /// delivery; if the copy cannot be published the delivery is requeued. Ack after the
    /// confirm: a crash between the two duplicates the job, never loses it.
    async fn forward(
        self,
        exchange: &str,
        routing_key: &str,
        props: BasicProperties,
    ) -> Result<(), QueueError> {
        let published = self
            .broker
            .publish_confirmed(exchange, routing_key, &self.inner.data, props)
            .await;
        match published {
            Ok(()) => self.ack().await,
            Err(e) => {
                self.requeue_after_failure(&e).await;
                Err(e)
            }
        }
    }

    async fn requeue_after_failure(self, cause: &QueueError) {
        let id = self.message_id().unwrap_or("").to_owned();
        if let Err(e) = self.requeue().await {
            tracing::warn!(message_id = %id, cause = %cause, error = %e,
                "could not requeue after a failed publish; the broker will redeliver");
        }
    }

    fn copy_properties(&self, attempt: u32, dead: Option<(DeadReason, &str)>) -> BasicProperties {
        let mut headers = self.inner.properties.headers().clone().unwrap_or_default();
        let mut kept = FieldTable::default();
        for (k, v) in headers.inner() {
            // The quorum queue sets its own counter on the copy's deliveries.
            if k.as_str() != DELIVERY_COUNT_HEADER {
                kept.insert(k.clone(), v.clone());
            }
        }
        headers = kept;
        if let Some((reason, detail)) = dead {
            headers.insert(
                DEAD_REASON_HEADER.into(),
                AMQPValue::LongString(LongString::from(reason.as_str())),
            );
            headers.insert(
                DEAD_DETAIL_HEADER.into(),
                AMQPValue::LongString(LongString::from(bounded(detail, DEAD_DETAIL_MAX_BYTES))),
            );
        }
        let id = self.message_id().unwrap_or("");
        job_properties(self.task, id, attempt, Some(headers))
    }
}

fn settled(r: lapin::Result<bool>) -> Result<(), QueueError> {
    match r {
        Ok(true) => Ok(()),
        Ok(false) => Err(QueueError::Channel(
            "the delivery's channel is gone; the broker will redeliver the message".to_owned(),
        )),
        Err(e) => Err(QueueError::from_lapin(&e)),
    }
}

fn header<'a>(props: &'a BasicProperties, name: &str) -> Option<&'a AMQPValue> {
    props.headers().as_ref()?.inner().get(name)
}

/// An integer header of any AMQP integer width.
pub(crate) fn as_u64(v: &AMQPValue) -> Option<u64> {
    match v {
        AMQPValue::ShortShortUInt(n) => Some(u64::from(*n)),
        AMQPValue::ShortUInt(n) => Some(u64::from(*n)),
        AMQPValue::LongUInt(n) => Some(u64::from(*n)),
        AMQPValue::ShortShortInt(n) => u64::try_from(*n).ok(),
        AMQPValue::ShortInt(n) => u64::try_from(*n).ok(),
        AMQPValue::LongInt(n) => u64::try_from(*n).ok(),
        AMQPValue::LongLongInt(n) => u64::try_from(*n).ok(),
        AMQPValue::Timestamp(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_is_cut_at_a_char_boundary() {
        assert_eq!(bounded("abc", 10), "abc");
        assert_eq!(bounded("héllo", 2), "h");
        assert_eq!(bounded("héllo", 3), "hé");
    }

    #[test]
    fn integer_headers_of_any_width() {
        assert_eq!(as_u64(&AMQPValue::LongLongInt(3)), Some(3));
        assert_eq!(as_u64(&AMQPValue::LongInt(-1)), None);
        assert_eq!(as_u64(&AMQPValue::LongUInt(7)), Some(7));
        assert_eq!(as_u64(&AMQPValue::Boolean(true)), None);
    }
}
