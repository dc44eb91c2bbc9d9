//! The closed-enum macro: one definition gives `as_str`, `ALL`, `Display`, `FromStr` and
//! serde as the same snake_case string, so a label, a stored value and a JSON field can
//! never drift apart.

/// A string that is not one of a closed enum's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {value:?}; expected one of: {expected}")]
pub struct UnknownLabel {
    pub kind: &'static str,
    pub value: String,
    pub expected: String,
}

/// Define a closed label enum (see the module docs). Exported so that crates above the
/// core define their own labels the same way.
#[macro_export]
macro_rules! closed_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $kind:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $s:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The label / stored value.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $s ),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownLabel;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $s => Ok($name::$variant), )+
                    _ => Err($crate::UnknownLabel {
                        kind: $kind,
                        value: $crate::text::head_chars(s, 64).0.to_owned(),
                        expected: [$( $s ),+].join(", "),
                    }),
                }
            }
        }

        impl $crate::settings::Settable for $name {
            fn read(
                key: &str,
                text: &str,
            ) -> ::std::result::Result<Self, $crate::settings::SettingError> {
                text.trim().parse().map_err(|e: $crate::UnknownLabel| {
                    $crate::settings::SettingError::new(key, e.to_string())
                })
            }
            fn show(&self) -> String {
                self.as_str().to_owned()
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}
