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
use relata_ops::{CheckConfigured, CheckEnabledMetric};
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

/// The worker's own metric families (the model adapter registers its own).
#[derive(Clone, Debug)]
pub struct JobMetrics {
    jobs: Family<TaskOutcomeLabels, Counter>,
    duration: Family<TaskOutcomeLabels, Histogram>,
    retries: Family<TaskLabels, Counter>,
    dead_lettered: Family<TaskReasonLabels, Counter>,
    rows_committed: Family<TaskKindLabels, Counter>,
    check_enabled: CheckEnabledMetric,
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
            check_enabled: CheckEnabledMetric::default(),
            paused: Family::default(),
        }
    }
}

impl JobMetrics {
    pub fn register(registry: &mut Registry) -> JobMetrics {
        let mut m = JobMetrics::default();
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
        m.check_enabled = CheckEnabledMetric::register(registry);
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
            CheckConfigured {
                check: check.as_str(),
                severity: s.severity.as_str(),
                enabled: s.enabled,
            }
            .emit(&m.check_enabled);
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

/// The worker's periodic one-line summary, for a person tailing the log: jobs finished
/// since the last summary by outcome, the rate per minute, the total, and how many jobs
/// wait in the task's work queue. The counts are the run's own (those the run loop
/// records as each job ends), so the line and `relata_jobs_total` count the same jobs.
#[derive(Debug)]
pub struct WorkerProgress<'a> {
    pub task: Task,
    /// Jobs finished since the last summary, by outcome.
    pub since_last: &'a std::collections::BTreeMap<JobOutcome, u64>,
    /// The time since the last summary (or the start).
    pub elapsed: std::time::Duration,
    /// Jobs finished since the worker started.
    pub total: u64,
    /// Ready messages in the task's work queue; `None` when the broker did not say.
    pub queue_depth: Option<u32>,
}

impl WorkerProgress<'_> {
    /// Jobs finished since the last summary.
    pub fn done(&self) -> u64 {
        self.since_last.values().sum()
    }

    /// Jobs per minute over the interval.
    pub fn per_minute(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.done() as f64 * 60.0 / secs
        } else {
            0.0
        }
    }

    /// `extract: 12 jobs (accepted 10, invalid 2) in 60 s, 12.0/min; 340 since start; 88 queued`
    pub fn line(&self) -> String {
        let outcomes: Vec<String> = self
            .since_last
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(o, n)| format!("{o} {n}"))
            .collect();
        let done = match self.done() {
            0 => "no jobs".to_owned(),
            1 => format!("1 job ({})", outcomes.join(", ")),
            n => format!("{n} jobs ({})", outcomes.join(", ")),
        };
        let queued = match self.queue_depth {
            Some(n) => format!("{n} queued"),
            None => "queue depth unknown".to_owned(),
        };
        format!(
            "{}: {done} in {} s, {:.1}/min; {} since start; {queued}",
            self.task,
            self.elapsed.as_secs(),
            self.per_minute(),
            self.total,
        )
    }

    pub fn emit(&self) {
        tracing::info!(
            task = self.task.as_str(),
            done = self.done(),
            per_minute = self.per_minute(),
            total = self.total,
            queue_depth = self.queue_depth,
            "{}",
            self.line()
        );
    }
}

/// The counts at the last summary, so that each summary shows what happened since.
#[derive(Debug)]
pub(crate) struct ProgressTally {
    last: std::collections::BTreeMap<JobOutcome, u64>,
    at: std::time::Instant,
}

impl ProgressTally {
    pub(crate) fn new(now: std::time::Instant) -> ProgressTally {
        ProgressTally {
            last: std::collections::BTreeMap::new(),
            at: now,
        }
    }

    /// What `totals` (the run's counts so far) added since the last call, and over how
    /// long; remembers `totals` and `now` for the next.
    pub(crate) fn since_last(
        &mut self,
        totals: &std::collections::BTreeMap<JobOutcome, u64>,
        now: std::time::Instant,
    ) -> (
        std::collections::BTreeMap<JobOutcome, u64>,
        std::time::Duration,
    ) {
        let since = totals
            .iter()
            .map(|(o, n)| (*o, n - self.last.get(o).copied().unwrap_or(0).min(*n)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let elapsed = now.saturating_duration_since(self.at);
        self.last = totals.clone();
        self.at = now;
        (since, elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    /// The exported `relata_validation_check_enabled` samples: (check, severity, value).
    fn check_enabled_samples(config: &GateConfig) -> Vec<(String, String, String)> {
        let mut registry = Registry::default();
        let m = JobMetrics::register(&mut registry);
        ChecksConfigured(config).emit(&m);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text.lines()
            .filter(|l| l.starts_with("relata_validation_check_enabled{"))
            .map(|l| {
                let label = |name: &str| {
                    let start = l.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    l[start..start + l[start..].find('"').unwrap()].to_owned()
                };
                let value = l.rsplit(' ').next().unwrap().to_owned();
                (label("check"), label("severity"), value)
            })
            .collect()
    }

    #[test]
    fn a_running_check_exports_no_zero_and_a_disabled_one_exports_one() {
        // The alert RelataValidationCheckDisabled fires on any `== 0` sample.
        let shipped = GateConfig::default();
        let samples = check_enabled_samples(&shipped);
        assert_eq!(samples.len(), Check::ALL.len(), "{samples:?}");
        for (check, severity, value) in &samples {
            let c = Check::ALL.iter().find(|c| c.as_str() == check).unwrap();
            let s = shipped.setting(*c);
            assert_eq!(severity, s.severity.as_str(), "{check}");
            assert_eq!(value, if s.enabled { "1" } else { "0" }, "{check}");
        }

        let mut off = GateConfig::default();
        let degenerate = off.setting(Check::Degenerate);
        off.set(
            Check::Degenerate,
            relata_validate::CheckSetting {
                enabled: false,
                ..degenerate
            },
        )
        .unwrap();
        let zeros: Vec<_> = check_enabled_samples(&off)
            .into_iter()
            .filter(|(_, _, v)| v == "0")
            .collect();
        assert_eq!(
            zeros,
            vec![(
                "degenerate".to_owned(),
                degenerate.severity.as_str().to_owned(),
                "0".to_owned()
            )]
        );
    }

    #[test]
    fn the_tally_gives_what_happened_since_the_last_summary() {
        let t0 = Instant::now();
        let mut tally = ProgressTally::new(t0);
        let mut totals = BTreeMap::from([(JobOutcome::Accepted, 3), (JobOutcome::Dead, 1)]);
        let (since, elapsed) = tally.since_last(&totals, t0 + Duration::from_secs(60));
        assert_eq!(since, totals);
        assert_eq!(elapsed, Duration::from_secs(60));
        *totals.entry(JobOutcome::Accepted).or_default() += 2;
        totals.insert(JobOutcome::Invalid, 1);
        let (since, elapsed) = tally.since_last(&totals, t0 + Duration::from_secs(90));
        assert_eq!(
            since,
            BTreeMap::from([(JobOutcome::Accepted, 2), (JobOutcome::Invalid, 1)])
        );
        assert_eq!(elapsed, Duration::from_secs(30));
        let (since, _) = tally.since_last(&totals, t0 + Duration::from_secs(120));
        assert!(since.is_empty());
    }

    #[test]
    fn the_progress_line_counts_by_outcome_with_the_rate_and_the_queue() {
        let since: BTreeMap<JobOutcome, u64> = [
            (JobOutcome::Accepted, 10),
            (JobOutcome::Invalid, 2),
            (JobOutcome::Retried, 0),
        ]
        .into();
        let p = WorkerProgress {
            task: Task::Extract,
            since_last: &since,
            elapsed: Duration::from_secs(30),
            total: 340,
            queue_depth: Some(88),
        };
        assert_eq!(p.done(), 12);
        assert_eq!(p.per_minute(), 24.0);
        assert_eq!(
            p.line(),
            "extract: 12 jobs (accepted 10, invalid 2) in 30 s, 24.0/min; 340 since start; 88 queued"
        );

        let none = BTreeMap::new();
        let p = WorkerProgress {
            task: Task::Classify,
            since_last: &none,
            elapsed: Duration::from_secs(60),
            total: 0,
            queue_depth: None,
        };
        assert_eq!(
            p.line(),
            "classify: no jobs in 60 s, 0.0/min; 0 since start; queue depth unknown"
        );
    }
}
