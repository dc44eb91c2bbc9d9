//! relata-model: the only place in relata that knows the OpenAI chat-completions wire
//! format.
//!
//! Everything a call returns is one of two things: a [`Completion`] — raw content for the
//! gate (`relata-validate`) to judge, untrusted and untouched — or a [`ModelError`] that
//! says exactly what kind of failure it was. Every call also returns a [`CallRecord`]: the
//! provenance stored with whatever the call proposed (model, prompt version, schema id,
//! version and sha256, times, attempts, usage, outcome).
//!
//! # Why the class is decided once, here
//!
//! A failure's class decides what happens next — retry, requeue, dead-letter, or record
//! and move on — and it must be the same decision everywhere. So [`ModelError`] has one
//! variant per class and the class is chosen at the boundary, from facts only this crate
//! sees (the status code, the socket error, `finish_reason`):
//!
//! | class | what | handled |
//! |---|---|---|
//! | [`ModelError::Transport`] | connect refused/reset, DNS, TLS, connect or request timeout, body cut off, 408, 429, 500, 502, 503, 504; a 200 whose body is `{"error": …}` with one of those codes | retried here with backoff and jitter (honouring `Retry-After`, capped), bounded in attempts and elapsed time; then the worker requeues |
//! | [`ModelError::Permanent`] | 400, 401, 403, 404, 413, 422, any other status; a redirect (3xx, never followed); a 200 whose body is `{"error": …}` with such a code; a 200 that is not a readable chat completion (see below) | never retried; the provider's message is kept, bounded and redacted. 401, 403, 404 and 3xx are [configuration failures](ModelError::is_configuration_failure): the worker pauses instead of dead-lettering |
//! | [`ModelError::InvalidOutput`] | a 200 whose content is unusable: `finish_reason = length` (`truncated`), a `refusal` or `finish_reason = content_filter` (`refusal`), no content (`empty`), a body over the bound (`too_large`), content that is not a string (`schema`) or not valid UTF-8 (`not_json`) | counted once, never retried |
//!
//! # Redirects
//!
//! The request carries document text, and the configured endpoint is the only place it
//! may go. reqwest is built with redirects off: a 307/308 would re-send the prompt to
//! wherever the redirect points, a 301/302/303 would turn the POST into a GET. A redirect
//! is a permanent error naming its status and target, with the remedy (set
//! `RELATA_MODEL_URL` to the final URL).
//!
//! # A broken 200: whose defect is it?
//!
//! A defect inside `choices[0].message.content` is the model's: invalid output, counted
//! and recorded once, with an excerpt. A body that cannot be read as a chat completion is
//! the provider's (or a proxy's): a permanent provider error naming what came back, not
//! counted as invalid output. Decided once, in `wire::decode`:
//!
//! | what came back with HTTP 200 | decided as | why |
//! |---|---|---|
//! | `finish_reason: "content_filter"` | invalid output `refusal`; the content is not kept, not even as an excerpt | the provider withheld the answer |
//! | `{"error": {"code"/"type"/"status": …, "message": …}}` and no `choices` | the class of that code as an HTTP status (`invalid_api_key` → 401, `model_not_found` → 404, `rate_limit_exceeded` → 429, `503` → 503, …); an unknown code → permanent | the provider spoke, not the model |
//! | content is an object, array, number or boolean | invalid output `schema` | the model's slot holds the wrong thing; relata judges text and does not re-serialise a value |
//! | invalid UTF-8 inside the content string | invalid output `not_json` | the defect is in what the model wrote |
//! | invalid UTF-8 anywhere else | provider error | the envelope itself is broken |
//! | a duplicated key (`choices` twice, `content` twice) | provider error | which value is the answer is ambiguous, so none is used |
//! | HTML (`text/html` or a body starting with `<`) | provider error "an HTML page (a proxy, login or error page?)" | not the model server |
//! | an SSE stream (`text/event-stream`, `data:` lines) | provider error | relata asks with `"stream": false`; something ignored it |
//! | empty body, truncated JSON, JSON of another shape | provider error naming it | not a chat completion |
//! | no `choices`, empty `choices` | invalid output `empty` | a well-formed answer with nothing in it |
//! | `usage` negative, fractional, not an object, or above [`MAX_USAGE_TOKENS`] | the answer is kept; usage is not counted or stored (`relata_model_usage_ignored_total`) | a broken counter must not discard a valid answer nor poison `relata_model_tokens_total` or a `bigint` column |
//!
//! Workers ask the error ([`ModelError::class`], [`ModelError::is_retryable`]); they never
//! look at a status code.
//!
//! # Why invalid output is never retried
//!
//! A model that could not follow the schema on this input will not start on the next
//! attempt; asking again spends money and queue time, and an answer "corrected" until a
//! validator is satisfied is worse than no answer. The same holds for the gate's verdicts:
//! nothing in this crate loops on content. Invalid output is recorded and counted —
//! `relata_model_invalid_output_total{task,reason}` — exactly once per rejection: the
//! adapter counts its own envelope-level rejections, and the worker counts each of the
//! gate's rejections with [`record_invalid_output`].
//!
//! # Requests
//!
//! Prompts are versioned templates ([`EXTRACT_PROMPT_VERSION`], [`CLASSIFY_PROMPT_VERSION`]).
//! A document is delimited as data between `BEGIN`/`END` markers chosen so the document
//! does not contain them, and the system prompt says that instructions inside the data are
//! not instructions. The classifier is shown opaque handles (`C1`, `C2`) and statements,
//! never database ids. Structured output is asked for in the configured [`Dialect`]:
//! `json_schema` (default), `json_object_schema` (llama-cpp-python) or `none` (the schema
//! travels in the prompt). Whatever a server promises, the gate validates locally.
//!
//! Concurrency towards the endpoint is bounded by a semaphore per client (each attempt
//! holds one permit; backoff sleeps do not). The response body is read with a size bound.
//! The envelope is decoded leniently (providers add fields); the content is not decoded
//! here at all.
//!
//! # Configuration
//!
//! [`ModelConfig`] is plain serde data (unknown fields rejected) with environment variables
//! (`RELATA_MODEL_*`) applied on top by [`ModelConfig::from_env`] /
//! [`ModelConfig::with_env`]. Each setting is declared once, in `ModelConfig`'s
//! [`relata_core::settings!`] block: its key, variable, default, bounds and help. The
//! reference table, with every default and range, is the repository's
//! `docs/configuration.md`, which a test holds to that declaration.
//!
//! Every number has an upper bound (timeouts and delays one hour, the retry window a day,
//! 10,000 attempts (the retry window bounds them first), 1024 in flight, 1,000,000
//! tokens, 64 MiB of body); past it the setting is refused by name.
//!
//! # Secrets
//!
//! The key is an [`ApiKey`], whose `Debug` and `Display` print `[redacted]`. It is never
//! accepted as a command-line flag. Provider messages, transport details and stored
//! excerpts pass through [`redact()`], which removes the key, `Bearer` tokens and
//! `sk-…`-looking words. Metric labels are closed enums and can carry nothing.
//!
//! # Metrics
//!
//! [`ModelMetrics::register`] adds `relata_model_requests_total{task,outcome}` (one per
//! HTTP request), `relata_model_request_duration_seconds{task}`,
//! `relata_model_tokens_total{task,kind}`, `relata_model_transport_errors_total{task,kind}`
//! (one per failed attempt), `relata_model_invalid_output_total{task,reason}` (its log line
//! carries the rejection's detail, bounded and redacted) and
//! `relata_model_usage_ignored_total{task}`.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod client;
mod config;
mod error;
mod family;
mod metrics;
pub mod portable;
mod prompt;
mod redact;
mod wire;

pub use client::{
    CallEnd, CallRecord, Completion, DETAIL_CHARS, EXCERPT_CHARS, ModelCall, ModelClient, ModelList,
};
pub use config::{ConfigError, Dialect, ModelConfig};
pub use error::{ErrorClass, ModelError, StatusClass, TransportKind};
pub use family::ProviderFamily;
pub use metrics::{InvalidOutput, ModelMetrics, RequestOutcome, record_invalid_output};
pub use prompt::{
    ANSWER_PROMPT_VERSION, AnswerPrompt, AnswerSource, CLASSIFY_PROMPT_VERSION, ClassifyClaim,
    EXTRACT_PROMPT_VERSION, ExtractPrompt, JOIN_PROMPT_VERSION, JoinSide, Messages, PROBE_DOCUMENT,
    Prompts, SchemaRef, SchemaRegistry, answer_messages, classify_messages, contract,
    extract_messages, extract_schema_sent, extract_schema_sent_p3, extract_schema_sent_p4,
    extract_schema_sent_p7, extract_schema_sent_p9, extract_schema_sent_p10, join_messages,
    join_schema_sent, p3_bounds, p4_bounds, p4_names, p4_sentences, prompt_version, sent_bounds,
};
pub use redact::{ApiKey, REDACTED, excerpt, redact};
pub use wire::{MAX_USAGE_TOKENS, Usage, response_format, schema_sent, schema_sha256};
