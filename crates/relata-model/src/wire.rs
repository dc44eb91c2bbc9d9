//! The OpenAI chat-completions wire format: the only place in relata that knows it.

use relata_core::{Contract, Reason};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{Dialect, ModelConfig};
use crate::error::ModelError;
use crate::prompt::Messages;

/// Token usage reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// The exact JSON Schema a request carries in its `response_format`: the request's own
/// (tighter) schema when it has one, else the contract's; made sendable
/// ([`crate::portable::sendable`]: annotations dropped, lengths capped for grammar
/// compilers); `None` when the dialect sends none.
pub fn schema_sent(dialect: Dialect, contract: &Contract, messages: &Messages) -> Option<Value> {
    let schema = || {
        messages
            .schema
            .clone()
            .unwrap_or_else(|| contract.schema_value())
    };
    match dialect {
        // The same schema for both: what every server family compiles
        // (`crate::portable`), tighter than the contract where a grammar needs it.
        Dialect::JsonSchema | Dialect::JsonObjectSchema => {
            Some(crate::portable::sendable(schema()))
        }
        Dialect::None => None,
    }
}

/// Lowercase hex sha256 of a schema as serialised into the request.
pub fn schema_sha256(schema: &Value) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(schema.to_string().as_bytes()))
}

/// The `response_format` of a dialect around the schema sent, or `None` when the
/// dialect sends none.
pub fn response_format(
    dialect: Dialect,
    contract: &Contract,
    messages: &Messages,
) -> Option<Value> {
    let schema = schema_sent(dialect, contract, messages)?;
    match dialect {
        Dialect::JsonSchema => Some(json!({
            "type": "json_schema",
            "json_schema": {
                "name": contract.name,
                "strict": true,
                "schema": schema,
            }
        })),
        Dialect::JsonObjectSchema => Some(json!({
            "type": "json_object",
            "schema": schema,
        })),
        Dialect::None => None,
    }
}

/// Longest `maxLength` sent to a grammar-compiling server (llama-cpp-python).
///
/// llama.cpp turns `maxLength: n` into n nested optional rules; at 2,000 (the contract's
/// quote bound) its grammar compiler gives up ("failed to parse grammar") and the
/// llama-cpp-python 0.3.36 server dies on the request. 1,000 was measured to work. The
/// cap only ever makes the generation hint *tighter* than the contract; the gate still
/// judges every response against the contract's own bounds, and the call record names
/// the contract (id, version, sha256), not the hint.
pub const GRAMMAR_MAX_STRING_CHARS: u64 = 1_000;

/// The contract's schema with every `maxLength` capped at [`GRAMMAR_MAX_STRING_CHARS`].
pub fn grammar_safe(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if let Some(n) = map
                    .get_mut("maxLength")
                    .filter(|n| n.as_u64().is_some_and(|n| n > GRAMMAR_MAX_STRING_CHARS))
                {
                    *n = json!(GRAMMAR_MAX_STRING_CHARS);
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

/// The request body.
pub fn request_body(
    config: &ModelConfig,
    contract: &Contract,
    messages: &Messages,
    max_tokens: u32,
) -> Value {
    let mut body = json!({
        "model": config.model,
        "messages": [
            {"role": "system", "content": messages.system},
            {"role": "user", "content": messages.user},
        ],
        "temperature": config.temperature,
        "max_tokens": max_tokens,
        "stream": false,
    });
    if let Some(seed) = config.seed {
        body["seed"] = json!(seed);
    }
    if let Some(rf) = response_format(config.dialect, contract, messages) {
        body["response_format"] = rf;
    }
    body
}

/// The largest token count one call may report. Providers have sent negative counts and
/// 2^64−1; a count above any real context window is a broken counter, and adding it to
/// `relata_model_tokens_total` or a `bigint` column would poison both.
pub const MAX_USAGE_TOKENS: u64 = 10_000_000;

// The envelope comes from the server, not from the model: unknown fields are tolerated
// (providers add `system_fingerprint`, `logprobs`, timings, ...). The content inside it is
// the untrusted part, and it is handed to the gate as raw text. Struct decoding (not
// `Value`) is deliberate: it refuses a duplicated key, where a `Value` would silently keep
// the last one and let a second `choices` smuggle in another answer.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    // A `Value`, not a `String`: content that is not text is the model's slot holding the
    // wrong thing (invalid output), not an unreadable envelope.
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<Value>,
}

/// What a decoded envelope yielded.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub usage: Option<Usage>,
    /// Why a reported `usage` was ignored (bounded), when it was.
    pub usage_ignored: Option<String>,
    /// The content (for excerpts) even when the outcome is an error.
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    pub result: Result<String, ModelError>,
}

impl Decoded {
    fn failed(error: ModelError) -> Decoded {
        Decoded {
            usage: None,
            usage_ignored: None,
            content: None,
            finish_reason: None,
            result: Err(error),
        }
    }
}

/// A 200 whose body is not a chat completion: the provider (or something in front of it)
/// answered, so it is a provider error naming what came back, never invalid model output.
fn broken_envelope(what: impl std::fmt::Display) -> ModelError {
    ModelError::Permanent {
        status: 200,
        message: format!(
            "HTTP 200 but the body is {what}, not an OpenAI chat completion; is RELATA_MODEL_URL the server's OpenAI-compatible /v1 base?"
        ),
    }
}

/// Decode a 200 body. `content_type` is the response's `Content-Type`, when sent.
///
/// Which defects are the model's and which the provider's is decided here, once (the table
/// is in the crate docs): a defect inside `choices[0].message.content` is invalid output;
/// a body that is not a readable chat completion is a provider error.
pub(crate) fn decode(body: &[u8], content_type: Option<&str>) -> Decoded {
    if let Some(error) = not_json(body, content_type) {
        return Decoded::failed(error);
    }
    let lossy;
    let (text, invalid_utf8_at) = match std::str::from_utf8(body) {
        Ok(t) => (t, None),
        Err(e) => {
            lossy = String::from_utf8_lossy(body);
            (lossy.as_ref(), Some(e.valid_up_to()))
        }
    };
    let envelope = match parse_envelope(text) {
        Ok(e) => e,
        Err(error) => return Decoded::failed(error),
    };
    let (usage, usage_ignored) = match envelope.usage {
        None | Some(Value::Null) => (None, None),
        Some(v) => match bounded_usage(&v) {
            Ok(u) => (Some(u), None),
            Err(why) => (None, Some(why)),
        },
    };
    let with_usage = |error: ModelError| Decoded {
        usage,
        usage_ignored: usage_ignored.clone(),
        ..Decoded::failed(error)
    };
    let choices = envelope.choices.unwrap_or_default();
    if let Some(error) = envelope
        .error
        .filter(|e| !e.is_null() && choices.is_empty())
    {
        return with_usage(error_in_200(&error));
    }
    let Some(choice) = choices.into_iter().next() else {
        return with_usage(ModelError::InvalidOutput {
            reason: Reason::Empty,
            detail: "the response has no choices".into(),
        });
    };
    let finish_reason = choice.finish_reason;
    let (content, refusal) = match choice.message {
        Some(m) => (m.content, m.refusal),
        None => (None, None),
    };
    let refusal = refusal_text(refusal);
    let (content, content_defect) = content_text(content, invalid_utf8_at);
    if content_defect.is_none()
        && let Some(at) = invalid_utf8_at
    {
        // The bad bytes are outside the content: the envelope itself is broken.
        return with_usage(broken_envelope(format!(
            "not valid UTF-8 outside the content (at byte {at})"
        )));
    }
    let filtered = finish_reason.as_deref() == Some("content_filter");
    let result = choice_result(
        refusal.as_deref(),
        content_defect,
        finish_reason.as_deref(),
        content.as_deref(),
    );
    Decoded {
        usage,
        usage_ignored,
        // What the provider filtered is not kept, not even as an excerpt.
        content: if filtered { None } else { refusal.or(content) },
        finish_reason,
        result,
    }
}

/// A body that is plainly not JSON: empty, an event stream or an HTML page.
fn not_json(body: &[u8], content_type: Option<&str>) -> Option<ModelError> {
    let trimmed = body.trim_ascii_start();
    let content_type = content_type.unwrap_or("").to_ascii_lowercase();
    if trimmed.is_empty() {
        return Some(broken_envelope("empty"));
    }
    if content_type.contains("text/event-stream")
        || trimmed.starts_with(b"data:")
        || trimmed.starts_with(b"event:")
    {
        return Some(broken_envelope(
            "a server-sent event stream (relata asks with \"stream\": false; the server or a proxy ignored it)",
        ));
    }
    if content_type.contains("text/html") || trimmed.starts_with(b"<") {
        return Some(broken_envelope(
            "an HTML page (a proxy, login or error page?)",
        ));
    }
    None
}

/// The envelope, or the provider error saying why the body is not one.
fn parse_envelope(text: &str) -> Result<Envelope, ModelError> {
    serde_json::from_str(text).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data if e.to_string().starts_with("duplicate field") => {
                format!(
                    "ambiguous JSON ({e}): which value is the answer cannot be told, so none is used"
                )
            }
            serde_json::error::Category::Data => format!("JSON of an unexpected shape ({e})"),
            other => format!("{} ({e})", category_name(other)),
        };
        broken_envelope(what)
    })
}

/// The refusal text, when the message carries one that says something.
fn refusal_text(refusal: Option<Value>) -> Option<String> {
    match refusal {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(Value::Null) | None => None,
        Some(Value::String(_)) => None,
        Some(other) => Some(other.to_string()),
    }
}

/// The message's content as text, and the model's defect in it when there is one:
/// invalid UTF-8 inside it (the body is valid up to `invalid_utf8_at`), or a value that is
/// not a string.
fn content_text(
    content: Option<Value>,
    invalid_utf8_at: Option<usize>,
) -> (Option<String>, Option<ModelError>) {
    match content {
        None | Some(Value::Null) => (None, None),
        Some(Value::String(s)) if invalid_utf8_at.is_some() && s.contains('\u{FFFD}') => {
            let at = invalid_utf8_at.unwrap_or(0);
            (
                Some(s),
                Some(ModelError::InvalidOutput {
                    reason: Reason::NotJson,
                    detail: format!(
                        "choices[0].message.content holds invalid UTF-8 (the body is valid up to byte {at})"
                    ),
                }),
            )
        }
        Some(Value::String(s)) => (Some(s), None),
        Some(other) => {
            let kind = match &other {
                Value::Object(_) => "an object",
                Value::Array(_) => "an array",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            (
                Some(other.to_string()),
                Some(ModelError::InvalidOutput {
                    reason: Reason::Schema,
                    detail: format!(
                        "choices[0].message.content is {kind}, not a string; relata judges the text the model wrote and does not re-serialise a value"
                    ),
                }),
            )
        }
    }
}

/// What a choice yields: a refusal, filtered output, the defect found in its content,
/// output cut off at the token limit, no content, or the answer — judged in that order.
fn choice_result(
    refusal: Option<&str>,
    content_defect: Option<ModelError>,
    finish_reason: Option<&str>,
    content: Option<&str>,
) -> Result<String, ModelError> {
    if let Some(r) = refusal {
        return Err(ModelError::InvalidOutput {
            reason: Reason::Refusal,
            detail: format!(
                "the model refused ({} chars of refusal text)",
                r.chars().count()
            ),
        });
    }
    if finish_reason == Some("content_filter") {
        return Err(ModelError::InvalidOutput {
            reason: Reason::Refusal,
            detail: format!(
                "finish_reason = content_filter: the provider filtered the output ({} chars withheld)",
                content.map_or(0, |c| c.chars().count())
            ),
        });
    }
    if let Some(defect) = content_defect {
        return Err(defect);
    }
    if finish_reason == Some("length") {
        return Err(ModelError::InvalidOutput {
            reason: Reason::Truncated,
            detail: "finish_reason = length: the output was cut off at the token limit".into(),
        });
    }
    match content {
        Some(c) if !c.trim().is_empty() => Ok(c.to_owned()),
        _ => Err(ModelError::InvalidOutput {
            reason: Reason::Empty,
            detail: "the response carries no content".into(),
        }),
    }
}

/// `usage` when both counts are whole numbers within [`MAX_USAGE_TOKENS`]; otherwise why
/// not. A missing count is 0 (some servers report only one).
fn bounded_usage(v: &Value) -> Result<Usage, String> {
    let Value::Object(map) = v else {
        return Err(format!("usage is not an object: {}", short(v)));
    };
    let count = |name: &str| -> Result<u64, String> {
        match map.get(name) {
            None | Some(Value::Null) => Ok(0),
            Some(n) => n
                .as_u64()
                .filter(|n| *n <= MAX_USAGE_TOKENS)
                .ok_or_else(|| {
                    format!(
                        "usage.{name} = {} is not a count in 0..={MAX_USAGE_TOKENS}",
                        short(n)
                    )
                }),
        }
    };
    Ok(Usage {
        prompt_tokens: count("prompt_tokens")?,
        completion_tokens: count("completion_tokens")?,
    })
}

fn short(v: &Value) -> String {
    relata_core::text::ellipsize(&v.to_string(), 40).into_owned()
}

/// What an `{"error": {...}}` body means, decided by its code the way the same error
/// would be on its own status: the provider spoke, the model did not.
fn error_in_200(error: &Value) -> ModelError {
    let field = |name: &str| error.get(name).filter(|v| !v.is_null());
    let message = match field("message").or(Some(error)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let code = field("code").or_else(|| field("status"));
    let kind = field("type").and_then(Value::as_str);
    let status = code
        .and_then(|c| match c {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
        .filter(|s| (400..600).contains(s))
        .and_then(|s| u16::try_from(s).ok())
        .or_else(|| {
            [code.and_then(Value::as_str), kind]
                .into_iter()
                .flatten()
                .find_map(status_of_error_code)
        });
    let named = code
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .or_else(|| kind.map(str::to_owned))
        .unwrap_or_else(|| "none".to_owned());
    let message = format!("HTTP 200 carrying a provider error (code {named}): {message}");
    match status {
        Some(status) => crate::error::status_error(status, None, message),
        // An error nobody can classify is not retried: retrying the unknown would loop.
        None => ModelError::Permanent {
            status: 200,
            message,
        },
    }
}

/// The HTTP status OpenAI-compatible providers send with these error codes and types.
fn status_of_error_code(code: &str) -> Option<u16> {
    Some(match code {
        "invalid_api_key" | "authentication_error" | "unauthorized" | "invalid_authentication" => {
            401
        }
        "permission_denied" | "permission_error" | "forbidden" => 403,
        "model_not_found" | "not_found_error" | "not_found" => 404,
        "invalid_request_error" | "context_length_exceeded" | "bad_request" => 400,
        "rate_limit_exceeded" | "rate_limit_error" | "too_many_requests" => 429,
        "server_error" | "internal_error" | "internal_server_error" | "api_error" => 500,
        "overloaded" | "overloaded_error" | "service_unavailable" => 503,
        "timeout" | "request_timeout" => 408,
        _ => return None,
    })
}

fn category_name(c: serde_json::error::Category) -> &'static str {
    match c {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Data => "JSON of an unexpected shape",
        serde_json::error::Category::Eof => "incomplete JSON",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn envelope_decoding_classifies_content() {
        let ok = decode(br#"{"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"extra":1}"#, None);
        assert_eq!(ok.result.unwrap(), "{}");
        assert_eq!(ok.usage.unwrap().completion_tokens, 2);
        let t = decode(
            br#"{"choices":[{"message":{"content":"{\"a\""},"finish_reason":"length"}]}"#,
            None,
        );
        assert_eq!(
            t.result.unwrap_err().invalid_reason(),
            Some(Reason::Truncated)
        );
        let r = decode(
            br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#,
            None,
        );
        assert_eq!(
            r.result.unwrap_err().invalid_reason(),
            Some(Reason::Refusal)
        );
        let e = decode(br#"{"choices":[{"message":{"content":"  "}}]}"#, None);
        assert_eq!(e.result.unwrap_err().invalid_reason(), Some(Reason::Empty));
        let n = decode(br#"{"choices":[]}"#, None);
        assert_eq!(n.result.unwrap_err().invalid_reason(), Some(Reason::Empty));
        let p = decode(b"<html>", None);
        assert_eq!(p.result.unwrap_err().status(), Some(200));
    }

    fn permanent_message(d: Decoded) -> String {
        match d.result {
            Err(ModelError::Permanent {
                status: 200,
                message,
            }) => message,
            other => panic!("expected a provider error, got {other:?}"),
        }
    }

    #[test]
    fn each_broken_envelope_is_decided_once() {
        // The envelope itself is broken: a provider error naming what came back.
        let html = permanent_message(decode(b"  <!DOCTYPE html><p>login", Some("text/html")));
        assert!(html.contains("an HTML page"), "{html}");
        let sse = decode(
            b"data: {\"choices\":[]}\n\ndata: [DONE]\n",
            Some("text/event-stream"),
        );
        assert!(permanent_message(sse).contains("server-sent event stream"));
        let dup = permanent_message(decode(
            br#"{"choices":[{"message":{"content":"{}"}}],"choices":[{"message":{"content":"[]"}}]}"#,
            None,
        ));
        assert!(dup.contains("duplicate field `choices`"), "{dup}");
        assert!(permanent_message(decode(b"", None)).contains("empty"));
        let outside = b"{\"id\":\"\xff\",\"choices\":[{\"message\":{\"content\":\"{}\"}}]}";
        assert!(permanent_message(decode(outside, None)).contains("not valid UTF-8 outside"));

        // The defect is inside the model's content: invalid output, with the content kept.
        let object = decode(
            br#"{"choices":[{"message":{"content":{"entities":[]}},"finish_reason":"stop"}]}"#,
            None,
        );
        assert_eq!(object.content.as_deref(), Some(r#"{"entities":[]}"#));
        assert_eq!(
            object.result.unwrap_err().invalid_reason(),
            Some(Reason::Schema)
        );
        let bad_utf8 = decode(
            b"{\"choices\":[{\"message\":{\"content\":\"{\\\"a\\\":\xff}\"}}]}",
            None,
        );
        assert_eq!(
            bad_utf8.result.unwrap_err().invalid_reason(),
            Some(Reason::NotJson)
        );
    }

    #[test]
    fn content_filter_is_a_refusal_and_its_content_is_not_kept() {
        let d = decode(
            br#"{"choices":[{"message":{"content":"{\"entities\":[]}"},"finish_reason":"content_filter"}]}"#,
            None,
        );
        assert_eq!(
            d.result.unwrap_err().invalid_reason(),
            Some(Reason::Refusal)
        );
        assert_eq!(d.content, None);
    }

    #[test]
    fn an_error_body_in_a_200_is_classified_by_its_code() {
        let cases: [(&[u8], ErrorClass, Option<u16>); 6] = [
            (
                br#"{"error":{"message":"bad key","code":"invalid_api_key"}}"#,
                ErrorClass::Permanent,
                Some(401),
            ),
            (
                br#"{"error":{"message":"no","code":403}}"#,
                ErrorClass::Permanent,
                Some(403),
            ),
            (
                br#"{"error":{"message":"gone","type":"not_found_error","code":null}}"#,
                ErrorClass::Permanent,
                Some(404),
            ),
            (
                br#"{"error":{"message":"busy","code":"503"}}"#,
                ErrorClass::Transport,
                Some(503),
            ),
            (
                br#"{"error":{"message":"slow","type":"rate_limit_error"}}"#,
                ErrorClass::Transport,
                Some(429),
            ),
            (
                br#"{"error":"something odd"}"#,
                ErrorClass::Permanent,
                Some(200),
            ),
        ];
        for (body, class, status) in cases {
            let e = decode(body, None).result.unwrap_err();
            assert_eq!(e.class(), class, "{e}");
            assert_eq!(e.status(), status, "{e}");
            assert!(
                e.to_string().contains("HTTP 200 carrying a provider error"),
                "{e}"
            );
        }
    }

    #[test]
    fn nonsensical_usage_is_ignored_and_the_answer_kept() {
        for usage in [
            r#"{"prompt_tokens":-5,"completion_tokens":7}"#,
            r#"{"prompt_tokens":18446744073709551615,"completion_tokens":7}"#,
            r#"{"prompt_tokens":1.5,"completion_tokens":7}"#,
            r#""lots""#,
        ] {
            let body = format!(
                r#"{{"choices":[{{"message":{{"content":"{{}}"}},"finish_reason":"stop"}}],"usage":{usage}}}"#
            );
            let d = decode(body.as_bytes(), None);
            assert_eq!(d.result.unwrap(), "{}", "{usage}");
            assert_eq!(d.usage, None, "{usage}");
            assert!(d.usage_ignored.is_some(), "{usage}");
        }
        let d = decode(
            br#"{"choices":[{"message":{"content":"{}"}}],"usage":{"prompt_tokens":10000000}}"#,
            None,
        );
        assert_eq!(d.usage.unwrap().prompt_tokens, MAX_USAGE_TOKENS);
    }
}
