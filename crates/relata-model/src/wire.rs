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
/// (tighter) schema when it has one, else the contract's; capped for grammar compilers
/// in the `json_object_schema` dialect; `None` when the dialect sends none.
pub fn schema_sent(dialect: Dialect, contract: &Contract, messages: &Messages) -> Option<Value> {
    let schema = || {
        messages
            .schema
            .clone()
            .unwrap_or_else(|| contract.schema_value())
    };
    match dialect {
        Dialect::JsonSchema => Some(schema()),
        Dialect::JsonObjectSchema => Some(grammar_safe(schema())),
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

// The envelope comes from the server, not from the model: unknown fields are tolerated
// (providers add `system_fingerprint`, `logprobs`, timings, ...). The content inside it is
// the untrusted part, and it is handed to the gate as raw text.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
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
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<Value>,
}

/// What a decoded envelope yielded.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub usage: Option<Usage>,
    /// The content (for excerpts) even when the outcome is an error.
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    pub result: Result<String, ModelError>,
}

/// Decode a 200 body.
pub(crate) fn decode(body: &[u8]) -> Decoded {
    let envelope: Envelope = match serde_json::from_slice(body) {
        Ok(e) => e,
        Err(e) => {
            return Decoded {
                usage: None,
                content: None,
                finish_reason: None,
                result: Err(ModelError::Permanent {
                    status: 200,
                    message: format!(
                        "the response is not a chat completion envelope ({}); is RELATA_MODEL_URL an OpenAI-compatible /v1 base?",
                        e.classify_name()
                    ),
                }),
            };
        }
    };
    let usage = envelope.usage;
    let Some(choice) = envelope.choices.into_iter().next() else {
        return Decoded {
            usage,
            content: None,
            finish_reason: None,
            result: Err(ModelError::InvalidOutput {
                reason: Reason::Empty,
                detail: "the response has no choices".into(),
            }),
        };
    };
    let finish_reason = choice.finish_reason;
    let (content, refusal) = match choice.message {
        Some(m) => (m.content, m.refusal),
        None => (None, None),
    };
    let refusal = match refusal {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(Value::Null) | None => None,
        Some(Value::String(_)) => None,
        Some(other) => Some(other.to_string()),
    };
    let result = if let Some(r) = &refusal {
        Err(ModelError::InvalidOutput {
            reason: Reason::Refusal,
            detail: format!(
                "the model refused ({} chars of refusal text)",
                r.chars().count()
            ),
        })
    } else if finish_reason.as_deref() == Some("length") {
        Err(ModelError::InvalidOutput {
            reason: Reason::Truncated,
            detail: "finish_reason = length: the output was cut off at the token limit".into(),
        })
    } else {
        match &content {
            Some(c) if !c.trim().is_empty() => Ok(c.clone()),
            _ => Err(ModelError::InvalidOutput {
                reason: Reason::Empty,
                detail: "the response carries no content".into(),
            }),
        }
    };
    Decoded {
        usage,
        content: refusal.or(content),
        finish_reason,
        result,
    }
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "io",
            serde_json::error::Category::Syntax => "not JSON",
            serde_json::error::Category::Data => "unexpected shape",
            serde_json::error::Category::Eof => "incomplete JSON",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_decoding_classifies_content() {
        let ok = decode(br#"{"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"extra":1}"#);
        assert_eq!(ok.result.unwrap(), "{}");
        assert_eq!(ok.usage.unwrap().completion_tokens, 2);
        let t =
            decode(br#"{"choices":[{"message":{"content":"{\"a\""},"finish_reason":"length"}]}"#);
        assert_eq!(
            t.result.unwrap_err().invalid_reason(),
            Some(Reason::Truncated)
        );
        let r = decode(br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#);
        assert_eq!(
            r.result.unwrap_err().invalid_reason(),
            Some(Reason::Refusal)
        );
        let e = decode(br#"{"choices":[{"message":{"content":"  "}}]}"#);
        assert_eq!(e.result.unwrap_err().invalid_reason(), Some(Reason::Empty));
        let n = decode(br#"{"choices":[]}"#);
        assert_eq!(n.result.unwrap_err().invalid_reason(), Some(Reason::Empty));
        let p = decode(b"<html>");
        assert_eq!(p.result.unwrap_err().status(), Some(200));
    }
}
