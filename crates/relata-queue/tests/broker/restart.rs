use std::process::Command;
use std::time::Duration;

use relata_core::task::Task;

use crate::common::{self, job_id, next};

fn rabbitmqctl(arg: &str) {
    let status = Command::new("rabbitmqctl")
        .arg(arg)
        .status()
        .expect("rabbitmqctl on PATH");
    assert!(status.success(), "rabbitmqctl {arg} failed");
}

/// SLOW, DISRUPTIVE: restarts the local RabbitMQ application (`rabbitmqctl stop_app`,
/// `start_app`). Every other user of the broker loses its connection.
#[tokio::test]
#[ignore = "restarts RabbitMQ; run alone with --ignored broker_restart"]
async fn broker_restart_resumes_consuming() {
    let broker = common::broker().await;
    let mut deliveries = broker.consume(Task::Extract, 2).await.expect("consume");
    broker
        .publish(Task::Extract, &job_id(60), b"before")
        .await
        .expect("publish before");
    let d = next(&mut deliveries).await;
    assert_eq!(d.payload(), b"before");
    d.ack().await.expect("ack");

    // An unacknowledged delivery from the old connection cannot be settled afterwards.
    broker
        .publish(Task::Extract, &job_id(61), b"held")
        .await
        .expect("publish held");
    let held = next(&mut deliveries).await;

    tokio::task::spawn_blocking(|| {
        rabbitmqctl("stop_app");
        std::thread::sleep(Duration::from_secs(2));
        rabbitmqctl("start_app");
    })
    .await
    .expect("restart");

    let err = held.ack().await.expect_err("the old channel is gone");
    assert!(err.is_retryable(), "{err:?}");

    // Publishing reconnects (bounded backoff) and the consumer resumes by itself.
    tokio::time::timeout(
        Duration::from_secs(90),
        broker.publish(Task::Extract, &job_id(62), b"after"),
    )
    .await
    .expect("publish within 90 s of the restart")
    .expect("publish after restart");

    let mut seen = Vec::new();
    while !seen.iter().any(|p: &Vec<u8>| p == b"after") {
        let d = tokio::time::timeout(
            Duration::from_secs(90),
            futures::StreamExt::next(&mut deliveries),
        )
        .await
        .expect("a delivery within 90 s")
        .expect("the stream survives the restart");
        seen.push(d.payload().to_vec());
        d.ack().await.expect("ack after reconnect");
    }
    // The unacknowledged job came back (redelivered), nothing was lost.
    assert!(seen.iter().any(|p| p == b"held"), "{seen:?}");
    assert!(broker.connections_opened() >= 2);
    drop(deliveries);
    common::teardown(broker).await;
}
