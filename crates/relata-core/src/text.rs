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

#[cfg(test)]
mod tests {
    use super::*;

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
