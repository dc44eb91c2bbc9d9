//! Text helpers shared by every crate that bounds a diagnostic.

/// `s` cut to at most `max_bytes` bytes, at a character boundary.
///
/// The one way relata shortens text for a diagnostic or a stored detail: `String::truncate`
/// and byte slicing panic when the cut falls inside a multi-byte character, and what is cut
/// is often attacker-controlled (a poison message, model output, a corpus line).
pub fn cut(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The first `max_chars` characters of `s`, and whether anything was cut off.
///
/// The character-counted twin of [`cut`], for diagnostics bounded in characters (stored
/// details and excerpts, echoes of input); every such bound in relata goes through one
/// of the two.
pub fn head_chars(s: &str, max_chars: usize) -> (&str, bool) {
    match s.char_indices().nth(max_chars) {
        Some((end, _)) => (&s[..end], true),
        None => (s, false),
    }
}

/// `s` with at most `max_chars` characters kept and `…` appended when anything was cut.
pub fn ellipsize(s: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match head_chars(s, max_chars) {
        (head, true) => std::borrow::Cow::Owned(format!("{head}…")),
        (whole, false) => std::borrow::Cow::Borrowed(whole),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn character_bounds_count_characters_not_bytes() {
        assert_eq!(head_chars("héllo", 2), ("hé", true));
        assert_eq!(head_chars("héllo", 5), ("héllo", false));
        assert_eq!(head_chars("héllo", 9), ("héllo", false));
        assert_eq!(head_chars("😀😀", 1), ("😀", true));
        assert_eq!(head_chars("", 0), ("", false));
        assert_eq!(head_chars("a", 0), ("", true));
        assert_eq!(ellipsize("héllo", 2), "hé…");
        assert_eq!(ellipsize("héllo", 5), "héllo");
    }

    #[test]
    fn cuts_never_split_a_character() {
        assert_eq!(cut("abc", 10), "abc");
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("€", 1), "");
        assert_eq!(cut("", 0), "");
        for n in 0..=8 {
            let s = cut("a€😀b", n);
            assert!(s.len() <= n);
        }
    }
}
