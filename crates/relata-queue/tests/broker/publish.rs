use relata_core::task::Task;
use relata_queue::{OutgoingJob, QueueError, QueueRole};

use crate::common::{self, job_id, next};

#[tokio::test]
async fn publish_consume_ack_round_trip() {
    let broker = common::broker().await;
    let id = job_id(1);
    broker
        .publish(Task::Extract, &id, br#"{"chunk":1}"#)
        .await
        .expect("confirmed publish");

    let mut deliveries = broker.consume(Task::Extract, 1).await.expect("consume");
    let d = next(&mut deliveries).await;
    assert_eq!(d.task(), Task::Extract);
    assert_eq!(d.payload(), br#"{"chunk":1}"#);
    assert_eq!(d.message_id(), Some(id.as_str()));
    assert_eq!(d.job_id(), Some(id));
    assert_eq!(d.attempt(), 1);
    assert!(!d.redelivered());
    assert_eq!(d.delivery_count(), None);
    d.ack().await.expect("ack");

    deliveries.stop();
    drop(deliveries);
    let depths = broker.queue_depths().await.expect("depths");
    let extract = depths
        .iter()
        .find(|d| d.role == QueueRole::Work(Task::Extract))
        .expect("extract queue");
    assert_eq!(extract.messages, Some(0));
    common::teardown(broker).await;
}

#[tokio::test]
async fn an_unroutable_publish_is_an_error() {
    let broker = common::broker().await;
    let (conn, ch) = common::raw().await;
    common::raw_delete(&ch, &broker.topology().work_queue(Task::Classify)).await;

    let err = broker
        .publish(Task::Classify, &job_id(2), b"{}")
        .await
        .expect_err("no queue to route to");
    assert!(matches!(err, QueueError::Unroutable { .. }), "{err:?}");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("unroutable"), "{err}");

    // The publishing channel survives a returned message.
    broker
        .publish(Task::Extract, &job_id(3), b"{}")
        .await
        .expect("publishing goes on");
    let _ = conn.close(200, "OK".into()).await;
    common::teardown(broker).await;
}

#[tokio::test]
async fn a_batch_of_a_thousand_is_all_confirmed() {
    let broker = common::broker().await;
    let jobs: Vec<OutgoingJob> = (0..1_000)
        .map(|n| OutgoingJob {
            task: Task::Extract,
            job_id: job_id(n),
            payload: format!(r#"{{"n":{n}}}"#).into_bytes(),
        })
        .collect();
    let started = std::time::Instant::now();
    broker.publish_batch(&jobs).await.expect("batch confirmed");
    let elapsed = started.elapsed();

    let depths = broker.queue_depths().await.expect("depths");
    let extract = depths
        .iter()
        .find(|d| d.role == QueueRole::Work(Task::Extract))
        .expect("extract queue");
    assert_eq!(extract.messages, Some(1_000));
    assert!(
        elapsed < std::time::Duration::from_secs(30),
        "1,000 confirmed publishes took {elapsed:?}"
    );
    common::teardown(broker).await;
}
