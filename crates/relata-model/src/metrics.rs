//! Metrics and the events that move them.
//!
//! One struct per event; its `emit` writes the log line and moves the metric together, so
//! a call site says what happened, never how it is counted. Every label value comes from a
//! closed enum (`Task`, `Reason`, [`RequestOutcome`], [`TransportKind`], token kind); no
//! error string ever becomes a label.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use relata_core::{Reason, Task};

use crate::error::{ErrorClass, TransportKind};
use crate::wire::Usage;

type Labels1 = [(&'static str, &'static str); 1];
type Labels2 = [(&'static str, &'static str); 2];

relata_core::closed_enum! {
    /// The `outcome` label of `relata_model_requests_total`: how one HTTP request ended.
    pub enum RequestOutcome: "request outcome" {
        /// A usable 200 (the gate judges its content separately).
        Ok = "ok",
        Transport = "transport",
        Permanent = "permanent",
        InvalidOutput = "invalid_output",
    }
}

impl RequestOutcome {
    pub fn from_class(class: ErrorClass) -> RequestOutcome {
        match class {
            ErrorClass::Transport => RequestOutcome::Transport,
            ErrorClass::Permanent => RequestOutcome::Permanent,
            ErrorClass::InvalidOutput => RequestOutcome::InvalidOutput,
        }
    }
}

/// The adapter's metrics. Cheap to clone (the families are shared).
#[derive(Debug, Clone)]
pub struct ModelMetrics {
    requests: Family<Labels2, Counter>,
    duration: Family<Labels1, Histogram>,
    tokens: Family<Labels2, Counter>,
    transport_errors: Family<Labels2, Counter>,
    invalid_output: Family<Labels2, Counter>,
    usage_ignored: Family<Labels1, Counter>,
}

fn duration_histogram() -> Histogram {
    // 50 ms .. ~100 s.
    Histogram::new(exponential_buckets(0.05, 2.0, 12))
}

impl Default for ModelMetrics {
    /// Metrics not attached to any registry (for tools and tests that do not export).
    fn default() -> Self {
        ModelMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            tokens: Family::default(),
            transport_errors: Family::default(),
            invalid_output: Family::default(),
            usage_ignored: Family::default(),
        }
    }
}

impl ModelMetrics {
    /// Create the metrics and register them.
    pub fn register(registry: &mut Registry) -> ModelMetrics {
        let m = ModelMetrics::default();
        registry.register(
            "relata_model_requests",
            "HTTP requests to the model endpoint, by how each ended",
            m.requests.clone(),
        );
        registry.register(
            "relata_model_request_duration_seconds",
            "Duration of one HTTP request to the model endpoint, body included",
            m.duration.clone(),
        );
        registry.register(
            "relata_model_tokens",
            "Tokens reported by the provider (kind: prompt, completion)",
            m.tokens.clone(),
        );
        registry.register(
            "relata_model_transport_errors",
            "Transport failures (each attempt), by kind",
            m.transport_errors.clone(),
        );
        registry.register(
            "relata_model_invalid_output",
            "Model outputs rejected (whole responses at envelope or syntax level, or single rows), by reason",
            m.invalid_output.clone(),
        );
        registry.register(
            "relata_model_usage_ignored",
            "Responses whose reported token usage was nonsensical (negative, fractional, above any context window) and was not counted",
            m.usage_ignored.clone(),
        );
        m
    }
}

/// One HTTP request ended.
#[derive(Debug)]
pub(crate) struct RequestFinished {
    pub task: Task,
    pub outcome: RequestOutcome,
    pub duration: Duration,
    pub attempt: u32,
}

impl RequestFinished {
    pub fn emit(&self, m: &ModelMetrics) {
        tracing::debug!(
            task = self.task.as_str(),
            outcome = self.outcome.as_str(),
            attempt = self.attempt,
            duration_ms = u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "model request finished"
        );
        m.requests
            .get_or_create(&[
                ("task", self.task.as_str()),
                ("outcome", self.outcome.as_str()),
            ])
            .inc();
        m.duration
            .get_or_create(&[("task", self.task.as_str())])
            .observe(self.duration.as_secs_f64());
    }
}

/// The provider reported token usage.
#[derive(Debug)]
pub(crate) struct TokensUsed {
    pub task: Task,
    pub usage: Usage,
}

impl TokensUsed {
    pub fn emit(&self, m: &ModelMetrics) {
        m.tokens
            .get_or_create(&[("task", self.task.as_str()), ("kind", "prompt")])
            .inc_by(self.usage.prompt_tokens);
        m.tokens
            .get_or_create(&[("task", self.task.as_str()), ("kind", "completion")])
            .inc_by(self.usage.completion_tokens);
    }
}

/// The provider reported a usage no call can have; it is neither counted nor stored, and
/// the answer it came with is kept.
#[derive(Debug)]
pub(crate) struct UsageIgnored<'a> {
    pub task: Task,
    /// Already bounded; holds numbers only.
    pub why: &'a str,
}

impl UsageIgnored<'_> {
    pub fn emit(&self, m: &ModelMetrics) {
        tracing::warn!(
            task = self.task.as_str(),
            why = self.why,
            "model provider reported nonsensical token usage; ignored"
        );
        m.usage_ignored
            .get_or_create(&[("task", self.task.as_str())])
            .inc();
    }
}

/// One attempt failed in transport. Not a loss of data: it may be retried.
#[derive(Debug)]
pub(crate) struct TransportFailed<'a> {
    pub task: Task,
    pub kind: TransportKind,
    pub attempt: u32,
    /// Already redacted and bounded.
    pub detail: &'a str,
}

impl TransportFailed<'_> {
    pub fn emit(&self, m: &ModelMetrics) {
        tracing::warn!(
            task = self.task.as_str(),
            kind = self.kind.as_str(),
            attempt = self.attempt,
            detail = self.detail,
            "model transport failure"
        );
        m.transport_errors
            .get_or_create(&[("task", self.task.as_str()), ("kind", self.kind.as_str())])
            .inc();
    }
}

/// The provider refused the request. Loud: it needs an operator.
#[derive(Debug)]
pub(crate) struct ProviderRefused<'a> {
    pub task: Task,
    pub status: u16,
    /// Already redacted and bounded.
    pub message: &'a str,
}

impl ProviderRefused<'_> {
    pub fn emit(&self) {
        tracing::error!(
            task = self.task.as_str(),
            status = self.status,
            message = self.message,
            "model provider refused the request (not retried)"
        );
    }
}

/// Model output rejected for `reason`. Exactly one increment per rejection.
#[derive(Debug)]
pub struct InvalidOutput<'a> {
    pub task: Task,
    pub reason: Reason,
    /// What was wrong, bounded and redacted by the caller: an operator reading the log
    /// needs more than the reason.
    pub detail: &'a str,
}

impl InvalidOutput<'_> {
    pub fn emit(&self, m: &ModelMetrics) {
        tracing::info!(
            task = self.task.as_str(),
            reason = self.reason.as_str(),
            detail = self.detail,
            "model output rejected"
        );
        m.invalid_output
            .get_or_create(&[
                ("task", self.task.as_str()),
                ("reason", self.reason.as_str()),
            ])
            .inc();
    }
}

/// Count one rejection of model output. The adapter calls this for envelope-level
/// rejections (`truncated`, `refusal`, `empty`, `too_large`) before returning
/// [`crate::ModelError::InvalidOutput`]; the worker calls it once for each entry of the
/// gate's `Judgement::rejections()`. Never call it for an adapter `InvalidOutput` error:
/// that one has been counted already.
///
/// `detail` is logged; pass it bounded and redacted ([`crate::ModelClient::detail`] does
/// both).
pub fn record_invalid_output(metrics: &ModelMetrics, task: Task, reason: Reason, detail: &str) {
    InvalidOutput {
        task,
        reason,
        detail,
    }
    .emit(metrics);
}
