//! The worker: a loop that waits for the next [`Event`] from its sources (shutdown, the
//! delivery stream, finished jobs, timers) and hands it to [`Worker::handle_event`],
//! which changes one [`LoopState`] — the shape of rust-analyzer's `main_loop`.
//!
//! - `consume.rs`: taking deliveries, and the pause while the provider refuses the
//!   deployment ([`consume::Pause`], a plain value tested without a broker);
//! - `job.rs`: one delivery: load the job, call the model, judge, commit, publish the
//!   classify jobs an extract commit leads to;
//! - `settle.rs`: how each failure class ends a delivery, decided before the broker is
//!   touched, and the broker calls that carry it out;
//! - `state.rs`: what the loop owns between events.

mod consume;
mod job;
mod settle;
mod state;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use relata_core::{Task, TaskVersion};
use relata_model::ModelClient;
use relata_queue::{Broker, Delivery, QueueError, RetryPolicy};
use relata_store::{Store, StoreError};
use relata_validate::GateConfig;
use tokio::task::JoinError;

use self::state::LoopState;
use crate::http::Readiness;
use crate::metrics::{JobMetrics, WorkerProgress};
use crate::{JobOutcome, OnProviderRefusal};

/// Settings of one worker process.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub task: Task,
    /// Jobs in flight at once; also the broker prefetch.
    pub concurrency: u16,
    /// How long in-flight jobs may run after SIGTERM before they are abandoned (their
    /// deliveries return to the queue unacknowledged; nothing is lost).
    pub shutdown_deadline: Duration,
    /// Each new claim is paired with at most this many existing claims about the same
    /// entity (newest first).
    pub candidate_k: u32,
    /// Pairs per classify job.
    pub classify_batch: usize,
    /// How long a commit is retried while the store is unavailable before the delivery
    /// is requeued.
    pub commit_retry_max_elapsed: Duration,
    /// Exit once no delivery has arrived for this long (batch runs and tests); `None`
    /// runs until stopped. A worker paused by a provider refusal for this long exits as
    /// the `exit` policy does.
    pub exit_when_idle: Option<Duration>,
    /// What to do when the provider refuses the deployment (401, 403, not found, redirect).
    pub on_provider_refusal: OnProviderRefusal,
    /// While paused by a refusal, the first wait before asking the provider again; each
    /// further wait doubles, up to `provider_retry_max`.
    pub provider_retry_min: Duration,
    pub provider_retry_max: Duration,
    /// How often the worker logs its one-line progress summary ([`WorkerProgress`]).
    ///
    /// [`WorkerProgress`]: crate::WorkerProgress
    pub summary_interval: Duration,
}

impl WorkerSettings {
    pub fn new(task: Task) -> WorkerSettings {
        WorkerSettings {
            task,
            concurrency: 4,
            shutdown_deadline: Duration::from_secs(30),
            candidate_k: 5,
            classify_batch: 10,
            commit_retry_max_elapsed: Duration::from_secs(30),
            exit_when_idle: None,
            on_provider_refusal: OnProviderRefusal::Pause,
            provider_retry_min: Duration::from_secs(10),
            provider_retry_max: Duration::from_secs(300),
            summary_interval: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("broker: {0}")]
    Queue(#[from] QueueError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The provider refuses the deployment and the policy is to exit. Not retryable by
    /// restarting alone: the key, model name or URL must change.
    #[error(
        "the model provider refuses this deployment ({0}); jobs were left queued. Check RELATA_MODEL_API_KEY, RELATA_MODEL_NAME and RELATA_MODEL_URL"
    )]
    ProviderRefused(String),
}

/// What a run did, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub outcomes: BTreeMap<JobOutcome, u64>,
    /// In-flight jobs abandoned at the shutdown deadline.
    pub abandoned: u64,
}

/// One worker: a task, its dependencies, its settings.
#[derive(Debug)]
pub struct Worker {
    settings: WorkerSettings,
    store: Store,
    broker: Broker,
    model: ModelClient,
    gate: GateConfig,
    metrics: JobMetrics,
    readiness: Readiness,
    policy: RetryPolicy,
    version: TaskVersion,
    classify_version: TaskVersion,
    /// The last refusal that means the deployment is misconfigured (bounded, redacted).
    refusal: std::sync::Mutex<Option<String>>,
    /// Where committed candidates go to be judged; `None` without a promoter (a sweep,
    /// another worker's or `relata promote`, judges them).
    proposals: Option<crate::Proposals>,
}

impl Worker {
    pub fn new(
        settings: WorkerSettings,
        store: Store,
        broker: Broker,
        model: ModelClient,
        gate: GateConfig,
        metrics: JobMetrics,
        readiness: Readiness,
    ) -> Worker {
        let policy = RetryPolicy::from_topology(broker.topology());
        let version = model.task_version(settings.task);
        let classify_version = model.task_version(Task::Classify);
        Worker {
            settings,
            store,
            broker,
            model,
            gate,
            metrics,
            readiness,
            policy,
            version,
            classify_version,
            refusal: std::sync::Mutex::new(None),
            proposals: None,
        }
    }

    /// Hand every commit's candidates to a promoter.
    pub fn with_proposals(mut self, proposals: crate::Proposals) -> Worker {
        self.proposals = Some(proposals);
        self
    }

    /// The task version this worker produces.
    pub fn version(&self) -> &TaskVersion {
        &self.version
    }
}

/// Something the loop must react to. Each comes from one source; [`LoopState::next_event`]
/// waits for whichever is first.
#[derive(Debug)]
enum Event {
    /// The process was asked to stop.
    Shutdown,
    /// A batch run has been paused by a refusal for as long as `exit_when_idle`.
    PausedTooLong,
    /// A job finished, with the consumption generation it was taken in.
    JobDone(Result<(u64, JobOutcome), JoinError>),
    /// A delivery, or `None` when the stream ended. Boxed: a delivery is many times the
    /// size of every other event.
    Delivery(Option<Box<Delivery>>),
    /// Time to ask a refusing provider again.
    Probe,
    /// Time for the one-line progress summary.
    Progress,
    /// No event for `exit_when_idle` while consuming with nothing running.
    Idle,
}

/// Whether the loop goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    Continue,
    Stop,
}

impl Worker {
    /// Consume until `shutdown` resolves (or the worker has been idle for
    /// `exit_when_idle`), then stop consuming and give in-flight jobs until the shutdown
    /// deadline to finish.
    pub async fn run(
        self: Arc<Self>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<RunSummary, WorkerError> {
        let task = self.settings.task;
        self.broker.declare_topology().await?;
        let concurrency = self.concurrency();
        let deliveries = self.broker.consume(task, concurrency).await?;
        self.readiness.set_consuming(true);
        self.metrics.consuming(task);
        tracing::info!(task = %task, concurrency, version = %self.version.fingerprint(), "worker consuming");

        let mut state = LoopState::new(&self.settings, deliveries, Instant::now());
        tokio::pin!(shutdown);
        loop {
            let event = state
                .next_event(shutdown.as_mut(), self.settings.exit_when_idle)
                .await;
            if self.handle_event(&mut state, event).await == Control::Stop {
                break;
            }
        }
        self.drain(state).await
    }

    async fn handle_event(self: &Arc<Self>, state: &mut LoopState, event: Event) -> Control {
        match event {
            Event::Shutdown => {
                tracing::info!("shutdown requested: no new deliveries");
                Control::Stop
            }
            Event::PausedTooLong => self.give_up_paused(state),
            Event::JobDone(done) => {
                self.job_done(state, done);
                Control::Continue
            }
            Event::Delivery(Some(delivery)) => self.take(state, *delivery).await,
            Event::Delivery(None) => self.stream_ended(state),
            Event::Probe => {
                self.probe(state).await;
                Control::Continue
            }
            Event::Progress => {
                self.progress(state).await;
                Control::Continue
            }
            Event::Idle => {
                tracing::info!("idle: no deliveries, exiting");
                Control::Stop
            }
        }
    }

    async fn progress(&self, state: &mut LoopState) {
        let outcomes = &state.summary.outcomes;
        let (since_last, elapsed) = state.tally.since_last(outcomes, Instant::now());
        WorkerProgress {
            task: self.settings.task,
            since_last: &since_last,
            elapsed,
            total: outcomes.values().sum(),
            queue_depth: self.queue_depth().await,
        }
        .emit();
    }

    /// Stop consuming and give in-flight jobs until the shutdown deadline to finish.
    async fn drain(&self, mut state: LoopState) -> Result<RunSummary, WorkerError> {
        self.readiness.set_draining();
        if let Some(d) = state.deliveries.as_mut() {
            d.stop();
        }
        let deadline = tokio::time::sleep(self.settings.shutdown_deadline);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                next = state.running.join_next() => match next {
                    Some(done) => state.record(done.map(|(_, o)| o)),
                    None => break,
                },
                _ = &mut deadline => {
                    state.summary.abandoned = state.running.len() as u64;
                    tracing::warn!(abandoned = state.summary.abandoned, "shutdown deadline reached; abandoning in-flight jobs (they will be redelivered)");
                    state.running.abort_all();
                    // Wait until the aborted jobs are gone: a delivery dropped after the
                    // connection started closing makes lapin settle it on a closing
                    // channel and log a channel-state error for a clean shutdown.
                    while state.running.join_next().await.is_some() {}
                    break;
                }
            }
        }
        // Deliveries received but not started are left unsettled: the broker returns them
        // to the queue when their channel closes.
        state.retired.extend(state.deliveries);
        for d in state.retired {
            d.close().await;
        }
        self.broker.close().await;
        match state.refused {
            Some(why) => Err(WorkerError::ProviderRefused(why)),
            None => Ok(state.summary),
        }
    }

    /// Jobs in flight at once; also the broker prefetch.
    fn concurrency(&self) -> u16 {
        self.settings.concurrency.max(1)
    }

    /// Ready messages in this worker's work queue, for the progress summary; `None` when
    /// the broker does not answer within a few seconds (the summary must not hold up the
    /// loop through a broker outage).
    async fn queue_depth(&self) -> Option<u32> {
        let task = self.settings.task;
        let depths = tokio::time::timeout(Duration::from_secs(2), self.broker.queue_depths())
            .await
            .ok()?
            .ok()?;
        depths
            .into_iter()
            .find(|d| d.role == relata_queue::QueueRole::Work(task))
            .and_then(|d| d.messages)
    }

    fn lock_refusal(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // A poisoned lock only means a panic elsewhere; the text stays usable.
        self.refusal.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refusal(&self) -> Option<String> {
        self.lock_refusal().clone()
    }
}
