//! Configuration: plain serde data, then environment on top. Building a client from it is
//! a separate step ([`crate::ModelClient::new`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use relata_core::settings::{Bounds, Millis, Settable, SettingError};

use crate::prompt::{AnswerPrompt, ExtractPrompt, Prompts};
use crate::redact::ApiKey;

relata_core::closed_enum! {
    /// How structured output is asked for. Servers differ; local validation is mandatory
    /// whichever is used.
    #[derive(Default)]
    pub enum Dialect: "dialect" {
        /// `response_format: {type: "json_schema", json_schema: {name, strict: true, schema}}`
        /// (OpenAI, vLLM, Ollama, llama.cpp's own server).
        #[default]
        JsonSchema = "json_schema",
        /// `response_format: {type: "json_object", schema}` (llama-cpp-python's server).
        JsonObjectSchema = "json_object_schema",
        /// No `response_format`; the prompt carries the schema.
        None = "none",
    }
}

/// A configuration problem, naming the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{name} is required")]
    Missing { name: &'static str },
    #[error("{name}: {problem}")]
    Invalid { name: &'static str, problem: String },
    /// A declared setting that cannot be read or is out of its bounds.
    #[error(transparent)]
    Setting(#[from] SettingError),
}

impl ModelConfig {
    /// The prompt version this configuration sends for `task`.
    pub fn prompt_version(&self, task: relata_core::Task) -> &'static str {
        crate::prompt::prompt_version(task, self.prompts())
    }

    /// The contract this configuration asks for on `task` (its prompt's).
    pub fn contract(&self, task: relata_core::Task) -> relata_core::Contract {
        crate::prompt::contract(task, self.prompts())
    }

    /// The prompts this configuration sends.
    pub fn prompts(&self) -> Prompts {
        Prompts {
            extract: self.extract_prompt,
            answer: self.answer_prompt,
        }
    }
}

/// Upper bounds: beyond them a number is a typo, and some (a timeout of u64::MAX ms)
/// overflow the clock arithmetic of the HTTP client and the backoff.
const HOUR_MS: u64 = 3_600_000;

relata_core::settings! {
    /// The adapter's settings, each with its environment variable. The API key has no
    /// field that serde reads: it comes from `RELATA_MODEL_API_KEY` or from the file named
    /// by `api_key_file` / `RELATA_MODEL_API_KEY_FILE`, never from a flag.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ModelConfig in "model" {
        pub url: String = String::new()
            => "RELATA_MODEL_URL", Bounds::Any,
            "OpenAI-compatible base URL (`…/v1`); requests go to `{url}/chat/completions`";
        pub model: String = String::new()
            => "RELATA_MODEL_NAME", Bounds::Any,
            "model name sent with every request; part of the task version";
        pub dialect: Dialect = Dialect::default()
            => "RELATA_MODEL_DIALECT", Bounds::Any,
            "how structured output is asked for";
        pub extract_prompt: ExtractPrompt = ExtractPrompt::default()
            => "RELATA_MODEL_EXTRACT_PROMPT", Bounds::Any,
            "the extraction prompt; part of the task version";
        pub answer_prompt: AnswerPrompt = AnswerPrompt::default()
            => "RELATA_MODEL_ANSWER_PROMPT", Bounds::Any,
            "the answering prompt; recorded with every answer";
        pub api_key_file: Option<PathBuf> = None
            => "RELATA_MODEL_API_KEY_FILE", Bounds::Any,
            "a file holding the API key (surrounding whitespace trimmed)";
        #[serde(skip)]
        pub api_key: Option<ApiKey> = None
            => env_only "RELATA_MODEL_API_KEY", Bounds::Any,
            "the API key, sent as `Authorization: Bearer`";
        pub connect_timeout_ms: u64 = 5_000
            => "RELATA_MODEL_CONNECT_TIMEOUT_MS" as Millis, Bounds::Whole(1, HOUR_MS),
            "connect timeout";
        /// The whole request of one attempt: connect, send, wait, read the body.
        pub request_timeout_ms: u64 = 120_000
            => "RELATA_MODEL_REQUEST_TIMEOUT_MS" as Millis, Bounds::Whole(1, HOUR_MS),
            "one attempt, body included";
        /// The retry window bounds attempts before this does.
        pub retry_max_attempts: u32 = 4
            => "RELATA_MODEL_RETRY_MAX_ATTEMPTS", Bounds::Whole(1, 10_000),
            "attempts per call, the first included (1: no retries)";
        /// No new attempt starts once this much time has passed since the call began; a
        /// call therefore ends within `retry_max_elapsed_ms + request_timeout_ms`.
        pub retry_max_elapsed_ms: u64 = 300_000
            => "RELATA_MODEL_RETRY_MAX_ELAPSED_MS" as Millis, Bounds::Whole(0, 24 * HOUR_MS),
            "no attempt starts after this";
        pub retry_base_delay_ms: u64 = 500
            => "RELATA_MODEL_RETRY_BASE_DELAY_MS" as Millis, Bounds::Whole(0, HOUR_MS),
            "first backoff delay (doubling, with jitter)";
        pub retry_max_delay_ms: u64 = 30_000
            => "RELATA_MODEL_RETRY_MAX_DELAY_MS" as Millis, Bounds::Whole(0, HOUR_MS),
            "longest backoff delay";
        pub retry_after_cap_ms: u64 = 60_000
            => "RELATA_MODEL_RETRY_AFTER_CAP_MS" as Millis, Bounds::Whole(0, HOUR_MS),
            "longest `Retry-After` honoured; a longer one is cut to this";
        pub max_concurrency: usize = 4
            => "RELATA_MODEL_MAX_CONCURRENCY", Bounds::Whole(1, 1024),
            "requests in flight towards the endpoint, per client";
        pub max_tokens: u32 = 1_024
            => "RELATA_MODEL_MAX_TOKENS", Bounds::Whole(1, 1_000_000),
            "`max_tokens` of every request";
        pub temperature: f32 = 0.0
            => "RELATA_MODEL_TEMPERATURE", Bounds::Real(0.0, 2.0),
            "`temperature` of every request";
        pub seed: Option<u64> = None
            => "RELATA_MODEL_SEED", Bounds::Any,
            "`seed` of every request, when set";
        /// Room for a response at the gate's bound in any of the encodings a server may
        /// choose, with its envelope.
        pub max_body_bytes: usize = 4 * relata_core::contract::bounds::MAX_RESPONSE_BYTES + 16 * 1024
            => "RELATA_MODEL_MAX_BODY_BYTES", Bounds::Whole(1024, 64 * 1024 * 1024),
            "largest response body read; more is `too_large` (invalid output, not retried)";
    }
}

/// The key as written, whitespace trimmed; never shown, not even as a default.
impl Settable for ApiKey {
    fn read(_: &str, text: &str) -> Result<Self, SettingError> {
        Ok(ApiKey::new(text.trim()))
    }
    fn show(&self) -> String {
        String::new()
    }
}

/// The base URL's shape: http(s), and not the completions route itself.
fn check_url(url: &str) -> Result<(), ConfigError> {
    let invalid = |problem: &str| {
        Err(ConfigError::Invalid {
            name: "RELATA_MODEL_URL",
            problem: problem.to_owned(),
        })
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return invalid("must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)");
    }
    if url.contains("/chat/completions") {
        return invalid(
            "is the base URL (e.g. http://127.0.0.1:11434/v1); /chat/completions is appended",
        );
    }
    Ok(())
}

impl ModelConfig {
    /// Defaults, then the process environment.
    pub fn from_env() -> Result<ModelConfig, ConfigError> {
        ModelConfig::default().with_env(|k| std::env::var(k).ok())
    }

    /// Apply environment variables (looked up through `lookup`) over `self`, load the API
    /// key, and validate.
    pub fn with_env(
        self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ConfigError> {
        self.apply_env(lookup)?.ready()
    }

    /// Apply environment variables over `self`, each parsed into its type (a value that
    /// cannot be read is an error naming the variable, never the default), without
    /// asking for the settings a model call needs (URL, name, key): a command that calls
    /// no model still refuses a bad model setting at start-up.
    pub fn apply_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ConfigError> {
        self.read_env(&lookup)?;
        if !self.url.trim().is_empty() {
            check_url(&self.url)?;
        }
        Ok(self)
    }

    /// A configuration whose environment is already applied ([`ModelConfig::apply_env`]),
    /// with its API key file read and every setting validated: what a model call needs.
    pub fn ready(mut self) -> Result<ModelConfig, ConfigError> {
        self.load_api_key()?;
        self.validate()?;
        Ok(self)
    }

    /// The API key from the key file, if one is named; refused beside a key from
    /// `RELATA_MODEL_API_KEY`.
    fn load_api_key(&mut self) -> Result<(), ConfigError> {
        let Some(path) = &self.api_key_file else {
            return Ok(());
        };
        if self.api_key.is_some() {
            return Err(ConfigError::Invalid {
                name: "RELATA_MODEL_API_KEY",
                problem: "set either RELATA_MODEL_API_KEY or RELATA_MODEL_API_KEY_FILE, not both"
                    .into(),
            });
        }
        // The error names the file and the IO failure, never the contents.
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Invalid {
            name: "RELATA_MODEL_API_KEY_FILE",
            problem: format!(
                "cannot read the API key file {}: {}; create it, or point RELATA_MODEL_API_KEY_FILE (or api_key_file under [model] in the config file) at the file that holds the key",
                path.display(),
                e.kind()
            ),
        })?;
        let key = text.trim();
        if key.is_empty() {
            return Err(ConfigError::Invalid {
                name: "RELATA_MODEL_API_KEY_FILE",
                problem: format!("{} is empty", path.display()),
            });
        }
        self.api_key = Some(ApiKey::new(key));
        Ok(())
    }

    /// Check every setting; the first problem is reported with the variable's name.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name: &'static str, problem: &str| {
            Err(ConfigError::Invalid {
                name,
                problem: problem.to_owned(),
            })
        };
        if self.url.trim().is_empty() {
            return Err(ConfigError::Missing {
                name: "RELATA_MODEL_URL",
            });
        }
        check_url(&self.url)?;
        if self.model.trim().is_empty() {
            return Err(ConfigError::Missing {
                name: "RELATA_MODEL_NAME",
            });
        }
        self.check_bounds()?;
        if self.retry_max_delay_ms < self.retry_base_delay_ms {
            return invalid(
                "RELATA_MODEL_RETRY_MAX_DELAY_MS",
                "must not be below RELATA_MODEL_RETRY_BASE_DELAY_MS",
            );
        }
        if let Some(problem) = self.extract_prompt.refusal(self.dialect) {
            return invalid("RELATA_MODEL_EXTRACT_PROMPT", problem);
        }
        Ok(())
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
    pub fn retry_max_elapsed(&self) -> Duration {
        Duration::from_millis(self.retry_max_elapsed_ms)
    }
    pub fn retry_after_cap(&self) -> Duration {
        Duration::from_millis(self.retry_after_cap_ms)
    }

    /// `{url}/chat/completions`.
    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.url.trim_end_matches('/'))
    }

    /// `{url}/models`.
    pub fn models_url(&self) -> String {
        format!("{}/models", self.url.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn numbers_past_their_upper_bound_are_refused_by_name() {
        for (name, value) in [
            ("RELATA_MODEL_REQUEST_TIMEOUT_MS", "18446744073709551615"),
            ("RELATA_MODEL_RETRY_MAX_ATTEMPTS", "1000000"),
            ("RELATA_MODEL_MAX_BODY_BYTES", "1000000000000"),
        ] {
            let e = ModelConfig::default()
                .with_env(env(&[
                    ("RELATA_MODEL_URL", "http://127.0.0.1:1/v1"),
                    ("RELATA_MODEL_NAME", "m"),
                    (name, value),
                ]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(name) && e.contains("between"), "{e}");
        }
    }

    #[test]
    fn env_overrides_defaults_and_validates() {
        let c = ModelConfig::default()
            .with_env(env(&[
                ("RELATA_MODEL_URL", "http://127.0.0.1:1/v1/"),
                ("RELATA_MODEL_NAME", "m"),
                ("RELATA_MODEL_DIALECT", "json_object_schema"),
                ("RELATA_MODEL_RETRY_MAX_ATTEMPTS", "2"),
                ("RELATA_MODEL_SEED", "7"),
                ("RELATA_MODEL_API_KEY", "sentinel"),
            ]))
            .unwrap();
        assert_eq!(c.dialect, Dialect::JsonObjectSchema);
        assert_eq!(c.retry_max_attempts, 2);
        assert_eq!(c.seed, Some(7));
        assert_eq!(c.chat_url(), "http://127.0.0.1:1/v1/chat/completions");
        assert!(!format!("{c:?}").contains("sentinel"));
    }

    #[test]
    fn dialects_keep_their_spellings() {
        let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.as_str()).collect();
        assert_eq!(names, ["json_schema", "json_object_schema", "none"]);
        assert_eq!(Dialect::default(), Dialect::JsonSchema);
        for d in Dialect::ALL {
            let json = serde_json::to_string(d).unwrap();
            assert_eq!(json, format!("\"{d}\""));
            assert_eq!(serde_json::from_str::<Dialect>(&json).unwrap(), *d);
        }
    }

    #[test]
    fn problems_name_the_variable() {
        let e = ModelConfig::default().with_env(env(&[])).unwrap_err();
        assert_eq!(e.to_string(), "RELATA_MODEL_URL is required");
        let e = ModelConfig::default()
            .with_env(env(&[
                ("RELATA_MODEL_URL", "http://x/v1"),
                ("RELATA_MODEL_NAME", "m"),
                ("RELATA_MODEL_DIALECT", "json"),
            ]))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "RELATA_MODEL_DIALECT: unknown dialect \"json\"; \
             expected one of: json_schema, json_object_schema, none"
        );
        let e = ModelConfig::default()
            .with_env(env(&[
                ("RELATA_MODEL_URL", "http://x/v1"),
                ("RELATA_MODEL_NAME", "m"),
                ("RELATA_MODEL_MAX_CONCURRENCY", "lots"),
            ]))
            .unwrap_err();
        assert!(
            e.to_string().starts_with("RELATA_MODEL_MAX_CONCURRENCY"),
            "{e}"
        );
    }

    #[test]
    fn file_config_rejects_unknown_fields() {
        let ok: ModelConfig = serde_json::from_str(r#"{"url":"http://x/v1","model":"m"}"#).unwrap();
        ok.validate().unwrap();
        assert!(serde_json::from_str::<ModelConfig>(r#"{"api_key":"k"}"#).is_err());
        assert!(serde_json::from_str::<ModelConfig>(r#"{"urll":"x"}"#).is_err());
    }
}
