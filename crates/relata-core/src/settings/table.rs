//! Settings declared once. A configuration struct written with [`crate::settings!`] names
//! each setting in one line: its field (the key in the file), type, default, environment
//! variable, bounds and help. From that line come the struct and its `Default`, the one
//! read of the environment (`read_env`), the one bound check (`check_bounds`) and the
//! table the configuration reference is held to (`SETTINGS`, `defaults`).
//!
//! Before this, a setting was named in the serde struct, again in an environment mapping
//! and again in a bound check, and the three drifted: a bound stated in the README but
//! checked nowhere, a variable read in one crate and again in another.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{Hours, Millis, SettingError, parse};

/// The range a setting's value must fall in. Outside it the setting is refused by name,
/// never clamped: a silent clamp would run something other than what was asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bounds {
    /// Any value of the type (its own parser decides what is readable).
    Any,
    /// A whole number (or a duration in its unit) from the first to the second, inclusive.
    Whole(u64, u64),
    /// A number from the first to the second, inclusive.
    Real(f64, f64),
    /// A share: above 0, at most 1.
    Share,
    /// A list of at most `most` whole numbers, each from `min` to `max`.
    Each { most: usize, min: u64, max: u64 },
}

impl Bounds {
    /// The range as the configuration reference writes it (`1–1024`); empty for
    /// [`Bounds::Any`].
    pub fn describe(&self) -> String {
        match *self {
            Bounds::Any => String::new(),
            Bounds::Whole(lo, hi) => format!("{lo}–{hi}"),
            Bounds::Real(lo, hi) => format!("{lo}–{hi}"),
            Bounds::Share => "above 0, at most 1".to_owned(),
            Bounds::Each { most, min, max } => format!("at most {most}, each {min}–{max}"),
        }
    }

    /// What is wrong with `value`, as it reads after the setting's name.
    fn problem<T: Settable>(&self, value: &T) -> Option<String> {
        match *self {
            Bounds::Any => None,
            Bounds::Whole(lo, hi) => value
                .whole()
                .filter(|n| !(lo..=hi).contains(n))
                .map(|n| format!("must be between {lo} and {hi}, not {n}")),
            Bounds::Real(lo, hi) => value
                .real()
                .filter(|x| !(lo..=hi).contains(x))
                .map(|x| format!("must be between {lo} and {hi}, not {x}")),
            Bounds::Share => value
                .real()
                .filter(|x| !(*x > 0.0 && *x <= 1.0))
                .map(|x| format!("must be above 0 and at most 1, not {x}")),
            Bounds::Each { most, min, max } => {
                let items = value.items();
                if items.len() > most {
                    return Some(format!("must list at most {most}, not {}", items.len()));
                }
                items
                    .into_iter()
                    .find(|n| !(min..=max).contains(n))
                    .map(|n| format!("must list values between {min} and {max}, not {n}"))
            }
        }
    }
}

/// One setting as declared: everything but its type and default, which live in the
/// struct the declaration generates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// The `[table]` it sits in within the file (`""` at the top); `None` for a setting
    /// only the environment gives.
    pub table: Option<&'static str>,
    /// Its key in the file (the field's name).
    pub key: &'static str,
    /// Its environment variable.
    pub var: &'static str,
    pub bounds: Bounds,
    pub help: &'static str,
}

/// Where environment values come from: the process, or a fixed set in tests.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Setting {
    /// How the file writes it: `[worker] concurrency`, `database_url`.
    pub fn file_key(&self) -> Option<String> {
        match self.table {
            Some("") => Some(self.key.to_owned()),
            Some(table) => Some(format!("[{table}] {}", self.key)),
            None => None,
        }
    }

    /// The variable's text, if set; an empty (or blank) variable counts as unset.
    pub fn text(&self, lookup: Lookup) -> Option<String> {
        lookup(self.var).filter(|v| !v.trim().is_empty())
    }

    /// The variable read as `R`, if set: typed, or an error naming the variable.
    pub fn read<R: Settable>(&self, lookup: Lookup) -> Result<Option<R>, SettingError> {
        self.text(lookup)
            .map(|text| R::read(self.var, &text))
            .transpose()
    }

    /// `value` within the declared bounds, or an error naming the variable, the key in the
    /// file, the allowed range and the value.
    pub fn check<T: Settable>(&self, value: &T) -> Result<(), SettingError> {
        match self.bounds.problem(value) {
            None => Ok(()),
            Some(problem) => Err(SettingError::new(
                self.var,
                match self.file_key() {
                    Some(key) => format!("{key} {problem}"),
                    None => problem,
                },
            )),
        }
    }
}

/// A type a declared setting can hold.
pub trait Settable: Sized {
    /// The value of the variable `key` written as `text` (not yet trimmed), or an error
    /// naming `key` and saying what a good value is.
    fn read(key: &str, text: &str) -> Result<Self, SettingError>;
    /// As the configuration reference writes a default (`30000`, `127.0.0.1:9464`).
    fn show(&self) -> String;
    /// The value as a whole number, for [`Bounds::Whole`].
    fn whole(&self) -> Option<u64> {
        None
    }
    /// The value as a number, for [`Bounds::Real`] and [`Bounds::Share`].
    fn real(&self) -> Option<f64> {
        None
    }
    /// The values of a list, for [`Bounds::Each`].
    fn items(&self) -> Vec<u64> {
        Vec::new()
    }
}

macro_rules! settable_whole {
    ($($t:ty),*) => {$(
        impl Settable for $t {
            fn read(key: &str, text: &str) -> Result<Self, SettingError> {
                parse(key, text)
            }
            fn show(&self) -> String {
                self.to_string()
            }
            fn whole(&self) -> Option<u64> {
                u64::try_from(*self).ok()
            }
        }
    )*};
}
settable_whole!(u16, u32, u64, usize);

macro_rules! settable_real {
    ($($t:ty),*) => {$(
        impl Settable for $t {
            fn read(key: &str, text: &str) -> Result<Self, SettingError> {
                parse(key, text)
            }
            fn show(&self) -> String {
                self.to_string()
            }
            fn real(&self) -> Option<f64> {
                Some(f64::from(*self))
            }
        }
    )*};
}
settable_real!(f32, f64);

/// Types whose text is read by [`super::SettingValue`] and shown by `Display`.
macro_rules! settable_parsed {
    ($($t:ty),*) => {$(
        impl Settable for $t {
            fn read(key: &str, text: &str) -> Result<Self, SettingError> {
                parse(key, text)
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
settable_parsed!(bool, SocketAddr);

impl Settable for Millis {
    fn read(key: &str, text: &str) -> Result<Self, SettingError> {
        parse(key, text)
    }
    fn show(&self) -> String {
        self.ms().to_string()
    }
    fn whole(&self) -> Option<u64> {
        Some(self.ms())
    }
}

impl Settable for Hours {
    fn read(key: &str, text: &str) -> Result<Self, SettingError> {
        parse(key, text)
    }
    fn show(&self) -> String {
        self.hours().to_string()
    }
    fn whole(&self) -> Option<u64> {
        Some(self.hours())
    }
}

/// Text as written: a name, a URL or a prefix has checks of its own downstream.
impl Settable for String {
    fn read(_: &str, text: &str) -> Result<Self, SettingError> {
        Ok(text.to_owned())
    }
    fn show(&self) -> String {
        self.clone()
    }
}

impl Settable for PathBuf {
    fn read(_: &str, text: &str) -> Result<Self, SettingError> {
        Ok(PathBuf::from(text))
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

/// An optional setting: set by the variable, shown empty when it has no default.
impl<T: Settable> Settable for Option<T> {
    fn read(key: &str, text: &str) -> Result<Self, SettingError> {
        T::read(key, text).map(Some)
    }
    fn show(&self) -> String {
        self.as_ref().map(T::show).unwrap_or_default()
    }
    fn whole(&self) -> Option<u64> {
        self.as_ref().and_then(T::whole)
    }
    fn real(&self) -> Option<f64> {
        self.as_ref().and_then(T::real)
    }
}

/// A comma-separated list (`300,600`), each item trimmed and read as `T`.
impl<T: Settable> Settable for Vec<T> {
    fn read(key: &str, text: &str) -> Result<Self, SettingError> {
        text.split(',')
            .map(|item| T::read(key, item.trim()))
            .collect()
    }
    fn show(&self) -> String {
        self.iter().map(T::show).collect::<Vec<_>>().join(",")
    }
    fn items(&self) -> Vec<u64> {
        self.iter().filter_map(T::whole).collect()
    }
}

/// A field set from a value read as another type: `u64` milliseconds read as [`Millis`],
/// so the error says what unit was expected.
pub trait ReadAs<R> {
    fn read_as(read: R) -> Self;
}

impl<T> ReadAs<T> for T {
    fn read_as(read: T) -> T {
        read
    }
}

impl ReadAs<Millis> for u64 {
    fn read_as(read: Millis) -> u64 {
        read.ms()
    }
}

impl ReadAs<Vec<Millis>> for Vec<u64> {
    fn read_as(read: Vec<Millis>) -> Vec<u64> {
        read.into_iter().map(Millis::ms).collect()
    }
}

/// Declare a configuration struct whose fields are settings (see the module docs).
///
/// ```
/// relata_core::settings! {
///     #[derive(Debug, Clone)]
///     pub struct Worker in "worker" {
///         pub concurrency: u16 = 4
///             => "RELATA_WORKER_CONCURRENCY",
///             relata_core::settings::Bounds::Whole(1, 1024),
///             "jobs in flight";
///         pub deadline_ms: u64 = 30_000
///             => "RELATA_WORKER_DEADLINE_MS" as relata_core::settings::Millis,
///             relata_core::settings::Bounds::Whole(0, 3_600_000),
///             "in-flight grace";
///         pub notes: Vec<String> = Vec::new();
///     }
/// }
/// let mut w = Worker::default();
/// w.read_env(&|k| (k == "RELATA_WORKER_CONCURRENCY").then(|| "0".to_owned())).unwrap();
/// let e = w.check_bounds().unwrap_err().to_string();
/// assert_eq!(
///     e,
///     "RELATA_WORKER_CONCURRENCY: [worker] concurrency must be between 1 and 1024, not 0"
/// );
/// ```
///
/// `in "table"` names the file's table (none: the top level); `env only` declares
/// settings the file does not hold, and `=> env_only "VAR"` one such field (it must then
/// be `#[serde(skip)]`). A field without `=>` is plain data (a nested table).
/// `as T` reads the variable as `T` and converts it with [`ReadAs`].
#[macro_export]
macro_rules! settings {
    (@table $table:expr;
        $(#[$m:meta])* $vis:vis struct $name:ident {
            $(
                $(#[$fm:meta])* $fvis:vis $field:ident : $fty:ty = $default:expr
                $( => $($only:ident)? $var:literal $(as $read:ty)?, $bounds:expr, $help:literal )? ;
            )*
        }
    ) => {
        $(#[$m])*
        $vis struct $name {
            $( $(#[$fm])* $fvis $field: $fty, )*
        }

        impl ::std::default::Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $name {
            /// This struct's settings, in declaration order.
            pub const SETTINGS: &'static [$crate::settings::Setting] = &[
                $( $( $crate::__setting!($table, [$($only)?], $field, $var, $bounds, $help), )? )*
            ];

            /// Each variable that is set (and not blank) read once into its field: typed,
            /// or an error naming the variable, never a fall back to the default.
            pub fn read_env(
                &mut self,
                lookup: $crate::settings::Lookup,
            ) -> ::std::result::Result<(), $crate::settings::SettingError> {
                let _ = &lookup;
                $( $(
                    if let Some(v) = $crate::__setting!($table, [$($only)?], $field, $var, $bounds, $help)
                        .read::<$crate::__read_type!($fty $(, $read)?)>(lookup)?
                    {
                        self.$field = <$fty as $crate::settings::ReadAs<_>>::read_as(v);
                    }
                )? )*
                Ok(())
            }

            /// Every setting within its declared bounds; the first that is not is refused
            /// by name.
            pub fn check_bounds(&self) -> ::std::result::Result<(), $crate::settings::SettingError> {
                $( $(
                    $crate::__setting!($table, [$($only)?], $field, $var, $bounds, $help).check(&self.$field)?;
                )? )*
                Ok(())
            }

            /// Each setting with its default as the configuration reference writes it.
            pub fn defaults() -> Vec<(&'static $crate::settings::Setting, String)> {
                let d = <Self as ::std::default::Default>::default();
                let shown: Vec<String> = vec![
                    $( $( { let _: &str = $var; $crate::settings::Settable::show(&d.$field) }, )? )*
                ];
                Self::SETTINGS.iter().zip(shown).collect()
            }
        }
    };
    ($(#[$m:meta])* $vis:vis struct $name:ident in $table:literal { $($body:tt)* }) => {
        $crate::settings!(@table Some($table); $(#[$m])* $vis struct $name { $($body)* });
    };
    ($(#[$m:meta])* $vis:vis struct $name:ident env only { $($body:tt)* }) => {
        $crate::settings!(@table None; $(#[$m])* $vis struct $name { $($body)* });
    };
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($body:tt)* }) => {
        $crate::settings!(@table Some(""); $(#[$m])* $vis struct $name { $($body)* });
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting {
    ($table:expr, [env_only], $field:ident, $var:literal, $bounds:expr, $help:literal) => {
        $crate::__setting!(None, [], $field, $var, $bounds, $help)
    };
    ($table:expr, [], $field:ident, $var:literal, $bounds:expr, $help:literal) => {
        $crate::settings::Setting {
            table: $table,
            key: stringify!($field),
            var: $var,
            bounds: $bounds,
            help: $help,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __read_type {
    ($field:ty) => {
        $field
    };
    ($field:ty, $read:ty) => {
        $read
    };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    crate::settings! {
        #[derive(Debug, Clone, PartialEq)]
        struct Sample in "sample" {
            count: u32 = 5 => "RELATA_T_COUNT", Bounds::Whole(1, 10), "a count";
            wait_ms: u64 = 100 => "RELATA_T_WAIT_MS" as Millis, Bounds::Whole(0, 1000), "a wait";
            share: f64 = 0.5 => "RELATA_T_SHARE", Bounds::Share, "a share";
            delays_ms: Vec<u64> = vec![1, 2]
                => "RELATA_T_DELAYS_MS" as Vec<Millis>,
                Bounds::Each { most: 3, min: 1, max: 9 },
                "delays";
            name: Option<String> = None => "RELATA_T_NAME", Bounds::Any, "a name";
            secret: Option<String> = None => env_only "RELATA_T_SECRET", Bounds::Any, "a secret";
            plain: bool = true;
        }
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_declaration_gives_defaults_reading_and_bounds() {
        let d = Sample::default();
        assert_eq!((d.count, d.wait_ms, d.plain), (5, 100, true));
        let mut s = d.clone();
        s.read_env(&env(&[
            ("RELATA_T_COUNT", "7"),
            ("RELATA_T_WAIT_MS", " 250 "),
            ("RELATA_T_DELAYS_MS", "3, 4"),
            ("RELATA_T_NAME", "   "),
        ]))
        .unwrap();
        assert_eq!(
            (s.count, s.wait_ms, s.delays_ms.clone()),
            (7, 250, vec![3, 4])
        );
        assert_eq!(s.name, None, "a blank variable counts as unset");
        s.check_bounds().unwrap();

        let e = d
            .clone()
            .read_env(&env(&[("RELATA_T_WAIT_MS", "1s")]))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"RELATA_T_WAIT_MS: "1s" is not a number of milliseconds"#
        );
        for (pairs, says) in [
            (
                &[("RELATA_T_COUNT", "11")][..],
                "RELATA_T_COUNT: [sample] count must be between 1 and 10, not 11",
            ),
            (
                &[("RELATA_T_SHARE", "0")][..],
                "RELATA_T_SHARE: [sample] share must be above 0 and at most 1, not 0",
            ),
            (
                &[("RELATA_T_DELAYS_MS", "1,2,3,4")][..],
                "RELATA_T_DELAYS_MS: [sample] delays_ms must list at most 3, not 4",
            ),
            (
                &[("RELATA_T_DELAYS_MS", "1,20")][..],
                "RELATA_T_DELAYS_MS: [sample] delays_ms must list values between 1 and 9, not 20",
            ),
        ] {
            let mut s = d.clone();
            let pairs: &'static [(&str, &str)] = Vec::leak(pairs.to_vec());
            s.read_env(&env(pairs)).unwrap();
            assert_eq!(s.check_bounds().unwrap_err().to_string(), says);
        }
    }

    #[test]
    fn the_table_lists_each_setting_with_its_default() {
        let rows: Vec<(&str, String, String)> = Sample::defaults()
            .into_iter()
            .map(|(s, d)| (s.var, d, s.bounds.describe()))
            .collect();
        assert_eq!(
            rows,
            [
                ("RELATA_T_COUNT", "5".to_owned(), "1–10".to_owned()),
                ("RELATA_T_WAIT_MS", "100".to_owned(), "0–1000".to_owned()),
                (
                    "RELATA_T_SHARE",
                    "0.5".to_owned(),
                    "above 0, at most 1".to_owned()
                ),
                (
                    "RELATA_T_DELAYS_MS",
                    "1,2".to_owned(),
                    "at most 3, each 1–9".to_owned()
                ),
                ("RELATA_T_NAME", String::new(), String::new()),
                ("RELATA_T_SECRET", String::new(), String::new()),
            ]
        );
        assert_eq!(
            Sample::SETTINGS[0].file_key().as_deref(),
            Some("[sample] count")
        );
        assert_eq!(Sample::SETTINGS[5].file_key(), None);
    }
}
