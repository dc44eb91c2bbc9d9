//! Shared fixtures: a fake server, a client pointed at it, and metric reading.

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use relata_model::{ModelClient, ModelConfig, ModelMetrics};
use relata_testkit::{Behaviour, FakeModelServer, FakeOptions};

/// A client configuration for tests: short delays, short timeouts.
pub fn config(url: &str) -> ModelConfig {
    ModelConfig {
        url: url.to_owned(),
        model: "fake-model".to_owned(),
        connect_timeout_ms: 1_000,
        request_timeout_ms: 3_000,
        retry_max_attempts: 4,
        retry_max_elapsed_ms: 10_000,
        retry_base_delay_ms: 10,
        retry_max_delay_ms: 50,
        retry_after_cap_ms: 5_000,
        ..ModelConfig::default()
    }
}

pub struct Harness {
    pub server: FakeModelServer,
    pub client: ModelClient,
    pub registry: Registry,
}

impl Harness {
    /// A fake server with this queue (then a valid empty extraction as the default).
    pub async fn new(queue: Vec<Behaviour>) -> Harness {
        Harness::with(FakeOptions::default(), queue, |_| {}).await
    }

    pub async fn with(
        options: FakeOptions,
        queue: Vec<Behaviour>,
        tweak: impl FnOnce(&mut ModelConfig),
    ) -> Harness {
        let server = FakeModelServer::start_with(options, queue, 0)
            .await
            .expect("fake server starts");
        let mut cfg = config(&server.base_url());
        tweak(&mut cfg);
        let mut registry = Registry::default();
        let metrics = ModelMetrics::register(&mut registry);
        let client = ModelClient::new(cfg, metrics).expect("valid config");
        Harness {
            server,
            client,
            registry,
        }
    }

    pub fn chat_count(&self) -> usize {
        self.server.chat_requests().len()
    }

    /// The value of one sample, 0 when absent.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric(&self.registry, name, labels)
    }

    pub fn encoded(&self) -> String {
        let mut s = String::new();
        encode(&mut s, &self.registry).expect("encodes");
        s
    }
}

pub fn metric(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut s = String::new();
    encode(&mut s, registry).expect("encodes");
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    let prefix = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{}}} ", labels.join(","))
    };
    s.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().expect("a number"))
        .unwrap_or(0.0)
}

/// A valid, empty extraction.
pub const EMPTY_EXTRACTION: &str = r#"{"entities":[],"claims":[]}"#;
