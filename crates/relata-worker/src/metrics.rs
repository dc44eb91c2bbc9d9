//! Job-level metrics and the events that move them.
//!
//! Each event is one struct with an `emit` that writes the log line and moves the counter
//! together, so a call site says what happened and never how it is counted. Label values
//! come only from closed enums.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use relata_core::{Check, DeadReason, RowKind, Task};
use relata_validate::GateConfig;

use crate::JobOutcome;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskOutcomeLabels {
    task: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    task: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskReasonLabels {
    task: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskKindLabels {
    task: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    check: &'static str,
    severity: &'static str,
}

/// The worker's own metric families (the model adapter registers its own).
#[derive(Clone, Debug)]
pub struct JobMetrics {
    jobs: Family<TaskOutcomeLabels, Counter>,
    duration: Family<TaskOutcomeLabels, Histogram>,
    retries: Family<TaskLabels, Counter>,
    dead_lettered: Family<TaskReasonLabels, Counter>,
    rows_committed: Family<TaskKindLabels, Counter>,
    check_enabled: Family<CheckLabels, Gauge>,
    paused: Family<TaskLabels, Gauge>,
}

fn job_duration_histogram() -> Histogram {
    // 1 ms (an already-committed redelivery) .. ~15 min (a slow local model behind
    // adapter retries): 16 buckets, each 2.5 times the last.
    Histogram::new(exponential_buckets(0.001, 2.5, 16))
}

impl Default for JobMetrics {
    /// Metrics not attached to any registry (for tests that do not export).
    fn default() -> Self {
        JobMetrics {
            jobs: Family::default(),
            duration: Family::new_with_constructor(job_duration_histogram),
            retries: Family::default(),
            dead_lettered: Family::default(),
            rows_committed: Family::default(),
            check_enabled: Family::default(),
            paused: Family::default(),
        }
    }
}

impl JobMetrics {
    pub fn register(registry: &mut Registry) -> JobMetrics {
        let m = JobMetrics::default();
        registry.register(
            "relata_jobs",
            "Jobs finished, by task and outcome",
            m.jobs.clone(),
        );
        registry.register(
            "relata_job_duration_seconds",
            "Time from taking a delivery to settling it with the broker (look-up, model call, gate, commit, follow-up, ack), by task and outcome",
            m.duration.clone(),
        );
        registry.register(
            "relata_job_retries",
            "Jobs sent back through a delayed-retry queue after transport failures",
            m.retries.clone(),
        );
        registry.register(
            "relata_jobs_dead_lettered",
            "Jobs dead-lettered, by task and reason",
            m.dead_lettered.clone(),
        );
        registry.register(
            "relata_rows_committed",
            "Model-proposed rows committed to the store, by task and row kind",
            m.rows_committed.clone(),
        );
        registry.register(
            "relata_validation_check_enabled",
            "1 when a validation check runs, 0 when it is switched off; severity as a label",
            m.check_enabled.clone(),
        );
        registry.register(
            "relata_worker_consumption_paused",
            "1 while the worker has stopped consuming because the model provider refuses the deployment (key, model, endpoint); jobs stay queued",
            m.paused.clone(),
        );
        m
    }

    /// Export the pause gauge at 0 from the start, so that an alert on it never sees
    /// "absent" where it should see "not paused".
    pub fn consuming(&self, task: Task) {
        self.paused
            .get_or_create(&TaskLabels {
                task: task.as_str(),
            })
            .set(0);
    }
}

/// The gate's settings at start-up: logged once and exported, so that a 0% failure rate
/// can never be mistaken for "nothing is checked".
#[derive(Debug)]
pub struct ChecksConfigured<'a>(pub &'a GateConfig);

impl ChecksConfigured<'_> {
    pub fn emit(&self, m: &JobMetrics) {
        for check in Check::ALL {
            let s = self.0.setting(*check);
            for severity in relata_core::Severity::ALL {
                let v = i64::from(s.enabled && s.severity == *severity);
                m.check_enabled
                    .get_or_create(&CheckLabels {
                        check: check.as_str(),
                        severity: severity.as_str(),
                    })
                    .set(v);
            }
            if s.enabled {
                tracing::info!(
                    check = check.as_str(),
                    severity = s.severity.as_str(),
                    "validation check enabled"
                );
            } else {
                tracing::warn!(check = check.as_str(), "validation check DISABLED");
            }
        }
    }
}

/// A job reached a final outcome for this delivery.
#[derive(Debug)]
pub struct JobFinished {
    pub task: Task,
    pub outcome: JobOutcome,
    /// From taking the delivery to settling it.
    pub duration: std::time::Duration,
}

impl JobFinished {
    pub fn emit(&self, m: &JobMetrics) {
        tracing::info!(
            outcome = self.outcome.as_str(),
            duration_ms = self.duration.as_secs_f64() * 1000.0,
            "job finished"
        );
        let labels = TaskOutcomeLabels {
            task: self.task.as_str(),
            outcome: self.outcome.as_str(),
        };
        m.jobs.get_or_create(&labels).inc();
        m.duration
            .get_or_create(&labels)
            .observe(self.duration.as_secs_f64());
    }
}

/// A job goes back through a delayed-retry queue.
#[derive(Debug)]
pub struct JobRetryScheduled {
    pub task: Task,
    pub attempt: u32,
    pub delay_ms: u64,
}

impl JobRetryScheduled {
    pub fn emit(&self, m: &JobMetrics) {
        tracing::warn!(
            attempt = self.attempt,
            delay_ms = self.delay_ms,
            "transport failures persist; job requeued with delay"
        );
        m.retries
            .get_or_create(&TaskLabels {
                task: self.task.as_str(),
            })
            .inc();
    }
}

/// A job was dead-lettered.
#[derive(Debug)]
pub struct JobDeadLettered<'a> {
    pub task: Task,
    pub reason: DeadReason,
    pub detail: &'a str,
}

impl JobDeadLettered<'_> {
    pub fn emit(&self, m: &JobMetrics) {
        tracing::error!(
            reason = self.reason.as_str(),
            detail = self.detail,
            "job dead-lettered"
        );
        m.dead_lettered
            .get_or_create(&TaskReasonLabels {
                task: self.task.as_str(),
                reason: self.reason.as_str(),
            })
            .inc();
        m.jobs
            .get_or_create(&TaskOutcomeLabels {
                task: self.task.as_str(),
                outcome: JobOutcome::Dead.as_str(),
            })
            .inc();
    }
}

/// Rows committed for a job.
#[derive(Debug)]
pub struct RowsCommitted {
    pub task: Task,
    pub kind: RowKind,
    pub count: u64,
}

impl RowsCommitted {
    pub fn emit(&self, m: &JobMetrics) {
        if self.count > 0 {
            m.rows_committed
                .get_or_create(&TaskKindLabels {
                    task: self.task.as_str(),
                    kind: self.kind.as_str(),
                })
                .inc_by(self.count);
        }
    }
}

/// The worker stopped consuming: the provider refuses the deployment. Loud: nothing moves
/// until an operator fixes the key, the model name or the URL.
#[derive(Debug)]
pub struct ConsumptionPaused<'a> {
    pub task: Task,
    /// The provider's refusal, already bounded and redacted.
    pub why: &'a str,
    pub retry_in: std::time::Duration,
    pub exiting: bool,
}

impl ConsumptionPaused<'_> {
    pub fn emit(&self, m: &JobMetrics) {
        tracing::error!(
            why = self.why,
            retry_in_ms = u64::try_from(self.retry_in.as_millis()).unwrap_or(u64::MAX),
            exiting = self.exiting,
            "model provider refuses this deployment (check RELATA_MODEL_API_KEY, RELATA_MODEL_NAME, RELATA_MODEL_URL): consumption paused, jobs stay queued"
        );
        m.paused
            .get_or_create(&TaskLabels {
                task: self.task.as_str(),
            })
            .set(1);
    }
}

/// The provider answered again: the worker consumes.
#[derive(Debug)]
pub struct ConsumptionResumed {
    pub task: Task,
    pub paused_for: std::time::Duration,
}

impl ConsumptionResumed {
    pub fn emit(&self, m: &JobMetrics) {
        tracing::info!(
            paused_ms = u64::try_from(self.paused_for.as_millis()).unwrap_or(u64::MAX),
            "model provider answers again: consumption resumed"
        );
        m.paused
            .get_or_create(&TaskLabels {
                task: self.task.as_str(),
            })
            .set(0);
    }
}
