//! Configuration: a TOML file (`--config`), then `RELATA_*` environment variables on top,
//! validated before anything connects. Plain serde data with unknown fields refused;
//! building running components from it is a separate step.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use relata_core::{Check, Task};
use relata_model::ModelConfig;
use relata_queue::{BrokerConfig, TopologyConfig};
use relata_validate::{CheckSetting, GateConfig, SupportSettings};
use relata_worker::WorkerSettings;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/relata";
pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
pub const DEFAULT_METRICS_ADDR: &str = "127.0.0.1:9464";

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub database_url: String,
    /// Connections in a process's PostgreSQL pool; give a worker at least its concurrency.
    pub database_max_connections: u32,
    pub amqp_url: String,
    pub metrics_addr: String,
    pub model: ModelConfig,
    pub queue: TopologyConfig,
    pub worker: WorkerConfig,
    pub ingest: IngestConfig,
    /// Per-check settings, e.g. `[checks.degenerate] enabled = true, severity = "warn"`.
    pub checks: BTreeMap<Check, CheckSetting>,
    /// The support check's share of content words, e.g. `[support] min_share = 0.75`.
    pub support: SupportConfig,
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
    pub shutdown_deadline_ms: u64,
    pub candidate_k: u32,
    pub classify_batch: usize,
    pub commit_retry_max_ms: u64,
    /// `pause` (default) or `exit` when the provider refuses the deployment.
    pub on_provider_refusal: relata_worker::OnProviderRefusal,
    pub provider_retry_min_ms: u64,
    pub provider_retry_max_ms: u64,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    pub max_chunk_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database_url: DEFAULT_DATABASE_URL.into(),
            database_max_connections: 10,
            amqp_url: DEFAULT_AMQP_URL.into(),
            metrics_addr: DEFAULT_METRICS_ADDR.into(),
            model: ModelConfig::default(),
            queue: TopologyConfig::default(),
            worker: WorkerConfig::default(),
            ingest: IngestConfig::default(),
            checks: BTreeMap::new(),
            support: SupportConfig::default(),
        }
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 4,
            shutdown_deadline_ms: 30_000,
            candidate_k: 5,
            classify_batch: 10,
            commit_retry_max_ms: 30_000,
            on_provider_refusal: relata_worker::OnProviderRefusal::Pause,
            provider_retry_min_ms: 10_000,
            provider_retry_max_ms: 300_000,
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

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_num<T: std::str::FromStr>(name: &str, slot: &mut T) -> Result<()>
where
    T::Err: std::fmt::Display,
{
    if let Some(v) = env(name) {
        *slot = v
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("{name}={v:?}: {e}"))?;
    }
    Ok(())
}

impl Config {
    /// The file (if given), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config file {}", path.display()))?;
                toml::from_str(&text)
                    .with_context(|| format!("config file {} is not valid", path.display()))?
            }
            None => Config::default(),
        };
        if let Some(v) = env("RELATA_DATABASE_URL") {
            config.database_url = v;
        }
        if let Some(v) = env("RELATA_AMQP_URL") {
            config.amqp_url = v;
        }
        if let Some(v) = env("RELATA_METRICS_ADDR") {
            config.metrics_addr = v;
        }
        if let Some(v) = env("RELATA_QUEUE_PREFIX") {
            config.queue.prefix = v;
        }
        if let Some(v) = env("RELATA_RETRY_DELAYS_MS") {
            config.queue.retry_delays_ms = v
                .split(',')
                .map(|s| s.trim().parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("RELATA_RETRY_DELAYS_MS={v:?}: {e}"))?;
        }
        env_num("RELATA_DELIVERY_LIMIT", &mut config.queue.delivery_limit)?;
        env_num(
            "RELATA_DATABASE_MAX_CONNECTIONS",
            &mut config.database_max_connections,
        )?;
        if config.database_max_connections == 0 {
            bail!("RELATA_DATABASE_MAX_CONNECTIONS must be at least 1");
        }
        env_num("RELATA_WORKER_CONCURRENCY", &mut config.worker.concurrency)?;
        env_num(
            "RELATA_WORKER_SHUTDOWN_DEADLINE_MS",
            &mut config.worker.shutdown_deadline_ms,
        )?;
        env_num("RELATA_CANDIDATE_K", &mut config.worker.candidate_k)?;
        env_num("RELATA_CLASSIFY_BATCH", &mut config.worker.classify_batch)?;
        env_num(
            "RELATA_COMMIT_RETRY_MAX_MS",
            &mut config.worker.commit_retry_max_ms,
        )?;
        env_num(
            "RELATA_WORKER_ON_PROVIDER_REFUSAL",
            &mut config.worker.on_provider_refusal,
        )?;
        env_num(
            "RELATA_WORKER_PROVIDER_RETRY_MIN_MS",
            &mut config.worker.provider_retry_min_ms,
        )?;
        env_num(
            "RELATA_WORKER_PROVIDER_RETRY_MAX_MS",
            &mut config.worker.provider_retry_max_ms,
        )?;
        env_num("RELATA_MAX_CHUNK_BYTES", &mut config.ingest.max_chunk_bytes)?;
        env_num("RELATA_SUPPORT_MIN_SHARE", &mut config.support.min_share)?;
        Ok(config)
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
        let name = env("RELATA_MODEL_NAME").unwrap_or_else(|| self.model.model.clone());
        if name.trim().is_empty() {
            bail!(
                "RELATA_MODEL_NAME is not set: the model name is part of every task version (it decides which jobs exist)"
            );
        }
        Ok(name)
    }

    /// The extraction prompt (`RELATA_MODEL_EXTRACT_PROMPT` over `[model] extract_prompt`),
    /// for commands that compute task versions but call no model.
    pub fn extract_prompt(&self) -> Result<relata_model::ExtractPrompt> {
        match env("RELATA_MODEL_EXTRACT_PROMPT") {
            Some(v) => v
                .trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("RELATA_MODEL_EXTRACT_PROMPT: {e}")),
            None => Ok(self.model.extract_prompt),
        }
    }

    /// The current task version of `task`: its contract, the configured prompt and model.
    pub fn task_version(&self, task: Task) -> Result<relata_core::TaskVersion> {
        let model = self.model_name()?;
        Ok(relata_core::TaskVersion::new(
            &relata_core::Contract::current(task),
            relata_model::prompt_version(task, self.extract_prompt()?),
            &model,
        ))
    }

    pub fn broker(&self) -> BrokerConfig {
        BrokerConfig {
            topology: self.queue.clone(),
            ..BrokerConfig::new(self.amqp_url.clone())
        }
    }

    pub fn metrics_addr(&self) -> Result<SocketAddr> {
        self.metrics_addr.parse().with_context(|| {
            format!(
                "RELATA_METRICS_ADDR {:?} is not host:port",
                self.metrics_addr
            )
        })
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

    pub fn worker(&self, task: Task) -> Result<WorkerSettings> {
        let w = &self.worker;
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
        if w.provider_retry_min_ms == 0 || w.provider_retry_min_ms > w.provider_retry_max_ms {
            bail!(
                "RELATA_WORKER_PROVIDER_RETRY_MIN_MS must be at least 1 and at most RELATA_WORKER_PROVIDER_RETRY_MAX_MS"
            );
        }
        Ok(WorkerSettings {
            on_provider_refusal: w.on_provider_refusal,
            provider_retry_min: Duration::from_millis(w.provider_retry_min_ms),
            provider_retry_max: Duration::from_millis(w.provider_retry_max_ms),
            concurrency: w.concurrency,
            shutdown_deadline: Duration::from_millis(w.shutdown_deadline_ms),
            candidate_k: w.candidate_k,
            classify_batch: w.classify_batch,
            commit_retry_max_elapsed: Duration::from_millis(w.commit_retry_max_ms),
            ..WorkerSettings::new(task)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> std::path::PathBuf {
        let n: u64 = std::process::id().into();
        let path = std::env::temp_dir().join(format!("relata-config-{n}-{}.toml", text.len()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let path = file("databse_url = \"postgres://x\"\n");
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("databse_url"), "{err}");
    }

    #[test]
    fn check_settings_are_read_and_structural_checks_refuse_to_be_switched_off() {
        let path = file("[checks.degenerate]\nenabled = true\nseverity = \"warn\"\n");
        let config = Config::load(Some(&path)).unwrap();
        std::fs::remove_file(&path).unwrap();
        let gate = config.gate().unwrap();
        assert_eq!(
            gate.setting(Check::Degenerate).severity,
            relata_core::Severity::Warn
        );

        let path = file("[checks.quote_found]\nenabled = false\nseverity = \"reject\"\n\n");
        let config = Config::load(Some(&path)).unwrap();
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
        let config = Config::load(Some(&path)).unwrap();
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
