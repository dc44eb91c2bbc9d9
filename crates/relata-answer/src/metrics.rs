//! The answer path's own metrics and the events that move them. Rejections of model output
//! are counted by the model adapter's `relata_model_invalid_output_total{task="answer"}`,
//! like every other task's; the answer gate's checks are exported as the workers' are, in
//! `relata_validation_check_enabled`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use relata_core::{AnswerStatus, Reason};
use relata_ops::{CheckConfigured, CheckEnabledMetric};
use relata_validate::AnswerConfig;

type Labels1 = [(&'static str, &'static str); 1];

/// `relata_answers_total{status}`, `relata_answer_duration_seconds{status}` and
/// `relata_validation_check_enabled{check, severity}`. Cheap to clone (the families are
/// shared).
#[derive(Debug, Clone)]
pub struct AnswerMetrics {
    answers: Family<Labels1, Counter>,
    duration: Family<Labels1, Histogram>,
    check_enabled: CheckEnabledMetric,
}

fn duration_histogram() -> Histogram {
    // 5 ms (retrieval and validation alone, no model: an abstention without sources)
    // to about 80 s (a slow model with its retries).
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

impl Default for AnswerMetrics {
    fn default() -> AnswerMetrics {
        AnswerMetrics {
            answers: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            check_enabled: CheckEnabledMetric::default(),
        }
    }
}

impl AnswerMetrics {
    /// Create the metric and register it.
    pub fn register(registry: &mut Registry) -> AnswerMetrics {
        let mut m = AnswerMetrics::default();
        registry.register(
            "relata_answers",
            "Questions answered, by outcome (answered, abstained, degraded)",
            m.answers.clone(),
        );
        registry.register(
            "relata_answer_duration_seconds",
            "Time to answer one question (retrieval, the model with its retries, validation, the record), by outcome",
            m.duration.clone(),
        );
        m.check_enabled = CheckEnabledMetric::register(registry);
        m
    }
}

/// The answer gate's settings at start-up: logged once and exported, like the workers'
/// gate, so that the alert on a disabled check covers the answer checks too.
#[derive(Debug)]
pub struct AnswerChecksConfigured<'a>(pub &'a AnswerConfig);

impl AnswerChecksConfigured<'_> {
    pub fn emit(&self, m: &AnswerMetrics) {
        for (check, s) in self.0.iter() {
            CheckConfigured {
                check: check.as_str(),
                severity: s.severity.as_str(),
                enabled: s.enabled,
            }
            .emit(&m.check_enabled);
        }
    }
}

/// One question got its answer, and the answer was recorded.
#[derive(Debug)]
pub(crate) struct AnswerFinished<'a> {
    pub answer_id: i64,
    pub status: AnswerStatus,
    pub sources: usize,
    pub reasons: &'a [Reason],
    pub duration: std::time::Duration,
}

impl AnswerFinished<'_> {
    pub fn emit(&self, m: &AnswerMetrics) {
        let reasons: Vec<&str> = self.reasons.iter().map(|r| r.as_str()).collect();
        tracing::info!(
            answer_id = self.answer_id,
            status = self.status.as_str(),
            sources = self.sources,
            reasons = %reasons.join(","),
            duration_ms = u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "question answered"
        );
        let labels = [("status", self.status.as_str())];
        m.answers.get_or_create(&labels).inc();
        m.duration
            .get_or_create(&labels)
            .observe(self.duration.as_secs_f64());
    }
}
