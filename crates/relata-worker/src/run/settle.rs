//! How a delivery ends: each failure class mapped to a [`Settle`] before the broker is
//! touched, and the broker call that carries the settlement out.
//!
//! The mappings are pure functions of the class the boundary decided (the model adapter's
//! [`ModelError`] variant, the store's [`ErrorKind`]), tested over every class; the
//! worker methods add only the ledger writes and broker calls.

use std::time::Instant;

use relata_core::{DeadReason, JobId, Reason};
use relata_model::{CallRecord, ModelError};
use relata_queue::{Delivery, RetryDecision, RetryPolicy, RetryTier};
use relata_store::{CommitOutcome, ErrorKind, JobRow, JobState, NewModelCall, StoreError};

use super::Worker;
use crate::JobOutcome;
use crate::metrics::{JobDeadLettered, JobFinished, JobRetryScheduled};

/// How a delivery is to be settled, decided before touching the broker.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Settle {
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

pub(super) fn dead(reason: DeadReason, detail: String) -> Settle {
    Settle::Dead { reason, detail }
}

/// What a model error asks for, before the ledger or the broker is touched.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ModelFailure {
    /// A transport failure with deliveries left: count the attempt, then retry through
    /// the broker's delay tier.
    RetryLater { next_attempt: u32, tier: RetryTier },
    /// Record the job dead, then dead-letter it.
    Dead { reason: DeadReason, detail: String },
    /// The provider refuses the deployment itself: every job would fail the same way, so
    /// this one goes back untried and the run loop pauses consumption, instead of
    /// dead-lettering the backlog.
    Hold { detail: String },
    /// An invalid envelope: record it and complete the job.
    Invalid { reason: Reason, detail: String },
}

/// The adapter has decided the class; this only maps it. `detail` is the error's text,
/// already redacted; `attempt` the delivery's (1-based).
pub(super) fn model_failure(
    error: &ModelError,
    policy: &RetryPolicy,
    attempt: u32,
    detail: String,
) -> ModelFailure {
    match error {
        ModelError::Transport { .. } => match policy.decide(attempt) {
            RetryDecision::RetryLater { next_attempt, tier } => {
                ModelFailure::RetryLater { next_attempt, tier }
            }
            RetryDecision::Exhausted { attempts } => ModelFailure::Dead {
                reason: DeadReason::TransportExhausted,
                detail: format!("{attempts} deliveries failed; last: {detail}"),
            },
        },
        ModelError::Permanent { .. } if error.is_configuration_failure() => {
            ModelFailure::Hold { detail }
        }
        // Counted by the adapter when it classified the envelope; recorded by the caller.
        &ModelError::InvalidOutput { reason, .. } => ModelFailure::Invalid { reason, detail },
        // `Permanent` (and any failure the adapter may add): never retried.
        _ => ModelFailure::Dead {
            reason: DeadReason::PermanentProvider,
            detail,
        },
    }
}

/// What a failed store operation does to the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StoreFailure {
    /// Unavailable or contended: the store may be back by the redelivery.
    Requeue,
    /// Anything else (a data exception, a constraint, a missing migration) would fail the
    /// same way every time, and a redelivery would ask the model again: dead-letter
    /// `store_rejected`.
    DeadLetter,
}

pub(super) fn store_failure(kind: ErrorKind) -> StoreFailure {
    if kind.is_retryable() {
        StoreFailure::Requeue
    } else {
        StoreFailure::DeadLetter
    }
}

/// The settlement once the ledger has answered a dead-lettering (`Err` carries the
/// store's error kind).
pub(super) fn after_mark_dead(
    result: Result<&CommitOutcome, ErrorKind>,
    reason: DeadReason,
    detail: &str,
) -> Settle {
    match result {
        Ok(CommitOutcome::Committed(_)) => dead(reason, detail.to_owned()),
        Ok(CommitOutcome::AlreadyCommitted { .. }) => Settle::Ack(JobOutcome::AlreadyDone),
        Err(kind) if kind.is_retryable() => Settle::Requeue,
        // The ledger cannot say so, but the message must still leave the queue: a
        // requeue would bring back the same refusal (and another model call).
        Err(_) => dead(reason, detail.to_owned()),
    }
}

/// What a settlement comes to once the broker has answered (`broker_ok`): the outcome
/// the run counts, and whether it finishes the job in `relata_jobs_total` (a retry, a
/// dead letter and a hold are counted by their own events).
pub(super) fn settled(settle: &Settle, broker_ok: bool) -> (JobOutcome, bool) {
    if !broker_ok {
        // A hold stands even when the broker did not take the job back: the refusal is
        // real and the worker must pause. Anything else comes back as a redelivery,
        // which the ledger answers.
        let outcome = match settle {
            Settle::Hold => JobOutcome::Held,
            _ => JobOutcome::Requeued,
        };
        return (outcome, false);
    }
    match settle {
        &Settle::Ack(outcome) => (outcome, outcome != JobOutcome::Retried),
        Settle::RetryLater { .. } => (JobOutcome::Retried, false),
        Settle::Dead { .. } => (JobOutcome::Dead, false),
        Settle::Requeue => (JobOutcome::Requeued, true),
        Settle::Hold => (JobOutcome::Held, false),
    }
}

/// The outcome of a delivery whose commit left the job in `state`.
pub(super) fn outcome_of(state: JobState) -> JobOutcome {
    match state {
        JobState::Accepted => JobOutcome::Accepted,
        JobState::Partial => JobOutcome::Partial,
        JobState::Invalid => JobOutcome::Invalid,
        JobState::Dead => JobOutcome::Dead,
        JobState::Queued => JobOutcome::Requeued,
    }
}

impl Worker {
    /// Carry out what a model error asks for in the ledger.
    pub(super) async fn on_model_error(
        &self,
        job: &JobRow,
        record: &CallRecord,
        error: &ModelError,
        attempt: u32,
    ) -> Settle {
        let call = crate::new_model_call(record, None);
        let detail = self.model.redact(&error.to_string());
        match model_failure(error, &self.policy, attempt, detail) {
            ModelFailure::RetryLater { next_attempt, tier } => {
                if let Err(e) = self
                    .store_retry(|| self.store.record_attempt(&job.job_id, Some(&call)))
                    .await
                {
                    return self.store_failed(&job.job_id, &e, Some(&call)).await;
                }
                Settle::RetryLater { next_attempt, tier }
            }
            ModelFailure::Dead { reason, detail } => {
                self.mark_dead(&job.job_id, reason, &detail, Some(&call))
                    .await
            }
            ModelFailure::Hold { detail } => {
                self.readiness.set_provider_blocked(Some(detail.clone()));
                *self.lock_refusal() = Some(detail);
                Settle::Hold
            }
            ModelFailure::Invalid { reason, detail } => {
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
        }
    }

    pub(super) async fn mark_dead(
        &self,
        job_id: &JobId,
        reason: DeadReason,
        detail: &str,
        call: Option<&NewModelCall>,
    ) -> Settle {
        let result = self
            .store_retry(|| self.store.mark_dead(job_id, reason, detail, call))
            .await;
        after_mark_dead(result.as_ref().map_err(StoreError::kind), reason, detail)
    }

    /// A store operation failed: see [`StoreFailure`].
    pub(super) async fn store_failed(
        &self,
        job_id: &JobId,
        error: &StoreError,
        call: Option<&NewModelCall>,
    ) -> Settle {
        match store_failure(error.kind()) {
            StoreFailure::Requeue => Settle::Requeue,
            StoreFailure::DeadLetter => {
                let detail =
                    format!("the store refused, for a reason other than availability: {error}");
                self.mark_dead(job_id, DeadReason::StoreRejected, &detail, call)
                    .await
            }
        }
    }

    /// Tell the broker how the delivery ends, and emit what that settles.
    pub(super) async fn settle(
        &self,
        delivery: Delivery,
        job_id: Option<&JobId>,
        settle: Settle,
        taken: Instant,
    ) -> JobOutcome {
        let task = self.settings.task;
        let result = match &settle {
            Settle::Ack(_) => delivery.ack().await,
            &Settle::RetryLater { next_attempt, tier } => {
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
                r
            }
            Settle::Dead { reason, detail } => {
                let r = delivery.dead_letter(*reason, detail).await;
                if r.is_ok() {
                    JobDeadLettered {
                        task,
                        reason: *reason,
                        detail,
                    }
                    .emit(&self.metrics);
                }
                r
            }
            Settle::Requeue => {
                tracing::warn!("store unavailable; delivery requeued");
                delivery.requeue().await
            }
            Settle::Hold => delivery.return_unharmed().await,
        };
        match (&settle, &result) {
            (Settle::Hold, Ok(())) => {
                tracing::info!("provider refuses the deployment; job returned to the queue untried")
            }
            (Settle::Hold, Err(e)) => {
                tracing::warn!(error = %e, "returning the job failed; the broker will redeliver it")
            }
            (Settle::Dead { .. }, Err(e)) => {
                tracing::warn!(error = %e, job_id = ?job_id.map(JobId::as_str), "dead-lettering failed; the delivery will come back")
            }
            // The outcome (if any) is committed; the broker will redeliver and the ledger
            // will answer "already done".
            (_, Err(e)) => {
                tracing::warn!(error = %e, "settling the delivery failed; it will be redelivered")
            }
            (_, Ok(())) => {}
        }
        let (outcome, finished) = settled(&settle, result.is_ok());
        if finished {
            JobFinished {
                task,
                outcome,
                duration: taken.elapsed(),
            }
            .emit(&self.metrics);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relata_model::{ErrorClass, TransportKind};
    use relata_store::{Committed, RowCounts};

    fn tiers() -> RetryPolicy {
        RetryPolicy::new(
            vec![
                RetryTier::from_millis(5_000),
                RetryTier::from_millis(30_000),
            ],
            3,
        )
    }

    fn transport(kind: TransportKind) -> ModelError {
        ModelError::Transport {
            kind,
            retry_after: None,
            detail: "reset".into(),
        }
    }

    fn permanent(status: u16) -> ModelError {
        ModelError::Permanent {
            status,
            message: "no".into(),
        }
    }

    fn invalid(reason: Reason) -> ModelError {
        ModelError::InvalidOutput {
            reason,
            detail: "cut off".into(),
        }
    }

    fn map(error: &ModelError, attempt: u32) -> ModelFailure {
        model_failure(error, &tiers(), attempt, "detail".into())
    }

    #[test]
    fn every_error_class_has_its_settlement() {
        for &class in ErrorClass::ALL {
            let (error, wanted) = match class {
                ErrorClass::Transport => (
                    transport(TransportKind::ALL[0]),
                    ModelFailure::RetryLater {
                        next_attempt: 2,
                        tier: RetryTier::from_millis(5_000),
                    },
                ),
                ErrorClass::Permanent => (
                    permanent(400),
                    ModelFailure::Dead {
                        reason: DeadReason::PermanentProvider,
                        detail: "detail".into(),
                    },
                ),
                ErrorClass::InvalidOutput => (
                    invalid(Reason::Truncated),
                    ModelFailure::Invalid {
                        reason: Reason::Truncated,
                        detail: "detail".into(),
                    },
                ),
            };
            assert_eq!(error.class(), class);
            assert_eq!(map(&error, 1), wanted, "{class}");
        }
    }

    #[test]
    fn every_transport_kind_retries_through_the_tiers_then_is_dead_lettered() {
        for &kind in TransportKind::ALL {
            let e = transport(kind);
            assert_eq!(
                map(&e, 2),
                ModelFailure::RetryLater {
                    next_attempt: 3,
                    tier: RetryTier::from_millis(30_000)
                },
                "{kind}"
            );
            assert_eq!(
                map(&e, 3),
                ModelFailure::Dead {
                    reason: DeadReason::TransportExhausted,
                    detail: "3 deliveries failed; last: detail".into()
                },
                "{kind}"
            );
        }
    }

    #[test]
    fn a_refused_deployment_holds_and_any_other_permanent_error_dead_letters() {
        for status in [301, 302, 307, 308, 401, 403, 404] {
            assert_eq!(
                map(&permanent(status), 1),
                ModelFailure::Hold {
                    detail: "detail".into()
                },
                "{status}"
            );
        }
        // 500 as a permanent error: a server that answers an unknown request shape so.
        for status in [400, 405, 413, 422, 500] {
            assert_eq!(
                map(&permanent(status), 1),
                ModelFailure::Dead {
                    reason: DeadReason::PermanentProvider,
                    detail: "detail".into()
                },
                "{status}"
            );
        }
    }

    #[test]
    fn every_invalid_output_reason_is_recorded_never_retried() {
        for &reason in Reason::ALL {
            let wanted = ModelFailure::Invalid {
                reason,
                detail: "detail".into(),
            };
            assert_eq!(map(&invalid(reason), 1), wanted, "{reason}");
            assert_eq!(map(&invalid(reason), 3), map(&invalid(reason), 1));
        }
    }

    /// Every kind the store has today (the enum is non-exhaustive, so a new one must be
    /// added here by hand).
    const STORE_KINDS: [ErrorKind; 10] = [
        ErrorKind::Unavailable,
        ErrorKind::Contention,
        ErrorKind::NotFound,
        ErrorKind::InvalidInput,
        ErrorKind::Invariant,
        ErrorKind::Migration,
        ErrorKind::NotMigrated,
        ErrorKind::Refused,
        ErrorKind::ChainBroken,
        ErrorKind::Other,
    ];

    #[test]
    fn only_an_unavailable_or_contended_store_requeues() {
        for kind in STORE_KINDS {
            let wanted = match kind {
                ErrorKind::Unavailable | ErrorKind::Contention => StoreFailure::Requeue,
                _ => StoreFailure::DeadLetter,
            };
            assert_eq!(store_failure(kind), wanted, "{kind:?}");
        }
    }

    #[test]
    fn a_dead_lettering_settles_by_what_the_ledger_answered() {
        let reason = DeadReason::PermanentProvider;
        let committed = CommitOutcome::Committed(Committed {
            call_id: None,
            state: JobState::Dead,
            entity_ids: Vec::new(),
            claim_ids: Vec::new(),
            relation_ids: Vec::new(),
            counts: RowCounts::default(),
            candidates: Vec::new(),
        });
        assert_eq!(
            after_mark_dead(Ok(&committed), reason, "401"),
            dead(reason, "401".into())
        );
        for &state in JobState::ALL {
            let already = CommitOutcome::AlreadyCommitted { state };
            assert_eq!(
                after_mark_dead(Ok(&already), reason, "401"),
                Settle::Ack(JobOutcome::AlreadyDone)
            );
        }
        for kind in STORE_KINDS {
            let wanted = match store_failure(kind) {
                StoreFailure::Requeue => Settle::Requeue,
                StoreFailure::DeadLetter => dead(reason, "401".into()),
            };
            assert_eq!(
                after_mark_dead(Err(kind), reason, "401"),
                wanted,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn every_settlement_has_its_outcome_whatever_the_broker_answers() {
        let tier = RetryTier::from_millis(5_000);
        let cases = [
            (
                Settle::Ack(JobOutcome::Accepted),
                (JobOutcome::Accepted, true),
            ),
            (
                Settle::RetryLater {
                    next_attempt: 2,
                    tier,
                },
                (JobOutcome::Retried, false),
            ),
            (
                dead(DeadReason::Poison, "x".into()),
                (JobOutcome::Dead, false),
            ),
            (Settle::Requeue, (JobOutcome::Requeued, true)),
            (Settle::Hold, (JobOutcome::Held, false)),
        ];
        for (settle, on_success) in cases {
            // Written as a match so that a new kind of settlement must be added above.
            let on_failure = match &settle {
                Settle::Hold => (JobOutcome::Held, false),
                Settle::Ack(_)
                | Settle::RetryLater { .. }
                | Settle::Dead { .. }
                | Settle::Requeue => (JobOutcome::Requeued, false),
            };
            assert_eq!(settled(&settle, true), on_success, "{settle:?}");
            assert_eq!(settled(&settle, false), on_failure, "{settle:?}");
        }
        for &outcome in JobOutcome::ALL {
            let finished = outcome != JobOutcome::Retried;
            assert_eq!(settled(&Settle::Ack(outcome), true), (outcome, finished));
        }
    }

    #[test]
    fn every_committed_state_has_its_outcome() {
        for &state in JobState::ALL {
            let wanted = match state {
                JobState::Accepted => JobOutcome::Accepted,
                JobState::Partial => JobOutcome::Partial,
                JobState::Invalid => JobOutcome::Invalid,
                JobState::Dead => JobOutcome::Dead,
                JobState::Queued => JobOutcome::Requeued,
            };
            assert_eq!(outcome_of(state), wanted, "{state}");
        }
    }
}
