//! relata's job runtime, shared by the extractor and the classifier.
//!
//! For each delivery, in this order and no other:
//!
//! 1. decode the message (undecodable → dead-letter `poison`, never requeued: a message
//!    that cannot be read will not become readable);
//! 2. look the job up in the ledger, with an extract job's chunk in the same query —
//!    unknown → `missing_input`; already terminal → ack with no model call (guarantee 8);
//!    another task version → `version_mismatch`;
//! 3. ask the model; the adapter has already retried transport failures in-process, so a
//!    transport error here goes back through the broker's delayed-retry tiers and, when
//!    those are spent, is dead-lettered `transport_exhausted`; a permanent provider error
//!    is dead-lettered at once; an invalid envelope is recorded and the job completes;
//! 4. judge the content with the gate, row by row;
//! 5. commit the call record, accepted rows, rejections and job state in one transaction,
//!    retrying the *commit* (never the model call) while the store is unavailable, and
//!    requeueing the delivery if it stays unavailable;
//! 6. only then settle the delivery.
//!
//! A provider that refuses the deployment itself (401, 403, model or route not found, a
//! redirect) is not a per-job failure: the job is put back untried
//! ([`relata_queue::Delivery::return_unharmed`], which does not count towards the
//! delivery limit), the worker stops consuming, `/readyz` drops,
//! `relata_worker_consumption_paused` goes to 1, and the provider is asked again on a
//! slow, bounded schedule ([`OnProviderRefusal`]). A backlog waits in its queue instead of
//! draining into dead letters.
//!
//! Beside the job loop, never inside it, a [`Promoter`] runs the promotion policy over
//! the candidates the commits wrote, which each job hands it without waiting
//! ([`Proposals`]), on its own store connection: a store that cannot record decisions
//! delays promotion, never a job.
//!
//! Invalid output is counted after its commit, so one rejection moves
//! `relata_model_invalid_output_total` exactly once even when the commit had to be
//! retried.
// A function over 100 lines (clippy's default threshold) is split by concern; tests are
// exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod http;
mod metrics;
mod promote;
mod run;

pub use http::{Readiness, router, serve};
pub use metrics::{
    ChecksConfigured, ConsumptionPaused, ConsumptionResumed, JobDeadLettered, JobFinished,
    JobMetrics, JobRetryScheduled, RowsCommitted, WorkerProgress,
};
pub use promote::{
    HANDOFF_BATCH, HANDOFF_CAPACITY, HandoffsDropped, JudgedFrom, Promoter, PromoterSettings,
    PromotionDecided, PromotionFailed, PromotionMetrics, Proposals, ReviewQueueObserved,
};
pub use run::{RunSummary, Worker, WorkerError, WorkerSettings};

/// The store's record of one model call, from the adapter's: the one translation of a
/// call's provenance for every path that records calls (the job loop, `relata entities
/// propose`). `excerpt` replaces the adapter's own when given.
pub fn new_model_call(
    record: &relata_model::CallRecord,
    excerpt: Option<String>,
) -> relata_store::NewModelCall {
    relata_store::NewModelCall {
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

relata_core::closed_enum! {
    /// How one delivery of a job ended (the `outcome` label of `relata_jobs_total`).
    pub enum JobOutcome: "job outcome" {
        /// Every row accepted (or a valid response with no rows).
        Accepted = "accepted",
        /// Some rows accepted, some rejected.
        Partial = "partial",
        /// The response, or every row of it, was rejected; recorded, not retried.
        Invalid = "invalid",
        /// Redelivered after its outcome was committed: acked without a model call.
        AlreadyDone = "already_done",
        /// Transport failures: sent back through a delayed-retry queue.
        Retried = "retried",
        /// Dead-lettered.
        Dead = "dead",
        /// The store stayed unavailable: the delivery was requeued.
        Requeued = "requeued",
        /// The provider refuses this deployment (key, model, endpoint): the job was put
        /// back untried, without counting a delivery, while the worker pauses.
        Held = "held",
    }
}

relata_core::closed_enum! {
    /// What a worker does when the provider refuses the deployment itself (401, 403, model
    /// or route not found, a redirect): every job would fail the same way.
    pub enum OnProviderRefusal: "provider refusal policy" {
        /// Stop consuming, keep the jobs queued, and ask the provider again on a slow,
        /// bounded schedule; resume when it answers.
        Pause = "pause",
        /// Stop consuming, put the jobs back, and exit non-zero (for supervisors that
        /// should restart or alert instead).
        Exit = "exit",
    }
}
