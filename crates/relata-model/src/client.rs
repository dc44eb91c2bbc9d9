//! The client: one call = up to N attempts, each classified, retried only for transport.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use chrono::{DateTime, Utc};
use relata_core::{Handle, Reason, Task, TaskVersion};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::config::{ConfigError, Dialect, ModelConfig};
use crate::error::{ErrorClass, ModelError, StatusClass, TransportKind, redirect, status_error};
use crate::metrics::{
    InvalidOutput, ModelMetrics, ProviderRefused, RequestFinished, RequestOutcome, TokensUsed,
    TransportFailed, UsageIgnored,
};
use crate::prompt::{
    ClassifyClaim, Messages, SchemaRef, SchemaRegistry, classify_messages, extract_messages,
};
use crate::redact::{ApiKey, excerpt, redact};
use crate::wire::{Usage, decode, request_body, schema_sent, schema_sha256};

/// Longest excerpt of model content kept in a [`CallRecord`].
pub const EXCERPT_CHARS: usize = 600;
/// Longest provider message kept in an error.
pub const MESSAGE_CHARS: usize = 500;
/// Longest transport or invalid-output detail kept in an error or a log line.
pub const DETAIL_CHARS: usize = 300;

/// A usable answer: the raw content for the gate to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// `choices[0].message.content`, untouched. Untrusted.
    pub content: String,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

relata_core::closed_enum! {
    /// How a call ended at the adapter, before any gate: a usable response, or the class
    /// of its failure. Not the store's `CallOutcome`, which is what the ledger records
    /// after the gate has judged the response (accepted, partial, rejected, …).
    pub enum CallEnd: "call end" {
        /// A usable response reached the gate (which may still reject rows).
        Completed = "completed",
        Transport = "transport",
        Permanent = "permanent",
        InvalidOutput = "invalid_output",
    }
}

impl CallEnd {
    fn of(class: ErrorClass) -> CallEnd {
        match class {
            ErrorClass::Transport => CallEnd::Transport,
            ErrorClass::Permanent => CallEnd::Permanent,
            ErrorClass::InvalidOutput => CallEnd::InvalidOutput,
        }
    }
}

/// Provenance of one model call: everything the store records with the rows it proposed
/// (and with the failure when there are none). Holds no secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub task: Task,
    pub model: String,
    pub prompt_version: &'static str,
    pub schema: SchemaRef,
    /// sha256 of the exact schema sent in `response_format` (tighter than the contract
    /// for `extract-p2`); `None` when the dialect sends none.
    pub sent_schema_sha256: Option<String>,
    pub dialect: Dialect,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration: Duration,
    /// HTTP requests actually made.
    pub attempts: u32,
    /// Usage of the last attempt that reported any.
    pub usage: Option<Usage>,
    pub outcome: CallEnd,
    pub transport_kind: Option<TransportKind>,
    pub http_status: Option<u16>,
    pub invalid_reason: Option<Reason>,
    pub finish_reason: Option<String>,
    /// For invalid output: a bounded, redacted excerpt of what the model said.
    pub excerpt: Option<String>,
}

impl CallRecord {
    /// The task version this call belongs to.
    /// The task version this call was made under: the contract it recorded (the extract
    /// prompt's own), the prompt and the model.
    pub fn task_version(&self) -> TaskVersion {
        TaskVersion {
            task: self.task,
            prompt_version: self.prompt_version.to_owned(),
            schema_id: self.schema.id.to_owned(),
            schema_version: self.schema.version,
            schema_sha256: self.schema.sha256.clone(),
            model: self.model.clone(),
        }
    }
}

/// One call: its record, and either a completion for the gate or a classified failure.
#[derive(Debug, Clone)]
pub struct ModelCall {
    pub record: CallRecord,
    pub result: Result<Completion, ModelError>,
}

/// The OpenAI-compatible client. Cheap to clone; clones share the concurrency bound.
#[derive(Debug, Clone)]
pub struct ModelClient {
    config: Arc<ModelConfig>,
    http: reqwest::Client,
    permits: Arc<Semaphore>,
    metrics: ModelMetrics,
}

/// An attempt's answer, with what the record needs even on failure.
#[derive(Debug)]
struct AttemptError {
    error: ModelError,
    usage: Option<Usage>,
    usage_ignored: Option<String>,
    content: Option<String>,
    finish_reason: Option<String>,
}

impl From<ModelError> for AttemptError {
    fn from(error: ModelError) -> Self {
        AttemptError {
            error,
            usage: None,
            usage_ignored: None,
            content: None,
            finish_reason: None,
        }
    }
}

/// A completion with what the attempt's events need beside it.
#[derive(Debug)]
struct Answer {
    completion: Completion,
    usage_ignored: Option<String>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What `GET {url}/models` showed: the models listed and the server family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelList {
    pub models: Vec<String>,
    pub family: crate::ProviderFamily,
}

impl ModelClient {
    /// Build a client from validated configuration.
    pub fn new(config: ModelConfig, metrics: ModelMetrics) -> Result<ModelClient, ConfigError> {
        config.validate()?;
        // reqwest is built with `rustls-no-provider`; `ring` is the provider. Installing
        // fails only when a provider is already installed, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout())
            .user_agent(concat!("relata/", env!("CARGO_PKG_VERSION")))
            // The request carries document text: it goes to the configured endpoint or
            // nowhere. A redirect comes back as its own status and is refused.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Invalid {
                name: "RELATA_MODEL_URL",
                problem: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(ModelClient {
            permits: Arc::new(Semaphore::new(config.max_concurrency)),
            config: Arc::new(config),
            http,
            metrics,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn metrics(&self) -> &ModelMetrics {
        &self.metrics
    }

    /// The task version calls of this client produce.
    pub fn task_version(&self, task: Task) -> TaskVersion {
        TaskVersion::new(
            &self.config.contract(task),
            self.config.prompt_version(task),
            &self.config.model,
        )
    }

    /// A detail (of a rejection, a failure) bounded and redacted for a log line.
    pub fn detail(&self, text: &str) -> String {
        excerpt(text, DETAIL_CHARS, self.config.api_key.as_ref())
    }

    /// Count one rejection of model output by the gate and log it with its detail
    /// (bounded and redacted here). See [`crate::record_invalid_output`].
    pub fn record_invalid_output(&self, task: Task, reason: Reason, detail: &str) {
        crate::record_invalid_output(&self.metrics, task, reason, &self.detail(detail));
    }

    /// A bounded, redacted excerpt of model content, for stored diagnostics.
    pub fn excerpt(&self, content: &str) -> String {
        excerpt(content, EXCERPT_CHARS, self.config.api_key.as_ref())
    }

    /// Ask for entities and claims in `source` (`relata.extract`, the configured prompt).
    pub async fn extract(&self, source: &str, title: Option<&str>) -> ModelCall {
        let messages = extract_messages(
            self.config.extract_prompt,
            self.config.dialect,
            source,
            title,
        );
        self.complete(Task::Extract, &messages, self.config.max_tokens)
            .await
    }

    /// Ask for one relation per requested ordered pair (`relata.classify`, prompt
    /// `classify-p2`). The model sees the handles and statements only.
    pub async fn classify(
        &self,
        claims: &[ClassifyClaim],
        pairs: &[(Handle, Handle)],
    ) -> ModelCall {
        let messages = classify_messages(self.config.dialect, claims, pairs);
        self.complete(Task::Classify, &messages, self.config.max_tokens)
            .await
    }

    /// Ask a question of the given sources (`relata.answer`, the configured prompt). The model
    /// sees the handles, titles and passages only.
    pub async fn answer(&self, question: &str, sources: &[crate::AnswerSource]) -> ModelCall {
        let messages = crate::answer_messages(
            self.config.answer_prompt,
            self.config.dialect,
            question,
            sources,
        );
        self.complete(Task::Answer, &messages, self.config.max_tokens)
            .await
    }

    /// Ask whether two entities are one thing (`relata.join`, prompt `join-p1`). The model
    /// sees the names, types, titles and sentences only.
    pub async fn join(&self, sides: &[crate::JoinSide; 2]) -> ModelCall {
        let messages = crate::join_messages(self.config.dialect, sides);
        self.complete(Task::Join, &messages, self.config.max_tokens)
            .await
    }

    /// Send prepared messages for `task` with the task's contract in the configured
    /// dialect, retrying transport failures only.
    pub async fn complete(&self, task: Task, messages: &Messages, max_tokens: u32) -> ModelCall {
        let contract = self.config.contract(task);
        let body = request_body(&self.config, &contract, messages, max_tokens);
        let sent_schema_sha256 =
            schema_sent(self.config.dialect, &contract, messages).map(|s| schema_sha256(&s));
        let started_at = Utc::now();
        let start = Instant::now();
        let attempts = AtomicU32::new(0);
        let cfg = &self.config;

        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(cfg.retry_base_delay_ms))
            .with_max_delay(Duration::from_millis(cfg.retry_max_delay_ms))
            .with_factor(2.0)
            .with_max_times(cfg.retry_max_attempts.saturating_sub(1) as usize)
            .with_jitter();
        let max_elapsed = cfg.retry_max_elapsed();
        let cap = cfg.retry_after_cap();

        let result = (|| async {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            self.attempt(task, &body, n).await
        })
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(|e: &AttemptError| e.error.is_retryable())
        .adjust(|e: &AttemptError, next: Option<Duration>| {
            // `next` is None once the attempt bound is reached.
            let delay = match e.error.retry_after() {
                Some(asked) => asked.min(cap),
                None => next?,
            };
            next?;
            if start.elapsed() + delay >= max_elapsed {
                tracing::warn!(
                    task = task.as_str(),
                    elapsed_ms = millis(start.elapsed()),
                    "model retry budget (RELATA_MODEL_RETRY_MAX_ELAPSED_MS) spent; giving up"
                );
                return None;
            }
            Some(delay)
        })
        .notify(|e: &AttemptError, delay: Duration| {
            tracing::info!(
                task = task.as_str(),
                kind = e.error.transport_kind().map(|k| k.as_str()),
                delay_ms = millis(delay),
                "retrying model request"
            );
        })
        .await;

        let attempts = attempts.load(Ordering::SeqCst);
        let duration = start.elapsed();
        let finished_at = Utc::now();
        let (outcome, usage, finish_reason, excerpt_text, result) = match result {
            Ok(c) => (
                CallEnd::Completed,
                c.usage,
                c.finish_reason.clone(),
                None,
                Ok(c),
            ),
            Err(e) => {
                let outcome = CallEnd::of(e.error.class());
                let ex = match (&e.error, &e.content) {
                    (ModelError::InvalidOutput { .. }, Some(c)) => Some(self.excerpt(c)),
                    _ => None,
                };
                (outcome, e.usage, e.finish_reason, ex, Err(e.error))
            }
        };
        let err = result.as_ref().err();
        ModelCall {
            record: CallRecord {
                task,
                model: cfg.model.clone(),
                prompt_version: cfg.prompt_version(task),
                schema: SchemaRegistry.schema_ref_of(&contract),
                sent_schema_sha256,
                dialect: cfg.dialect,
                started_at,
                finished_at,
                duration,
                attempts,
                usage,
                outcome,
                transport_kind: err.and_then(ModelError::transport_kind),
                http_status: err.and_then(ModelError::status),
                invalid_reason: err.and_then(ModelError::invalid_reason),
                finish_reason,
                excerpt: excerpt_text,
            },
            result,
        }
    }

    /// One HTTP request, classified, its events emitted.
    async fn attempt(&self, task: Task, body: &Value, n: u32) -> Result<Completion, AttemptError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| transport(TransportKind::Other, "client is shutting down".into()))?;
        let started = Instant::now();
        let result =
            match tokio::time::timeout(self.config.request_timeout(), self.send(body)).await {
                Ok(r) => r,
                Err(_) => Err(AttemptError::from(transport(
                    TransportKind::Timeout,
                    format!(
                        "no complete response within {} ms (RELATA_MODEL_REQUEST_TIMEOUT_MS)",
                        self.config.request_timeout_ms
                    ),
                ))),
            };
        let duration = started.elapsed();
        let outcome = match &result {
            Ok(_) => RequestOutcome::Ok,
            Err(e) => RequestOutcome::from_class(e.error.class()),
        };
        RequestFinished {
            task,
            outcome,
            duration,
            attempt: n,
        }
        .emit(&self.metrics);
        let (usage, usage_ignored) = match &result {
            Ok(a) => (a.completion.usage, a.usage_ignored.as_deref()),
            Err(e) => (e.usage, e.usage_ignored.as_deref()),
        };
        if let Some(usage) = usage {
            TokensUsed { task, usage }.emit(&self.metrics);
        }
        if let Some(why) = usage_ignored {
            UsageIgnored { task, why }.emit(&self.metrics);
        }
        if let Err(e) = &result {
            match &e.error {
                ModelError::Transport { kind, detail, .. } => TransportFailed {
                    task,
                    kind: *kind,
                    attempt: n,
                    detail,
                }
                .emit(&self.metrics),
                ModelError::Permanent { status, message } => ProviderRefused {
                    task,
                    status: *status,
                    message,
                }
                .emit(),
                ModelError::InvalidOutput { reason, detail } => InvalidOutput {
                    task,
                    reason: *reason,
                    detail: &self.detail(detail),
                }
                .emit(&self.metrics),
            }
        }
        result.map(|a| a.completion)
    }

    async fn send(&self, body: &Value) -> Result<Answer, AttemptError> {
        let mut request = self.http.post(self.config.chat_url()).json(body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.reqwest_error(&e, false))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let location = header(reqwest::header::LOCATION);
        let class = StatusClass::of(status);
        if class == StatusClass::Redirect {
            return Err(self.bounded(redirect(status, location.as_deref())).into());
        }
        let (bytes, overflow) = self.read_bounded(response).await?;

        if class != StatusClass::Success {
            let message = self.provider_message(&bytes);
            return Err(status_error(status, retry_after, message).into());
        }
        if overflow {
            return Err(ModelError::InvalidOutput {
                reason: Reason::TooLarge,
                detail: format!(
                    "response body exceeds {} bytes (RELATA_MODEL_MAX_BODY_BYTES)",
                    self.config.max_body_bytes
                ),
            }
            .into());
        }
        let decoded = decode(&bytes, content_type.as_deref());
        let error = match decoded.result {
            Ok(content) => {
                return Ok(Answer {
                    completion: Completion {
                        content,
                        usage: decoded.usage,
                        finish_reason: decoded.finish_reason,
                    },
                    usage_ignored: decoded.usage_ignored,
                });
            }
            Err(e) => e,
        };
        Err(AttemptError {
            error: self.bounded(error),
            usage: decoded.usage,
            usage_ignored: decoded.usage_ignored,
            content: decoded.content,
            finish_reason: decoded.finish_reason,
        })
    }

    /// The provider's words in an error, bounded and redacted: they are logged, stored
    /// and shown.
    fn bounded(&self, error: ModelError) -> ModelError {
        let key = self.config.api_key.as_ref();
        match error {
            ModelError::Permanent { status, message } => ModelError::Permanent {
                status,
                message: excerpt(&message, MESSAGE_CHARS, key),
            },
            ModelError::Transport {
                kind,
                retry_after,
                detail,
            } => ModelError::Transport {
                kind,
                retry_after,
                detail: excerpt(&detail, MESSAGE_CHARS, key),
            },
            other => other,
        }
    }

    /// Read the body, stopping at the bound. Returns the bytes read and whether the body
    /// was longer.
    async fn read_bounded(
        &self,
        mut response: reqwest::Response,
    ) -> Result<(Vec<u8>, bool), AttemptError> {
        let limit = self.config.max_body_bytes;
        let mut buf = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = limit - buf.len();
                    if chunk.len() > room {
                        buf.extend_from_slice(&chunk[..room]);
                        return Ok((buf, true));
                    }
                    buf.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok((buf, false)),
                Err(e) => return Err(self.reqwest_error(&e, true)),
            }
        }
    }

    /// The provider's error message: `error.message` when the body is an OpenAI-style
    /// error, else the body; bounded and redacted either way.
    fn provider_message(&self, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("error"))
                    .or_else(|| v.get("detail"))
                    .map(|m| match m {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
            })
            .unwrap_or_else(|| text.trim().to_owned());
        excerpt(&message, MESSAGE_CHARS, self.config.api_key.as_ref())
    }

    fn reqwest_error(&self, e: &reqwest::Error, in_body: bool) -> AttemptError {
        let kind = transport_kind_of(e, in_body);
        let mut chain = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            chain.push_str(": ");
            chain.push_str(&s.to_string());
            source = s.source();
        }
        let detail = excerpt(&chain, DETAIL_CHARS, self.config.api_key.as_ref());
        transport(kind, detail).into()
    }

    /// Does the provider still refuse this deployment? One tiny chat request (one token,
    /// no document text, no schema), not retried and not counted as a model call: a
    /// worker paused by a refusal asks this on a slow schedule and resumes on `Ok`.
    ///
    /// `Ok` when the provider answered without refusing — whatever it said, even a
    /// truncated answer, shows the key and the model are accepted. Any failure is
    /// returned, classified; the caller resumes only on `Ok`, since a transport failure
    /// proves nothing about the key.
    pub async fn check_provider(&self) -> Result<(), ModelError> {
        let body = serde_json::json!({
            "model": self.config.model,
            "messages": [{"role": "user", "content": "Reply with {}."}],
            "max_tokens": 1,
            "stream": false,
        });
        let sent = tokio::time::timeout(self.config.request_timeout(), self.send(&body)).await;
        match sent {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => match e.error {
                ModelError::InvalidOutput { .. } => Ok(()),
                other => Err(other),
            },
            Err(_) => Err(transport(
                TransportKind::Timeout,
                "no answer within the request timeout".into(),
            )),
        }
    }

    /// `GET {url}/models`: the ids the endpoint lists. Not retried (an operator tool).
    pub async fn list_models(&self) -> Result<ModelList, ModelError> {
        let mut request = self.http.get(self.config.models_url());
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let fut = async {
            let response = request
                .send()
                .await
                .map_err(|e| self.reqwest_error(&e, false).error)?;
            let status = response.status().as_u16();
            let class = StatusClass::of(status);
            if class == StatusClass::Redirect {
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                return Err(self.bounded(redirect(status, location.as_deref())));
            }
            let server = response
                .headers()
                .get(reqwest::header::SERVER)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let (bytes, _) = self.read_bounded(response).await.map_err(|e| e.error)?;
            if class != StatusClass::Success {
                return Err(status_error(status, None, self.provider_message(&bytes)));
            }
            let not_a_list = || ModelError::Permanent {
                status,
                message: "the model list is not an OpenAI-style {\"data\": [{\"id\": ...}]}".into(),
            };
            let body: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|_| not_a_list())?;
            // OpenAI's `data[].id`; llama.cpp's server adds `models[]` with `name`.
            let mut models: Vec<String> = Vec::new();
            for e in body["data"].as_array().into_iter().flatten() {
                if let Some(id) = e["id"].as_str() {
                    models.push(id.to_owned());
                }
            }
            for e in body["models"].as_array().into_iter().flatten() {
                if let Some(name) = e["name"].as_str().or(e["model"].as_str())
                    && !models.iter().any(|m| m == name)
                {
                    models.push(name.to_owned());
                }
            }
            if body["data"].as_array().is_none() && body["models"].as_array().is_none() {
                return Err(not_a_list());
            }
            let family = crate::ProviderFamily::detect(&self.config.url, server.as_deref(), &body);
            Ok(ModelList { models, family })
        };
        match tokio::time::timeout(self.config.request_timeout(), fut).await {
            Ok(r) => r,
            Err(_) => Err(transport(
                TransportKind::Timeout,
                "no model list within the request timeout".into(),
            )),
        }
    }

    /// The configured API key, if any (for redacting text outside this crate).
    pub fn redact(&self, text: &str) -> String {
        redact(text, self.config.api_key.as_ref())
    }
}

fn transport(kind: TransportKind, detail: String) -> ModelError {
    ModelError::Transport {
        kind,
        retry_after: None,
        detail,
    }
}

/// `Retry-After` in its delay-seconds form. (The HTTP-date form is ignored: the backoff
/// schedule applies instead.)
fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Decide the kind of a failure below HTTP, from reqwest's error and its sources.
fn transport_kind_of(e: &reqwest::Error, in_body: bool) -> TransportKind {
    let mut io_kind = None;
    let mut tls = false;
    let mut dns = false;
    let mut closed = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            io_kind.get_or_insert(io.kind());
        }
        if s.downcast_ref::<rustls::Error>().is_some() {
            tls = true;
        }
        let text = s.to_string();
        if text.contains("dns error") || text.contains("failed to lookup address") {
            dns = true;
        }
        if text.contains("connection closed") || text.contains("end of file") {
            closed = true;
        }
        source = s.source();
    }
    use std::io::ErrorKind as K;
    if e.is_timeout() {
        return if e.is_connect() {
            TransportKind::ConnectTimeout
        } else {
            TransportKind::Timeout
        };
    }
    if dns {
        return TransportKind::Dns;
    }
    if tls {
        return TransportKind::Tls;
    }
    match io_kind {
        Some(K::ConnectionRefused) => return TransportKind::ConnectRefused,
        Some(K::TimedOut) => {
            return if e.is_connect() {
                TransportKind::ConnectTimeout
            } else {
                TransportKind::Timeout
            };
        }
        Some(K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof) => {
            return if in_body {
                TransportKind::BodyCutOff
            } else {
                TransportKind::Reset
            };
        }
        _ => {}
    }
    if in_body || e.is_body() || e.is_decode() {
        return TransportKind::BodyCutOff;
    }
    if e.is_connect() {
        return TransportKind::ConnectRefused;
    }
    if closed {
        return TransportKind::Reset;
    }
    TransportKind::Other
}

/// The key a client was built with, for tests that assert it never leaks.
impl ModelClient {
    #[doc(hidden)]
    pub fn api_key(&self) -> Option<&ApiKey> {
        self.config.api_key.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
