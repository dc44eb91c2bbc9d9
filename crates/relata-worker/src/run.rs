//! The per-delivery flow and the consume loop.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use futures::StreamExt;
use relata_core::{DeadReason, Handle, JobId, JobInput, JobMessage, RowKind, Task, TaskVersion};
use relata_model::{ClassifyClaim, ModelCall, ModelClient, ModelError};
use relata_queue::{
    Broker, Deliveries, Delivery, QueueError, RetryDecision, RetryPolicy, RetryTier,
};
use relata_store::{
    ChunkRow, CommitOutcome, Committed, JobRow, JobState, NewModelCall, Store, StoreError,
};
use relata_validate::{
    ClassifyInput, ExtractShape, GateConfig, Rejection, judge_classify, judge_extract_as,
};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{Instrument, field};

use crate::http::Readiness;
use crate::metrics::{
    ConsumptionPaused, ConsumptionResumed, JobDeadLettered, JobFinished, JobMetrics,
    JobRetryScheduled, ProgressTally, RowsCommitted, WorkerProgress,
};
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

/// How a delivery is to be settled, decided before touching the broker.
#[derive(Debug)]
enum Settle {
    Ack(JobOutcome),
    RetryLater {
        next_attempt: u32,
        tier: RetryTier,
    },
    Dead {
        reason: DeadReason,
        detail: String,
    },
    Requeue,
    /// Untried because the provider refuses the deployment: back to the queue unharmed.
    Hold,
}

/// Whether the worker takes deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Consuming,
    /// Consumption cancelled after a refusal; deliveries already received go back
    /// untried until the stream ends.
    Pausing,
    /// Not consuming; the provider is asked again at `probe_at`.
    Paused,
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

/// The next delivery, or never when there is no stream (a paused worker).
async fn next_delivery(deliveries: &mut Option<Deliveries>) -> Option<Delivery> {
    match deliveries {
        Some(d) => d.next().await,
        None => std::future::pending().await,
    }
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

    /// Consume until `shutdown` resolves (or the worker has been idle for
    /// `exit_when_idle`), then stop consuming and give in-flight jobs until the shutdown
    /// deadline to finish.
    pub async fn run(
        self: Arc<Self>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<RunSummary, WorkerError> {
        let task = self.settings.task;
        self.broker.declare_topology().await?;
        let concurrency = self.settings.concurrency.max(1);
        let mut deliveries = Some(self.broker.consume(task, concurrency).await?);
        self.readiness.set_consuming(true);
        self.metrics.consuming(task);
        tracing::info!(task = %task, concurrency, version = %self.version.fingerprint(), "worker consuming");

        let slots = Arc::new(Semaphore::new(usize::from(concurrency)));
        // Each job carries the consumption generation it was taken in: a refusal from a
        // job taken before a resume must not pause the worker again.
        let mut running: JoinSet<(u64, JobOutcome)> = JoinSet::new();
        let mut generation = 0u64;
        let mut flow = Flow::Consuming;
        let mut paused_at = Instant::now();
        let mut probe_delay = self.settings.provider_retry_min;
        let probe_timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(probe_timer);
        let mut refused = None;
        // Streams ended by a pause, kept open until their held deliveries are settled.
        let mut retired: Vec<Deliveries> = Vec::new();
        let mut summary = RunSummary::default();
        let idle = self.settings.exit_when_idle;
        let mut tally = ProgressTally::new(Instant::now());
        let mut progress_tick = tokio::time::interval_at(
            tokio::time::Instant::now() + self.settings.summary_interval,
            self.settings.summary_interval,
        );
        progress_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            let idle_timer = async {
                match idle {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            // A batch run (`exit_when_idle`) must not wait forever on a deployment that
            // stays refused: paused for that long, it exits as the `exit` policy would.
            let paused_too_long = async {
                match idle {
                    Some(d) if flow == Flow::Paused => {
                        tokio::time::sleep_until(tokio::time::Instant::from_std(paused_at + d))
                            .await
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut shutdown => {
                    tracing::info!("shutdown requested: no new deliveries");
                    break;
                }
                _ = paused_too_long => {
                    tracing::warn!("paused for longer than --exit-when-idle; exiting with the jobs queued");
                    refused = Some(self.refusal().unwrap_or_default());
                    break;
                }
                Some(done) = running.join_next(), if !running.is_empty() => {
                    let held = matches!(done, Ok((g, JobOutcome::Held)) if g == generation);
                    record(&mut summary, done.map(|(_, o)| o));
                    if held && flow == Flow::Consuming {
                        flow = Flow::Pausing;
                        paused_at = Instant::now();
                        probe_delay = self.settings.provider_retry_min;
                        let why = self.refusal().unwrap_or_default();
                        let exiting = self.settings.on_provider_refusal == OnProviderRefusal::Exit;
                        ConsumptionPaused { task, why: &why, retry_in: probe_delay, exiting }
                            .emit(&self.metrics);
                        refused = exiting.then_some(why);
                        self.readiness.set_consuming(false);
                        if let Some(d) = deliveries.as_mut() {
                            d.stop();
                        }
                    }
                }
                next = next_delivery(&mut deliveries) => match next {
                    Some(delivery) if flow == Flow::Consuming => {
                        // Wait for a free slot; the prefetch already bounds what the
                        // broker sends, this bounds what runs.
                        let Ok(permit) = slots.clone().acquire_owned().await else { break };
                        let me = self.clone();
                        let g = generation;
                        running.spawn(async move {
                            let outcome = me.handle(delivery).await;
                            drop(permit);
                            (g, outcome)
                        });
                    }
                    Some(delivery) => {
                        // Received before the cancel took effect: back untried.
                        let me = self.clone();
                        let g = generation;
                        running.spawn(async move {
                            let taken = Instant::now();
                            (g, me.settle(delivery, None, Settle::Hold, taken).await)
                        });
                    }
                    None if flow == Flow::Pausing => {
                        retired.extend(deliveries.take());
                        if refused.is_some() {
                            break;
                        }
                        flow = Flow::Paused;
                        probe_timer.as_mut().reset(tokio::time::Instant::now() + probe_delay);
                    }
                    None => break,
                },
                _ = &mut probe_timer, if flow == Flow::Paused => {
                    match self.model.check_provider().await {
                        Ok(()) => {
                            // The paused streams' deliveries were settled long ago.
                            for d in retired.drain(..) {
                                d.close().await;
                            }
                            generation += 1;
                            match self.broker.consume(task, concurrency).await {
                                Ok(d) => {
                                    deliveries = Some(d);
                                    flow = Flow::Consuming;
                                    *self.lock_refusal() = None;
                                    self.readiness.set_provider_blocked(None);
                                    self.readiness.set_consuming(true);
                                    ConsumptionResumed { task, paused_for: paused_at.elapsed() }
                                        .emit(&self.metrics);
                                }
                                Err(e) => {
                                    tracing::warn!(error = %e, "cannot resume consuming yet");
                                    probe_timer.as_mut().reset(tokio::time::Instant::now() + probe_delay);
                                }
                            }
                        }
                        Err(e) => {
                            probe_delay = (probe_delay * 2).min(self.settings.provider_retry_max);
                            tracing::warn!(
                                error = %self.model.redact(&e.to_string()),
                                retry_in_ms = u64::try_from(probe_delay.as_millis()).unwrap_or(u64::MAX),
                                "model provider still refuses or is unreachable; consumption stays paused"
                            );
                            probe_timer.as_mut().reset(tokio::time::Instant::now() + probe_delay);
                        }
                    }
                }
                _ = progress_tick.tick() => {
                    let (since_last, elapsed) = tally.since_last(&summary.outcomes, Instant::now());
                    WorkerProgress {
                        task,
                        since_last: &since_last,
                        elapsed,
                        total: summary.outcomes.values().sum(),
                        queue_depth: self.queue_depth().await,
                    }
                    .emit();
                }
                _ = idle_timer, if running.is_empty() && flow == Flow::Consuming => {
                    tracing::info!("idle: no deliveries, exiting");
                    break;
                }
            }
        }

        self.readiness.set_draining();
        if let Some(d) = deliveries.as_mut() {
            d.stop();
        }
        let deadline = tokio::time::sleep(self.settings.shutdown_deadline);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                next = running.join_next() => match next {
                    Some(done) => record(&mut summary, done.map(|(_, o)| o)),
                    None => break,
                },
                _ = &mut deadline => {
                    summary.abandoned = running.len() as u64;
                    tracing::warn!(abandoned = summary.abandoned, "shutdown deadline reached; abandoning in-flight jobs (they will be redelivered)");
                    running.abort_all();
                    // Wait until the aborted jobs are gone: a delivery dropped after the
                    // connection started closing makes lapin settle it on a closing
                    // channel and log a channel-state error for a clean shutdown.
                    while running.join_next().await.is_some() {}
                    break;
                }
            }
        }
        // Deliveries received but not started are left unsettled: the broker returns them
        // to the queue when their channel closes.
        retired.extend(deliveries);
        for d in retired {
            d.close().await;
        }
        self.broker.close().await;
        match refused {
            Some(why) => Err(WorkerError::ProviderRefused(why)),
            None => Ok(summary),
        }
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

    /// Process one delivery and settle it. Never panics on bad input; every path ends in
    /// exactly one settlement (or none, when the broker is gone — then it is redelivered).
    async fn handle(&self, delivery: Delivery) -> JobOutcome {
        let span = tracing::info_span!(
            "job",
            task = %self.settings.task,
            job_id = field::Empty,
            document_id = field::Empty,
            attempt = delivery.attempt(),
        );
        async {
            let taken = Instant::now();
            let (job_id, settle) = self.process(&delivery).await;
            self.settle(delivery, job_id.as_ref(), settle, taken).await
        }
        .instrument(span)
        .await
    }

    async fn process(&self, delivery: &Delivery) -> (Option<JobId>, Settle) {
        let task = self.settings.task;
        let msg = match JobMessage::decode(delivery.payload()) {
            Ok(m) => m,
            Err(e) => return (None, dead(DeadReason::Poison, e.to_string())),
        };
        tracing::Span::current().record("job_id", field::display(&msg.job_id));
        let job_id = Some(msg.job_id.clone());
        if msg.task != task {
            let why = format!("a {} job on the {} queue", msg.task, task);
            return (None, dead(DeadReason::Poison, why));
        }
        // The job and its chunk in one round trip.
        let (job, chunk) = match self
            .store_retry(|| self.store.job_with_chunk(&msg.job_id))
            .await
        {
            Ok(Some(found)) => found,
            Ok(None) => {
                let why = format!("job {} is not in the ledger", msg.job_id);
                return (None, dead(DeadReason::MissingInput, why));
            }
            Err(e) => return (job_id, self.store_failed(&msg.job_id, &e, None).await),
        };
        if job.state.is_terminal() {
            // A crash between an extract commit and publishing its classify jobs is
            // repaired here, on the redelivery.
            let followed = if task == Task::Extract && job.state != JobState::Dead {
                self.follow_up(&job.job_id, None).await
            } else {
                Ok(())
            };
            if let Err(s) = followed {
                return (job_id, s);
            }
            return (job_id, Settle::Ack(JobOutcome::AlreadyDone));
        }
        if job.version != self.version {
            let why = format!(
                "job of task version {} (prompt {}, model {}), worker runs {} (prompt {}, model {})",
                short(&job.task_version_fingerprint),
                job.version.prompt_version,
                job.version.model,
                short(&self.version.fingerprint()),
                self.version.prompt_version,
                self.version.model,
            );
            return (job_id, dead(DeadReason::VersionMismatch, why));
        }
        // The job's task is the worker's: the task version, which names it, matched above.
        let settle = match &job.input {
            JobInput::Extract { chunk_id } => {
                self.extract(&job, *chunk_id, chunk, delivery.attempt())
                    .await
            }
            JobInput::Classify { pairs } => self.classify(&job, pairs, delivery.attempt()).await,
        };
        (job_id, settle)
    }

    async fn extract(
        &self,
        job: &JobRow,
        chunk_id: i64,
        chunk: Option<ChunkRow>,
        attempt: u32,
    ) -> Settle {
        let Some(chunk) = chunk else {
            return dead(
                DeadReason::MissingInput,
                format!("chunk {chunk_id} does not exist"),
            );
        };
        tracing::Span::current().record("document_id", chunk.document_id);
        let call = self
            .model
            .extract(&chunk.text, chunk.title.as_deref())
            .await;
        let completion = match &call.result {
            Ok(c) => c,
            Err(e) => return self.on_model_error(job, &call.record, e, attempt).await,
        };
        // The job's task version is the worker's (a mismatch was dead-lettered before the
        // call): judge the response against the contract that version names.
        let contract = self.model.config().contract(Task::Extract);
        let shape = ExtractShape::of(&contract).unwrap_or(ExtractShape::Quotes);
        let judgement = judge_extract_as(
            &self.gate,
            shape,
            &chunk.text,
            completion.content.as_bytes(),
            None,
        );
        let rejections = judgement.rejections();
        let record = self.new_call(&call, Some(&completion.content), rejections.is_empty());
        let committed = self
            .store_retry(|| {
                self.store
                    .commit_extract(&job.job_id, &record, &judgement, &chunk)
            })
            .await;
        match committed {
            Ok(CommitOutcome::Committed(mut c)) => {
                self.committed(&rejections, &mut c);
                if let Err(s) = self.follow_up(&job.job_id, Some(&c.claim_ids)).await {
                    return s;
                }
                Settle::Ack(outcome_of(c.state))
            }
            Ok(CommitOutcome::AlreadyCommitted { .. }) => Settle::Ack(JobOutcome::AlreadyDone),
            Err(e) => self.store_failed(&job.job_id, &e, Some(&record)).await,
        }
    }

    async fn classify(&self, job: &JobRow, pairs: &[(i64, i64)], attempt: u32) -> Settle {
        if pairs.is_empty() {
            return dead(
                DeadReason::MissingInput,
                "classify job without pairs".into(),
            );
        }
        let claims = match self
            .store_retry(|| self.store.load_claims_for_pairs(pairs))
            .await
        {
            Ok(c) => c,
            Err(e) => return self.store_failed(&job.job_id, &e, None).await,
        };
        // Handles are numbered in claim-id order, per request; the map back to ids never
        // leaves this function except into the commit.
        let mut handle_of: BTreeMap<i64, Handle> = BTreeMap::new();
        for (n, c) in claims.iter().enumerate() {
            handle_of.insert(c.id, Handle::nth(n as u32 + 1));
        }
        let mut shown = Vec::with_capacity(claims.len());
        for c in &claims {
            shown.push(ClassifyClaim {
                handle: handle_of[&c.id],
                statement: c.statement.clone(),
            });
        }
        let mut asked = Vec::with_capacity(pairs.len());
        for (a, b) in pairs {
            match (handle_of.get(a), handle_of.get(b)) {
                (Some(&ha), Some(&hb)) => asked.push((ha, hb)),
                _ => {
                    let why = format!("claim {a} or {b} of the pair does not exist");
                    return dead(DeadReason::MissingInput, why);
                }
            }
        }
        let input = ClassifyInput {
            handles: handle_of.values().copied().collect::<BTreeSet<_>>(),
            pairs: asked.iter().copied().collect(),
        };
        let id_of: BTreeMap<Handle, i64> = handle_of.iter().map(|(id, h)| (*h, *id)).collect();

        let call = self.model.classify(&shown, &asked).await;
        let completion = match &call.result {
            Ok(c) => c,
            Err(e) => return self.on_model_error(job, &call.record, e, attempt).await,
        };
        let judgement = judge_classify(&self.gate, &input, completion.content.as_bytes());
        let rejections = judgement.rejections();
        let record = self.new_call(&call, Some(&completion.content), rejections.is_empty());
        let committed = self
            .store_retry(|| {
                self.store
                    .commit_classify(&job.job_id, &record, &judgement, &id_of)
            })
            .await;
        match committed {
            Ok(CommitOutcome::Committed(mut c)) => {
                self.committed(&rejections, &mut c);
                Settle::Ack(outcome_of(c.state))
            }
            Ok(CommitOutcome::AlreadyCommitted { .. }) => Settle::Ack(JobOutcome::AlreadyDone),
            Err(e) => self.store_failed(&job.job_id, &e, Some(&record)).await,
        }
    }

    /// The adapter has decided the class; this only maps it to a settlement.
    async fn on_model_error(
        &self,
        job: &JobRow,
        record: &relata_model::CallRecord,
        error: &ModelError,
        attempt: u32,
    ) -> Settle {
        let call = self.new_call_from_record(record, None);
        let detail = self.model.redact(&error.to_string());
        // The variant is the class the adapter decided; an invalid output carries its reason.
        match error {
            ModelError::Transport { .. } => match self.policy.decide(attempt) {
                RetryDecision::RetryLater { next_attempt, tier } => {
                    if let Err(e) = self
                        .store_retry(|| self.store.record_attempt(&job.job_id, Some(&call)))
                        .await
                    {
                        return self.store_failed(&job.job_id, &e, Some(&call)).await;
                    }
                    Settle::RetryLater { next_attempt, tier }
                }
                RetryDecision::Exhausted { attempts } => {
                    let why = format!("{attempts} deliveries failed; last: {detail}");
                    self.mark_dead(
                        &job.job_id,
                        DeadReason::TransportExhausted,
                        &why,
                        Some(&call),
                    )
                    .await
                }
            },
            ModelError::Permanent { .. } if error.is_configuration_failure() => {
                // Every job would fail the same way: this one goes back untried and the
                // run loop pauses consumption, instead of dead-lettering the backlog.
                self.readiness.set_provider_blocked(Some(detail.clone()));
                *self.lock_refusal() = Some(detail);
                Settle::Hold
            }
            &ModelError::InvalidOutput { reason, .. } => {
                // Counted by the adapter when it classified the envelope; recorded here.
                match self
                    .store_retry(|| {
                        self.store
                            .commit_invalid_envelope(&job.job_id, &call, reason, &detail)
                    })
                    .await
                {
                    Ok(CommitOutcome::Committed(_)) => Settle::Ack(JobOutcome::Invalid),
                    Ok(CommitOutcome::AlreadyCommitted { .. }) => {
                        Settle::Ack(JobOutcome::AlreadyDone)
                    }
                    Err(e) => self.store_failed(&job.job_id, &e, Some(&call)).await,
                }
            }
            // `Permanent` (and any failure the adapter may add): never retried.
            _ => {
                self.mark_dead(
                    &job.job_id,
                    DeadReason::PermanentProvider,
                    &detail,
                    Some(&call),
                )
                .await
            }
        }
    }

    async fn mark_dead(
        &self,
        job_id: &JobId,
        reason: DeadReason,
        detail: &str,
        call: Option<&NewModelCall>,
    ) -> Settle {
        match self
            .store_retry(|| self.store.mark_dead(job_id, reason, detail, call))
            .await
        {
            Ok(CommitOutcome::Committed(_)) => dead(reason, detail.to_owned()),
            Ok(CommitOutcome::AlreadyCommitted { .. }) => Settle::Ack(JobOutcome::AlreadyDone),
            Err(e) if e.is_retryable() => Settle::Requeue,
            // The ledger cannot say so, but the message must still leave the queue: a
            // requeue would bring back the same refusal (and another model call).
            Err(_) => dead(reason, detail.to_owned()),
        }
    }

    /// A store operation failed. Unavailable or contended: requeue, the store may be back
    /// by the redelivery. Anything else (a data exception, a constraint, a missing
    /// migration) would fail the same way every time, and a redelivery would ask the model
    /// again: the job is dead-lettered `store_rejected` with what the store said.
    async fn store_failed(
        &self,
        job_id: &JobId,
        error: &StoreError,
        call: Option<&NewModelCall>,
    ) -> Settle {
        if error.is_retryable() {
            return Settle::Requeue;
        }
        let detail = format!("the store refused, for a reason other than availability: {error}");
        self.mark_dead(job_id, DeadReason::StoreRejected, &detail, call)
            .await
    }

    /// After an extract job's outcome is committed: create and publish the classify jobs
    /// its claims lead to. Idempotent; on failure the delivery is requeued so the next
    /// delivery (an already-done job) tries again.
    ///
    /// `fresh` is the claim ids of a commit this delivery has just made. Then the claims
    /// need not be read back, and when they have no candidate pairs there is nothing to
    /// create and nothing earlier to publish (classify jobs of an origin are only created
    /// after its commit, by a delivery that publishes them itself or is redelivered), so
    /// the store is not asked again. A redelivery of a committed job (`None`) always
    /// plans, which repairs a crash between commit and publish.
    async fn follow_up(&self, origin: &JobId, fresh: Option<&[i64]>) -> Result<(), Settle> {
        let claim_ids = match fresh {
            Some(ids) => ids.to_vec(),
            None => self
                .store_retry(|| self.store.claim_ids_of_job(origin))
                .await
                .map_err(|_| Settle::Requeue)?,
        };
        let jobs = if fresh.is_some() {
            let pairs = self
                .store_retry(|| {
                    self.store.candidate_pairs(
                        &claim_ids,
                        self.settings.candidate_k,
                        &self.classify_version,
                    )
                })
                .await
                .map_err(|_| Settle::Requeue)?;
            if pairs.is_empty() {
                return Ok(());
            }
            let batches: Vec<Vec<(i64, i64)>> = pairs
                .chunks(self.settings.classify_batch.max(1))
                .map(<[(i64, i64)]>::to_vec)
                .collect();
            self.store_retry(|| {
                self.store
                    .ensure_classify_jobs(&self.classify_version, Some(origin), &batches)
            })
            .await
            .map_err(|_| Settle::Requeue)?
        } else {
            self.store_retry(|| {
                self.store.plan_classify_jobs(
                    origin,
                    &claim_ids,
                    self.settings.candidate_k,
                    self.settings.classify_batch,
                    &self.classify_version,
                )
            })
            .await
            .map_err(|_| Settle::Requeue)?
        };
        if jobs.is_empty() {
            return Ok(());
        }
        match relata_dispatch::publish_jobs(&self.store, &self.broker, &jobs).await {
            Ok(n) => {
                tracing::info!(classify_jobs = n, "candidate pairs published");
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "publishing classify jobs failed; requeueing");
                Err(Settle::Requeue)
            }
        }
    }

    async fn settle(
        &self,
        delivery: Delivery,
        job_id: Option<&JobId>,
        settle: Settle,
        taken: Instant,
    ) -> JobOutcome {
        let task = self.settings.task;
        let (result, outcome) = match settle {
            Settle::Ack(outcome) => (delivery.ack().await, outcome),
            Settle::RetryLater { next_attempt, tier } => {
                let delay_ms = tier.delay().as_millis() as u64;
                let r = delivery.retry_later(next_attempt, tier).await;
                if r.is_ok() {
                    JobRetryScheduled {
                        task,
                        attempt: next_attempt,
                        delay_ms,
                    }
                    .emit(&self.metrics);
                }
                (r, JobOutcome::Retried)
            }
            Settle::Dead { reason, detail } => {
                let r = delivery.dead_letter(reason, &detail).await;
                if r.is_ok() {
                    JobDeadLettered {
                        task,
                        reason,
                        detail: &detail,
                    }
                    .emit(&self.metrics);
                }
                return match r {
                    Ok(()) => JobOutcome::Dead,
                    Err(e) => {
                        tracing::warn!(error = %e, job_id = ?job_id.map(JobId::as_str), "dead-lettering failed; the delivery will come back");
                        JobOutcome::Requeued
                    }
                };
            }
            Settle::Requeue => {
                tracing::warn!("store unavailable; delivery requeued");
                (delivery.requeue().await, JobOutcome::Requeued)
            }
            Settle::Hold => {
                return match delivery.return_unharmed().await {
                    Ok(()) => {
                        tracing::info!(
                            "provider refuses the deployment; job returned to the queue untried"
                        );
                        JobOutcome::Held
                    }
                    Err(e) => {
                        // Still held: the refusal stands and the worker must pause.
                        tracing::warn!(error = %e, "returning the job failed; the broker will redeliver it");
                        JobOutcome::Held
                    }
                };
            }
        };
        match result {
            Ok(()) => {
                if outcome != JobOutcome::Retried {
                    JobFinished {
                        task,
                        outcome,
                        duration: taken.elapsed(),
                    }
                    .emit(&self.metrics);
                }
                outcome
            }
            Err(e) => {
                // The outcome (if any) is committed; the broker will redeliver and the
                // ledger will answer "already done".
                tracing::warn!(error = %e, "settling the delivery failed; it will be redelivered");
                JobOutcome::Requeued
            }
        }
    }

    /// A judged response's outcome is committed: count its rejections (once each; never
    /// before the commit, so a retried commit cannot count twice) and its rows, and hand
    /// its candidates to the promoter.
    fn committed(&self, rejections: &[Rejection], c: &mut Committed) {
        for r in rejections {
            self.model
                .record_invalid_output(self.settings.task, r.reason, &r.detail);
        }
        self.rows_committed(c);
        if let Some(p) = &self.proposals {
            p.offer(std::mem::take(&mut c.candidates));
        }
    }

    fn rows_committed(&self, c: &Committed) {
        let task = self.settings.task;
        for (kind, count) in [
            (RowKind::Entity, c.counts.entities),
            (RowKind::Claim, c.counts.claims),
            (RowKind::Relation, c.counts.relations),
        ] {
            RowsCommitted {
                task,
                kind,
                count: count as u64,
            }
            .emit(&self.metrics);
        }
    }

    fn new_call(&self, call: &ModelCall, content: Option<&str>, clean: bool) -> NewModelCall {
        // Content is kept (bounded, redacted) only when something in it was rejected:
        // the evidence an operator needs, without storing every accepted response twice.
        let excerpt = if clean {
            None
        } else {
            content.map(|c| self.model.excerpt(c))
        };
        self.new_call_from_record(&call.record, excerpt)
    }

    fn new_call_from_record(
        &self,
        record: &relata_model::CallRecord,
        excerpt: Option<String>,
    ) -> NewModelCall {
        NewModelCall {
            version: record.task_version(),
            started_at: record.started_at,
            finished_at: record.finished_at,
            attempts: record.attempts,
            prompt_tokens: record.usage.as_ref().map(|u| u.prompt_tokens),
            completion_tokens: record.usage.as_ref().map(|u| u.completion_tokens),
            excerpt: excerpt.or_else(|| record.excerpt.clone()),
            sent_schema_sha256: record.sent_schema_sha256.clone(),
        }
    }

    /// Retry a store operation while the store is unavailable, bounded in time; never
    /// repeats anything but the store operation itself.
    async fn store_retry<T, F, Fut>(&self, op: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let backoff = ExponentialBuilder::default()
            .with_jitter()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(5))
            .with_total_delay(Some(self.settings.commit_retry_max_elapsed))
            .without_max_times();
        op.retry(backoff)
            .when(StoreError::is_retryable)
            .notify(|e, pause| {
                tracing::warn!(error = %e, pause_ms = pause.as_millis() as u64, "store unavailable; retrying");
            })
            .await
            .inspect_err(|e| tracing::error!(error = %e, "store operation failed"))
    }
}

fn dead(reason: DeadReason, detail: String) -> Settle {
    Settle::Dead { reason, detail }
}

fn outcome_of(state: JobState) -> JobOutcome {
    match state {
        JobState::Accepted => JobOutcome::Accepted,
        JobState::Partial => JobOutcome::Partial,
        JobState::Invalid => JobOutcome::Invalid,
        JobState::Dead => JobOutcome::Dead,
        JobState::Queued => JobOutcome::Requeued,
    }
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}

fn record(summary: &mut RunSummary, done: Result<JobOutcome, tokio::task::JoinError>) {
    match done {
        Ok(outcome) => *summary.outcomes.entry(outcome).or_default() += 1,
        Err(e) if e.is_panic() => {
            tracing::error!("a job handler panicked; its delivery will be redelivered")
        }
        Err(_) => {}
    }
}
