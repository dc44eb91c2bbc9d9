//! Queue names and arguments, and their idempotent declaration.

use std::time::Duration;

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{Channel, ExchangeKind};
use relata_core::task::Task;

use crate::config::TopologyConfig;
use crate::error::{QueueError, declare_error};

/// One delay of the delayed-retry ladder. Each tier is its own queue per task, because a
/// classic queue only expires messages at its head: a queue whose messages all share
/// one TTL releases them in order and on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RetryTier {
    delay: Duration,
}

impl RetryTier {
    pub const fn from_millis(ms: u64) -> RetryTier {
        RetryTier {
            delay: Duration::from_millis(ms),
        }
    }

    pub fn delay(self) -> Duration {
        self.delay
    }

    pub(crate) fn millis(self) -> u64 {
        u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX)
    }

    /// `5s`, `300s`, `200ms`: the suffix of the tier's queue name.
    pub fn label(self) -> String {
        let ms = self.millis();
        match (ms / 1000, ms % 1000) {
            (s, 0) => format!("{s}s"),
            _ => format!("{ms}ms"),
        }
    }
}

/// What a queue is for; the role of each line of `relata status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueRole {
    /// Jobs waiting for a worker (a quorum queue).
    Work(Task),
    /// Jobs waiting out a delay before returning to their work queue.
    Retry(Task, RetryTier),
    /// Dead-lettered jobs of every task.
    Dead,
}

/// A queue of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpec {
    pub name: String,
    pub role: QueueRole,
}

/// The broker objects relata uses, named from a prefix (default `relata`):
///
/// | name | kind | arguments |
/// |---|---|---|
/// | `{p}.extract`, `{p}.classify` | durable quorum queue | `x-delivery-limit`, `x-dead-letter-exchange = {p}.dlx`, `x-dead-letter-strategy = at-least-once`, `x-overflow = reject-publish` |
/// | `{p}.{task}.retry.{tier}` | durable classic queue | `x-message-ttl`, `x-dead-letter-exchange = ""`, `x-dead-letter-routing-key = {p}.{task}` |
/// | `{p}.dlx` | durable fanout exchange | |
/// | `{p}.dead` | durable quorum queue bound to `{p}.dlx` | |
///
/// Retry queues are classic because RabbitMQ 3.10 quorum queues support neither
/// `x-message-ttl` nor per-message TTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    prefix: String,
    delivery_limit: u32,
    tiers: Vec<RetryTier>,
}

impl Topology {
    /// Validate the configuration: a prefix short enough for AMQP names and made of
    /// `[A-Za-z0-9._-]`, a positive delivery limit, distinct positive delays.
    pub fn new(config: &TopologyConfig) -> Result<Topology, QueueError> {
        let p = &config.prefix;
        if p.is_empty()
            || p.len() > 100
            || !p
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(QueueError::Config(format!(
                "prefix {p:?} must be 1 to 100 characters of A-Z, a-z, 0-9, '.', '_', '-'"
            )));
        }
        if config.delivery_limit == 0 || config.delivery_limit > i32::MAX as u32 {
            return Err(QueueError::Config(
                "delivery_limit must be at least 1".to_owned(),
            ));
        }
        let mut tiers: Vec<RetryTier> = Vec::new();
        for &ms in &config.retry_delays_ms {
            if ms == 0 || ms > i32::MAX as u64 {
                return Err(QueueError::Config(format!(
                    "retry delay {ms} ms must be between 1 ms and {} ms",
                    i32::MAX
                )));
            }
            let tier = RetryTier::from_millis(ms);
            if tiers.contains(&tier) {
                return Err(QueueError::Config(format!(
                    "retry delay {ms} ms is listed twice"
                )));
            }
            tiers.push(tier);
        }
        Ok(Topology {
            prefix: p.clone(),
            delivery_limit: config.delivery_limit,
            tiers,
        })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn delivery_limit(&self) -> u32 {
        self.delivery_limit
    }

    /// The retry tiers, in configured order.
    pub fn tiers(&self) -> &[RetryTier] {
        &self.tiers
    }

    pub fn work_queue(&self, task: Task) -> String {
        format!("{}.{}", self.prefix, task.as_str())
    }

    pub fn retry_queue(&self, task: Task, tier: RetryTier) -> String {
        format!("{}.{}.retry.{}", self.prefix, task.as_str(), tier.label())
    }

    pub fn dead_exchange(&self) -> String {
        format!("{}.dlx", self.prefix)
    }

    pub fn dead_queue(&self) -> String {
        format!("{}.dead", self.prefix)
    }

    /// Every queue, work queues first, then retry queues, then the dead queue.
    pub fn queues(&self) -> Vec<QueueSpec> {
        let mut out = Vec::new();
        for &task in Task::QUEUED {
            out.push(QueueSpec {
                name: self.work_queue(task),
                role: QueueRole::Work(task),
            });
        }
        for &task in Task::QUEUED {
            for &tier in &self.tiers {
                out.push(QueueSpec {
                    name: self.retry_queue(task, tier),
                    role: QueueRole::Retry(task, tier),
                });
            }
        }
        out.push(QueueSpec {
            name: self.dead_queue(),
            role: QueueRole::Dead,
        });
        out
    }

    pub(crate) fn check_tier(&self, tier: RetryTier) -> Result<(), QueueError> {
        if self.tiers.contains(&tier) {
            Ok(())
        } else {
            Err(QueueError::UnknownRetryTier {
                delay_ms: tier.millis(),
                declared: self
                    .tiers
                    .iter()
                    .map(|t| t.label())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }

    fn work_args(&self) -> FieldTable {
        let mut a = FieldTable::default();
        a.insert("x-queue-type".into(), long_string("quorum"));
        a.insert(
            "x-delivery-limit".into(),
            AMQPValue::LongLongInt(i64::from(self.delivery_limit)),
        );
        a.insert(
            "x-dead-letter-exchange".into(),
            long_string(&self.dead_exchange()),
        );
        // At-least-once dead-lettering (RabbitMQ 3.10+): a message that hits the delivery
        // limit is kept until the dead-letter queue has confirmed it. It requires
        // `x-overflow = reject-publish`, which only matters with a length limit (none).
        a.insert(
            "x-dead-letter-strategy".into(),
            long_string("at-least-once"),
        );
        a.insert("x-overflow".into(), long_string("reject-publish"));
        a
    }

    fn retry_args(&self, task: Task, tier: RetryTier) -> FieldTable {
        let mut a = FieldTable::default();
        a.insert("x-queue-type".into(), long_string("classic"));
        a.insert(
            "x-message-ttl".into(),
            AMQPValue::LongLongInt(i64::try_from(tier.millis()).unwrap_or(i64::MAX)),
        );
        // Expired messages go back through the default exchange to the work queue.
        a.insert("x-dead-letter-exchange".into(), long_string(""));
        a.insert(
            "x-dead-letter-routing-key".into(),
            long_string(&self.work_queue(task)),
        );
        a
    }

    fn dead_args(&self) -> FieldTable {
        let mut a = FieldTable::default();
        a.insert("x-queue-type".into(), long_string("quorum"));
        a
    }

    /// Declare everything. Idempotent: declaring an existing object with the same
    /// arguments is a no-op. An existing queue with different arguments fails with
    /// [`QueueError::TopologyMismatch`]; the channel is closed by the broker afterwards.
    pub(crate) async fn declare(&self, channel: &Channel) -> Result<(), QueueError> {
        let durable = QueueDeclareOptions::durable();
        let dlx = self.dead_exchange();
        channel
            .exchange_declare(
                dlx.as_str().into(),
                ExchangeKind::Fanout,
                ExchangeDeclareOptions {
                    durable: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(|e| declare_error(&dlx, &e))?;
        let dead = self.dead_queue();
        declare_queue(channel, &dead, durable, self.dead_args()).await?;
        channel
            .queue_bind(
                dead.as_str().into(),
                dlx.as_str().into(),
                "".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| QueueError::from_lapin(&e))?;
        for &task in Task::QUEUED {
            declare_queue(channel, &self.work_queue(task), durable, self.work_args()).await?;
            for &tier in &self.tiers {
                let name = self.retry_queue(task, tier);
                declare_queue(channel, &name, durable, self.retry_args(task, tier)).await?;
            }
        }
        Ok(())
    }
}

fn long_string(s: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(s))
}

async fn declare_queue(
    channel: &Channel,
    name: &str,
    options: QueueDeclareOptions,
    args: FieldTable,
) -> Result<(), QueueError> {
    channel
        .queue_declare(name.into(), options, args)
        .await
        .map(drop)
        .map_err(|e| declare_error(name, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_prefix() {
        let t = Topology::new(&TopologyConfig {
            prefix: "t1".into(),
            delivery_limit: 3,
            retry_delays_ms: vec![200, 5_000],
        })
        .unwrap();
        assert_eq!(t.work_queue(Task::Extract), "t1.extract");
        assert_eq!(
            t.retry_queue(Task::Classify, RetryTier::from_millis(200)),
            "t1.classify.retry.200ms"
        );
        assert_eq!(
            t.retry_queue(Task::Extract, RetryTier::from_millis(5_000)),
            "t1.extract.retry.5s"
        );
        assert_eq!(t.dead_queue(), "t1.dead");
        assert_eq!(t.queues().len(), 2 + 4 + 1);
    }

    #[test]
    fn bad_configuration_is_refused() {
        let ok = TopologyConfig::default();
        assert!(Topology::new(&ok).is_ok());
        for bad in [
            TopologyConfig {
                prefix: "has space".into(),
                ..ok.clone()
            },
            TopologyConfig {
                prefix: String::new(),
                ..ok.clone()
            },
            TopologyConfig {
                delivery_limit: 0,
                ..ok.clone()
            },
            TopologyConfig {
                retry_delays_ms: vec![5, 5],
                ..ok.clone()
            },
            TopologyConfig {
                retry_delays_ms: vec![0],
                ..ok.clone()
            },
        ] {
            assert!(Topology::new(&bad).is_err(), "{bad:?}");
        }
    }
}
