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

/// `url` with every password a user can write replaced by `***`, for logs and errors:
/// the `user:password@` of a URL, a `password=` (or `sslpassword=`, any key ending in
/// `password`) query parameter, and the `password=…` pair of a libpq key=value string
/// (`host=… password=…`, quoted or not). What is not a password is kept, so an operator
/// still sees which host and database were meant.
pub fn redact_url(url: &str) -> String {
    let url = redact_password_pairs(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url;
    };
    // The last `@` before the query ends the userinfo, even when a password holds an
    // unescaped `/` (which would otherwise be taken for the start of the path).
    let query = rest.find(['?', '#']).unwrap_or(rest.len());
    match rest[..query].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{scheme}://{user}:***@{}", &rest[at + 1..]),
                None => url.clone(),
            }
        }
        None => url.clone(),
    }
}

/// Every `…password = value` pair (case-insensitive key, optional spaces around `=`)
/// with its value replaced: up to the next `&`, `#` or whitespace, or a whole
/// single-quoted libpq value with its `\'` escapes.
fn redact_password_pairs(text: &str) -> String {
    const KEY: &str = "password";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(KEY) {
        let key_end = at + found + KEY.len();
        let after = &text[key_end..];
        let eq = after.len() - after.trim_start().len();
        if !after[eq..].starts_with('=') {
            out.push_str(&text[at..key_end]);
            at = key_end;
            continue;
        }
        let value_start = key_end + eq + 1;
        let rest = &text[value_start..];
        let lead = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        let value = &rest[lead..];
        let len = if let Some(quoted) = value.strip_prefix('\'') {
            let mut escaped = false;
            let close = quoted.char_indices().find_map(|(i, c)| match c {
                _ if escaped => {
                    escaped = false;
                    None
                }
                '\\' => {
                    escaped = true;
                    None
                }
                '\'' => Some(i),
                _ => None,
            });
            close.map_or(value.len(), |i| i + 2)
        } else {
            value
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .unwrap_or(value.len())
        };
        out.push_str(&text[at..value_start + lead]);
        out.push_str("***");
        at = value_start + lead + len;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether `url` is an AMQP URL lapin can connect with. Checked before any connection
/// attempt, so a typo is a configuration error at once instead of a retried outage.
pub fn check_amqp_url(url: &str) -> Result<(), crate::QueueError> {
    match url.parse::<lapin::uri::AMQPUri>() {
        Ok(_) => Ok(()),
        Err(e) => {
            // The parser may quote the whole URL, password included.
            let why = if e.contains(url) {
                String::new()
            } else {
                format!(": {e}")
            };
            Err(crate::QueueError::Config(format!(
                "{} is not an AMQP URL (amqp://user:password@host:port/vhost){why}",
                redact_url(url)
            )))
        }
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
    fn every_password_form_is_redacted() {
        for (url, kept) in [
            (
                "postgres://u@h:5432/db?password=SENTINEL",
                "postgres://u@h:5432/db?password=***",
            ),
            (
                "postgres://h/db?sslmode=require&PassWord=SENTINEL&x=1",
                "postgres://h/db?sslmode=require&PassWord=***&x=1",
            ),
            (
                "postgres://u:SENTINEL@h/db?password=SENTINEL#frag",
                "postgres://u:***@h/db?password=***#frag",
            ),
            (
                "host=h port=5432 password=SENTINEL dbname=d",
                "host=h port=5432 password=*** dbname=d",
            ),
            (
                "host=h password = 'SEN TI\\'NEL' dbname=d",
                "host=h password = *** dbname=d",
            ),
            ("host=h sslpassword=SENTINEL", "host=h sslpassword=***"),
            ("amqp://u:SEN/TINEL@h/v", "amqp://u:***@h/v"),
            ("host=h password=", "host=h password=***"),
            ("postgres://u@h/db?password", "postgres://u@h/db?password"),
        ] {
            let r = redact_url(url);
            assert_eq!(r, kept, "{url}");
            assert!(!r.contains("SENTINEL"), "{r}");
        }
    }

    #[test]
    fn an_unparsable_amqp_url_is_refused_without_its_password() {
        assert!(check_amqp_url("amqp://guest:guest@127.0.0.1:5672/%2f").is_ok());
        for bad in [
            "not a url",
            "amqp://u:SENTINEL@host:notaport/",
            "http://u:SENTINEL@h/",
        ] {
            let e = check_amqp_url(bad).unwrap_err().to_string();
            assert!(!e.contains("SENTINEL"), "{e}");
            assert!(e.contains("is not an AMQP URL"), "{e}");
        }
    }

    #[test]
    fn config_refuses_unknown_fields() {
        let e = serde_json::from_str::<TopologyConfig>(r#"{"prefx": "x"}"#);
        assert!(e.is_err());
        let c: TopologyConfig = serde_json::from_str(r#"{"prefix": "x"}"#).unwrap();
        assert_eq!(c.delivery_limit, 5);
    }
}
