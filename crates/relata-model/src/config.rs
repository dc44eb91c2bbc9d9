//! Configuration: plain serde data, then environment on top. Building a client from it is
//! a separate step ([`crate::ModelClient::new`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::prompt::ExtractPrompt;

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
}

impl ModelConfig {
    /// The prompt version this configuration sends for `task`.
    pub fn prompt_version(&self, task: relata_core::Task) -> &'static str {
        crate::prompt::prompt_version(task, self.extract_prompt)
    }

    /// The contract this configuration asks for on `task` (the extract prompt's).
    pub fn contract(&self, task: relata_core::Task) -> relata_core::Contract {
        crate::prompt::contract(task, self.extract_prompt)
    }
}

/// The adapter's settings. Every field has an environment variable (see the crate docs);
/// the API key has no field that serde reads: it comes from `RELATA_MODEL_API_KEY` or from
/// the file named by `api_key_file` / `RELATA_MODEL_API_KEY_FILE`, never from a flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Base URL, e.g. `http://127.0.0.1:11434/v1`; requests go to `{url}/chat/completions`.
    pub url: String,
    /// Model name sent in every request (and part of the task version).
    pub model: String,
    pub dialect: Dialect,
    /// The extraction prompt (`extract-p1` … `extract-p4`, the default); part of the task
    /// version.
    pub extract_prompt: ExtractPrompt,
    /// A file holding the API key (surrounding whitespace trimmed).
    pub api_key_file: Option<PathBuf>,
    #[serde(skip)]
    pub api_key: Option<ApiKey>,
    pub connect_timeout_ms: u64,
    /// The whole request of one attempt: connect, send, wait, read the body.
    pub request_timeout_ms: u64,
    /// Attempts per call, the first included (1 disables retries).
    pub retry_max_attempts: u32,
    /// No new attempt starts once this much time has passed since the call began; a call
    /// therefore ends within `retry_max_elapsed_ms + request_timeout_ms`.
    pub retry_max_elapsed_ms: u64,
    pub retry_base_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub retry_after_cap_ms: u64,
    /// Requests in flight towards the endpoint, per client.
    pub max_concurrency: usize,
    pub max_tokens: u32,
    pub temperature: f32,
    pub seed: Option<u64>,
    /// Largest response body read; more is `too_large` (invalid output, not retried).
    pub max_body_bytes: usize,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            url: String::new(),
            model: String::new(),
            dialect: Dialect::default(),
            extract_prompt: ExtractPrompt::default(),
            api_key_file: None,
            api_key: None,
            connect_timeout_ms: 5_000,
            request_timeout_ms: 120_000,
            retry_max_attempts: 4,
            retry_max_elapsed_ms: 300_000,
            retry_base_delay_ms: 500,
            retry_max_delay_ms: 30_000,
            retry_after_cap_ms: 60_000,
            max_concurrency: 4,
            max_tokens: 1_024,
            temperature: 0.0,
            seed: None,
            max_body_bytes: 4 * relata_core::contract::bounds::MAX_RESPONSE_BYTES + 16 * 1024,
        }
    }
}

/// `value` typed, or an error naming `name` and saying what a good value is
/// (`RELATA_MODEL_REQUEST_TIMEOUT_MS: "abc" is not a whole number`).
fn parse<T: relata_core::settings::SettingValue>(
    name: &'static str,
    value: &str,
) -> Result<T, ConfigError> {
    relata_core::settings::parse(name, value).map_err(|e| ConfigError::Invalid {
        name,
        problem: e.problem,
    })
}

/// `value` as one of a closed enum's labels, or an error naming `name` and listing the
/// labels.
fn label<T: std::str::FromStr<Err = relata_core::UnknownLabel>>(
    name: &'static str,
    value: &str,
) -> Result<T, ConfigError> {
    value
        .trim()
        .parse()
        .map_err(|e: relata_core::UnknownLabel| ConfigError::Invalid {
            name,
            problem: e.to_string(),
        })
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
        let mut config = self.apply_env(&lookup)?;
        config.load_api_key(&lookup)?;
        config.validate()?;
        Ok(config)
    }

    /// Apply environment variables over `self`, each parsed into its type (a value that
    /// cannot be read is an error naming the variable, never the default), without
    /// asking for the settings a model call needs (URL, name, key): a command that calls
    /// no model still refuses a bad model setting at start-up.
    pub fn apply_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ConfigError> {
        macro_rules! num {
            ($var:literal, $field:ident) => {
                if let Some(v) = lookup($var) {
                    self.$field = parse($var, &v)?;
                }
            };
        }
        macro_rules! ms {
            ($var:literal, $field:ident) => {
                if let Some(v) = lookup($var) {
                    self.$field = parse::<relata_core::settings::Millis>($var, &v)?.ms();
                }
            };
        }
        if let Some(v) = lookup("RELATA_MODEL_URL") {
            self.url = v;
        }
        if !self.url.trim().is_empty() {
            check_url(&self.url)?;
        }
        if let Some(v) = lookup("RELATA_MODEL_NAME") {
            self.model = v;
        }
        if let Some(v) = lookup("RELATA_MODEL_DIALECT") {
            self.dialect = label("RELATA_MODEL_DIALECT", &v)?;
        }
        if let Some(v) = lookup("RELATA_MODEL_EXTRACT_PROMPT") {
            self.extract_prompt = label("RELATA_MODEL_EXTRACT_PROMPT", &v)?;
        }
        if let Some(v) = lookup("RELATA_MODEL_API_KEY_FILE") {
            self.api_key_file = Some(PathBuf::from(v));
        }
        ms!("RELATA_MODEL_CONNECT_TIMEOUT_MS", connect_timeout_ms);
        ms!("RELATA_MODEL_REQUEST_TIMEOUT_MS", request_timeout_ms);
        num!("RELATA_MODEL_RETRY_MAX_ATTEMPTS", retry_max_attempts);
        ms!("RELATA_MODEL_RETRY_MAX_ELAPSED_MS", retry_max_elapsed_ms);
        ms!("RELATA_MODEL_RETRY_BASE_DELAY_MS", retry_base_delay_ms);
        ms!("RELATA_MODEL_RETRY_MAX_DELAY_MS", retry_max_delay_ms);
        ms!("RELATA_MODEL_RETRY_AFTER_CAP_MS", retry_after_cap_ms);
        num!("RELATA_MODEL_MAX_CONCURRENCY", max_concurrency);
        num!("RELATA_MODEL_MAX_TOKENS", max_tokens);
        num!("RELATA_MODEL_TEMPERATURE", temperature);
        num!("RELATA_MODEL_MAX_BODY_BYTES", max_body_bytes);
        if let Some(v) = lookup("RELATA_MODEL_SEED") {
            self.seed = if v.trim().is_empty() {
                None
            } else {
                Some(parse("RELATA_MODEL_SEED", &v)?)
            };
        }
        Ok(self)
    }

    /// The API key from `RELATA_MODEL_API_KEY` or the key file, if either is set.
    fn load_api_key(&mut self, lookup: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        let env_key = lookup("RELATA_MODEL_API_KEY").filter(|k| !k.trim().is_empty());
        match (env_key, &self.api_key_file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Invalid {
                    name: "RELATA_MODEL_API_KEY",
                    problem:
                        "set either RELATA_MODEL_API_KEY or RELATA_MODEL_API_KEY_FILE, not both"
                            .into(),
                });
            }
            (Some(k), None) => self.api_key = Some(ApiKey::new(k.trim())),
            (None, Some(path)) => {
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
            }
            (None, None) => {}
        }
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
        if self.connect_timeout_ms == 0 {
            return invalid("RELATA_MODEL_CONNECT_TIMEOUT_MS", "must be positive");
        }
        if self.request_timeout_ms == 0 {
            return invalid("RELATA_MODEL_REQUEST_TIMEOUT_MS", "must be positive");
        }
        if self.retry_max_attempts == 0 {
            return invalid(
                "RELATA_MODEL_RETRY_MAX_ATTEMPTS",
                "must be at least 1 (1 = no retries)",
            );
        }
        if self.retry_max_delay_ms < self.retry_base_delay_ms {
            return invalid(
                "RELATA_MODEL_RETRY_MAX_DELAY_MS",
                "must not be below RELATA_MODEL_RETRY_BASE_DELAY_MS",
            );
        }
        if self.max_concurrency == 0 {
            return invalid("RELATA_MODEL_MAX_CONCURRENCY", "must be at least 1");
        }
        if self.max_tokens == 0 {
            return invalid("RELATA_MODEL_MAX_TOKENS", "must be at least 1");
        }
        if let Some(problem) = self.extract_prompt.refusal(self.dialect) {
            return invalid("RELATA_MODEL_EXTRACT_PROMPT", problem);
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return invalid("RELATA_MODEL_TEMPERATURE", "must be between 0 and 2");
        }
        if self.max_body_bytes < 1024 {
            return invalid("RELATA_MODEL_MAX_BODY_BYTES", "must be at least 1024");
        }
        // Upper bounds: beyond them a number is a typo, and some (a timeout of u64::MAX
        // ms) overflow the clock arithmetic of the HTTP client and the backoff.
        const HOUR_MS: u64 = 3_600_000;
        for (name, v, max) in [
            (
                "RELATA_MODEL_CONNECT_TIMEOUT_MS",
                self.connect_timeout_ms,
                HOUR_MS,
            ),
            (
                "RELATA_MODEL_REQUEST_TIMEOUT_MS",
                self.request_timeout_ms,
                HOUR_MS,
            ),
            (
                "RELATA_MODEL_RETRY_MAX_ATTEMPTS",
                u64::from(self.retry_max_attempts),
                10_000,
            ),
            (
                "RELATA_MODEL_RETRY_MAX_ELAPSED_MS",
                self.retry_max_elapsed_ms,
                24 * HOUR_MS,
            ),
            (
                "RELATA_MODEL_RETRY_BASE_DELAY_MS",
                self.retry_base_delay_ms,
                HOUR_MS,
            ),
            (
                "RELATA_MODEL_RETRY_MAX_DELAY_MS",
                self.retry_max_delay_ms,
                HOUR_MS,
            ),
            (
                "RELATA_MODEL_RETRY_AFTER_CAP_MS",
                self.retry_after_cap_ms,
                HOUR_MS,
            ),
            (
                "RELATA_MODEL_MAX_CONCURRENCY",
                self.max_concurrency as u64,
                1024,
            ),
            (
                "RELATA_MODEL_MAX_TOKENS",
                u64::from(self.max_tokens),
                1_000_000,
            ),
            (
                "RELATA_MODEL_MAX_BODY_BYTES",
                self.max_body_bytes as u64,
                64 * 1024 * 1024,
            ),
        ] {
            if v > max {
                return Err(ConfigError::Invalid {
                    name,
                    problem: format!("must be at most {max}, not {v}"),
                });
            }
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
            assert!(e.contains(name) && e.contains("at most"), "{e}");
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
