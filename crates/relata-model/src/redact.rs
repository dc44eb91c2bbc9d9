//! Secrets and redaction.

use std::fmt;

/// What redacted text is replaced with.
pub const REDACTED: &str = "[redacted]";

/// An API key. `Debug` and `Display` print `[redacted]`; the only way to the value is
/// [`ApiKey::expose`], used once, to build the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself. Call sites: building the request header, and redaction.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Remove secrets from text that came from a provider (or is about to be stored or
/// logged): the configured key wherever it occurs, the token after any `Bearer `, and any
/// word that looks like an OpenAI-style key (`sk-…`, eight characters or more).
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    let mut out = match key {
        Some(k) if !k.expose().is_empty() => text.replace(k.expose(), REDACTED),
        _ => text.to_owned(),
    };
    out = redact_after_bearer(&out);
    redact_sk_words(&out)
}

fn is_token_char(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '}' | ']' | ')' | '<' | '>'))
}

fn redact_after_bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find("bearer ") {
        let start = i + found + "bearer ".len();
        out.push_str(&text[i..start]);
        let token_len: usize = text[start..]
            .chars()
            .take_while(|c| is_token_char(*c))
            .map(char::len_utf8)
            .sum();
        if token_len > 0 {
            out.push_str(REDACTED);
        }
        i = start + token_len;
    }
    out.push_str(&text[i..]);
    out
}

fn redact_sk_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(found) = text[i..].find("sk-") {
        let start = i + found;
        let at_word_start = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-');
        let len: usize = text[start..]
            .chars()
            .take_while(|c| is_token_char(*c))
            .map(char::len_utf8)
            .sum();
        out.push_str(&text[i..start]);
        if at_word_start && len >= 8 {
            out.push_str(REDACTED);
        } else {
            out.push_str(&text[start..start + len.max(3)]);
        }
        i = start + len.max(3);
    }
    out.push_str(&text[i..]);
    out
}

/// At most `max_chars` characters of `text`, redacted, with a marker when cut.
pub fn excerpt(text: &str, max_chars: usize, key: Option<&ApiKey>) -> String {
    let redacted = redact(text, key);
    match relata_core::text::head_chars(&redacted, max_chars) {
        (head, true) => format!("{head}…[{} bytes total]", redacted.len()),
        (_, false) => redacted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints() {
        let k = ApiKey::new("sentinel-123");
        assert_eq!(format!("{k:?} {k}"), "[redacted] [redacted]");
    }

    #[test]
    fn redacts_key_bearer_and_sk_words() {
        let k = ApiKey::new("my-secret-key");
        let s = redact(
            "bad key my-secret-key; header Authorization: Bearer abc.def-ghi, also sk-proj-ABCDEF123 and task-force",
            Some(&k),
        );
        assert!(!s.contains("my-secret-key"), "{s}");
        assert!(!s.contains("abc.def-ghi"), "{s}");
        assert!(!s.contains("ABCDEF123"), "{s}");
        assert!(s.contains("task-force"), "{s}");
        assert!(s.contains("Bearer [redacted]"), "{s}");
        assert_eq!(redact("sk-1", None), "sk-1");
        assert_eq!(redact("ask-questions", None), "ask-questions");
    }

    #[test]
    fn excerpts_are_bounded_on_char_boundaries() {
        assert_eq!(excerpt("héllo", 10, None), "héllo");
        let e = excerpt("ééééé", 2, None);
        assert!(e.starts_with("éé…"), "{e}");
    }
}
