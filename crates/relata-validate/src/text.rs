//! Text helpers of the semantic layer: bounded details, degenerate text, figures.

#[cfg(test)]
use crate::normalize::collapse;
use std::borrow::Cow;

use crate::normalize::lower;

/// Longest human detail attached to a rejection or finding, in characters.
pub const MAX_DETAIL_CHARS: usize = 200;

/// Cut a detail to [`MAX_DETAIL_CHARS`].
pub(crate) fn bounded(s: String) -> String {
    // At most MAX_DETAIL_CHARS in all, the ellipsis included.
    match relata_core::text::head_chars(&s, MAX_DETAIL_CHARS) {
        (_, false) => s,
        (_, true) => relata_core::text::ellipsize(&s, MAX_DETAIL_CHARS - 1).into_owned(),
    }
}

/// A short quoted excerpt of model text for a detail: at most `max` characters, debug
/// escaped so control characters cannot reach a log line raw.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    match relata_core::text::head_chars(s, max) {
        (head, true) => format!("{head:?}…"),
        (head, false) => format!("{head:?}"),
    }
}

/// Text a model writes when it copies the schema instead of filling it in, or when it has
/// nothing to say. Compared after normalisation, lowercasing, and trimming characters that
/// are neither letters nor digits from both ends (so `"<name>"`, `"[string]"` and
/// `"N/A."` are caught).
const PLACEHOLDERS: &[&str] = &[
    // Field names and type names of the contracts.
    "name",
    "type",
    "statement",
    "quote",
    "subject",
    "entity",
    "entities",
    "claim",
    "claims",
    "relation",
    "relations",
    "string",
    "str",
    "text",
    "value",
    // Placeholders and non-answers.
    "n/a",
    "na",
    "none",
    "null",
    "nil",
    "undefined",
    "unknown",
    "tbd",
    "tba",
    "todo",
    "example",
    "sample",
    "placeholder",
    "xxx",
    "lorem ipsum",
    "entity name",
    "example text",
    "sample text",
    "your text here",
    "text here",
];

/// Why `norm` (text already passed through [`collapse`]) is degenerate, or `None`.
/// `min_chars` counts characters and `min_words` counts space-separated words holding at
/// least one letter or digit.
pub(crate) fn degenerate(norm: &str, min_chars: usize, min_words: usize) -> Option<String> {
    if norm.is_empty() {
        return Some("empty or only whitespace".to_owned());
    }
    let core = norm.trim_matches(|c: char| !c.is_alphanumeric());
    if core.is_empty() {
        return Some(format!("no letters or digits: {}", excerpt(norm, 20)));
    }
    // Placeholders are short: only short text needs lowercasing for the comparison.
    let placeholder = (core.len() <= 32 && PLACEHOLDERS.contains(&lower(core).as_str()))
        || core
            .chars()
            .take(11)
            .flat_map(char::to_lowercase)
            .eq("lorem ipsum".chars());
    if placeholder {
        return Some(format!("a placeholder: {}", excerpt(norm, 30)));
    }
    let chars = norm.chars().take(min_chars).count();
    if chars < min_chars {
        return Some(format!(
            "too short: {chars} characters, the minimum is {min_chars}"
        ));
    }
    let words = norm
        .split(' ')
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .take(min_words)
        .count();
    if words < min_words {
        return Some(format!(
            "too short: {words} words, the minimum is {min_words}"
        ));
    }
    None
}

/// The figures of a text: every run of ASCII digits, continued across a single `,` or `.`
/// between two digits ("1,000", "3.5"). Thousands separators are dropped so that "1,000"
/// and "1000" are the same figure; a trailing `%` is not part of the figure, so "45%" in a
/// statement is supported by "45 percent" in a quote. Hand-rolled: no regular expression.
pub(crate) fn figures(s: &str) -> Vec<Cow<'_, str>> {
    let b = s.as_bytes();
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i = next_digit(b, i + 1);
            continue;
        }
        let start = i;
        let mut commas = false;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                i += 1;
            } else if (c == b',' || c == b'.') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                commas |= c == b',';
                i += 1;
            } else {
                break;
            }
        }
        // ASCII digits, '.' and ',' only: the slice is on char boundaries.
        let token = &s[start..i];
        let fig = if commas {
            Cow::Owned(token.replace(',', ""))
        } else {
            Cow::Borrowed(token)
        };
        if !out.contains(&fig) {
            out.push(fig);
        }
    }
    out
}

/// The first index at or after `from` holding an ASCII digit (`b.len()` when none).
/// Eight bytes at a time: statements and quotes are mostly letters, and this is the
/// gate's inner loop over them.
fn next_digit(b: &[u8], from: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while i + 8 <= b.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&b[i..i + 8]);
        let x = u64::from_le_bytes(word);
        // "Has a byte strictly between 0x2f and 0x3a" (a digit), exact for every byte
        // value (the classic has-between bit trick, valid for bounds below 128).
        let low7 = x & (LO * 127);
        let between = (LO * (127 + 0x3a)).wrapping_sub(low7) & !x & (low7 + LO * (127 - 0x2f)) & HI;
        if between != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() && !b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The whole numbers up to twenty as words, each at its value's index: what a source may
/// spell out ("eleven Grammy Awards" for "11"), and the support check's small number words.
pub const SPELLED: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// True when `figure` is a whole number up to twenty that `text` spells out as a word.
pub(crate) fn spelled_in(figure: &str, text: &str) -> bool {
    let Some(word) = figure.parse::<usize>().ok().and_then(|n| SPELLED.get(n)) else {
        return false;
    };
    text.split(|c: char| !c.is_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case(word))
}

/// The statement's figures that its quote does not contain (as digits, or spelled out up
/// to twenty), or `None` when every figure is supported.
pub(crate) fn figures_not_in(statement: &str, quote: &str) -> Option<String> {
    if !statement.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let have = figures(quote);
    let missing: Vec<Cow<'_, str>> = figures(statement)
        .into_iter()
        .filter(|f| !have.contains(f) && !spelled_in(f, quote))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let list: Vec<String> = missing.iter().take(5).map(|f| excerpt(f, 20)).collect();
    Some(format!(
        "figure(s) in the statement not in the quote: {}",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_whole_number_the_quote_spells_out_is_in_it() {
        assert!(
            figures_not_in(
                "She won 11 Grammy Awards.",
                "She has won eleven Grammy Awards."
            )
            .is_none()
        );
        assert!(
            figures_not_in(
                "She won 12 Grammy Awards.",
                "She has won eleven Grammy Awards."
            )
            .is_some()
        );
        // Only whole words: "one" inside "someone" is not a figure.
        assert!(figures_not_in("It has 1 door.", "Someone opened the door.").is_some());
        assert!(figures_not_in("It ran 1,000 km.", "It ran a thousand km.").is_some());
    }

    proptest::proptest! {
        /// The word-at-a-time skip finds exactly the first digit, for any bytes.
        #[test]
        fn next_digit_is_exact(b in proptest::collection::vec(proptest::num::u8::ANY, 0..40), from in 0usize..40) {
            let from = from.min(b.len());
            let naive = (from..b.len()).find(|&i| b[i].is_ascii_digit()).unwrap_or(b.len());
            proptest::prop_assert_eq!(next_digit(&b, from), naive);
        }
    }

    #[test]
    fn figures_are_tokenised_by_hand() {
        assert_eq!(
            figures("In 1997, 45% of 1,200 people paid $3.50."),
            ["1997", "45", "1200", "3.50"]
        );
        assert!(figures("no digits").is_empty());
        assert_eq!(figures("end 2001."), ["2001"]);
        assert!(figures_not_in("It rose 45% in 2001", "in 2001 it rose 45 percent").is_none());
        assert!(figures_not_in("It rose 46% in 2001", "in 2001 it rose 45 percent").is_some());
    }

    #[test]
    fn degenerate_text() {
        for t in [
            "",
            "  ",
            "...",
            "…",
            "N/A",
            "n/a",
            "string",
            "<name>",
            "TBD",
            "null",
            "Lorem ipsum dolor",
        ] {
            assert!(degenerate(&collapse(t), 2, 1).is_some(), "{t:?}");
        }
        assert!(degenerate("X", 2, 1).is_some());
        assert!(degenerate("EU", 2, 1).is_none());
        assert!(degenerate("Paris is bi", 12, 3).is_some());
        assert!(degenerate("Paris is big", 12, 3).is_none());
        assert!(degenerate("Paris is the capital", 12, 3).is_none());
        assert!(degenerate("Anticonstitutional", 12, 3).is_some());
    }

    #[test]
    fn details_are_bounded() {
        assert_eq!(bounded("x".repeat(1000)).chars().count(), MAX_DETAIL_CHARS);
        assert_eq!(excerpt("abcdef", 3), "\"abc\"…");
    }
}
