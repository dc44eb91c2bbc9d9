//! A candidate's canonical content, hashed in Rust exactly as the database hashes it.
//!
//! Every decision in the evidence log holds the sha256 of what it decided about: the
//! database's `relata_entity_sha256(e)` and `relata_claim_sha256(c)` over the stored row
//! (`migrations/20261223130003_candidate_hash_by_row.sql`), through which
//! `relata evidence verify` and a reviewer's decision recompute it, and with which a
//! sweep reads it. A commit hands its rows to the promoter with their hashes too, but
//! computing them inside its one statement costs the commit path database time on every
//! job; so the commit hashes the same values here, from the columns it has just sent and
//! the ids the statement returned.
//!
//! What is hashed is the text of `jsonb_build_array(…)` as PostgreSQL writes it: elements
//! separated by `", "`, integers in decimal, `null`, and strings escaped as PostgreSQL's
//! `escape_json` does (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, any other character below
//! U+0020 as `\u00xx` in lower-case hex, everything else as it is). Two tests hold this
//! writer to the database: one over awkward text, one over the rows a commit stored.

use std::fmt::Write;

/// One element of a canonical array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Text(&'a str),
    Int(i64),
    Null,
}

impl From<i64> for Value<'_> {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<i32> for Value<'_> {
    fn from(n: i32) -> Self {
        Value::Int(i64::from(n))
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Text(s)
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// `jsonb_build_array(values…)::text`, byte for byte.
pub fn jsonb_array_text(values: &[Value<'_>]) -> String {
    let mut out = String::with_capacity(
        2 + values
            .iter()
            .map(|v| match v {
                Value::Text(s) => s.len() + 4,
                _ => 22,
            })
            .sum::<usize>(),
    );
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match v {
            Value::Text(s) => escape_json(&mut out, s),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Null => out.push_str("null"),
        }
    }
    out.push(']');
    out
}

/// sha256 (hex) of [`jsonb_array_text`]: what `relata_*_sha256` returns for a row with
/// these values.
pub fn sha256_hex(values: &[Value<'_>]) -> String {
    crate::sha256_hex(jsonb_array_text(values).as_bytes())
}

fn escape_json(out: &mut String, s: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `i` is a character boundary.
        out.push_str(&s[plain..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        plain = i + 1;
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_written_as_postgresql_writes_jsonb() {
        let text = jsonb_array_text(&[
            "claim".into(),
            Value::Int(-42),
            Value::Null,
            "a \"b\" \\ c\n\t\u{1}\u{1f}\u{7f} é 🦀".into(),
        ]);
        assert_eq!(
            text,
            "[\"claim\", -42, null, \"a \\\"b\\\" \\\\ c\\n\\t\\u0001\\u001f\u{7f} é 🦀\"]"
        );
        assert_eq!(jsonb_array_text(&[]), "[]");
        assert_eq!(Value::from(None::<i64>), Value::Null);
        assert_eq!(Value::from(Some(7i32)), Value::Int(7));
    }

    #[test]
    fn the_hash_is_the_lower_case_hex_of_the_sha256() {
        // sha256("[]"), as `sha256sum` prints it.
        assert_eq!(
            sha256_hex(&[]),
            "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
        );
        let digest: [u8; 32] = std::array::from_fn(|i| (i * 8 + 1) as u8);
        assert_eq!(crate::hex_digest(digest), hex::encode(digest));
    }
}
