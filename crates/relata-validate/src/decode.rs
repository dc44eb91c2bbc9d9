//! Layer 1 (syntactic) and the strict JSON tree the schema layer reads.
//!
//! Order of operations, each step refusing before the next looks at the bytes:
//! size bound → UTF-8 → nothing but whitespace → byte-order mark → one outer fence →
//! a value must start here → nesting depth (an iterative scan, no recursion) → one JSON
//! value (serde_json, recursion bounded by the depth scan) with duplicate keys refused →
//! nothing after it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use relata_core::Reason;
use relata_core::contract::bounds;
use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

use crate::text::{bounded, excerpt};

/// A decoded JSON value that keeps object entries in order and remembers a repeated key
/// (which `serde_json::Value` would silently resolve by keeping the last value). Numbers
/// are kept only as "a number": no contract field is numeric.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number,
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// An object: its entries in order (the first of repeated keys) and the first key that
/// was repeated, if any. The schema layer refuses an object with a repeated key as
/// `schema` — for the whole response at the top level, for one row inside a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Object<'a> {
    pub(crate) entries: Vec<(Cow<'a, str>, Json<'a>)>,
    pub(crate) duplicate: Option<Cow<'a, str>>,
}

impl Json<'_> {
    /// The JSON type name, for details.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Json::Number)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Json::Number)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Json::Number)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<Json<'de>>()? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        let mut duplicate = None;
        // Linear search for the few keys of a contract object; a set once an object grows.
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            let dup = match &mut seen {
                Some(set) => !set.insert(k.clone()),
                None => {
                    let dup = entries.iter().any(|(e, _)| *e == k);
                    if entries.len() >= 16 {
                        let mut set: HashSet<Cow<'de, str>> =
                            entries.iter().map(|(e, _)| e.clone()).collect();
                        set.insert(k.clone());
                        seen = Some(set);
                    }
                    dup
                }
            };
            let v = map.next_value::<Json<'de>>()?;
            if dup {
                duplicate.get_or_insert(k);
            } else {
                entries.push((k, v));
            }
        }
        Ok(Json::Object(Object { entries, duplicate }))
    }
}

/// An object key, borrowed from the input when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A whole-response failure of layer 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) reason: Reason,
    pub(crate) detail: String,
}

fn fail<T>(reason: Reason, detail: impl Into<String>) -> Result<T, SyntaxError> {
    Err(SyntaxError {
        reason,
        detail: bounded(detail.into()),
    })
}

/// JSON's own whitespace (RFC 8259): the only whitespace tolerated around the value.
fn is_json_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

const FENCE: &str = "```";

/// Remove one complete outer markdown fence, if the text starts with one.
///
/// Accepted shape: "```" or "```json" (any ASCII case, trailing spaces allowed) alone on
/// the first line, then the body, then "```" alone on the last line. A text that starts
/// with a fence but does not have this shape is not JSON; a fence *after* an unfenced
/// value is trailing content (found by the caller).
fn unwrap_fence(t: &str) -> Result<&str, SyntaxError> {
    let Some(rest) = t.strip_prefix(FENCE) else {
        return Ok(t);
    };
    let Some(nl) = rest.find('\n') else {
        return fail(
            Reason::NotJson,
            "the opening markdown fence is not followed by a line break",
        );
    };
    let tag = rest[..nl].trim_end_matches('\r').trim_matches([' ', '\t']);
    if !(tag.is_empty() || tag.eq_ignore_ascii_case("json")) {
        return fail(
            Reason::NotJson,
            format!("a markdown fence labelled {} is not JSON", excerpt(tag, 20)),
        );
    }
    let body = &rest[nl + 1..];
    let Some(inner) = body.strip_suffix(FENCE) else {
        return fail(Reason::NotJson, "a markdown fence opens but never closes");
    };
    let before_close = inner.trim_end_matches([' ', '\t']);
    if !(before_close.is_empty() || before_close.ends_with('\n')) {
        return fail(
            Reason::NotJson,
            "the closing markdown fence is not on a line of its own",
        );
    }
    Ok(inner)
}

/// Nesting depth of the JSON-looking text, found without recursion: brackets inside
/// strings (with escapes) do not count. Stops as soon as the bound is passed.
fn exceeds_depth(t: &str, max: usize) -> bool {
    let b = t.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Skip the string: jump from quote or backslash to the next one.
                i += 1;
                loop {
                    let Some(k) = b
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    else {
                        return false; // unterminated: the decoder refuses it
                    };
                    i += k;
                    if b[i] == b'\\' {
                        i += 2;
                    } else {
                        i += 1;
                        break;
                    }
                }
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Layer 1: the raw body to exactly one JSON value, or the whole-response reason.
pub(crate) fn parse(raw: &[u8]) -> Result<Json<'_>, SyntaxError> {
    if raw.len() > bounds::MAX_RESPONSE_BYTES {
        return fail(
            Reason::TooLarge,
            format!(
                "{} bytes, over the {} byte bound",
                raw.len(),
                bounds::MAX_RESPONSE_BYTES
            ),
        );
    }
    let text = match std::str::from_utf8(raw) {
        Ok(t) => t,
        Err(e) => {
            return fail(
                Reason::NotJson,
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            );
        }
    };
    if text.chars().all(char::is_whitespace) {
        return fail(Reason::Empty, "the response is empty or only whitespace");
    }
    let t = text.trim_matches(is_json_ws);
    if t.starts_with('\u{feff}') {
        // RFC 8259 forbids emitting a BOM; a BOM is a character before the value.
        return fail(
            Reason::NotJson,
            "a byte-order mark (U+FEFF) precedes the value",
        );
    }
    let t = unwrap_fence(t)?;
    if t.chars().all(char::is_whitespace) {
        return fail(Reason::Empty, "the markdown fence holds nothing");
    }
    let t = t.trim_start_matches(is_json_ws);
    match t.chars().next() {
        Some('{' | '[' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n') => {}
        _ => {
            return fail(
                Reason::NotJson,
                format!("text before the JSON value: {}", excerpt(t, 24)),
            );
        }
    }
    if exceeds_depth(t, bounds::MAX_DEPTH) {
        return fail(
            Reason::NotJson,
            format!("JSON nested deeper than {} levels", bounds::MAX_DEPTH),
        );
    }
    let mut stream = serde_json::Deserializer::from_str(t).into_iter::<Json<'_>>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            // `Json` accepts every JSON value, so every error here is a syntax error
            // (or the end of input inside the value).
            return fail(Reason::NotJson, e.to_string());
        }
        None => return fail(Reason::Empty, "no JSON value"),
    };
    let rest = &t[stream.byte_offset()..];
    let rest = rest.trim_start_matches(is_json_ws);
    if !rest.is_empty() {
        let what = if rest.starts_with(FENCE) {
            "a dangling markdown fence".to_owned()
        } else {
            excerpt(rest, 24)
        };
        return fail(
            Reason::TrailingContent,
            format!("content after the JSON value: {what}"),
        );
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(raw: &[u8]) -> Option<Reason> {
        parse(raw).err().map(|e| e.reason)
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        for n in [10_000usize, 1_000_000] {
            let s = format!("{}{}", "[".repeat(n), "]".repeat(n));
            // Over the size bound at 1,000,000: the scan itself is what is tested here.
            assert!(exceeds_depth(&s, bounds::MAX_DEPTH));
        }
        let s = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(reason(s.as_bytes()), Some(Reason::NotJson));
        let ok = format!("{}{}", "[".repeat(32), "]".repeat(32));
        assert_eq!(reason(ok.as_bytes()), None);
        let over = format!("{}{}", "[".repeat(33), "]".repeat(33));
        assert_eq!(reason(over.as_bytes()), Some(Reason::NotJson));
        // Unterminated strings and a trailing backslash end the scan without a panic.
        assert!(!exceeds_depth("\"abc\\", 1));
        assert!(!exceeds_depth("[\"\\", 1));
        assert!(exceeds_depth("[\"\\\\\"[[", 2));
        // Brackets inside strings do not count.
        let s = format!("{{\"a\": \"{}\\\"{}\"}}", "[".repeat(100), "{".repeat(100));
        assert_eq!(reason(s.as_bytes()), None);
    }

    fn duplicate(raw: &[u8]) -> Option<String> {
        match parse(raw) {
            Ok(Json::Object(o)) => o.duplicate.map(|k| k.into_owned()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_are_remembered_at_any_size() {
        assert_eq!(duplicate(br#"{"a":1,"a":2}"#).as_deref(), Some("a"));
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":0")).collect();
        let s = format!("{{{},\"k3\":1}}", many.join(","));
        assert_eq!(duplicate(s.as_bytes()).as_deref(), Some("k3"));
        let s = format!("{{{},\"k39\":1}}", many.join(","));
        assert_eq!(duplicate(s.as_bytes()).as_deref(), Some("k39"));
        let s = format!("{{{}}}", many.join(","));
        assert_eq!(duplicate(s.as_bytes()), None);
        // Escaped and unescaped spellings of one key are the same key.
        assert_eq!(duplicate(br#"{"a":1,"\u0061":2}"#).as_deref(), Some("a"));
        // The first value is kept, never the last.
        match parse(br#"{"a":1,"a":"x"}"#) {
            Ok(Json::Object(o)) => assert_eq!(o.entries, vec![("a".into(), Json::Number)]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fences() {
        assert_eq!(reason(b"```json\n{}\n```"), None);
        assert_eq!(reason(b"  ```\n{}\n```\n"), None);
        assert_eq!(reason(b"```JSON  \r\n{}\r\n```"), None);
        assert_eq!(reason(b"```json\n{}"), Some(Reason::NotJson));
        assert_eq!(reason(b"```json {}```"), Some(Reason::NotJson));
        assert_eq!(reason(b"```json\n{}```"), Some(Reason::NotJson));
        assert_eq!(reason(b"```python\n{}\n```"), Some(Reason::NotJson));
        assert_eq!(reason(b"{}\n```"), Some(Reason::TrailingContent));
        assert_eq!(
            reason(b"```json\n{}\n```\n```"),
            Some(Reason::TrailingContent)
        );
        assert_eq!(reason(b"```json\n\n```"), Some(Reason::Empty));
    }
}
