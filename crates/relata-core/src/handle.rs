//! Opaque handles shown to the model in place of database ids (guarantee 6).
//!
//! A handle is `C` followed by a positive decimal number without leading zeros (`C1`,
//! `C17`). It means something only inside one request: the mapping from handle to claim id
//! is kept by relata and never shown, so a handle the model invents resolves to nothing.

use std::fmt;

/// Longest number part accepted; a batch never holds more than a few hundred claims.
const MAX_DIGITS: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(u32);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a claim handle (expected C followed by a number, like C1)")]
pub struct HandleError(pub String);

impl Handle {
    /// The n-th handle of a request, counting from 1.
    pub fn nth(n: u32) -> Handle {
        assert!(n >= 1, "handles count from 1");
        Handle(n)
    }

    pub fn number(self) -> u32 {
        self.0
    }

    pub fn parse(s: &str) -> Result<Handle, HandleError> {
        let err = || HandleError(crate::text::head_chars(s, 32).0.to_owned());
        let digits = s.strip_prefix('C').ok_or_else(err)?;
        if digits.is_empty()
            || digits.len() > MAX_DIGITS
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(err());
        }
        digits.parse().map(Handle).map_err(|_| err())
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "C{}", self.0)
    }
}

impl std::str::FromStr for Handle {
    type Err = HandleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Handle::parse(s)
    }
}

impl serde::Serialize for Handle {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Handle {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        Handle::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A source shown to the answering model: `S` followed by a positive decimal number
/// without leading zeros (`S1`, `S8`). Like [`Handle`], it means something only inside one
/// request; the passage behind it is kept by relata, so a handle the model invents resolves
/// to nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceHandle(u32);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a source handle (expected S followed by a number, like S1)")]
pub struct SourceHandleError(pub String);

impl SourceHandle {
    /// The n-th source of a request, counting from 1.
    pub fn nth(n: u32) -> SourceHandle {
        assert!(n >= 1, "handles count from 1");
        SourceHandle(n)
    }

    pub fn number(self) -> u32 {
        self.0
    }

    /// Position of the source in the request's list (S1 is 0).
    pub fn index(self) -> usize {
        self.0 as usize - 1
    }

    pub fn parse(s: &str) -> Result<SourceHandle, SourceHandleError> {
        let err = || SourceHandleError(crate::text::head_chars(s, 32).0.to_owned());
        let digits = s.strip_prefix('S').ok_or_else(err)?;
        if digits.is_empty()
            || digits.len() > MAX_DIGITS
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(err());
        }
        digits.parse().map(SourceHandle).map_err(|_| err())
    }
}

impl fmt::Display for SourceHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S{}", self.0)
    }
}

impl serde::Serialize for SourceHandle {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_canonical_source_handles_only() {
        assert_eq!(SourceHandle::parse("S1").unwrap(), SourceHandle::nth(1));
        assert_eq!(SourceHandle::parse("S20").unwrap().to_string(), "S20");
        assert_eq!(SourceHandle::nth(3).index(), 2);
        for bad in [
            "", "S", "S0", "S01", "s1", "C1", "S1 ", "S-1", "S1234567", "S٣",
        ] {
            assert!(SourceHandle::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn parses_canonical_handles_only() {
        assert_eq!(Handle::parse("C1").unwrap(), Handle::nth(1));
        assert_eq!(Handle::parse("C42").unwrap().to_string(), "C42");
        for bad in [
            "", "C", "C0", "C01", "c1", "C-1", "C1 ", " C1", "S1", "C1a", "C1234567", "C٣",
        ] {
            assert!(Handle::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
