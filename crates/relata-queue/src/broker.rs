//! The connection, confirmed publishing, and queue depths.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder, Retryable};
use futures::future::join_all;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties};
use lapin::{PublisherConfirm, options::ExchangeDeleteOptions, options::QueueDeleteOptions};
use relata_core::task::{JobId, Task};
use tokio::sync::Mutex;

use crate::config::{BrokerConfig, redact_url};
use crate::error::QueueError;
use crate::topology::{QueueRole, Topology};

/// Our header: how many times the job has been attempted through the broker (1-based).
pub const ATTEMPT_HEADER: &str = "x-relata-attempt";
/// Our header: the task of the job (also implied by its queue).
pub const TASK_HEADER: &str = "x-relata-task";
/// Our header on a dead-lettered message: a [`relata_core::dead::DeadReason`] value.
pub const DEAD_REASON_HEADER: &str = "x-relata-dead-reason";
/// Our header on a dead-lettered message: a human-readable detail, at most
/// [`DEAD_DETAIL_MAX_BYTES`] bytes.
pub const DEAD_DETAIL_HEADER: &str = "x-relata-dead-detail";
/// The bound of [`DEAD_DETAIL_HEADER`].
pub const DEAD_DETAIL_MAX_BYTES: usize = 512;
/// The quorum queue's own redelivery counter.
pub const DELIVERY_COUNT_HEADER: &str = "x-delivery-count";

/// How many publishes a batch keeps in flight before awaiting their confirms.
const BATCH_WINDOW: usize = 1_000;
/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// One job to publish in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingJob {
    pub task: Task,
    pub job_id: JobId,
    /// The JSON job message.
    pub payload: Vec<u8>,
}

/// The depth of one queue, for `relata status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    pub name: String,
    pub role: QueueRole,
    /// Ready messages (not counting unacknowledged ones); `None` if the queue does not
    /// exist.
    pub messages: Option<u32>,
    /// `None` if the queue does not exist.
    pub consumers: Option<u32>,
}

/// A handle on the broker: cheap to clone, shared by publishers and consumers.
///
/// It owns one connection, replaced whenever it is found dead; every replacement
/// re-declares the topology. Publishing waits through an outage with bounded backoff;
/// consumers ([`Broker::consume`]) resume by themselves after a reconnect.
#[derive(Clone)]
pub struct Broker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: BrokerConfig,
    pub(crate) topology: Topology,
    live: Mutex<Option<Live>>,
    generation: AtomicU64,
}

#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) connection: Arc<Connection>,
    publish: Channel,
    generation: u64,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("url", &redact_url(&self.inner.config.url))
            .field("prefix", &self.inner.topology.prefix())
            .field("connections", &self.connections_opened())
            .finish()
    }
}

impl Broker {
    /// Validate the configuration, connect (retrying for up to
    /// `connect_retry_max_ms`), and declare the topology.
    pub async fn connect(config: BrokerConfig) -> Result<Broker, QueueError> {
        crate::config::check_amqp_url(&config.url)?;
        let topology = Topology::new(&config.topology)?;
        let broker = Broker {
            inner: Arc::new(Inner {
                config,
                topology,
                live: Mutex::new(None),
                generation: AtomicU64::new(0),
            }),
        };
        let bound = Duration::from_millis(broker.inner.config.connect_retry_max_ms);
        (|| async { broker.live().await.map(drop) })
            .retry(backoff(bound))
            .when(QueueError::is_retryable)
            .notify(|e, d| tracing::warn!(error = %e, retry_in = ?d, "cannot reach the broker yet"))
            .await?;
        Ok(broker)
    }

    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// How many connections this handle has opened (1 plus the reconnects).
    pub fn connections_opened(&self) -> u64 {
        self.inner.generation.load(Ordering::Relaxed)
    }

    /// Declare the topology again on the current connection (it is declared at every
    /// connect anyway). Idempotent.
    pub async fn declare_topology(&self) -> Result<(), QueueError> {
        let live = self.live().await?;
        declare_on(&live.connection, &self.inner.topology).await
    }

    /// The current connection, or a new one if it is gone.
    pub(crate) async fn live(&self) -> Result<Live, QueueError> {
        let mut guard = self.inner.live.lock().await;
        if let Some(live) = guard.as_ref().filter(|l| l.connection.status().connected()) {
            if live.publish.status().connected() {
                return Ok(live.clone());
            }
            // The broker closed the publishing channel (a channel error); the
            // connection is fine.
            let publish = confirm_channel(&live.connection).await?;
            let live = Live {
                publish,
                ..live.clone()
            };
            *guard = Some(live.clone());
            return Ok(live);
        }
        if let Some(old) = guard.take() {
            close_quietly(old.connection);
        }
        let cfg = &self.inner.config;
        let props = ConnectionProperties::default()
            .with_connection_name(LongString::from(cfg.connection_name.as_str()));
        let connection =
            tokio::time::timeout(CONNECT_TIMEOUT, Connection::connect(&cfg.url, props))
                .await
                .map_err(|_| {
                    QueueError::Connection(format!(
                        "no answer from {} within {CONNECT_TIMEOUT:?}",
                        redact_url(&cfg.url)
                    ))
                })?
                .map_err(|e| connect_error(&e, &cfg.url))?;
        let connection = Arc::new(connection);
        declare_on(&connection, &self.inner.topology).await?;
        let publish = confirm_channel(&connection).await?;
        let generation = self.inner.generation.fetch_add(1, Ordering::Relaxed) + 1;
        if generation > 1 {
            tracing::info!(generation, "reconnected to the broker");
        }
        let live = Live {
            connection,
            publish,
            generation,
        };
        *guard = Some(live.clone());
        Ok(live)
    }

    /// Forget the connection of `generation` (if still current) so that the next
    /// operation opens a new one.
    pub(crate) async fn invalidate(&self, generation: u64) {
        let mut guard = self.inner.live.lock().await;
        let current = guard.as_ref().is_some_and(|l| l.generation == generation);
        if let Some(old) = guard.take_if(|_| current) {
            close_quietly(old.connection);
        }
    }

    /// Publish one job to its work queue (attempt 1) and wait for the broker's confirm.
    pub async fn publish(
        &self,
        task: Task,
        job_id: &JobId,
        payload: &[u8],
    ) -> Result<(), QueueError> {
        let props = job_properties(task, job_id.as_str(), 1, None);
        let queue = self.inner.topology.work_queue(task);
        self.publish_confirmed("", &queue, payload, props).await
    }

    /// Publish many jobs: publishes are pipelined ([`BATCH_WINDOW`] in flight), then
    /// every confirm is awaited. Jobs whose publish failed for a transient reason are
    /// published again (within the publish retry bound); a job may therefore reach the
    /// queue twice, with the same message id — workers are idempotent. A permanent
    /// failure (unroutable) stops the batch with that error.
    pub async fn publish_batch(&self, jobs: &[OutgoingJob]) -> Result<(), QueueError> {
        let bound = Duration::from_millis(self.inner.config.publish_retry_max_ms);
        let mut delays = backoff(bound).build();
        let mut pending: Vec<usize> = (0..jobs.len()).collect();
        while !pending.is_empty() {
            let outcome = match self.live().await {
                Ok(live) => {
                    let r = self.try_batch(&live, jobs, &pending).await?;
                    if r.1.as_ref().is_some_and(QueueError::needs_new_channel) {
                        self.invalidate(live.generation).await;
                    }
                    r
                }
                Err(e) if e.is_retryable() => (pending.clone(), Some(e)),
                Err(e) => return Err(e),
            };
            let (failed, error) = outcome;
            if failed.is_empty() {
                break;
            }
            let Some(delay) = delays.next() else {
                return Err(error.unwrap_or_else(|| {
                    QueueError::Other("batch publish gave up without an error".to_owned())
                }));
            };
            tracing::warn!(
                unconfirmed = failed.len(),
                error = ?error.as_ref().map(ToString::to_string),
                retry_in = ?delay,
                "batch publish incomplete; publishing the rest again"
            );
            tokio::time::sleep(delay).await;
            pending = failed;
        }
        Ok(())
    }

    /// One pass over `pending`: returns the indices that failed transiently and the
    /// last transient error, or the first permanent error.
    async fn try_batch(
        &self,
        live: &Live,
        jobs: &[OutgoingJob],
        pending: &[usize],
    ) -> Result<(Vec<usize>, Option<QueueError>), QueueError> {
        let timeout = self.inner.config.confirm_timeout();
        let mut failed = Vec::new();
        let mut last = None;
        for (w, window) in pending.chunks(BATCH_WINDOW).enumerate() {
            let mut in_flight = Vec::with_capacity(window.len());
            let mut broken = None;
            for (k, &i) in window.iter().enumerate() {
                let job = &jobs[i];
                let queue = self.inner.topology.work_queue(job.task);
                let props = job_properties(job.task, job.job_id.as_str(), 1, None);
                match publish_on(&live.publish, "", &queue, &job.payload, props).await {
                    Ok(confirm) => in_flight.push((i, queue, confirm)),
                    Err(e) => {
                        broken = Some((k, e));
                        break;
                    }
                }
            }
            let results = join_all(in_flight.into_iter().map(|(i, queue, confirm)| async move {
                (i, settle(confirm, "", &queue, timeout).await)
            }))
            .await;
            for (i, r) in results {
                match r {
                    Ok(()) => {}
                    Err(e) if e.is_retryable() => {
                        failed.push(i);
                        last = Some(e);
                    }
                    Err(e) => return Err(e),
                }
            }
            if let Some((k, e)) = broken {
                if !e.is_retryable() {
                    return Err(e);
                }
                failed.extend_from_slice(&window[k..]);
                for rest in pending.chunks(BATCH_WINDOW).skip(w + 1) {
                    failed.extend_from_slice(rest);
                }
                last = Some(e);
                break;
            }
        }
        Ok((failed, last))
    }

    /// Publish with mandatory routing, wait for the confirm, and retry transient
    /// failures (a lost connection, a nack, a missing confirm) with bounded backoff.
    pub(crate) async fn publish_confirmed(
        &self,
        exchange: &str,
        routing_key: &str,
        payload: &[u8],
        props: BasicProperties,
    ) -> Result<(), QueueError> {
        let bound = Duration::from_millis(self.inner.config.publish_retry_max_ms);
        let timeout = self.inner.config.confirm_timeout();
        (|| async {
            let live = self.live().await?;
            let r = match publish_on(&live.publish, exchange, routing_key, payload, props.clone())
                .await
            {
                Ok(confirm) => settle(confirm, exchange, routing_key, timeout).await,
                Err(e) => Err(e),
            };
            if r.as_ref().err().is_some_and(QueueError::needs_new_channel) {
                self.invalidate(live.generation).await;
            }
            r
        })
        .retry(backoff(bound))
        .when(QueueError::is_retryable)
        .notify(|e, d| tracing::warn!(error = %e, retry_in = ?d, routing_key, "publish failed; retrying"))
        .await
    }

    /// Message and consumer counts of every queue of the topology (passive declare:
    /// nothing is created).
    pub async fn queue_depths(&self) -> Result<Vec<QueueDepth>, QueueError> {
        let live = self.live().await?;
        let mut channel = open_channel(&live.connection).await?;
        let mut out = Vec::new();
        for spec in self.inner.topology.queues() {
            let passive = QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            };
            match channel
                .queue_declare(spec.name.as_str().into(), passive, FieldTable::default())
                .await
            {
                Ok(q) => out.push(QueueDepth {
                    name: spec.name,
                    role: spec.role,
                    messages: Some(q.message_count()),
                    consumers: Some(q.consumer_count()),
                }),
                Err(e) if is_not_found(&e) => {
                    // The broker closed the channel; open another for the next queue.
                    out.push(QueueDepth {
                        name: spec.name,
                        role: spec.role,
                        messages: None,
                        consumers: None,
                    });
                    channel = open_channel(&live.connection).await?;
                }
                Err(e) => return Err(QueueError::from_lapin(&e)),
            }
        }
        let _ = channel.close(200, "OK".into()).await;
        Ok(out)
    }

    /// Delete every queue and the exchange of this topology, with the messages in them.
    ///
    /// For tests and teardown only: relata itself never deletes a queue.
    pub async fn delete_topology(&self) -> Result<(), QueueError> {
        let live = self.live().await?;
        let channel = open_channel(&live.connection).await?;
        for spec in self.inner.topology.queues() {
            channel
                .queue_delete(spec.name.as_str().into(), QueueDeleteOptions::default())
                .await
                .map_err(|e| QueueError::from_lapin(&e))?;
        }
        channel
            .exchange_delete(
                self.inner.topology.dead_exchange().as_str().into(),
                ExchangeDeleteOptions::default(),
            )
            .await
            .map_err(|e| QueueError::from_lapin(&e))?;
        let _ = channel.close(200, "OK".into()).await;
        Ok(())
    }

    /// Close the connection. Consumers end; deliveries not yet settled are redelivered
    /// by the broker.
    pub async fn close(&self) {
        if let Some(live) = self.inner.live.lock().await.take() {
            let _ = live.connection.close(200, "OK".into()).await;
        }
    }
}

/// Exponential backoff with jitter, 100 ms up to 5 s between tries, `bound` in total.
pub(crate) fn backoff(bound: Duration) -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_jitter()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .without_max_times()
        .with_total_delay(Some(bound))
}

fn connect_error(e: &lapin::Error, url: &str) -> QueueError {
    // lapin's messages do not contain the URL, but make sure the password never leaks.
    match QueueError::from_lapin(e) {
        QueueError::Other(m) => QueueError::Connection(format!("{}: {m}", redact_url(url))),
        QueueError::Connection(m) => QueueError::Connection(format!("{}: {m}", redact_url(url))),
        other => other,
    }
}

fn is_not_found(e: &lapin::Error) -> bool {
    use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
    matches!(e.kind(), lapin::ErrorKind::ProtocolError(a)
        if matches!(a.kind(), AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND)))
}

fn close_quietly(connection: Arc<Connection>) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            connection.close(200, "reconnecting".into()),
        )
        .await;
    });
}

pub(crate) async fn open_channel(connection: &Connection) -> Result<Channel, QueueError> {
    connection
        .create_channel()
        .await
        .map_err(|e| QueueError::from_lapin(&e))
}

async fn confirm_channel(connection: &Connection) -> Result<Channel, QueueError> {
    let channel = open_channel(connection).await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(|e| QueueError::from_lapin(&e))?;
    Ok(channel)
}

async fn declare_on(connection: &Connection, topology: &Topology) -> Result<(), QueueError> {
    // A failed declaration closes its channel: use one of its own.
    let channel = open_channel(connection).await?;
    topology.declare(&channel).await?;
    let _ = channel.close(200, "OK".into()).await;
    Ok(())
}

async fn publish_on(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    payload: &[u8],
    props: BasicProperties,
) -> Result<PublisherConfirm, QueueError> {
    channel
        .basic_publish(
            exchange.into(),
            routing_key.into(),
            BasicPublishOptions {
                mandatory: true,
                immediate: false,
            },
            payload,
            props,
        )
        .await
        .map_err(|e| QueueError::from_lapin(&e))
}

/// Wait for the confirm of one publish and judge it.
async fn settle(
    confirm: PublisherConfirm,
    exchange: &str,
    routing_key: &str,
    timeout: Duration,
) -> Result<(), QueueError> {
    let confirmation = tokio::time::timeout(timeout, confirm)
        .await
        .map_err(|_| QueueError::ConfirmTimeout {
            routing_key: routing_key.to_owned(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })?
        .map_err(|e| QueueError::from_lapin(&e))?;
    match confirmation {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)) => {
            Err(QueueError::Unroutable {
                exchange: exchange.to_owned(),
                routing_key: routing_key.to_owned(),
                reply: format!("{} {}", returned.reply_code, returned.reply_text.as_str()),
            })
        }
        Confirmation::Nack(None) => Err(QueueError::Nacked {
            routing_key: routing_key.to_owned(),
        }),
        Confirmation::NotRequested => Err(QueueError::Other(
            "publisher confirms are not enabled on the publishing channel".to_owned(),
        )),
    }
}

/// Persistent, JSON, message id = job id, our headers (on top of `base` headers).
pub(crate) fn job_properties(
    task: Task,
    message_id: &str,
    attempt: u32,
    base: Option<FieldTable>,
) -> BasicProperties {
    let mut headers = base.unwrap_or_default();
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(attempt));
    headers.insert(
        TASK_HEADER.into(),
        AMQPValue::LongString(LongString::from(task.as_str())),
    );
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(message_id.into())
        .with_headers(headers)
}
