//! One delivery: decode it, load its job, call the model, judge the answer, commit the
//! outcome, and for an extract job publish the classify jobs its claims lead to. Every
//! path ends in a [`Settle`]; `settle.rs` tells the broker.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use relata_core::{DeadReason, Handle, JobId, JobInput, JobMessage, RowKind, Task};
use relata_model::{ClassifyClaim, ModelCall};
use relata_queue::Delivery;
use relata_store::{
    ChunkRow, CommitOutcome, Committed, JobRow, JobState, NewModelCall, StoreError,
};
use relata_validate::{ClassifyInput, ExtractShape, Rejection, judge_classify, judge_extract_as};
use tracing::{Instrument, field};

use super::Worker;
use super::settle::{Settle, dead, outcome_of};
use crate::JobOutcome;
use crate::metrics::RowsCommitted;

impl Worker {
    /// Process one delivery and settle it. Never panics on bad input; every path ends in
    /// exactly one settlement (or none, when the broker is gone — then it is redelivered).
    pub(super) async fn handle(&self, delivery: Delivery) -> JobOutcome {
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
        if msg.task != task {
            let why = format!("a {} job on the {} queue", msg.task, task);
            return (None, dead(DeadReason::Poison, why));
        }
        let attempt = delivery.attempt();
        let settle = if task == Task::Extract {
            // The job and its chunk in one round trip.
            match self
                .store_retry(|| self.store.job_with_chunk(&msg.job_id))
                .await
            {
                Ok(Some((job, chunk))) => match self.admit(&job).await {
                    Some(settle) => settle,
                    None => self.extract(&job, &chunk, attempt).await,
                },
                Ok(None) => match self.load_job(&msg.job_id).await {
                    // A job without a chunk is not an extract job, so its task version
                    // is not this worker's.
                    Ok(Some(job)) => match self.admit(&job).await {
                        Some(settle) => settle,
                        None => self.version_mismatch(&job),
                    },
                    Ok(None) => return (None, not_in_ledger(&msg.job_id)),
                    Err(settle) => settle,
                },
                Err(e) => self.store_failed(&msg.job_id, &e, None).await,
            }
        } else {
            match self.load_job(&msg.job_id).await {
                Ok(Some(job)) => match (self.admit(&job).await, &job.input) {
                    (Some(settle), _) => settle,
                    (None, JobInput::Classify { pairs }) => {
                        self.classify(&job, pairs, attempt).await
                    }
                    // Admitted, the job has this worker's task version, which names the
                    // task: an extract job's would not have matched.
                    (None, JobInput::Extract { .. }) => self.version_mismatch(&job),
                },
                Ok(None) => return (None, not_in_ledger(&msg.job_id)),
                Err(settle) => settle,
            }
        };
        (Some(msg.job_id), settle)
    }

    /// The job as the ledger holds it; `Err` is how the delivery ends when the store
    /// fails.
    async fn load_job(&self, job_id: &JobId) -> Result<Option<JobRow>, Settle> {
        match self.store_retry(|| self.store.job(job_id)).await {
            Ok(found) => Ok(found),
            Err(e) => Err(self.store_failed(job_id, &e, None).await),
        }
    }

    /// Whether a loaded job runs: `None` when it does, else how its delivery ends (an
    /// outcome already committed, or another task version).
    async fn admit(&self, job: &JobRow) -> Option<Settle> {
        if job.state.is_terminal() {
            // A crash between an extract commit and publishing its classify jobs is
            // repaired here, on the redelivery.
            let followed = if self.settings.task == Task::Extract && job.state != JobState::Dead {
                self.follow_up(&job.job_id, None).await
            } else {
                Ok(())
            };
            return Some(
                followed
                    .err()
                    .unwrap_or(Settle::Ack(JobOutcome::AlreadyDone)),
            );
        }
        if job.version != self.version {
            return Some(self.version_mismatch(job));
        }
        None
    }

    fn version_mismatch(&self, job: &JobRow) -> Settle {
        let why = format!(
            "job of task version {} (prompt {}, model {}), worker runs {} (prompt {}, model {})",
            short(&job.task_version_fingerprint),
            job.version.prompt_version,
            job.version.model,
            short(&self.version.fingerprint()),
            self.version.prompt_version,
            self.version.model,
        );
        dead(DeadReason::VersionMismatch, why)
    }

    async fn extract(&self, job: &JobRow, chunk: &ChunkRow, attempt: u32) -> Settle {
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
            chunk.title.as_deref(),
            completion.content.as_bytes(),
            None,
        );
        let rejections = judgement.rejections();
        let record = self.new_call(&call, Some(&completion.content), rejections.is_empty());
        let committed = self
            .store_retry(|| {
                self.store
                    .commit_extract(&job.job_id, &record, &judgement, chunk)
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
        crate::new_model_call(&call.record, excerpt)
    }

    /// Retry a store operation while the store is unavailable, bounded in time; never
    /// repeats anything but the store operation itself.
    pub(super) async fn store_retry<T, F, Fut>(&self, op: F) -> Result<T, StoreError>
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

fn not_in_ledger(job_id: &JobId) -> Settle {
    dead(
        DeadReason::MissingInput,
        format!("job {job_id} is not in the ledger"),
    )
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}
