//! A deterministic sentence splitter for chunk text.
//!
//! Used to hold generation to the chunk's own sentences: the schema *sent* to a server
//! that compiles schemas lists them as the only allowed values of `quote`, so a small
//! model cannot misquote or ramble. The gate still judges against the contract, so a
//! splitter mistake costs recall (a claim whose best quote is half a sentence), never
//! safety.
//!
//! Rules, in plain code (no regular expression): a sentence ends at `.`, `!` or `?`
//! (with any closing quotes or brackets after it) followed by whitespace and then an
//! uppercase letter, a digit, or an opening quote or bracket; or at a blank line; or at
//! the end of the text. A `.` after a single uppercase letter (an initial: "J. R. R.
//! Tolkien") or after a common abbreviation ("Dr.", "St.", "U.S.", "Inc.") ends nothing.
//! Each sentence is trimmed; a sentence over `max_chars` is cut at the last space
//! within the bound; sentences too short to be a quote (fewer than `min_chars`
//! characters or `min_words` words) and repeats are dropped.

/// Words whose trailing `.` is an abbreviation, compared case-sensitively without the dot.
const ABBREVIATIONS: &[&str] = &[
    "Mr", "Mrs", "Ms", "Dr", "Prof", "Sr", "Jr", "St", "Mt", "Ft", "Gen", "Col", "Lt", "Capt",
    "Sgt", "Gov", "Sen", "Rep", "Rev", "Hon", "Inc", "Ltd", "Co", "Corp", "Bros", "No", "Nos",
    "vs", "etc", "al", "approx", "ca", "c", "e.g", "i.e", "U.S", "U.K", "U.N", "E.U", "Jan", "Feb",
    "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec", "fl", "b", "d",
];

fn closing(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '\u{201d}' | '\u{2019}' | '»')
}

fn opening(c: char) -> bool {
    matches!(c, '"' | '\'' | '(' | '[' | '\u{201c}' | '\u{2018}' | '«')
}

/// The word that ends just before byte `dot` (the run of non-whitespace before it).
fn word_before(text: &str, dot: usize) -> &str {
    let head = &text[..dot];
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || opening(*c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &head[start..]
}

pub(crate) fn abbreviation(word: &str) -> bool {
    let mut chars = word.chars();
    let initial = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase());
    initial || ABBREVIATIONS.contains(&word)
}

/// Byte spans `(start, end)` of the sentences of `text`, in order; see the module docs.
pub fn spans(
    text: &str,
    min_chars: usize,
    min_words: usize,
    max_chars: usize,
) -> Vec<(usize, usize)> {
    let mut raw: Vec<(usize, usize)> = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        // A blank line: a newline, optional horizontal space, another newline.
        if c == '\n' {
            let mut j = i + 1;
            while j < chars.len() && chars[j].1 != '\n' && chars[j].1.is_whitespace() {
                j += 1;
            }
            if j < chars.len() && chars[j].1 == '\n' {
                raw.push((start, at));
                start = chars[j].0;
                i = j + 1;
                continue;
            }
        }
        if matches!(c, '.' | '!' | '?') {
            let mut j = i + 1;
            while j < chars.len() && (closing(chars[j].1) || matches!(chars[j].1, '.' | '!' | '?'))
            {
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |(b, _)| *b);
            let mut k = j;
            while k < chars.len() && chars[k].1.is_whitespace() {
                k += 1;
            }
            let spaced = k > j;
            let next_starts = chars
                .get(k)
                .is_none_or(|(_, n)| n.is_uppercase() || n.is_ascii_digit() || opening(*n));
            let abbrev = c == '.' && abbreviation(word_before(text, at));
            if (k == chars.len() || (spaced && next_starts)) && !abbrev {
                raw.push((start, end));
                start = chars.get(k).map_or(text.len(), |(b, _)| *b);
                i = k;
                continue;
            }
        }
        i += 1;
    }
    raw.push((start, text.len()));

    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in raw {
        let piece = &text[s..e];
        let lead = piece.len() - piece.trim_start().len();
        let (s, e) = (s + lead, s + lead + piece.trim().len());
        let e = cap(text, s, e, max_chars);
        let sentence = &text[s..e];
        let words = sentence
            .split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .count();
        if sentence.chars().count() < min_chars || words < min_words {
            continue;
        }
        if out.iter().any(|&(a, b)| &text[a..b] == sentence) {
            continue;
        }
        out.push((s, e));
    }
    out
}

/// `end` moved back so that `text[start..end]` holds at most `max_chars` characters,
/// at the last whitespace within the bound when there is one.
fn cap(text: &str, start: usize, end: usize, max_chars: usize) -> usize {
    let piece = &text[start..end];
    let Some((cut, _)) = piece.char_indices().nth(max_chars) else {
        return end;
    };
    let head = &piece[..cut];
    let at_space = head
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(cut, |(i, _)| i);
    start + head[..at_space].trim_end().len()
}

/// The sentences a chunk is shown as under a prompt that cites sources by handle
/// (`S1` is the first span, `S2` the second, …), as byte spans: every sentence that can be
/// a quote, whole up to the contract's quote bound. The one numbering the prompt and the
/// gate share, so a handle the gate resolves is the sentence the model was shown.
pub fn handled(text: &str) -> Vec<(usize, usize)> {
    use crate::contract::bounds;
    spans(
        text,
        bounds::QUOTE_MIN_CHARS,
        bounds::QUOTE_MIN_WORDS,
        bounds::QUOTE_MAX_CHARS,
    )
}

/// The sentences of `text` as strings; see [`spans`].
pub fn split(text: &str, min_chars: usize, min_words: usize, max_chars: usize) -> Vec<&str> {
    spans(text, min_chars, min_words, max_chars)
        .into_iter()
        .map(|(s, e)| &text[s..e])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Vec<&str> {
        split(text, 8, 2, 1000)
    }

    #[test]
    fn sentences_end_at_terminal_punctuation_before_a_capital() {
        assert_eq!(
            s(
                "Paris is the capital of France. It has 2.1 million people! Is it big? \"Yes,\" he said."
            ),
            [
                "Paris is the capital of France.",
                "It has 2.1 million people!",
                "Is it big?",
                "\"Yes,\" he said."
            ]
        );
    }

    #[test]
    fn initials_and_abbreviations_end_nothing() {
        assert_eq!(
            s(
                "J. R. R. Tolkien was born in 1892. Dr. Smith met St. John in the U.S. in 1900. Go on."
            ),
            [
                "J. R. R. Tolkien was born in 1892.",
                "Dr. Smith met St. John in the U.S. in 1900."
            ]
        );
    }

    #[test]
    fn blank_lines_end_a_sentence_and_short_or_repeated_ones_are_dropped() {
        assert_eq!(
            s("A heading line\n\nThe body starts here. The body starts here. Ok.\nnext line"),
            ["A heading line", "The body starts here.", "Ok.\nnext line"]
        );
    }

    #[test]
    fn long_sentences_are_cut_at_a_space_within_the_bound() {
        let text = "word ".repeat(50);
        let got = split(&text, 8, 2, 22);
        assert_eq!(got, ["word word word word"]);
        // Every span is the text's own bytes, on char boundaries, whatever the text.
        let t = "Zürich ist schön. Ça va? Ünïcödé wörds here";
        for (a, b) in spans(t, 1, 1, 7) {
            assert!(t.is_char_boundary(a) && t.is_char_boundary(b));
        }
    }
}
