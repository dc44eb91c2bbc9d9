//! The one text normalisation the gate uses for comparisons: Unicode NFC, then every run of
//! whitespace (`char::is_whitespace`) collapsed to one ASCII space, leading and trailing
//! whitespace removed. [`key`] additionally lowercases (Unicode `to_lowercase`), for names
//! compared case-insensitively.
//!
//! Quote matching needs more than a normalised copy: the accepted claim carries byte
//! offsets into the *original* source, so [`SourceIndex`] keeps a map from positions in the
//! normalised text back to the original. The text is cut into segments at NFC-stable
//! boundaries (before every character that is a starter with `NFC_Quick_Check = Yes`, and
//! around every whitespace run); each segment is normalised on its own, which gives the
//! same result as normalising the whole text, and a match is only accepted when it starts
//! and ends on segment boundaries — never inside a character that composition merged.

use unicode_normalization::{IsNormalized, UnicodeNormalization, char::canonical_combining_class};

/// NFC + whitespace runs collapsed to one space + trimmed.
pub fn collapse(s: &str) -> String {
    collapse_cow(s).into_owned()
}

/// [`collapse`], borrowing when the text is already normal (no copy, no allocation).
pub(crate) fn collapse_cow(s: &str) -> std::borrow::Cow<'_, str> {
    if already_collapsed_ascii(s) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    normalise_into(s, &mut out, |_, _, _, _| {});
    std::borrow::Cow::Owned(out)
}

/// ASCII text that normalisation would leave unchanged: no whitespace but single spaces,
/// none at either end. The common case for model-written fields, checked with vectorised
/// scans instead of the byte-by-byte walk (ASCII is always NFC).
fn already_collapsed_ascii(s: &str) -> bool {
    let b = s.as_bytes();
    s.is_ascii()
        && b.first().is_none_or(|&c| c != b' ')
        && b.last().is_none_or(|&c| c != b' ')
        && memchr::memchr3(b'\t', b'\n', b'\r', b).is_none()
        && memchr::memchr2(0x0b, 0x0c, b).is_none()
        && !b.windows(2).any(|w| w == b"  ")
}

/// [`collapse`] then Unicode lowercase: the comparison key for entity names and subjects.
pub fn key(s: &str) -> String {
    lower(&collapse(s))
}

/// Lowercase text that is already collapsed.
pub(crate) fn lower(norm: &str) -> String {
    if norm.is_ascii() {
        norm.to_ascii_lowercase()
    } else {
        norm.to_lowercase()
    }
}

/// The ASCII bytes `char::is_whitespace` accepts: tab, LF, VT, FF, CR, space.
fn is_ascii_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

/// A character before which NFC never reaches back: composition of the text before it
/// and after it are independent.
fn is_boundary(c: char) -> bool {
    c.is_ascii()
        || (canonical_combining_class(c) == 0
            && is_nfc_quick(std::iter::once(c)) == IsNormalized::Yes)
}

fn is_nfc_quick<I: Iterator<Item = char>>(i: I) -> IsNormalized {
    unicode_normalization::is_nfc_quick(i)
}

/// Walk `s`, appending its normalised form to `out` (which must start empty). For every
/// segment whose normalised bytes differ from the original bytes, `on_changed(norm_start,
/// norm_end, orig_start, orig_end)` is called. Text between two reported segments is copied
/// byte for byte, so its offsets follow from the end of the last report.
fn normalise_into(s: &str, out: &mut String, on_changed: impl FnMut(usize, usize, usize, usize)) {
    if s.is_ascii() && out.is_empty() {
        normalise_ascii(s, out, on_changed);
        return;
    }
    normalise_general(s, out, on_changed);
}

/// The general walk (any Unicode text); [`normalise_into`] without the ASCII shortcut.
fn normalise_general(
    s: &str,
    out: &mut String,
    mut on_changed: impl FnMut(usize, usize, usize, usize),
) {
    let bytes = s.as_bytes();
    let mut i = 0;
    // Start of a pending whitespace run in the original.
    let mut pending_ws: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 && is_ascii_ws(b) {
            pending_ws.get_or_insert(i);
            i += 1;
            continue;
        }
        if b < 0x80 {
            flush_ws(&mut pending_ws, i, out, &mut on_changed);
            // Fast path: copy a run of ASCII non-whitespace at once. Its last character
            // stays behind when a non-ASCII character follows, which could combine with it.
            // A single space between two such characters is already normal: copy it too.
            let mut k = i + 1;
            while k < bytes.len() {
                let c = bytes[k];
                let plain = c < 0x80 && !is_ascii_ws(c);
                let lone_space = c == b' '
                    && bytes
                        .get(k + 1)
                        .is_some_and(|&d| d < 0x80 && !is_ascii_ws(d));
                if !(plain || lone_space) {
                    break;
                }
                k += 1;
            }
            if k < bytes.len() && bytes[k] >= 0x80 {
                k -= 1;
            }
            if k > i {
                out.push_str(&s[i..k]);
                i = k;
                continue;
            }
        }
        let c = if b < 0x80 {
            b as char
        } else {
            // `s` is a str and `i` always sits on a char boundary.
            match s[i..].chars().next() {
                Some(c) => c,
                None => break,
            }
        };
        let c_len = c.len_utf8();
        if c.is_whitespace() {
            if pending_ws.is_none() {
                pending_ws = Some(i);
            }
            i += c_len;
            continue;
        }
        flush_ws(&mut pending_ws, i, out, &mut on_changed);
        // The segment: this character plus every following character NFC could merge
        // into it (non-boundary, non-whitespace).
        let seg_start = i;
        let mut j = i + c_len;
        let mut simple = is_boundary(c);
        while j < bytes.len() {
            if bytes[j] < 0x80 {
                break; // ASCII is always a boundary (whitespace too)
            }
            let Some(d) = s[j..].chars().next() else {
                break;
            };
            if d.is_whitespace() || is_boundary(d) {
                break;
            }
            simple = false;
            j += d.len_utf8();
        }
        let seg = &s[seg_start..j];
        if simple {
            out.push_str(seg);
        } else {
            let ns = out.len();
            out.extend(seg.nfc());
            if &out[ns..] != seg {
                on_changed(ns, out.len(), seg_start, j);
            }
        }
        i = j;
    }
    // Trailing whitespace is trimmed.
}

/// [`normalise_into`] for ASCII text, which NFC leaves alone: only whitespace changes.
/// One tight loop over the bytes (most text is ASCII; this is the gate's hot path).
fn normalise_ascii(
    s: &str,
    out: &mut String,
    mut on_changed: impl FnMut(usize, usize, usize, usize),
) {
    let b = s.as_bytes();
    let n = b.len();
    let Some(lead) = b.iter().position(|&c| !is_ascii_ws(c)) else {
        // Nothing but whitespace: nothing to keep, nothing to map.
        return;
    };
    if lead > 0 {
        on_changed(0, 0, 0, lead);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(n);
    // Text up to the next whitespace that needs changing (anything but a single space
    // between two non-space bytes) is copied in bulk. The next such place is found with a
    // plain byte loop: in prose it is a few bytes away, where a vectorised search's
    // set-up per call costs more than the bytes it skips.
    let mut copied = lead;
    let mut i = lead;
    while i < n {
        let c = b[i];
        if c > b' ' || (c == b' ' && i + 1 < n && !is_ascii_ws(b[i + 1])) || !is_ascii_ws(c) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < n && is_ascii_ws(b[j]) {
            j += 1;
        }
        buf.extend_from_slice(&b[copied..i]);
        copied = j;
        if j == n {
            // Trailing whitespace is dropped; nothing after it needs mapping.
            break;
        }
        let w = buf.len();
        buf.push(b' ');
        // One byte of whitespace keeps every offset; anything longer shifts them.
        if j - i != 1 {
            on_changed(w, w + 1, i, j);
        }
        i = j;
    }
    buf.extend_from_slice(&b[copied.min(n)..]);
    // ASCII in, ASCII out: the conversion cannot fail; an empty result if it somehow did
    // would only make a quote unfindable, never accept one.
    *out = String::from_utf8(buf).unwrap_or_default();
}

/// End a pending whitespace run at `i`: one space, or nothing at the start of the text.
#[inline]
fn flush_ws(
    pending_ws: &mut Option<usize>,
    i: usize,
    out: &mut String,
    on_changed: &mut impl FnMut(usize, usize, usize, usize),
) {
    if let Some(ws_start) = pending_ws.take() {
        let ns = out.len();
        if ns > 0 {
            out.push(' ');
            // One byte of whitespace keeps every offset; anything longer shifts them.
            if i - ws_start != 1 {
                on_changed(ns, ns + 1, ws_start, i);
            }
        } else {
            // Leading whitespace is dropped: a zero-width segment.
            on_changed(0, 0, ws_start, i);
        }
    }
}

/// Bytes of a quote used to find candidate positions.
const PREFIX: usize = 32;
/// Failed candidates before the full searcher is built.
const MAX_CANDIDATES: usize = 16;

/// The normalised source text with a map back to original byte offsets.
#[derive(Debug, Clone)]
pub(crate) struct SourceIndex<'s> {
    original: &'s str,
    norm: String,
    /// (norm, orig) pairs at the start and end of every changed segment, in order. A
    /// position maps through the last pair at or before it: `orig + (p - norm)`.
    breaks: Vec<(usize, usize)>,
    /// Changed segments longer than one byte, (norm_start, norm_end): a match may not
    /// start or end strictly inside one.
    atoms: Vec<(usize, usize)>,
}

impl<'s> SourceIndex<'s> {
    pub(crate) fn new(original: &'s str) -> SourceIndex<'s> {
        let mut norm = String::with_capacity(original.len());
        let mut breaks = Vec::new();
        let mut atoms = Vec::new();
        normalise_into(original, &mut norm, |ns, ne, os, oe| {
            breaks.push((ns, os));
            breaks.push((ne, oe));
            if ne > ns + 1 {
                atoms.push((ns, ne));
            }
        });
        SourceIndex {
            original,
            norm,
            breaks,
            atoms,
        }
    }

    /// Map a normalised position to the original; `None` strictly inside a segment that
    /// normalisation changed.
    fn to_original(&self, p: usize) -> Option<usize> {
        let k = self.atoms.partition_point(|&(ns, _)| ns < p);
        if k > 0 && p < self.atoms[k - 1].1 {
            return None;
        }
        let k = self.breaks.partition_point(|&(n, _)| n <= p);
        Some(match k {
            0 => p,
            _ => {
                let (n, o) = self.breaks[k - 1];
                o + (p - n)
            }
        })
    }

    /// The first occurrence of `quote` (normalised) in the source, as original byte
    /// offsets; `None` when it is empty after normalisation or not present.
    #[cfg(test)]
    pub(crate) fn find(&self, quote: &str) -> Option<(usize, usize)> {
        self.find_normalised(&collapse(quote))
    }

    /// [`find`](Self::find) for a quote already passed through [`collapse`].
    ///
    /// Candidates are found by the needle's first [`PREFIX`] bytes (a cheap searcher to
    /// build) and confirmed by comparing the rest. After [`MAX_CANDIDATES`] failed
    /// candidates the search switches to a full two-way searcher, so a repetitive source
    /// cannot make one quote cost more than linear time.
    pub(crate) fn find_normalised(&self, needle: &str) -> Option<(usize, usize)> {
        self.find_where(needle, |_, _| true)
    }

    /// [`find_normalised`](Self::find_normalised) for a match that is a whole word (or
    /// words) of the original: no letter or digit just before or just after it.
    pub(crate) fn find_word_normalised(&self, needle: &str) -> Option<(usize, usize)> {
        let text = self.original;
        self.find_where(needle, |s, e| {
            !text[..s]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
                && !text[e..].chars().next().is_some_and(char::is_alphanumeric)
        })
    }

    /// The first occurrence of `needle` whose original span `accept` takes.
    fn find_where(
        &self,
        needle: &str,
        accept: impl Fn(usize, usize) -> bool,
    ) -> Option<(usize, usize)> {
        if needle.is_empty() {
            return None;
        }
        let hay = self.norm.as_bytes();
        let nb = needle.as_bytes();
        let prefix = memchr::memmem::Finder::new(&nb[..nb.len().min(PREFIX)]);
        let mut full: Option<memchr::memmem::Finder<'_>> = None;
        let mut misses = 0;
        let mut from = 0;
        loop {
            let hit = match &full {
                Some(f) => f.find(&hay[from..]),
                None => prefix.find(&hay[from..]),
            };
            let ns = from + hit?;
            from = ns + 1;
            if full.is_none() && !hay[ns..].starts_with(nb) {
                misses += 1;
                if misses >= MAX_CANDIDATES {
                    full = Some(memchr::memmem::Finder::new(nb));
                }
                continue;
            }
            let ne = ns + needle.len();
            if let (Some(os), Some(oe)) = (self.to_original(ns), self.to_original(ne))
                && os < oe
                && oe <= self.original.len()
                && self.original.is_char_boundary(os)
                && self.original.is_char_boundary(oe)
                && accept(os, oe)
            {
                return Some((os, oe));
            }
            // Starts or ends inside a composed character: keep looking.
        }
    }

    #[cfg(test)]
    pub(crate) fn normalised(&self) -> &str {
        &self.norm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_is_nfc_and_whitespace_runs() {
        assert_eq!(collapse("  a \t\n b  "), "a b");
        assert_eq!(collapse("e\u{301}t\u{e9}"), "\u{e9}t\u{e9}");
        assert_eq!(collapse("\u{212b}"), "\u{c5}");
        assert_eq!(key(" The  EU "), "the eu");
        assert_eq!(key("\u{c9}COLE"), "\u{e9}cole");
    }

    #[test]
    fn offsets_point_into_the_original() {
        let src = "  Caf\u{65}\u{301}  au\n\nlait, d\u{e9}j\u{e0} vu.\tEnd";
        let ix = SourceIndex::new(src);
        assert_eq!(ix.normalised(), "Caf\u{e9} au lait, d\u{e9}j\u{e0} vu. End");
        let (s, e) = ix.find("Caf\u{e9} au lait").unwrap();
        assert_eq!(&src[s..e], "Caf\u{65}\u{301}  au\n\nlait");
        let (s, e) = ix.find("au lait, d\u{e9}j\u{e0}").unwrap();
        assert_eq!(&src[s..e], "au\n\nlait, d\u{e9}j\u{e0}");
        let (s, e) = ix.find("vu. End").unwrap();
        assert_eq!(&src[s..e], "vu.\tEnd");
        // Decomposed in the quote, composed in the source: same after NFC.
        let (s, e) = ix.find("de\u{301}ja\u{300}").unwrap();
        assert_eq!(&src[s..e], "d\u{e9}j\u{e0}");
        assert!(ix.find("Cafe au").is_none());
        assert!(ix.find("   ").is_none());
        // First occurrence.
        let ix = SourceIndex::new("ab  ab ab");
        assert_eq!(ix.find("ab"), Some((0, 2)));
        assert_eq!(ix.find("ab ab"), Some((0, 6)));
    }

    #[test]
    fn a_match_inside_a_composed_character_is_skipped() {
        // "a" + combining macron + combining dot below composes to U+1EA1 U+0304; a quote
        // ending after the base letter alone must not match inside that segment.
        let src = "xa\u{304}\u{323}y and xa";
        let ix = SourceIndex::new(src);
        let (s, e) = ix.find("xa").unwrap();
        assert_eq!(&src[s..e], "xa");
        assert_eq!(s, src.len() - 2);
    }

    proptest::proptest! {
        /// The vectorised fast path gives exactly what the byte walk gives.
        #[test]
        fn the_fast_path_agrees_with_the_walk(s in "[ a-c\t\n\r\x0b\x0c]{0,24}") {
            let mut walked = String::new();
            normalise_into(&s, &mut walked, |_, _, _, _| {});
            proptest::prop_assert_eq!(collapse(&s), walked);
        }
    }

    proptest::proptest! {
        /// The ASCII walk gives exactly the general walk's text and reports.
        #[test]
        fn the_ascii_walk_agrees_with_the_general_walk(s in "[ ab\\t\\n\\r\\x0b\\x0c]{0,40}") {
            let (mut a, mut g) = (String::new(), String::new());
            let (mut ra, mut rg) = (Vec::new(), Vec::new());
            normalise_ascii(&s, &mut a, |w, x, y, z| ra.push((w, x, y, z)));
            normalise_general(&s, &mut g, |w, x, y, z| rg.push((w, x, y, z)));
            proptest::prop_assert_eq!(a, g);
            proptest::prop_assert_eq!(ra, rg);
        }
    }
}
