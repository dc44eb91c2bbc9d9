//! The answer path's own metric and the event that moves it. Rejections of model output
//! are counted by the model adapter's `relata_model_invalid_output_total{task="answer"}`,
//! like every other task's.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use relata_core::{AnswerStatus, Reason};

type Labels1 = [(&'static str, &'static str); 1];

/// `relata_answers_total{status}`. Cheap to clone (the family is shared).
#[derive(Debug, Clone, Default)]
pub struct AnswerMetrics {
    answers: Family<Labels1, Counter>,
}

impl AnswerMetrics {
    /// Create the metric and register it.
    pub fn register(registry: &mut Registry) -> AnswerMetrics {
        let m = AnswerMetrics::default();
        registry.register(
            "relata_answers",
            "Questions answered, by outcome (answered, abstained, degraded)",
            m.answers.clone(),
        );
        m
    }
}

/// One question got its answer, and the answer was recorded.
#[derive(Debug)]
pub(crate) struct AnswerFinished<'a> {
    pub answer_id: i64,
    pub status: AnswerStatus,
    pub sources: usize,
    pub reasons: &'a [Reason],
}

impl AnswerFinished<'_> {
    pub fn emit(&self, m: &AnswerMetrics) {
        let reasons: Vec<&str> = self.reasons.iter().map(|r| r.as_str()).collect();
        tracing::info!(
            answer_id = self.answer_id,
            status = self.status.as_str(),
            sources = self.sources,
            reasons = %reasons.join(","),
            "question answered"
        );
        m.answers
            .get_or_create(&[("status", self.status.as_str())])
            .inc();
    }
}
