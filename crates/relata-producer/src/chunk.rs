//! Paragraph chunking with byte offsets into the original text.
//!
//! A chunk is a span of the document, not a copy: `&text[start..end]`. Claims quote the
//! chunk verbatim and their offsets are stored relative to the document, so a chunk must
//! be exactly a substring of the document — no normalisation, no joining, no overlap.
//!
//! The algorithm, in order:
//! 1. Paragraphs are maximal runs of non-blank lines; a blank line holds only whitespace
//!    (`\n\n`, `\r\n\r\n`, `\n  \t\n`, …). Each paragraph span is trimmed of whitespace.
//! 2. A paragraph longer than the cap is cut into pieces: at the last sentence end
//!    (`.`, `?` or `!` followed by whitespace) that keeps the piece within the cap, else at
//!    the last whitespace, else at the last character boundary. Never inside a UTF-8
//!    character.
//! 3. Paragraphs (and pieces) are packed greedily: the next one joins the current chunk
//!    if the span from the chunk's start to its end stays within the cap; the blank lines
//!    between them are inside the span.
//!
//! "Whitespace" is [`char::is_whitespace`] throughout (the same as [`str::trim`]), so every
//! non-whitespace byte of the text is in exactly one chunk and no chunk starts or ends with
//! whitespace.

/// Default cap on a chunk, in UTF-8 bytes.
///
/// Small on purpose. The model in the design's tests (SmolLM2-135M) has a 4,096-token
/// context that must hold the instructions, the JSON Schema, the chunk and up to ~700 tokens
/// of answer; 4,000 bytes of English prose is roughly 1,000 tokens, which leaves room for
/// the rest. Small models also stay grounded (quote verbatim) far better on short inputs,
/// and a smaller chunk makes a rejected response cost less. Raise it for larger models.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 4_000;

/// The smallest effective cap: a UTF-8 character is up to 4 bytes, and a chunk must hold
/// at least one. Smaller caps are raised to this.
pub const MIN_CHUNK_BYTES: usize = 4;

/// One chunk: its position among the document's chunks and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ChunkSpan {
    /// 0-based, in text order.
    pub ordinal: u32,
    /// Byte offset of the first byte (a character boundary).
    pub start: usize,
    /// Byte offset one past the last byte (a character boundary).
    pub end: usize,
}

impl ChunkSpan {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Always false for spans made by [`chunk`]; present for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The chunk's text, or `None` if this span does not fit `text` (a span of another
    /// document).
    pub fn text<'a>(&self, text: &'a str) -> Option<&'a str> {
        text.get(self.start..self.end)
    }
}

/// Splits `text` into chunks of at most `max_bytes` bytes (at least [`MIN_CHUNK_BYTES`]).
///
/// Empty or whitespace-only text gives no chunks. See the module docs for the rules.
pub fn chunk(text: &str, max_bytes: usize) -> Vec<ChunkSpan> {
    let max = max_bytes.max(MIN_CHUNK_BYTES);
    let mut chunks = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    let mut push_unit = |start: usize, end: usize| {
        current = match current {
            Some((cs, _)) if end - cs <= max => Some((cs, end)),
            Some(done) => {
                chunks.push(done);
                Some((start, end))
            }
            None => Some((start, end)),
        };
    };
    for (start, end) in paragraphs(text) {
        if end - start <= max {
            push_unit(start, end);
        } else {
            split_long(text, start, end, max, &mut push_unit);
        }
    }
    if let Some(last) = current {
        chunks.push(last);
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, (start, end))| ChunkSpan {
            ordinal: u32::try_from(i).unwrap_or(u32::MAX),
            start,
            end,
        })
        .collect()
}

/// Trimmed spans of the maximal runs of non-blank lines.
fn paragraphs(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut lines = LineSpans { text, pos: 0 };
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut para: Option<(usize, usize)> = None;
        loop {
            let Some((ls, le)) = lines.next() else {
                done = true;
                return para;
            };
            let line = &text[ls..le];
            let body = line.trim();
            if body.is_empty() {
                if para.is_some() {
                    return para;
                }
                continue;
            }
            let s = ls + (line.len() - line.trim_start().len());
            let e = ls + line.trim_end().len();
            para = Some(match para {
                None => (s, e),
                Some((ps, _)) => (ps, e),
            });
        }
    })
}

/// Spans of the `\n`-separated lines of a text, `\n` excluded.
struct LineSpans<'a> {
    text: &'a str,
    pos: usize,
}

impl Iterator for LineSpans<'_> {
    type Item = (usize, usize);
    fn next(&mut self) -> Option<(usize, usize)> {
        if self.pos > self.text.len() {
            return None;
        }
        let start = self.pos;
        let end = match self.text[start..].find('\n') {
            Some(i) => start + i,
            None => self.text.len(),
        };
        self.pos = end + 1;
        Some((start, end))
    }
}

/// Cuts the trimmed span `start..end` (longer than `max`) into trimmed pieces of at most
/// `max` bytes.
fn split_long(
    text: &str,
    start: usize,
    end: usize,
    max: usize,
    emit: &mut impl FnMut(usize, usize),
) {
    let mut pos = start;
    while end - pos > max {
        let limit = floor_char_boundary(text, pos + max);
        let cut = sentence_cut(text, pos, limit)
            .or_else(|| whitespace_cut(text, pos, limit))
            .unwrap_or(limit);
        let piece = &text[pos..cut];
        emit(pos, pos + piece.trim_end().len());
        let rest = &text[cut..end];
        pos = cut + (rest.len() - rest.trim_start().len());
    }
    emit(pos, end);
}

/// Just after the last `.`/`?`/`!` in `text[pos..limit]` that is followed by whitespace.
fn sentence_cut(text: &str, pos: usize, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    (pos..limit).rev().find_map(|i| {
        let after = i + 1;
        (matches!(bytes[i], b'.' | b'?' | b'!') && starts_with_whitespace(&text[after..]))
            .then_some(after)
    })
}

/// The start of the last whitespace character in `text[pos..=limit]` after `pos`.
fn whitespace_cut(text: &str, pos: usize, limit: usize) -> Option<usize> {
    if starts_with_whitespace(&text[limit..]) {
        return Some(limit);
    }
    text[pos..limit]
        .char_indices()
        .rev()
        .find(|&(i, c)| i > 0 && c.is_whitespace())
        .map(|(i, _)| pos + i)
}

fn starts_with_whitespace(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_whitespace)
}

/// The largest character boundary `<= i` (stable `str::floor_char_boundary` is newer than
/// our MSRV).
fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str, max: usize) -> Vec<&str> {
        chunk(text, max)
            .iter()
            .map(|c| c.text(text).unwrap())
            .collect()
    }

    #[test]
    fn empty_and_whitespace_give_no_chunks() {
        assert!(chunk("", 100).is_empty());
        assert!(chunk(" \n\r\n\t \u{a0}\u{2028}", 100).is_empty());
    }

    #[test]
    fn packs_paragraphs_greedily() {
        let text = "aaaa\n\nbbbb\r\n\r\ncccc\n \t\ndddd";
        // "aaaa\n\nbbbb" is 10 bytes; adding "\r\n\r\ncccc" would make 18.
        assert_eq!(texts(text, 12), ["aaaa\n\nbbbb", "cccc\n \t\ndddd"]);
        assert_eq!(texts(text, 1000), [text]);
        assert_eq!(texts(text, 4), ["aaaa", "bbbb", "cccc", "dddd"]);
    }

    #[test]
    fn single_newlines_do_not_split_paragraphs() {
        let text = "line one\nline two\n\nnext";
        assert_eq!(texts(text, 17), ["line one\nline two", "next"]);
    }

    #[test]
    fn trims_and_keeps_offsets_into_the_original() {
        let text = "\n\n  Hello there.  \n\n";
        let spans = chunk(text, 100);
        assert_eq!(
            spans,
            [ChunkSpan {
                ordinal: 0,
                start: 4,
                end: 16
            }]
        );
        assert_eq!(spans[0].text(text), Some("Hello there."));
    }

    #[test]
    fn long_paragraph_splits_at_sentence_end() {
        let text = "One two. Three four? Five six! Seven eight nine.";
        assert_eq!(
            texts(text, 22),
            ["One two. Three four?", "Five six!", "Seven eight nine."]
        );
    }

    #[test]
    fn without_sentence_end_splits_at_whitespace() {
        let text = "alpha beta gamma delta";
        assert_eq!(texts(text, 12), ["alpha beta", "gamma delta"]);
    }

    #[test]
    fn without_whitespace_splits_at_char_boundary() {
        let text = "ééééé"; // 10 bytes
        assert_eq!(texts(text, 5), ["éé", "éé", "é"]);
        let emoji = "😀😀😀";
        assert_eq!(texts(emoji, 7), ["😀", "😀", "😀"]);
    }

    #[test]
    fn tiny_caps_are_raised_to_one_character() {
        assert_eq!(texts("😀a", 1), ["😀", "a"]);
    }

    #[test]
    fn ordinals_count_from_zero() {
        let ordinals: Vec<u32> = chunk("aaa\n\nbbb\n\nccc", 4)
            .iter()
            .map(|c| c.ordinal)
            .collect();
        assert_eq!(ordinals, [0, 1, 2]);
    }

    fn check_invariants(text: &str, max: usize) -> Result<(), TestCaseError> {
        let spans = chunk(text, max);
        let cap = max.max(MIN_CHUNK_BYTES);
        let mut covered = vec![false; text.len()];
        let mut prev_end = 0;
        for (i, span) in spans.iter().enumerate() {
            prop_assert_eq!(span.ordinal as usize, i);
            prop_assert!(
                span.start >= prev_end,
                "overlap or out of order: {:?}",
                spans
            );
            prop_assert!(span.start < span.end);
            prop_assert!(span.len() <= cap, "{:?} over cap {}", span, cap);
            let t = span.text(text);
            prop_assert!(t.is_some(), "not on char boundaries: {:?}", span);
            let t = t.unwrap_or_default();
            prop_assert_eq!(t, t.trim());
            covered[span.start..span.end]
                .iter_mut()
                .for_each(|c| *c = true);
            prev_end = span.end;
        }
        for (i, c) in text.char_indices() {
            if !c.is_whitespace() {
                prop_assert!(covered[i], "byte {} ({:?}) not in any chunk", i, c);
            }
        }
        Ok(())
    }

    fn texty() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            6 => proptest::char::range('a', 'z'),
            2 => Just(' '),
            1 => Just('\n'),
            1 => Just('\r'),
            1 => Just('\t'),
            1 => Just('.'),
            1 => Just('?'),
            1 => Just('!'),
            1 => Just('\u{a0}'),
            1 => Just('\u{2028}'),
            1 => Just('é'),
            1 => Just('中'),
            1 => Just('😀'),
            1 => any::<char>(),
        ];
        proptest::collection::vec(ch, 0..400).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn invariants_on_text_like_input(text in texty(), max in 0usize..120) {
            check_invariants(&text, max)?;
        }

        #[test]
        fn invariants_on_arbitrary_unicode(text in any::<String>(), max in 0usize..64) {
            check_invariants(&text, max)?;
        }

        #[test]
        fn a_text_within_the_cap_is_one_trimmed_chunk(text in texty()) {
            let spans = chunk(&text, text.len().max(MIN_CHUNK_BYTES));
            let trimmed = text.trim();
            if trimmed.is_empty() {
                prop_assert!(spans.is_empty());
            } else {
                prop_assert_eq!(spans.len(), 1);
                prop_assert_eq!(spans[0].text(&text), Some(trimmed));
            }
        }
    }
}
