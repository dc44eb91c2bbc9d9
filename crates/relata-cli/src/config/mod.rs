//! Configuration: a TOML file (`--config`), then `RELATA_*` environment variables on top,
//! validated before anything connects. Plain serde data with unknown fields refused;
//! building running components from it is a separate step.
//!
//! Every value is typed when it is loaded, from either source: durations
//! ([`Millis`], [`Hours`]), the listen address ([`SocketAddr`]), the database and broker
//! URLs ([`DatabaseUrl`], [`AmqpUrl`]) and counts. A value that is present but cannot be
//! read stops the command at start-up with an error naming the key (the TOML key with its
//! line, or the environment variable); it never falls back to the default. An empty
//! environment variable counts as unset.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, Result, bail};
use relata_core::settings::{Bounds, Hours, Lookup, Millis, Settable, SettingError};
use relata_core::{Check, Task};
use relata_model::ModelConfig;
use relata_queue::{BrokerConfig, TopologyConfig};
use relata_validate::{CheckSetting, GateConfig, SupportSettings};
use relata_worker::WorkerSettings;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/relata";
pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
pub const DEFAULT_METRICS_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9464);

/// A PostgreSQL URL (`postgres://user:password@host:port/database`), checked when loaded.
/// `Debug` shows it with the password redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    fn parse(text: &str) -> std::result::Result<DatabaseUrl, String> {
        let text = text.trim();
        match text.split_once("://") {
            Some(("postgres" | "postgresql", rest)) if !rest.is_empty() => {
                Ok(DatabaseUrl(text.to_owned()))
            }
            Some(_) => Err(format!(
                "{} is not a PostgreSQL URL: relata takes postgres://user:password@host:port/database",
                relata_queue::redact_url(text)
            )),
            None => Err(format!(
                "{} is not a URL: relata takes postgres://user:password@host:port/database (key=value strings are not supported)",
                relata_queue::redact_url(text)
            )),
        }
    }
}

/// An AMQP URL (`amqp://user:password@host:port/vhost`) that lapin can connect with,
/// checked when loaded. `Debug` shows it with the password redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpUrl(String);

impl AmqpUrl {
    fn parse(text: &str) -> std::result::Result<AmqpUrl, String> {
        let text = text.trim();
        relata_queue::check_amqp_url(text).map_err(|e| e.to_string())?;
        Ok(AmqpUrl(text.to_owned()))
    }
}

macro_rules! url_setting {
    ($t:ident, $default:expr, $what:literal) => {
        impl std::ops::Deref for $t {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&relata_queue::redact_url(&self.0))
            }
        }
        impl Default for $t {
            fn default() -> Self {
                $t($default.to_owned())
            }
        }
        /// Shown only as a declared default, which holds no secret.
        impl Settable for $t {
            fn read(key: &str, text: &str) -> Result<Self, SettingError> {
                $t::parse(text).map_err(|problem| SettingError::new(key, problem))
            }
            fn show(&self) -> String {
                self.0.clone()
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                // The message names no part of the value: the TOML error is shown with its
                // line and key, and the value may hold a password.
                $t::parse(&text).map_err(|_| serde::de::Error::custom(concat!("not ", $what)))
            }
        }
    };
}
url_setting!(
    DatabaseUrl,
    DEFAULT_DATABASE_URL,
    "a PostgreSQL URL (postgres://user:password@host:port/database)"
);
url_setting!(
    AmqpUrl,
    DEFAULT_AMQP_URL,
    "an AMQP URL (amqp://user:password@host:port/vhost)"
);

relata_core::settings! {
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct Config {
        pub database_url: DatabaseUrl = DatabaseUrl::default()
            => "RELATA_DATABASE_URL", Bounds::Any,
            "PostgreSQL; the password is redacted from every message";
        pub database_max_connections: u32 = 10
            => "RELATA_DATABASE_MAX_CONNECTIONS", Bounds::Whole(1, 1000),
            "PostgreSQL pool size of every command (give a worker at least its concurrency)";
        pub amqp_url: AmqpUrl = AmqpUrl::default()
            => "RELATA_AMQP_URL", Bounds::Any,
            "RabbitMQ; an unparsable URL is refused at start";
        pub metrics_addr: SocketAddr = DEFAULT_METRICS_ADDR
            => "RELATA_METRICS_ADDR", Bounds::Any,
            "worker `/metrics`, `/healthz`, `/readyz`";
        pub model: ModelConfig = ModelConfig::default();
        pub queue: QueueConfig = QueueConfig::default();
        pub worker: WorkerConfig = WorkerConfig::default();
        pub ingest: IngestConfig = IngestConfig::default();
        /// Per-check settings, e.g. `[checks.degenerate] enabled = true, severity = "warn"`.
        pub checks: BTreeMap<Check, CheckSetting> = BTreeMap::new();
        /// The support check's share of content words, e.g. `[support] min_share = 0.75`.
        pub support: SupportConfig = SupportConfig::default();
        /// Per-check settings of the answer gate, e.g.
        /// `[answer_checks.figure_in_sources] enabled = true, severity = "reject"`.
        pub answer_checks: BTreeMap<relata_core::AnswerCheck, CheckSetting> = BTreeMap::new();
        /// The promotion policy: `[policy] rules = [{ name = "...", kind = "claim", decision =
        /// "allow" }, ...]`; absent, the shipped defaults.
        pub policy: PolicyConfig = PolicyConfig::default();
        /// `[review] reviewers = ["Ada Lovelace"]` and the review queue's settings.
        pub review: ReviewConfig = ReviewConfig::default();
    }
}

#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// Ordered; the first rule that matches decides. `None`: the shipped defaults.
    pub rules: Option<Vec<relata_core::Rule>>,
}

relata_core::settings! {
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ReviewConfig in "review" {
        pub reviewers: Vec<String> = Vec::new()
            => "RELATA_REVIEWERS", Bounds::Any,
            "the people who may approve and reject (comma-separated)";
        /// Exported as `relata_review_stale_after_seconds`.
        pub stale_after_hours: Hours = Hours::new(24)
            => "RELATA_REVIEW_STALE_AFTER_HOURS", Bounds::Whole(1, 24 * 365),
            "how old the oldest pending candidate may get before `RelataReviewQueueStale` fires";
        pub promote_interval_ms: Millis = Millis::from_ms(2_000)
            => "RELATA_PROMOTE_INTERVAL_MS", Bounds::Whole(10, 3_600_000),
            "how often a worker's promoter judges new candidates";
        pub promote_batch: u32 = 500
            => "RELATA_PROMOTE_BATCH", Bounds::Whole(1, 10_000),
            "candidates of each kind judged per sweep transaction";
        /// Off, this worker's candidates wait for another worker's promoter or `relata
        /// promote` (a fleet may keep one promoter, and `relata-bench overhead
        /// --no-promoter` measures the pipeline without it).
        pub promoter: bool = true
            => "RELATA_PROMOTER", Bounds::Any,
            "whether a worker runs a promoter beside its job loop";
        /// Mark the review page's session cookie `Secure` (the page is reached over TLS).
        pub secure_cookies: bool = false;
    }
}

relata_core::settings! {
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct SupportConfig in "support" {
        /// Bounded again by the gate itself; declared here so the reference states it.
        pub min_share: f64 = relata_validate::DEFAULT_MIN_SHARE
            => "RELATA_SUPPORT_MIN_SHARE", Bounds::Share,
            "share of a statement's ordinary content words that its quote must contain";
    }
}

relata_core::settings! {
    /// The broker's names and tiers as the file and the environment give them; the queue
    /// crate's [`TopologyConfig`] owns the defaults and checks the names.
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct QueueConfig in "queue" {
        pub prefix: String = TopologyConfig::default().prefix
            => "RELATA_QUEUE_PREFIX", Bounds::Any,
            "queue names `{prefix}.extract`, `{prefix}.classify`, …";
        pub delivery_limit: u32 = TopologyConfig::default().delivery_limit
            => "RELATA_DELIVERY_LIMIT", Bounds::Whole(1, 1000),
            "deliveries before a message is dead-lettered by the broker";
        pub retry_delays_ms: Vec<u64> = TopologyConfig::default().retry_delays_ms
            => "RELATA_RETRY_DELAYS_MS" as Vec<Millis>,
            Bounds::Each { most: 10, min: 1, max: 86_400_000 },
            "broker delay tiers for transport failures";
    }
}

impl QueueConfig {
    pub fn topology(&self) -> TopologyConfig {
        TopologyConfig {
            prefix: self.prefix.clone(),
            delivery_limit: self.delivery_limit,
            retry_delays_ms: self.retry_delays_ms.clone(),
        }
    }
}

relata_core::settings! {
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct WorkerConfig in "worker" {
        pub concurrency: u16 = 4
            => "RELATA_WORKER_CONCURRENCY", Bounds::Whole(1, 1024),
            "jobs in flight (and prefetch)";
        pub shutdown_deadline_ms: Millis = Millis::from_ms(30_000)
            => "RELATA_WORKER_SHUTDOWN_DEADLINE_MS", Bounds::Whole(0, 3_600_000),
            "in-flight grace after SIGTERM";
        pub candidate_k: u32 = 5
            => "RELATA_CANDIDATE_K", Bounds::Whole(1, 1000),
            "each new claim is paired with at most K claims about the same entity";
        /// A response holds at most `MAX_RELATIONS` relations.
        pub classify_batch: usize = 10
            => "RELATA_CLASSIFY_BATCH",
            Bounds::Whole(1, relata_core::contract::bounds::MAX_RELATIONS as u64),
            "pairs per classify job";
        pub commit_retry_max_ms: Millis = Millis::from_ms(30_000)
            => "RELATA_COMMIT_RETRY_MAX_MS", Bounds::Whole(0, 3_600_000),
            "how long a commit is retried while the store is down";
        pub on_provider_refusal: relata_worker::OnProviderRefusal =
            relata_worker::OnProviderRefusal::Pause
            => "RELATA_WORKER_ON_PROVIDER_REFUSAL", Bounds::Any,
            "`pause` consuming and ask again, or `exit` with code 3";
        /// At least 1 and at most the maximum: checked with the maximum in
        /// [`Config::worker`].
        pub provider_retry_min_ms: Millis = Millis::from_ms(10_000)
            => "RELATA_WORKER_PROVIDER_RETRY_MIN_MS", Bounds::Any,
            "while paused, the provider is asked again after this, doubling";
        pub provider_retry_max_ms: Millis = Millis::from_ms(300_000)
            => "RELATA_WORKER_PROVIDER_RETRY_MAX_MS", Bounds::Any,
            "the longest wait before the provider is asked again";
        pub summary_interval_ms: Millis = Millis::from_ms(60_000)
            => "RELATA_WORKER_SUMMARY_INTERVAL_MS", Bounds::Whole(10, 86_400_000),
            "how often a worker logs its one-line progress summary";
    }
}

/// The smallest chunk cap accepted: below it a chunk holds a few words, too little for a
/// model to find a claim in.
const MIN_CHUNK_BYTES: usize = 200;

relata_core::settings! {
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct IngestConfig in "ingest" {
        pub max_chunk_bytes: usize = relata_producer::chunk::DEFAULT_MAX_CHUNK_BYTES
            => "RELATA_MAX_CHUNK_BYTES",
            Bounds::Whole(
                MIN_CHUNK_BYTES as u64,
                relata_producer::corpus::DEFAULT_MAX_TEXT_BYTES as u64,
            ),
            "chunk size cap (paragraph boundaries)";
    }
}

relata_core::settings! {
    /// The log filter and format: read from the environment alone, before the file, so
    /// that a problem with the file is logged as asked.
    #[derive(Debug, Clone)]
    pub struct LogSettings env only {
        pub filter: String = "info".to_owned()
            => "RELATA_LOG", Bounds::Any,
            "log filter (stderr)";
        pub format: String = "text".to_owned()
            => "RELATA_LOG_FORMAT", Bounds::Any,
            "log format: `text` or `json`";
    }
}

#[cfg(test)]
mod reference;

/// A TOML error as a sentence that names the line and the key but never quotes the line:
/// `toml`'s own message prints the offending line, and that line may be
/// `database_url = "postgres://u:secret@…"`.
fn toml_problem(text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return generic_toml_message(e.message());
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty())
        .or_else(|| {
            let t = line.trim();
            t.starts_with('[').then_some(t)
        });
    match key {
        Some(k) => format!(
            "line {line_no}, key {}: {}",
            relata_core::text::cut(k, 80),
            generic_toml_message(e.message())
        ),
        None => format!("line {line_no}: {}", generic_toml_message(e.message())),
    }
}

/// `toml`'s message with anything that could be a value taken out: serde quotes values
/// in backticks or double quotes (`invalid type: string "secret"`); an unknown or missing
/// field names a key, which is kept. Rust type names (`struct WorkerConfig`) become words.
fn generic_toml_message(m: &str) -> String {
    if m.starts_with("unknown field") || m.starts_with("missing field") {
        return m.to_owned();
    }
    let mut out = String::with_capacity(m.len());
    let mut quote: Option<char> = None;
    for c in m.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '`' || c == '"' => {
                quote = Some(c);
                out.push('…');
            }
            None => out.push(c),
        }
    }
    let out = out.replace("expected struct ", "expected a table for ");
    out.replace(
        "expected a table for WorkerConfig",
        "expected a table ([worker])",
    )
    .replace(
        "expected a table for IngestConfig",
        "expected a table ([ingest])",
    )
    .replace(
        "expected a table for ModelConfig",
        "expected a table ([model])",
    )
    .replace(
        "expected a table for QueueConfig",
        "expected a table ([queue])",
    )
    .replace("expected a table for CheckSetting", "expected a table")
}

impl Config {
    /// The file (if given), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        Config::load_with(file, &|k| std::env::var(k).ok())
    }

    /// The file (if given), then the `RELATA_*` values `lookup` gives.
    pub fn load_with(file: Option<&Path>, lookup: Lookup) -> Result<Config> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config file {}", path.display()))?;
                toml::from_str(&text).map_err(|e| {
                    anyhow::anyhow!(
                        "config file {} is not valid: {}",
                        path.display(),
                        toml_problem(&text, &e)
                    )
                })?
            }
            None => Config::default(),
        };
        config.read_env(lookup)?;
        config.queue.read_env(lookup)?;
        config.worker.read_env(lookup)?;
        config.ingest.read_env(lookup)?;
        config.support.read_env(lookup)?;
        config.review.read_env(lookup)?;
        // The model's settings are typed here too, so a bad one stops every command, not
        // only those that call the model; whether the required ones are there (URL, name,
        // key) is asked by the commands that need them (`Config::model`).
        config.model = config
            .model
            .apply_env(lookup)
            .context("model configuration")?;
        config.check_loaded_bounds()?;
        // The queue names and tiers as the broker crate will build them, so a bad prefix
        // or a repeated delay stops every command, not only those that reach the broker.
        relata_queue::Topology::new(&config.queue.topology()).map_err(|e| {
            anyhow::anyhow!(
                "[queue] (RELATA_QUEUE_PREFIX, RELATA_DELIVERY_LIMIT, RELATA_RETRY_DELAYS_MS): {e}"
            )
        })?;
        // A policy or reviewer list that cannot be used stops every command here, before
        // anything connects.
        config.policy()?;
        config.reviewers()?;
        Ok(config)
    }

    /// Every number a user can set, in the range its declaration states (and
    /// `docs/configuration.md` with it). Outside it a setting is refused by name, not
    /// clamped: a silent clamp would run something other than what was asked for. The
    /// model's bounds are checked when a command asks for the model (`Config::model`) and
    /// `[support]`'s where the gate is built, as they always were: a command that calls
    /// no model and judges nothing does not refuse them.
    fn check_loaded_bounds(&self) -> Result<(), SettingError> {
        self.check_bounds()?;
        self.queue.check_bounds()?;
        self.worker.check_bounds()?;
        self.ingest.check_bounds()?;
        self.review.check_bounds()
    }

    /// The model configuration (`RELATA_MODEL_*` were applied when it was loaded) with its
    /// key file read, validated.
    pub fn model(&self) -> Result<ModelConfig> {
        self.model.clone().ready().context("model configuration")
    }

    /// The model name alone (for commands that compute task versions but call no model).
    pub fn model_name(&self) -> Result<String> {
        let name = self.model.model.clone();
        if name.trim().is_empty() {
            bail!(
                "RELATA_MODEL_NAME is not set: the model name is part of every task version (it decides which jobs exist)"
            );
        }
        Ok(name)
    }

    /// The extraction prompt (`RELATA_MODEL_EXTRACT_PROMPT` over `[model] extract_prompt`,
    /// applied when loaded), for commands that compute task versions but call no model.
    pub fn extract_prompt(&self) -> Result<relata_model::ExtractPrompt> {
        Ok(self.model.extract_prompt)
    }

    /// The current task version of `task`: its contract, the configured prompt and model.
    pub fn task_version(&self, task: Task) -> Result<relata_core::TaskVersion> {
        let model = self.model_name()?;
        Ok(relata_core::TaskVersion::new(
            &self.model.contract(task),
            self.model.prompt_version(task),
            &model,
        ))
    }

    pub fn broker(&self) -> BrokerConfig {
        BrokerConfig {
            topology: self.queue.topology(),
            ..BrokerConfig::new(self.amqp_url.to_string())
        }
    }

    /// The store's pool settings: every command that opens the store takes them from here,
    /// so `RELATA_DATABASE_MAX_CONNECTIONS` holds for all of them.
    pub fn store_options(&self) -> relata_store::StoreOptions {
        relata_store::StoreOptions {
            max_connections: self.database_max_connections,
            ..relata_store::StoreOptions::default()
        }
    }

    /// The worker's promoter pool: its own, so its transactions never take a connection a
    /// commit is waiting for; two connections at most, and never more than the setting.
    /// Its connections are `relata-promoter` in `pg_stat_activity`, so an operator (and
    /// `relata-bench`) can tell promotion's database work from the jobs'.
    pub fn promoter_store_options(&self) -> relata_store::StoreOptions {
        relata_store::StoreOptions {
            max_connections: self.database_max_connections.min(2),
            application_name: Some(relata_store::PROMOTER_APPLICATION_NAME),
            ..relata_store::StoreOptions::default()
        }
    }

    pub fn gate(&self) -> Result<GateConfig> {
        let mut gate = GateConfig::default();
        for (check, setting) in &self.checks {
            gate.set(*check, *setting)?;
        }
        self.support.check_bounds()?;
        gate.set_support(SupportSettings {
            min_share: self.support.min_share,
        })
        .context("[support] min_share (RELATA_SUPPORT_MIN_SHARE)")?;
        Ok(gate)
    }

    /// The answer gate's settings: the defaults with `[answer_checks.*]` applied.
    pub fn answer_gate(&self) -> Result<relata_validate::AnswerConfig> {
        let mut gate = relata_validate::AnswerConfig::default();
        for (check, setting) in &self.answer_checks {
            gate.set(*check, *setting)?;
        }
        Ok(gate)
    }

    /// The promotion policy: the configured rules, or the shipped defaults.
    pub fn policy(&self) -> Result<relata_core::Policy> {
        match &self.policy.rules {
            None => Ok(relata_core::Policy::shipped()),
            Some(rules) => relata_core::Policy::new(rules.clone())
                .map_err(|e| anyhow::anyhow!("[policy] cannot be used: {e}")),
        }
    }

    /// The configured reviewers (possibly none: then nobody can approve or reject).
    pub fn reviewers(&self) -> Result<relata_core::Reviewers> {
        relata_core::Reviewers::new(&self.review.reviewers)
            .map_err(|e| anyhow::anyhow!("[review] reviewers (RELATA_REVIEWERS): {e}"))
    }

    pub fn worker(&self, task: Task) -> Result<WorkerSettings> {
        let w = &self.worker;
        if !Task::QUEUED.contains(&task) {
            bail!(
                "{task} is not a queued task: questions are answered by `relata ask` and `relata serve`"
            );
        }
        // Settings built in code reach here unchecked by `load`.
        w.check_bounds()?;
        if w.provider_retry_min_ms.ms() == 0 || w.provider_retry_min_ms > w.provider_retry_max_ms {
            bail!(
                "RELATA_WORKER_PROVIDER_RETRY_MIN_MS must be at least 1 and at most RELATA_WORKER_PROVIDER_RETRY_MAX_MS"
            );
        }
        Ok(WorkerSettings {
            on_provider_refusal: w.on_provider_refusal,
            provider_retry_min: w.provider_retry_min_ms.duration(),
            provider_retry_max: w.provider_retry_max_ms.duration(),
            concurrency: w.concurrency,
            shutdown_deadline: w.shutdown_deadline_ms.duration(),
            candidate_k: w.candidate_k,
            classify_batch: w.classify_batch,
            commit_retry_max_elapsed: w.commit_retry_max_ms.duration(),
            summary_interval: w.summary_interval_ms.duration(),
            ..WorkerSettings::new(task)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> std::path::PathBuf {
        // Tests run in parallel threads of one process: a counter keeps their files apart.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n: u64 = std::process::id().into();
        let path = std::env::temp_dir().join(format!("relata-config-{n}-{k}.toml"));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let path = file("databse_url = \"postgres://x\"\n");
        let err = format!(
            "{:#}",
            Config::load_with(Some(&path), &|_| None).unwrap_err()
        );
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("databse_url"), "{err}");
    }

    #[test]
    fn check_settings_are_read_and_structural_checks_refuse_to_be_switched_off() {
        let path = file("[checks.degenerate]\nenabled = true\nseverity = \"warn\"\n");
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        let gate = config.gate().unwrap();
        assert_eq!(
            gate.setting(Check::Degenerate).severity,
            relata_core::Severity::Warn
        );

        let path = file("[checks.quote_found]\nenabled = false\nseverity = \"reject\"\n\n");
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        let err = config.gate().unwrap_err().to_string();
        assert!(
            err.contains("quote_found") && err.contains("structural"),
            "{err}"
        );
    }

    #[test]
    fn the_support_share_is_read_and_bounded() {
        let path = file("[support]\nmin_share = 0.5\n");
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(config.gate().unwrap().support().min_share, 0.5);
        for bad in [0.0, 1.5, -1.0, f64::NAN] {
            let mut config = Config::default();
            config.support.min_share = bad;
            let err = format!("{:#}", config.gate().unwrap_err());
            assert!(err.contains("min_share"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_toml_error_names_line_and_key_never_the_value() {
        for text in [
            "database_url = \"postgres://u:SENTINEL@h/db\nmetrics_addr = 1\n",
            "metrics_addr = \"x\"\ndatabase_url = 5 # SENTINEL\n",
            "database_max_connections = \"SENTINEL\"\n",
            "[worker]\nconcurrency = \"SENTINEL\"\n",
            "worker = \"SENTINEL\"\n",
        ] {
            let path = file(text);
            let err = format!(
                "{:#}",
                Config::load_with(Some(&path), &|_| None).unwrap_err()
            );
            std::fs::remove_file(&path).unwrap();
            assert!(!err.contains("SENTINEL"), "{err}");
            assert!(err.contains("line "), "{err}");
            assert!(!err.contains("struct"), "{err}");
        }
        let path = file("[worker]\nconcurrency = \"SENTINEL\"\n");
        let err = format!(
            "{:#}",
            Config::load_with(Some(&path), &|_| None).unwrap_err()
        );
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("line 2, key concurrency"), "{err}");
    }

    #[test]
    fn numbers_out_of_range_are_refused_by_name() {
        for (text, name) in [
            ("[ingest]\nmax_chunk_bytes = 0\n", "RELATA_MAX_CHUNK_BYTES"),
            ("[worker]\ncandidate_k = 0\n", "RELATA_CANDIDATE_K"),
            ("[queue]\nretry_delays_ms = [0]\n", "RELATA_RETRY_DELAYS_MS"),
            (
                "database_max_connections = 100000\n",
                "RELATA_DATABASE_MAX_CONNECTIONS",
            ),
        ] {
            let path = file(text);
            let err = format!(
                "{:#}",
                Config::load_with(Some(&path), &|_| None).unwrap_err()
            );
            std::fs::remove_file(&path).unwrap();
            assert!(err.contains(name) && err.contains("between"), "{err}");
        }
    }

    /// docs/review.md shows the shipped policy as configuration a reader can copy; read
    /// as configuration, it is the policy relata ships (it once drifted two versions).
    #[test]
    fn the_documented_shipped_policy_is_the_shipped_policy() {
        let doc = include_str!("../../../../docs/review.md");
        let start = doc
            .find("   [policy]\n")
            .expect("the policy block in docs/review.md");
        let end = start + doc[start..].find("   ```").expect("the block's end");
        let block: String = doc[start..end]
            .lines()
            .map(|l| l.strip_prefix("   ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        let path = file(&block);
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(config.policy().unwrap(), relata_core::Policy::shipped());
    }

    #[test]
    fn a_policy_is_read_in_order_and_a_bad_one_stops_loading() {
        let path = file(
            "[policy]\nrules = [\n  { name = \"forum\", source = \"forum\", decision = \"deny\" },\n  { name = \"rest\", decision = \"allow\" },\n]\n",
        );
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        let policy = config.policy().unwrap();
        assert_eq!(policy.rules().len(), 2);
        assert_eq!(policy.rules()[0].name, "forum");
        // Absent: the shipped defaults.
        assert_eq!(
            Config::default().policy().unwrap(),
            relata_core::Policy::shipped()
        );

        for (text, needle) in [
            (
                "[policy]\nrules = [{ name = \"x\", decision = \"maybe\" }]\n",
                "line 2",
            ),
            (
                "[policy]\nrules = [{ name = \"x\", decison = \"allow\" }]\n",
                "decison",
            ),
            (
                "[policy]\nrules = [{ name = \"x\", kind = \"claims\", decision = \"allow\" }]\n",
                "line 2",
            ),
            (
                "[policy]\nrules = [{ name = \"a\", decision = \"allow\" }, { name = \"a\", decision = \"deny\" }]\n",
                "rule 2",
            ),
            ("[policy]\nrules = \"allow everything\"\n", "line 2"),
            // Not TOML at all: the array is never closed.
            (
                "[policy]\nrules = [{ name = \"x\", decision = \"allow\" }\n",
                "line 2, key rules",
            ),
        ] {
            let path = file(text);
            let err = format!(
                "{:#}",
                Config::load_with(Some(&path), &|_| None).unwrap_err()
            );
            std::fs::remove_file(&path).unwrap();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn the_promoter_is_on_unless_switched_off_and_the_switch_is_a_boolean() {
        assert!(Config::default().review.promoter);
        let path = file("[review]\npromoter = false\n");
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!config.review.promoter);
        let path = file("[review]\npromoter = \"off\"\n");
        let err = format!(
            "{:#}",
            Config::load_with(Some(&path), &|_| None).unwrap_err()
        );
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("key promoter"), "{err}");
    }

    #[test]
    fn reviewers_are_read_and_a_blank_or_repeated_name_is_refused() {
        let path = file("[review]\nreviewers = [\"Ada Lovelace\", \"Grace Hopper\"]\n");
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        let r = config.reviewers().unwrap();
        assert!(r.get("Ada Lovelace").is_ok());
        assert!(r.get("Alan Turing").is_err());
        for text in [
            "[review]\nreviewers = [\"Ada\", \" \"]\n",
            "[review]\nreviewers = [\"Ada\", \"Ada\"]\n",
        ] {
            let path = file(text);
            let err = format!(
                "{:#}",
                Config::load_with(Some(&path), &|_| None).unwrap_err()
            );
            std::fs::remove_file(&path).unwrap();
            assert!(err.contains("reviewers"), "{err}");
        }
    }

    #[test]
    fn each_kind_of_bad_value_in_the_file_is_refused_naming_its_key() {
        for (text, key, says) in [
            (
                "[worker]\nshutdown_deadline_ms = \"30s\"\n",
                "line 2, key shutdown_deadline_ms",
                "milliseconds",
            ),
            (
                "[worker]\nsummary_interval_ms = -5\n",
                "line 2, key summary_interval_ms",
                "negative",
            ),
            (
                "[review]\nstale_after_hours = 1.5\n",
                "line 2, key stale_after_hours",
                "hours",
            ),
            (
                "metrics_addr = \"localhost\"\n",
                "line 1, key metrics_addr",
                "",
            ),
            (
                "database_url = \"mysql://u:SENTINEL@h/db\"\n",
                "line 1, key database_url",
                "not a PostgreSQL URL",
            ),
            (
                "amqp_url = \"http://u:SENTINEL@h/\"\n",
                "line 1, key amqp_url",
                "not an AMQP URL",
            ),
            (
                "database_max_connections = 2.5\n",
                "line 1, key database_max_connections",
                "",
            ),
            (
                "[model]\nrequest_timeout_ms = \"abc\"\n",
                "line 2, key request_timeout_ms",
                "",
            ),
            (
                "[model]\nurl = \"ftp://h/v1\"\n",
                "RELATA_MODEL_URL",
                "must start with http",
            ),
        ] {
            let path = file(text);
            let err = format!(
                "{:#}",
                Config::load_with(Some(&path), &|_| None).unwrap_err()
            );
            std::fs::remove_file(&path).unwrap();
            assert!(err.contains(key) && err.contains(says), "{text}: {err}");
            assert!(!err.contains("SENTINEL"), "{err}");
        }
    }

    #[test]
    fn values_are_typed_when_loaded() {
        let path = file(
            "metrics_addr = \"0.0.0.0:9999\"\n[worker]\nsummary_interval_ms = 1500\n[review]\nstale_after_hours = 2\n",
        );
        let config = Config::load_with(Some(&path), &|_| None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(config.metrics_addr.port(), 9999);
        let w = config.worker(Task::Extract).unwrap();
        assert_eq!(w.summary_interval, std::time::Duration::from_millis(1500));
        assert_eq!(
            config.review.stale_after_hours.duration(),
            std::time::Duration::from_secs(7200)
        );
    }

    #[test]
    fn every_store_pool_honours_the_connection_setting() {
        let mut config = Config {
            database_max_connections: 1,
            ..Config::default()
        };
        assert_eq!(config.store_options().max_connections, 1);
        assert_eq!(config.promoter_store_options().max_connections, 1);
        config.database_max_connections = 40;
        assert_eq!(config.store_options().max_connections, 40);
        assert_eq!(config.promoter_store_options().max_connections, 2);
        assert_eq!(
            config.promoter_store_options().application_name,
            Some("relata-promoter")
        );
        assert_eq!(config.store_options().application_name, None);
    }

    #[test]
    fn worker_bounds_are_validated() {
        let mut config = Config::default();
        config.worker.classify_batch = 51;
        let err = config.worker(Task::Classify).unwrap_err().to_string();
        assert!(err.contains("classify_batch"), "{err}");
        config.worker.classify_batch = 10;
        config.worker.concurrency = 0;
        assert!(config.worker(Task::Extract).is_err());
    }
}
