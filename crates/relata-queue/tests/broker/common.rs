use std::time::Duration;

use futures::StreamExt;
use lapin::options::{BasicGetOptions, QueueDeleteOptions};
use lapin::{Channel, Connection, ConnectionProperties};
use relata_core::task::{JobId, Task, TaskVersion};
use relata_core::{Contract, EXTRACT_V1};
use relata_queue::{Broker, BrokerConfig, Deliveries, Delivery, TopologyConfig};

pub const TIER_MS: u64 = 200;
pub const DELIVERY_LIMIT: u32 = 2;

pub fn url() -> String {
    std::env::var("RELATA_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// A fresh, unique prefix: `t<hex>`.
pub fn prefix() -> String {
    format!("t{:016x}", rand::random::<u64>())
}

pub fn config(prefix: &str) -> BrokerConfig {
    BrokerConfig {
        topology: TopologyConfig {
            prefix: prefix.to_owned(),
            delivery_limit: DELIVERY_LIMIT,
            retry_delays_ms: vec![TIER_MS, 60_000],
        },
        connection_name: format!("relata-queue-test-{prefix}"),
        ..BrokerConfig::new(url())
    }
}

pub async fn broker() -> Broker {
    Broker::connect(config(&prefix()))
        .await
        .expect("connect to the test broker (run scripts/ensure-services.sh)")
}

pub async fn teardown(broker: Broker) {
    broker.delete_topology().await.expect("delete topology");
    broker.close().await;
}

pub fn job_id(n: u32) -> JobId {
    static CONTRACT: &Contract = &EXTRACT_V1;
    let v = TaskVersion::new(CONTRACT, "test-p1", "test-model");
    JobId::derive(&v, format!("input {n}").as_bytes())
}

pub async fn next(deliveries: &mut Deliveries) -> Delivery {
    tokio::time::timeout(Duration::from_secs(15), deliveries.next())
        .await
        .expect("a delivery within 15 s")
        .expect("the stream to go on")
}

/// A raw lapin connection for what relata itself never does (declaring a conflicting
/// queue, reading the dead-letter queue).
pub async fn raw() -> (Connection, Channel) {
    let c = Connection::connect(&url(), ConnectionProperties::default())
        .await
        .expect("raw connect");
    let ch = c.create_channel().await.expect("raw channel");
    (c, ch)
}

/// Poll `queue` with basic.get until a message arrives (or 15 s pass).
pub async fn get_one(ch: &Channel, queue: &str) -> lapin::message::BasicGetMessage {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let got = ch
            .basic_get(queue.into(), BasicGetOptions { no_ack: true })
            .await
            .expect("basic.get");
        if let Some(m) = got {
            return m;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing arrived in {queue} within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn raw_delete(ch: &Channel, queue: &str) {
    ch.queue_delete(queue.into(), QueueDeleteOptions::default())
        .await
        .expect("delete queue");
}

pub fn header_str(m: &lapin::message::Delivery, name: &str) -> Option<String> {
    match m.properties.headers().as_ref()?.inner().get(name)? {
        lapin::types::AMQPValue::LongString(s) => {
            Some(String::from_utf8_lossy(s.as_bytes()).into_owned())
        }
        lapin::types::AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

#[allow(dead_code)]
pub const EXTRACT: Task = Task::Extract;
