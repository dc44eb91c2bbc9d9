use std::time::{Duration, Instant};

use futures::StreamExt;
use relata_core::task::Task;
use relata_queue::{
    DEAD_DETAIL_HEADER, DEAD_DETAIL_MAX_BYTES, DEAD_REASON_HEADER, DeadReason, QueueError,
    RetryDecision, RetryPolicy, RetryTier,
};

use crate::common::{self, DELIVERY_LIMIT, TIER_MS, header_str, job_id, next};

#[tokio::test]
async fn retry_later_comes_back_after_the_delay_with_the_next_attempt() {
    let broker = common::broker().await;
    let id = job_id(10);
    broker
        .publish(Task::Extract, &id, b"{}")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Extract, 1).await.expect("consume");
    let d = next(&mut deliveries).await;
    assert_eq!(d.attempt(), 1);

    let policy = RetryPolicy::from_topology(broker.topology());
    let RetryDecision::RetryLater { next_attempt, tier } = policy.decide(d.attempt()) else {
        panic!("the first failure is retried");
    };
    assert_eq!(tier, RetryTier::from_millis(TIER_MS));
    let sent = Instant::now();
    d.retry_later(next_attempt, tier)
        .await
        .expect("retry later");

    let again = next(&mut deliveries).await;
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_millis(TIER_MS),
        "came back after {waited:?}, before the {TIER_MS} ms delay"
    );
    assert_eq!(again.attempt(), 2);
    assert_eq!(again.message_id(), Some(id.as_str()));
    assert_eq!(again.payload(), b"{}");
    // A new message, not a redelivery: the quorum queue's counter starts afresh.
    assert!(!again.redelivered());
    assert_eq!(again.delivery_count(), None);
    again.ack().await.expect("ack");
    drop(deliveries);
    common::teardown(broker).await;
}

#[tokio::test]
async fn return_unharmed_never_counts_towards_the_delivery_limit() {
    let broker = common::broker().await;
    let id = job_id(12);
    broker
        .publish(Task::Extract, &id, b"{}")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Extract, 1).await.expect("consume");
    // Far more returns than the limit allows redeliveries: the job is still there.
    for _ in 0..(DELIVERY_LIMIT * 3) {
        let d = next(&mut deliveries).await;
        assert_eq!(d.attempt(), 1);
        assert_eq!(d.delivery_count(), None, "a fresh message each time");
        d.return_unharmed().await.expect("returned");
    }
    let d = next(&mut deliveries).await;
    assert_eq!(d.message_id(), Some(id.as_str()));
    d.ack().await.expect("ack");
    drop(deliveries);
    let depths = broker.queue_depths().await.expect("depths");
    let dead = depths
        .iter()
        .find(|q| q.name.ends_with(".dead"))
        .expect("dead queue");
    assert_eq!(dead.messages, Some(0), "{depths:?}");
    common::teardown(broker).await;
}

#[tokio::test]
async fn retry_later_refuses_an_undeclared_tier_and_requeues() {
    let broker = common::broker().await;
    broker
        .publish(Task::Classify, &job_id(11), b"{}")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Classify, 1).await.expect("consume");
    let d = next(&mut deliveries).await;
    let err = d
        .retry_later(2, RetryTier::from_millis(1234))
        .await
        .expect_err("undeclared tier");
    assert!(
        matches!(err, QueueError::UnknownRetryTier { .. }),
        "{err:?}"
    );
    // Not lost and not stuck: it comes straight back.
    let again = next(&mut deliveries).await;
    assert!(again.redelivered());
    again.ack().await.expect("ack");
    drop(deliveries);
    common::teardown(broker).await;
}

#[tokio::test]
async fn dead_letter_lands_in_the_dead_queue_with_its_reason() {
    let broker = common::broker().await;
    let id = job_id(20);
    broker
        .publish(Task::Classify, &id, b"not json")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Classify, 1).await.expect("consume");
    let d = next(&mut deliveries).await;
    let detail = "é".repeat(1_000);
    d.dead_letter(DeadReason::Poison, &detail)
        .await
        .expect("dead letter");

    let (conn, ch) = common::raw().await;
    let m = common::get_one(&ch, &broker.topology().dead_queue()).await;
    assert_eq!(m.delivery.data, b"not json");
    assert_eq!(
        m.delivery
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.as_str()),
        Some(id.as_str())
    );
    assert_eq!(
        header_str(&m.delivery, DEAD_REASON_HEADER).as_deref(),
        Some("poison")
    );
    let got = header_str(&m.delivery, DEAD_DETAIL_HEADER).expect("detail header");
    assert!(got.len() <= DEAD_DETAIL_MAX_BYTES && !got.is_empty());
    assert!(got.chars().all(|c| c == 'é'));
    assert_eq!(
        m.delivery.routing_key.as_str(),
        broker.topology().work_queue(Task::Classify)
    );
    // The work queue is empty: the original was acked.
    let depths = broker.queue_depths().await.expect("depths");
    assert!(
        depths
            .iter()
            .all(|d| d.name == broker.topology().dead_queue() || d.messages == Some(0))
    );
    let _ = conn.close(200, "OK".into()).await;
    drop(deliveries);
    common::teardown(broker).await;
}

#[tokio::test]
async fn a_message_returned_more_than_the_delivery_limit_is_dead_lettered() {
    let broker = common::broker().await;
    let id = job_id(30);
    broker
        .publish(Task::Extract, &id, b"{}")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Extract, 1).await.expect("consume");
    // Delivered once, then returned DELIVERY_LIMIT times: the next return crosses the
    // limit and the broker dead-letters it.
    let mut counts = Vec::new();
    for _ in 0..=DELIVERY_LIMIT {
        let d = next(&mut deliveries).await;
        counts.push(d.delivery_count());
        d.requeue().await.expect("requeue");
    }
    assert_eq!(counts[0], None);
    assert_eq!(counts[1], Some(1));

    let (conn, ch) = common::raw().await;
    let m = common::get_one(&ch, &broker.topology().dead_queue()).await;
    assert_eq!(
        m.delivery
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.as_str()),
        Some(id.as_str())
    );
    // The broker, not relata, dead-lettered it: no relata reason, but an x-death entry.
    assert_eq!(header_str(&m.delivery, DEAD_REASON_HEADER), None);
    assert_eq!(
        header_str(&m.delivery, "x-first-death-reason").as_deref(),
        Some("delivery_limit")
    );
    // And nothing more is delivered.
    let more = tokio::time::timeout(Duration::from_millis(500), deliveries.next()).await;
    assert!(more.is_err(), "unexpected delivery after dead-lettering");
    let _ = conn.close(200, "OK".into()).await;
    drop(deliveries);
    common::teardown(broker).await;
}

#[tokio::test]
async fn a_closed_consumer_channel_counts_towards_the_delivery_limit() {
    let broker = common::broker().await;
    broker
        .publish(Task::Extract, &job_id(31), b"{}")
        .await
        .expect("publish");
    // A worker that dies holding the job: its consumer ends without settling.
    for _ in 0..=DELIVERY_LIMIT {
        let mut deliveries = broker.consume(Task::Extract, 1).await.expect("consume");
        let d = next(&mut deliveries).await;
        drop(deliveries);
        drop(d); // the channel closes with the job unacknowledged
    }
    let (conn, ch) = common::raw().await;
    let m = common::get_one(&ch, &broker.topology().dead_queue()).await;
    assert_eq!(m.delivery.data, b"{}");
    let _ = conn.close(200, "OK".into()).await;
    common::teardown(broker).await;
}

#[tokio::test]
async fn prefetch_bounds_the_unacknowledged_deliveries() {
    let broker = common::broker().await;
    for n in 0..5 {
        broker
            .publish(Task::Extract, &job_id(40 + n), b"{}")
            .await
            .expect("publish");
    }
    let mut deliveries = broker.consume(Task::Extract, 2).await.expect("consume");
    let a = next(&mut deliveries).await;
    let b = next(&mut deliveries).await;
    let third = tokio::time::timeout(Duration::from_millis(700), deliveries.next()).await;
    assert!(third.is_err(), "a third delivery arrived with prefetch 2");
    a.ack().await.expect("ack");
    let c = next(&mut deliveries).await;
    let fourth = tokio::time::timeout(Duration::from_millis(700), deliveries.next()).await;
    assert!(fourth.is_err(), "a fourth delivery arrived with 2 unacked");
    b.ack().await.expect("ack");
    c.ack().await.expect("ack");
    drop(deliveries);
    common::teardown(broker).await;
}

#[tokio::test]
async fn stop_ends_the_stream_and_keeps_received_deliveries_valid() {
    let broker = common::broker().await;
    broker
        .publish(Task::Extract, &job_id(50), b"{}")
        .await
        .expect("publish");
    let mut deliveries = broker.consume(Task::Extract, 4).await.expect("consume");
    let d = next(&mut deliveries).await;
    deliveries.stop();
    let end = tokio::time::timeout(Duration::from_secs(5), deliveries.next())
        .await
        .expect("the stream ends after stop");
    assert!(end.is_none());
    d.ack().await.expect("ack after stop");
    common::teardown(broker).await;
}
