//! Plain configuration data. Building a running [`crate::Broker`] from it is a separate
//! step ([`crate::Broker::connect`]) that validates it.

use std::fmt;
use std::time::Duration;

/// What the broker layer needs to know. Serde data with defaults; unknown fields refused.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrokerConfig {
    /// `amqp://user:password@host:port/vhost`. The password is redacted from `Debug`.
    pub url: String,
    /// Queue names and arguments.
    pub topology: TopologyConfig,
    /// Shown in the RabbitMQ management UI.
    pub connection_name: String,
    /// How long to wait for one publisher confirm before treating the channel as lost.
    pub confirm_timeout_ms: u64,
    /// How long a publish keeps retrying through a broker outage before giving up with a
    /// retryable error (bounded: the caller decides what to do next).
    pub publish_retry_max_ms: u64,
    /// How long [`crate::Broker::connect`] keeps trying to reach the broker at start-up.
    pub connect_retry_max_ms: u64,
    /// The longest pause between two reconnection attempts of a consumer. Consumers try
    /// for as long as they are wanted; only the pause is bounded.
    pub reconnect_max_delay_ms: u64,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            url: "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned(),
            topology: TopologyConfig::default(),
            connection_name: "relata".to_owned(),
            confirm_timeout_ms: 30_000,
            publish_retry_max_ms: 60_000,
            connect_retry_max_ms: 30_000,
            reconnect_max_delay_ms: 10_000,
        }
    }
}

impl BrokerConfig {
    /// The default configuration for the broker at `url`.
    pub fn new(url: impl Into<String>) -> BrokerConfig {
        BrokerConfig {
            url: url.into(),
            ..BrokerConfig::default()
        }
    }

    pub(crate) fn confirm_timeout(&self) -> Duration {
        Duration::from_millis(self.confirm_timeout_ms)
    }
}

impl fmt::Debug for BrokerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerConfig")
            .field("url", &redact_url(&self.url))
            .field("topology", &self.topology)
            .field("connection_name", &self.connection_name)
            .field("confirm_timeout_ms", &self.confirm_timeout_ms)
            .field("publish_retry_max_ms", &self.publish_retry_max_ms)
            .field("connect_retry_max_ms", &self.connect_retry_max_ms)
            .field("reconnect_max_delay_ms", &self.reconnect_max_delay_ms)
            .finish()
    }
}

/// `amqp://user:secret@host/` → `amqp://user:***@host/`, for logs and errors.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// Names and arguments of the queues. Every name starts with `prefix`, so that tests (or
/// two deployments on one virtual host) can keep apart.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopologyConfig {
    /// Default `relata`: queues `relata.extract`, `relata.classify`, `relata.dead`, …
    pub prefix: String,
    /// `x-delivery-limit` of the work queues: a message delivered more often than this
    /// without being settled (it keeps killing workers) is dead-lettered by the broker.
    pub delivery_limit: u32,
    /// One delayed-retry queue per delay, per task.
    pub retry_delays_ms: Vec<u64>,
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            prefix: "relata".to_owned(),
            delivery_limit: 5,
            retry_delays_ms: vec![5_000, 30_000, 300_000],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_password_is_redacted() {
        assert_eq!(
            redact_url("amqp://guest:hunter2@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(redact_url("amqp://host/"), "amqp://host/");
        let cfg = BrokerConfig::new("amqps://u:p%40ss@h/v");
        assert!(!format!("{cfg:?}").contains("p%40ss"));
    }

    #[test]
    fn config_refuses_unknown_fields() {
        let e = serde_json::from_str::<TopologyConfig>(r#"{"prefx": "x"}"#);
        assert!(e.is_err());
        let c: TopologyConfig = serde_json::from_str(r#"{"prefix": "x"}"#).unwrap();
        assert_eq!(c.delivery_limit, 5);
    }
}
