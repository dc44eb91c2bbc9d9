//! Typed settings: how a configuration value written as text (an environment variable)
//! becomes a typed value, with one shape of error that names the key and says what a good
//! value looks like: `RELATA_MODEL_REQUEST_TIMEOUT_MS: "abc" is not a number of
//! milliseconds`. The same types deserialize from the TOML file, so a value is typed
//! when it is loaded, from either source, and never read back from a string later.
//!
//! A value that is present but bad is an error, never a reason to use the default.
//!
//! Each setting is declared once, with [`crate::settings!`] (see [`table`]): its key in the
//! file, its variable, its type, default, bounds and help. Reading the environment,
//! checking the bounds and the configuration reference all follow from that declaration.

mod table;

pub use table::{Bounds, Lookup, ReadAs, Settable, Setting};

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// A setting whose value cannot be used, naming the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct SettingError {
    /// The environment variable or the TOML key.
    pub key: String,
    pub problem: String,
}

impl SettingError {
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> SettingError {
        SettingError {
            key: key.into(),
            problem: problem.into(),
        }
    }
}

/// A type a setting can hold, read from text.
pub trait SettingValue: Sized {
    /// What a good value is, as it reads after "is not": `a whole number`.
    const EXPECTED: &'static str;
    /// `None` when `text` (already trimmed) is not a value of this type.
    fn from_setting(text: &str) -> Option<Self>;
}

/// The value of the setting `key` written as `text`, or an error naming `key` and quoting
/// the start of `text` (at most 40 characters: enough to recognise a typo, too little to
/// carry a pasted secret whole).
pub fn parse<T: SettingValue>(key: &str, text: &str) -> Result<T, SettingError> {
    T::from_setting(text.trim()).ok_or_else(|| {
        SettingError::new(
            key,
            format!(
                "{:?} is not {}",
                crate::text::ellipsize(text.trim(), 40),
                T::EXPECTED
            ),
        )
    })
}

/// The comma-separated values of the setting `key` (`300,600`), each read by [`parse`].
pub fn parse_list<T: SettingValue>(key: &str, text: &str) -> Result<Vec<T>, SettingError> {
    text.split(',').map(|item| parse(key, item)).collect()
}

macro_rules! whole_numbers {
    ($($t:ty),*) => {$(
        impl SettingValue for $t {
            const EXPECTED: &'static str = "a whole number";
            fn from_setting(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}
whole_numbers!(u16, u32, u64, usize);

impl SettingValue for bool {
    const EXPECTED: &'static str = "true or false";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl SettingValue for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok().filter(|v: &f64| v.is_finite())
    }
}

impl SettingValue for f32 {
    const EXPECTED: &'static str = "a number";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok().filter(|v: &f32| v.is_finite())
    }
}

impl SettingValue for SocketAddr {
    const EXPECTED: &'static str = "host:port (an IP address and a port, e.g. 127.0.0.1:9464)";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// A duration written as a whole number of milliseconds (the `_ms` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(Duration);

impl Millis {
    pub const fn from_ms(ms: u64) -> Millis {
        Millis(Duration::from_millis(ms))
    }

    pub const fn duration(self) -> Duration {
        self.0
    }

    /// Whole milliseconds (what was written).
    pub fn ms(self) -> u64 {
        u64::try_from(self.0.as_millis()).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.ms())
    }
}

impl SettingValue for Millis {
    const EXPECTED: &'static str = "a number of milliseconds";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok().map(Millis::from_ms)
    }
}

impl<'de> serde::Deserialize<'de> for Millis {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole(d, "a number of milliseconds").map(Millis::from_ms)
    }
}

/// A whole, non-negative number from the file; `what` (`a number of hours`) is what the
/// error says was expected.
fn whole<'de, D: serde::Deserializer<'de>>(d: D, what: &'static str) -> Result<u64, D::Error> {
    struct V(&'static str);
    impl serde::de::Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("{} cannot be negative", self.0)))
        }
    }
    d.deserialize_u64(V(what))
}

/// A duration written as a whole number of hours (the `_hours` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hours(u64);

impl Hours {
    pub const fn new(hours: u64) -> Hours {
        Hours(hours)
    }

    pub const fn hours(self) -> u64 {
        self.0
    }

    pub fn duration(self) -> Duration {
        Duration::from_secs(self.0.saturating_mul(3600))
    }
}

impl fmt::Display for Hours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} h", self.0)
    }
}

impl SettingValue for Hours {
    const EXPECTED: &'static str = "a number of hours";
    fn from_setting(text: &str) -> Option<Self> {
        text.parse().ok().map(Hours)
    }
}

impl<'de> serde::Deserialize<'de> for Hours {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole(d, "a number of hours").map(Hours)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn each_kind_of_bad_value_is_refused_naming_the_key() {
        let e = parse::<Millis>("RELATA_X_MS", "abc").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"RELATA_X_MS: "abc" is not a number of milliseconds"#
        );
        let e = parse::<Millis>("RELATA_X_MS", "-5").unwrap_err();
        assert!(e.to_string().starts_with("RELATA_X_MS: "), "{e}");
        let e = parse::<Hours>("RELATA_X_HOURS", "1.5").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"RELATA_X_HOURS: "1.5" is not a number of hours"#
        );
        let e = parse::<u32>("RELATA_N", "ten").unwrap_err();
        assert_eq!(e.to_string(), r#"RELATA_N: "ten" is not a whole number"#);
        let e = parse::<u16>("RELATA_N", "70000").unwrap_err();
        assert!(e.to_string().contains("is not a whole number"), "{e}");
        let e = parse::<bool>("RELATA_SWITCH", "off").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"RELATA_SWITCH: "off" is not true or false"#
        );
        assert_eq!(parse::<bool>("RELATA_SWITCH", " false ").ok(), Some(false));
        let e = parse::<f64>("RELATA_SHARE", "NaN").unwrap_err();
        assert_eq!(e.to_string(), r#"RELATA_SHARE: "NaN" is not a number"#);
        let e = parse::<SocketAddr>("RELATA_ADDR", "localhost").unwrap_err();
        assert!(
            e.to_string()
                .starts_with(r#"RELATA_ADDR: "localhost" is not host:port"#),
            "{e}"
        );
    }

    #[test]
    fn a_long_bad_value_is_quoted_only_in_part() {
        let long = "x".repeat(500);
        let e = parse::<u32>("RELATA_N", &long).unwrap_err().to_string();
        assert!(e.len() < 120, "{e}");
    }

    #[test]
    fn good_values_parse_around_whitespace() {
        assert_eq!(
            parse::<Millis>("K", " 1500 ").unwrap().duration(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse::<Hours>("K", "2").unwrap().duration(),
            Duration::from_secs(7200)
        );
        assert_eq!(
            parse::<SocketAddr>("K", "0.0.0.0:9464").unwrap().port(),
            9464
        );
    }

    #[test]
    fn a_list_reads_each_item_and_names_the_key_of_a_bad_one() {
        assert_eq!(
            parse_list::<Millis>("K", "300, 600").unwrap(),
            [Millis::from_ms(300), Millis::from_ms(600)]
        );
        let e = parse_list::<Millis>("RELATA_D", "300,,600")
            .unwrap_err()
            .to_string();
        assert!(e.contains("RELATA_D") && e.contains("\"\""), "{e}");
    }

    #[test]
    fn durations_deserialize_from_whole_numbers_only() {
        #[derive(serde::Deserialize)]
        struct S {
            t: Millis,
        }
        let s: S = serde_json::from_str(r#"{"t": 250}"#).unwrap();
        assert_eq!(s.t, Millis::from_ms(250));
        for bad in [r#"{"t": "250"}"#, r#"{"t": -1}"#, r#"{"t": 1.5}"#] {
            let e = serde_json::from_str::<S>(bad).err().unwrap().to_string();
            assert!(e.contains("milliseconds"), "{bad}: {e}");
        }
        #[derive(serde::Deserialize)]
        struct H {
            h: Hours,
        }
        assert_eq!(
            serde_json::from_str::<H>(r#"{"h": 3}"#).unwrap().h,
            Hours::new(3)
        );
        let e = serde_json::from_str::<H>(r#"{"h": -3}"#).err().unwrap();
        assert!(e.to_string().contains("hours cannot be negative"), "{e}");
    }
}
