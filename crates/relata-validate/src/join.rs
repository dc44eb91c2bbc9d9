//! The gate for `relata.join` v1: a model's verdict on whether two entities that no rule
//! joins are one thing, and the evidence it gives — one of the sentences it was shown,
//! by handle, and words copied from it.
//!
//! The layers are the extraction gate's: the syntactic layer, then exactly the contract's
//! three fields (`schema`, `unknown_field`), a verdict from the closed set (`bad_enum`),
//! then the evidence. `unknown_handle`: the source is not one of the handles sent.
//! `degenerate`: the quote is below a quote's minimums (a lone name is found anywhere).
//! `quote_not_found`: the quote is not in that sentence (after the quote normalisation).
//! `unsupported`: the quote names neither of the two entities, so it is not evidence
//! about them. A response is accepted or rejected whole: it is one verdict.
//!
//! What the gate cannot judge is whether the verdict is right; that is why a verdict is
//! only a proposal, which a person decides through the promotion path.

use relata_core::contract::bounds;
use relata_core::{JoinVerdict, Reason, SourceHandle};

use crate::clause::names_in;
use crate::gate::{Fail, closed, fail, string, top};
use crate::normalize::{SourceIndex, collapse};
use crate::outcome::Rejection;
use crate::text::{degenerate, excerpt};

/// One sentence shown to the model, under its handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinSource<'a> {
    pub handle: SourceHandle,
    pub text: &'a str,
}

/// What one `relata.join` request showed: the sentences and the two names asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinInput<'a> {
    pub sources: &'a [JoinSource<'a>],
    pub names: [&'a str; 2],
}

/// A verdict the gate accepted, with its evidence found in the sentence it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedJoin {
    pub verdict: JoinVerdict,
    pub source: SourceHandle,
    /// Byte offsets of the evidence in that sentence's text, and those bytes.
    pub start: usize,
    pub end: usize,
    pub quote: String,
}

/// Judge one `relata.join` v1 response to the request `input` described.
///
/// # Errors
/// The rejection of the whole response, with its reason and a bounded detail.
pub fn judge_join(input: &JoinInput<'_>, raw: &[u8]) -> Result<AcceptedJoin, Rejection> {
    judged(input, raw).map_err(|(reason, detail)| Rejection {
        kind: None,
        index: None,
        reason,
        detail,
    })
}

fn judged(input: &JoinInput<'_>, raw: &[u8]) -> Result<AcceptedJoin, Fail> {
    let mut doc = None;
    let [verdict, source, quote] = top(raw, &mut doc, ["verdict", "source", "quote"])?;
    let verdict: JoinVerdict = closed(string(verdict, "verdict", usize::MAX)?, "verdict")?;
    let source = string(source, "source", bounds::SOURCE_HANDLE_MAX_CHARS)?;
    let quote = string(quote, "quote", bounds::QUOTE_MAX_CHARS)?;
    let sent = SourceHandle::parse(source)
        .ok()
        .and_then(|h| input.sources.iter().find(|s| s.handle == h));
    let Some(sent) = sent else {
        return fail(
            Reason::UnknownHandle,
            format!(
                "\"source\" {} was not sent to the model",
                excerpt(source, 12)
            ),
        );
    };
    let norm = collapse(quote);
    if let Some(why) = degenerate(&norm, bounds::QUOTE_MIN_CHARS, bounds::QUOTE_MIN_WORDS) {
        return fail(Reason::Degenerate, format!("\"quote\" is {why}"));
    }
    let Some((start, end)) = SourceIndex::new(sent.text).find_normalised(&norm) else {
        return fail(
            Reason::QuoteNotFound,
            format!("\"quote\" {} is not in {}", excerpt(quote, 60), sent.handle),
        );
    };
    let found = &sent.text[start..end];
    if !input.names.iter().any(|n| names_in(found, n)) {
        return fail(
            Reason::Unsupported,
            format!(
                "\"quote\" {} names neither {:?} nor {:?}: it is no evidence about them",
                excerpt(found, 60),
                input.names[0],
                input.names[1]
            ),
        );
    }
    Ok(AcceptedJoin {
        verdict,
        source: sent.handle,
        start,
        end,
        quote: found.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "The Philippine Revolution ended with the Treaty of Paris in December 1898.";
    const S2: &str = "The Treaty of Paris of 1783 ended the American Revolutionary War.";

    fn judge(raw: &str) -> Result<AcceptedJoin, Rejection> {
        let sources = [
            JoinSource {
                handle: SourceHandle::nth(1),
                text: S1,
            },
            JoinSource {
                handle: SourceHandle::nth(2),
                text: S2,
            },
        ];
        let input = JoinInput {
            sources: &sources,
            names: ["Treaty of Paris", "treaty of Paris"],
        };
        judge_join(&input, raw.as_bytes())
    }

    fn reason(raw: &str) -> Reason {
        judge(raw).expect_err(raw).reason
    }

    #[test]
    fn a_verdict_with_evidence_from_a_sentence_sent_is_accepted_with_its_offsets() {
        let a = judge(r#"{"verdict":"two","source":"S2","quote":"The Treaty of Paris of 1783"}"#)
            .unwrap();
        assert_eq!(a.verdict, JoinVerdict::Two);
        assert_eq!(a.source, SourceHandle::nth(2));
        assert_eq!(&S2[a.start..a.end], a.quote);
        assert_eq!(a.quote, "The Treaty of Paris of 1783");
        // The quote normalisation: case of quotes and spacing aside, the bytes are the
        // sentence's own.
        let b = judge(r#"{"verdict":"one","source":"S1","quote":"with  the Treaty of Paris"}"#)
            .unwrap();
        assert_eq!(b.quote, "with the Treaty of Paris");
    }

    #[test]
    fn every_bad_response_is_rejected_with_its_reason() {
        assert_eq!(reason("yes, the same"), Reason::NotJson);
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S1"}"#),
            Reason::Schema,
            "a missing quote"
        );
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S1","quote":"the Treaty of Paris","why":"x"}"#),
            Reason::UnknownField
        );
        assert_eq!(
            reason(r#"{"verdict":"same","source":"S1","quote":"the Treaty of Paris"}"#),
            Reason::BadEnum
        );
        // A fabricated handle, and one that is not a handle at all.
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S7","quote":"the Treaty of Paris"}"#),
            Reason::UnknownHandle
        );
        assert_eq!(
            reason(r#"{"verdict":"one","source":"doc 12","quote":"the Treaty of Paris"}"#),
            Reason::UnknownHandle
        );
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S1","quote":"N/A"}"#),
            Reason::Degenerate
        );
        // Words from the other sentence, and words from no sentence.
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S1","quote":"The Treaty of Paris of 1783"}"#),
            Reason::QuoteNotFound
        );
        assert_eq!(
            reason(r#"{"verdict":"one","source":"S2","quote":"both treaties are one"}"#),
            Reason::QuoteNotFound
        );
        // Verbatim, but about neither entity.
        let r = judge(
            r#"{"verdict":"one","source":"S2","quote":"ended the American Revolutionary War"}"#,
        )
        .unwrap_err();
        assert_eq!(r.reason, Reason::Unsupported);
        assert!(r.detail.contains("names neither"), "{}", r.detail);
        assert_eq!((r.kind, r.index), (None, None));
    }
}
