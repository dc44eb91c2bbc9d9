use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use relata_queue::{Broker, QueueError, QueueRole};

use crate::common::{self, config, prefix};

#[tokio::test]
async fn declaring_twice_is_idempotent() {
    let broker = common::broker().await;
    broker.declare_topology().await.expect("second declaration");
    // Another process declaring the same topology is fine too.
    let again = Broker::connect(config(broker.topology().prefix()))
        .await
        .expect("a second broker handle on the same topology");
    let depths = again.queue_depths().await.expect("depths");
    assert_eq!(depths.len(), 2 + 4 + 1);
    for d in &depths {
        assert_eq!(d.messages, Some(0), "{d:?}");
    }
    assert!(depths.iter().any(|d| d.role == QueueRole::Dead));
    again.close().await;
    common::teardown(broker).await;
}

#[tokio::test]
async fn a_mismatched_queue_is_reported_by_name_and_argument() {
    let p = prefix();
    let work = format!("{p}.extract");
    let (conn, ch) = common::raw().await;
    ch.queue_declare(
        work.as_str().into(),
        QueueDeclareOptions::durable(),
        FieldTable::default(),
    )
    .await
    .expect("declare a classic queue where relata wants a quorum queue");

    let err = Broker::connect(config(&p)).await.expect_err("mismatch");
    match &err {
        QueueError::TopologyMismatch {
            queue, argument, ..
        } => {
            assert_eq!(queue, &work);
            assert!(argument.starts_with("x-"), "{argument}");
        }
        other => panic!("expected a topology mismatch, got {other:?}"),
    }
    assert!(!err.is_retryable());
    let text = err.to_string();
    assert!(text.contains(&work), "{text}");
    assert!(text.contains("does not delete"), "{text}");

    // The queue relata did not like is still there: nothing was deleted.
    let ch2 = conn.create_channel().await.expect("channel");
    ch2.queue_declare(
        work.as_str().into(),
        QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        },
        FieldTable::default(),
    )
    .await
    .expect("the queue still exists");
    // Clean up what the failed connect declared before it reached the work queue.
    for q in [work.clone(), format!("{p}.dead")] {
        common::raw_delete(&ch2, &q).await;
    }
    ch2.exchange_delete(format!("{p}.dlx").as_str().into(), Default::default())
        .await
        .expect("delete exchange");
    let _ = conn.close(200, "OK".into()).await;
}
