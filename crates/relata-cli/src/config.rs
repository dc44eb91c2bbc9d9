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
use relata_core::settings::{Hours, Millis, SettingValue};
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

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub database_url: DatabaseUrl,
    /// Connections in a process's PostgreSQL pool; give a worker at least its concurrency.
    pub database_max_connections: u32,
    pub amqp_url: AmqpUrl,
    pub metrics_addr: SocketAddr,
    pub model: ModelConfig,
    pub queue: TopologyConfig,
    pub worker: WorkerConfig,
    pub ingest: IngestConfig,
    /// Per-check settings, e.g. `[checks.degenerate] enabled = true, severity = "warn"`.
    pub checks: BTreeMap<Check, CheckSetting>,
    /// The support check's share of content words, e.g. `[support] min_share = 0.75`.
    pub support: SupportConfig,
    /// Per-check settings of the answer gate, e.g.
    /// `[answer_checks.figure_in_sources] enabled = true, severity = "reject"`.
    pub answer_checks: BTreeMap<relata_core::AnswerCheck, CheckSetting>,
    /// The promotion policy: `[policy] rules = [{ name = "...", kind = "claim", decision =
    /// "allow" }, ...]`; absent, the shipped defaults.
    pub policy: PolicyConfig,
    /// `[review] reviewers = ["Ada Lovelace"]` and the review queue's settings.
    pub review: ReviewConfig,
}

#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// Ordered; the first rule that matches decides. `None`: the shipped defaults.
    pub rules: Option<Vec<relata_core::Rule>>,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    /// The people who may approve and reject (`RELATA_REVIEWERS`, comma-separated).
    pub reviewers: Vec<String>,
    /// How old the oldest pending candidate may get before `RelataReviewQueueStale`
    /// fires (exported as `relata_review_stale_after_seconds`).
    pub stale_after_hours: Hours,
    /// How often a worker's promoter judges new candidates.
    pub promote_interval_ms: Millis,
    /// Candidates of each kind judged per sweep transaction.
    pub promote_batch: u32,
    /// Whether this worker runs a promoter beside its job loop. Off, its candidates wait
    /// for another worker's promoter or `relata promote` (a fleet may keep one promoter,
    /// and `relata-bench overhead --no-promoter` measures the pipeline without it).
    pub promoter: bool,
    /// Mark the review page's session cookie `Secure` (the page is reached over TLS).
    pub secure_cookies: bool,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            reviewers: Vec::new(),
            stale_after_hours: Hours::new(24),
            promote_interval_ms: Millis::from_ms(2_000),
            promote_batch: 500,
            promoter: true,
            secure_cookies: false,
        }
    }
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SupportConfig {
    pub min_share: f64,
}

impl Default for SupportConfig {
    fn default() -> Self {
        SupportConfig {
            min_share: relata_validate::DEFAULT_MIN_SHARE,
        }
    }
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    pub concurrency: u16,
    pub shutdown_deadline_ms: Millis,
    pub candidate_k: u32,
    pub classify_batch: usize,
    pub commit_retry_max_ms: Millis,
    /// `pause` (default) or `exit` when the provider refuses the deployment.
    pub on_provider_refusal: relata_worker::OnProviderRefusal,
    pub provider_retry_min_ms: Millis,
    pub provider_retry_max_ms: Millis,
    /// How often a worker logs its one-line progress summary.
    pub summary_interval_ms: Millis,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    pub max_chunk_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database_url: DatabaseUrl::default(),
            database_max_connections: 10,
            amqp_url: AmqpUrl::default(),
            metrics_addr: DEFAULT_METRICS_ADDR,
            model: ModelConfig::default(),
            queue: TopologyConfig::default(),
            worker: WorkerConfig::default(),
            ingest: IngestConfig::default(),
            checks: BTreeMap::new(),
            support: SupportConfig::default(),
            answer_checks: BTreeMap::new(),
            policy: PolicyConfig::default(),
            review: ReviewConfig::default(),
        }
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 4,
            shutdown_deadline_ms: Millis::from_ms(30_000),
            candidate_k: 5,
            classify_batch: 10,
            commit_retry_max_ms: Millis::from_ms(30_000),
            on_provider_refusal: relata_worker::OnProviderRefusal::Pause,
            provider_retry_min_ms: Millis::from_ms(10_000),
            provider_retry_max_ms: Millis::from_ms(300_000),
            summary_interval_ms: Millis::from_ms(60_000),
        }
    }
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            max_chunk_bytes: relata_producer::chunk::DEFAULT_MAX_CHUNK_BYTES,
        }
    }
}

/// The smallest chunk cap accepted: below it a chunk holds a few words, too little for a
/// model to find a claim in.
const MIN_CHUNK_BYTES: usize = 200;

fn within<T: PartialOrd + std::fmt::Display>(name: &str, v: T, lo: T, hi: T) -> Result<()> {
    if v < lo || v > hi {
        bail!("{name} must be between {lo} and {hi}, not {v}");
    }
    Ok(())
}

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
        "expected a table for TopologyConfig",
        "expected a table ([queue])",
    )
    .replace("expected a table for CheckSetting", "expected a table")
}

/// Where `RELATA_*` values come from: the process environment, or (in tests) a fixed set,
/// so that a test of the file alone does not depend on what its runner exported.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn env(lookup: Lookup, name: &str) -> Option<String> {
    lookup(name).filter(|v| !v.trim().is_empty())
}

/// Set `slot` from the environment variable `name` when it is set: typed, or an error
/// naming the variable.
fn env_value<T: SettingValue>(lookup: Lookup, name: &str, slot: &mut T) -> Result<()> {
    if let Some(v) = env(lookup, name) {
        *slot = relata_core::settings::parse(name, &v)?;
    }
    Ok(())
}

/// Set `slot` from `name` with a parser of the value's own (a URL, an enum).
fn env_with<T>(
    lookup: Lookup,
    name: &str,
    slot: &mut T,
    parse: impl FnOnce(&str) -> std::result::Result<T, String>,
) -> Result<()> {
    if let Some(v) = env(lookup, name) {
        *slot =
            parse(&v).map_err(|problem| relata_core::settings::SettingError::new(name, problem))?;
    }
    Ok(())
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
        env_with(
            lookup,
            "RELATA_DATABASE_URL",
            &mut config.database_url,
            DatabaseUrl::parse,
        )?;
        env_with(
            lookup,
            "RELATA_AMQP_URL",
            &mut config.amqp_url,
            AmqpUrl::parse,
        )?;
        env_value(lookup, "RELATA_METRICS_ADDR", &mut config.metrics_addr)?;
        if let Some(v) = env(lookup, "RELATA_QUEUE_PREFIX") {
            config.queue.prefix = v;
        }
        if let Some(v) = env(lookup, "RELATA_RETRY_DELAYS_MS") {
            config.queue.retry_delays_ms =
                relata_core::settings::parse_list::<Millis>("RELATA_RETRY_DELAYS_MS", &v)?
                    .into_iter()
                    .map(Millis::ms)
                    .collect();
        }
        env_value(
            lookup,
            "RELATA_DELIVERY_LIMIT",
            &mut config.queue.delivery_limit,
        )?;
        env_value(
            lookup,
            "RELATA_DATABASE_MAX_CONNECTIONS",
            &mut config.database_max_connections,
        )?;
        env_value(
            lookup,
            "RELATA_WORKER_CONCURRENCY",
            &mut config.worker.concurrency,
        )?;
        env_value(
            lookup,
            "RELATA_WORKER_SHUTDOWN_DEADLINE_MS",
            &mut config.worker.shutdown_deadline_ms,
        )?;
        env_value(lookup, "RELATA_CANDIDATE_K", &mut config.worker.candidate_k)?;
        env_value(
            lookup,
            "RELATA_CLASSIFY_BATCH",
            &mut config.worker.classify_batch,
        )?;
        env_value(
            lookup,
            "RELATA_COMMIT_RETRY_MAX_MS",
            &mut config.worker.commit_retry_max_ms,
        )?;
        env_with(
            lookup,
            "RELATA_WORKER_ON_PROVIDER_REFUSAL",
            &mut config.worker.on_provider_refusal,
            |v| v.trim().parse().map_err(|e| format!("{e}")),
        )?;
        env_value(
            lookup,
            "RELATA_WORKER_PROVIDER_RETRY_MIN_MS",
            &mut config.worker.provider_retry_min_ms,
        )?;
        env_value(
            lookup,
            "RELATA_WORKER_PROVIDER_RETRY_MAX_MS",
            &mut config.worker.provider_retry_max_ms,
        )?;
        env_value(
            lookup,
            "RELATA_WORKER_SUMMARY_INTERVAL_MS",
            &mut config.worker.summary_interval_ms,
        )?;
        env_value(
            lookup,
            "RELATA_MAX_CHUNK_BYTES",
            &mut config.ingest.max_chunk_bytes,
        )?;
        env_value(
            lookup,
            "RELATA_SUPPORT_MIN_SHARE",
            &mut config.support.min_share,
        )?;
        if let Some(v) = env(lookup, "RELATA_REVIEWERS") {
            config.review.reviewers = v.split(',').map(|n| n.trim().to_owned()).collect();
        }
        env_value(
            lookup,
            "RELATA_REVIEW_STALE_AFTER_HOURS",
            &mut config.review.stale_after_hours,
        )?;
        env_value(
            lookup,
            "RELATA_PROMOTE_INTERVAL_MS",
            &mut config.review.promote_interval_ms,
        )?;
        env_value(
            lookup,
            "RELATA_PROMOTE_BATCH",
            &mut config.review.promote_batch,
        )?;
        env_value(lookup, "RELATA_PROMOTER", &mut config.review.promoter)?;
        // The model's settings are typed here too, so a bad one stops every command, not
        // only those that call the model; whether the required ones are there (URL, name,
        // key) is asked by the commands that need them (`Config::model`).
        config.model = config
            .model
            .apply_env(lookup)
            .context("model configuration")?;
        config.check_bounds()?;
        // The queue names and tiers as the broker crate will build them, so a bad prefix
        // or a repeated delay stops every command, not only those that reach the broker.
        relata_queue::Topology::new(&config.queue).map_err(|e| {
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

    /// Every number a user can set, in the range that makes sense for it (also stated in
    /// the README's configuration table). Outside it a setting is refused by name, not
    /// clamped: a silent clamp would run something other than what was asked for.
    fn check_bounds(&self) -> Result<()> {
        let w = &self.worker;
        within(
            "RELATA_DATABASE_MAX_CONNECTIONS",
            self.database_max_connections,
            1,
            1000,
        )?;
        within("RELATA_DELIVERY_LIMIT", self.queue.delivery_limit, 1, 1000)?;
        if self.queue.retry_delays_ms.len() > 10 {
            bail!("RELATA_RETRY_DELAYS_MS: at most 10 delay tiers");
        }
        for &ms in &self.queue.retry_delays_ms {
            within("RELATA_RETRY_DELAYS_MS (each delay)", ms, 1, 86_400_000)?;
        }
        within("RELATA_WORKER_CONCURRENCY", w.concurrency, 1, 1024)?;
        within(
            "RELATA_WORKER_SHUTDOWN_DEADLINE_MS",
            w.shutdown_deadline_ms.ms(),
            0,
            3_600_000,
        )?;
        within(
            "RELATA_WORKER_SUMMARY_INTERVAL_MS",
            w.summary_interval_ms.ms(),
            10,
            86_400_000,
        )?;
        within("RELATA_CANDIDATE_K", w.candidate_k, 1, 1000)?;
        within(
            "RELATA_REVIEW_STALE_AFTER_HOURS",
            self.review.stale_after_hours.hours(),
            1,
            24 * 365,
        )?;
        within(
            "RELATA_PROMOTE_INTERVAL_MS",
            self.review.promote_interval_ms.ms(),
            10,
            3_600_000,
        )?;
        within("RELATA_PROMOTE_BATCH", self.review.promote_batch, 1, 10_000)?;
        within(
            "RELATA_CLASSIFY_BATCH",
            w.classify_batch,
            1,
            relata_core::contract::bounds::MAX_RELATIONS,
        )?;
        within(
            "RELATA_COMMIT_RETRY_MAX_MS",
            w.commit_retry_max_ms.ms(),
            0,
            3_600_000,
        )?;
        within(
            "RELATA_MAX_CHUNK_BYTES",
            self.ingest.max_chunk_bytes,
            MIN_CHUNK_BYTES,
            relata_producer::corpus::DEFAULT_MAX_TEXT_BYTES,
        )?;
        Ok(())
    }

    /// The model configuration with `RELATA_MODEL_*` applied and validated.
    pub fn model(&self) -> Result<ModelConfig> {
        self.model
            .clone()
            .with_env(|k| std::env::var(k).ok())
            .context("model configuration")
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
        let prompt = self.extract_prompt()?;
        Ok(relata_core::TaskVersion::new(
            &relata_model::contract(task, prompt),
            relata_model::prompt_version(task, prompt),
            &model,
        ))
    }

    pub fn broker(&self) -> BrokerConfig {
        BrokerConfig {
            topology: self.queue.clone(),
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
        if w.concurrency == 0 {
            bail!("worker concurrency must be at least 1");
        }
        if w.classify_batch == 0 || w.classify_batch > relata_core::contract::bounds::MAX_RELATIONS
        {
            bail!(
                "classify batch must be 1..={} (a response holds at most that many relations)",
                relata_core::contract::bounds::MAX_RELATIONS
            );
        }
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
        assert!(err.contains("classify batch"), "{err}");
        config.worker.classify_batch = 10;
        config.worker.concurrency = 0;
        assert!(config.worker(Task::Extract).is_err());
    }
}
