//! The untrusted-output gate.
//!
//! Every word a model returns is treated like a request body from an anonymous client.
//! [`judge_extract`] and [`judge_classify`] take the raw bytes of one response and return
//! a [`Judgement`]: either the whole response is rejected with one [`Reason`], or every
//! row is judged on its own — accepted, accepted with [`Finding`]s, or rejected with a
//! reason and a short detail. Nothing is repaired and nothing is retried here; the caller
//! records each rejection once. The accepted rows ([`AcceptedEntity`], [`AcceptedClaim`],
//! [`AcceptedRelation`]) can only be built by this crate, so a model response reaches the
//! store only through the gate.
//!
//! Answers (`relata.answer`) are judged by [`judge_answer`] in the same layers; see the
//! `answer` module for its checks. A model's proposal that two entities are one thing
//! (`relata.join`) is judged by [`judge_join`]; see the `join` module.
//!
//! This crate knows nothing of HTTP, AMQP, SQL or the OpenAI wire format, does no IO and
//! cannot fail: every input, however hostile, yields a judgement.
//!
//! # The four layers
//!
//! 1. **Syntactic** (whole response). In this order: more than
//!    [`MAX_RESPONSE_BYTES`](relata_core::contract::bounds::MAX_RESPONSE_BYTES) →
//!    `too_large` (before anything else looks at the bytes); invalid UTF-8 → `not_json`;
//!    nothing but whitespace → `empty`; then one complete outer markdown fence (```` ``` ````
//!    or ```` ```json ```` alone on the first line, ```` ``` ```` alone on the last) is
//!    removed — the only tolerated deviation, a structural operation on a delimiter;
//!    text before the value → `not_json`; nesting deeper than
//!    [`MAX_DEPTH`](relata_core::contract::bounds::MAX_DEPTH) → `not_json`, found by an
//!    iterative byte scan that skips strings, *before* the recursive decoder runs, so
//!    10,000 or a million `[` cannot overflow the stack; `NaN`, `Infinity` and every
//!    other non-JSON token → `not_json`; anything after the one value (a second value,
//!    prose, a dangling fence) → `trailing_content`. A repeated key in an object is
//!    remembered by this crate's decoder (`serde_json::Value` would silently keep the
//!    last value) and refused by layer 2 as `schema`.
//!
//!    **Byte-order mark.** A response starting with U+FEFF is `not_json`. RFC 8259
//!    forbids emitting one, a model server never has a reason to, and the design
//!    tolerates exactly one deviation (the fence); a BOM is a character before the value.
//! 2. **Schema** (strict typed decode). The top level must be an object with exactly the
//!    contract's fields: a repeated key → `schema`, an unknown top-level field →
//!    `unknown_field`, a missing field, a wrong type or an array over its bound →
//!    `schema`, all for the whole response. Inside
//!    a row the same failures reject only that row; every other row is still judged.
//!    String bounds count Unicode scalar values (JSON Schema's `maxLength`), not bytes.
//!    An enum value outside the closed set (case-sensitive: `"Person"` is not `person`)
//!    → `bad_enum`.
//! 3. **Semantic** (per row). `degenerate`: a field name or placeholder (`"string"`,
//!    `"name"`, `"N/A"`, `"..."`, `"…"`, `"TBD"`, `"null"`, `"unknown"`, `"lorem
//!    ipsum"`, `"<name>"`, …), text with no letter or digit, or text below the minimums
//!    of [`bounds`](relata_core::contract::bounds): a name needs 2 characters; a
//!    statement 12 characters and 3 words (a subject, a verb and an object); a quote 8
//!    characters and 2 words, so that a lone year or name — found verbatim almost
//!    anywhere — cannot ground a claim. `quote_not_found`: see below. `unsupported`: the
//!    claim's statement is not supported by its own quote — a figure or a name of the
//!    statement missing from the quote, too small a share of its other content words
//!    found there (after stemming), a negation on one side only, or a subject grounded
//!    in neither the quote nor the chunk (the `supported` check; the rules and their
//!    measured precision are in the `support` module). `unknown_handle`:
//!    `a` or `b` is not a well-formed handle or was not among the handles sent.
//! 4. **Consistency** (per row). `unknown_subject`: a claim's subject must equal the
//!    name of an entity *accepted* from the same response, compared with
//!    [`normalize::key`] (NFC, whitespace collapsed, Unicode lowercase) — the accepted
//!    claim names that entity — or be named in the claim's own quote (every content word
//!    of it found there, as the support check compares words), and then the claim is
//!    kept linked to no entity: a small model that writes a faithful claim and forgets
//!    to list its subject loses nothing that the quote does not prove. `unrequested_pair`: (a, b) must be one of the ordered
//!    pairs asked for — a swapped pair was not asked for. `duplicate`: a row equal to an
//!    earlier *accepted* row of the same response: entities by (normalised name, type),
//!    so "Paris" the city and "Paris" the person are two entities; claims by (normalised
//!    lowercased statement, quote span in the source); relations by the ordered pair, so a
//!    second relation for the same pair is a duplicate whatever its label.
//!
//! Within a row the checks run in the order above and the first rejecting one decides
//! the row's reason. Warning, not rejection: `figure_not_in_quote` — a number, year or
//! percentage of the statement that its quote does not contain (a hand-written
//! tokenizer: digit runs joined across `,`/`.`, thousands separators ignored, `%` not part
//! of the figure). The support check requires the same figures and rejects first, so with
//! the default settings this warning is seen only when `supported` is demoted to `warn`
//! or switched off: a figure the quote lacks is a statement the quote does not support,
//! and a row that may be wrong about a number should not be stored as if it were right.
//!
//! # Quotes
//!
//! A quote is found when its normalised form is a substring of the normalised source.
//! The normalisation is [`normalize::collapse`]: Unicode NFC, then every run of
//! whitespace collapsed to one space, then trimmed. Nothing else: matching is exact and
//! case-sensitive, never fuzzy, and a quote one character off is `quote_not_found`. The
//! first occurrence in the source is taken when a quote occurs several times (the earliest
//! is as good a witness as any, and the choice is deterministic). The accepted claim
//! carries the UTF-8 byte offsets of the match in the *original* source and its quote is
//! the source's own text at those offsets (`&source[start..end]`), not the model's
//! spelling; a match that would start or end inside a character that NFC composed is
//! skipped.
//!
//! # Settings
//!
//! Each [`Check`](relata_core::Check) has `enabled` and `severity`
//! ([`GateConfig`]). A disabled check does not run. A check at severity `warn` keeps the
//! row and adds a [`Finding`] `demoted` naming the reason it would have rejected with.
//! `quote_found` and `handle_known` are structural and cannot be disabled or demoted.
//! `figure_in_quote` warns by default; at severity `reject` it rejects the row as
//! `inconsistent` (the quote was found; the statement disagrees with it). Layers 1 and 2
//! and `bad_enum` are the decoder and have no settings.
//!
//! # Why no regular expression
//!
//! A regex that "finds the JSON" in a response is a repair: it decides what the model
//! meant. Every such heuristic accepts something the model did not say (the second of two
//! objects, the JSON inside an apology) and makes the failure rate a lie. The only
//! deviation tolerated is a fence, removed by comparing delimiters at the two ends; the
//! figure tokenizer and the placeholder check are a few lines of plain code, which is
//! also easier to bound in time than a regex engine on adversarial input.
//!
//! # What the gate does not guarantee
//!
//! Shape, provenance and lexical support, not truth. An accepted claim's quote is
//! verbatim in the source, its subject is an entity the same response named, and its
//! statement's names, figures and most of its words are the quote's own; the statement
//! may still rearrange those words into something the quote does not say ("Paris is the
//! capital of France" does not support "France is the capital of Paris"). A relation
//! between two handles that were sent may still be the wrong relation. The gate does not detect a response cut off by the token limit
//! (that is `truncated`, decided by the caller from `finish_reason`), nor a refusal.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod answer;
mod clause;
mod config;
mod decode;
mod gate;
mod join;
pub mod normalize;
mod outcome;
pub mod resolve;
mod support;
mod text;

pub use answer::{
    AcceptedAnswer, AnswerConfig, AnswerJudgement, AnswerRejection, SourceText, judge_answer,
};
pub use config::{CheckSetting, ConfigError, GateConfig};
pub use gate::ExtractShape;
pub use join::{AcceptedJoin, JoinInput, JoinSource, judge_join};
pub use outcome::{
    AcceptedClaim, AcceptedEntity, AcceptedRelation, ClassifyRows, ExtractRows, Finding, Judgement,
    Rejection, Report, ReportRow, RowDecision, RowOutcome, RowStatus, Verdict,
};
pub use support::{DEFAULT_MIN_SHARE, SupportOpinion, SupportSettings};
pub use text::MAX_DETAIL_CHARS;
pub use text::SPELLED as SPELLED_NUMBERS;

use relata_core::Handle;
use std::collections::BTreeSet;

/// What a classify request showed the model: the handles sent and the ordered pairs asked
/// for. Both checks (`handle_known`, `pair_requested`) judge against this and nothing else.
#[derive(Debug, Clone, Default)]
pub struct ClassifyInput {
    pub handles: BTreeSet<Handle>,
    pub pairs: BTreeSet<(Handle, Handle)>,
}

/// Judge a raw `relata.extract` v1 response (quotes copied from the chunk) against the
/// source text it was asked about.
pub fn judge_extract(config: &GateConfig, source: &str, raw: &[u8]) -> Judgement<ExtractRows> {
    gate::judge_extract(config, ExtractShape::Quotes, source, None, raw, None)
}

/// Judge a raw `relata.extract` response of any contract (`shape`) against the chunk
/// `source` of a document titled `title` (what v3's `null` statements are read with, as the
/// prompt was), with an optional second opinion on support, consulted for every claim the
/// lexical support check accepted (it can only reject more).
pub fn judge_extract_as(
    config: &GateConfig,
    shape: ExtractShape,
    source: &str,
    title: Option<&str>,
    raw: &[u8],
    opinion: Option<&dyn SupportOpinion>,
) -> Judgement<ExtractRows> {
    gate::judge_extract(config, shape, source, title, raw, opinion)
}

/// [`judge_extract`] with a second opinion on support, consulted for every claim the
/// lexical support check accepted (it can only reject more).
pub fn judge_extract_with_opinion(
    config: &GateConfig,
    source: &str,
    raw: &[u8],
    opinion: &dyn SupportOpinion,
) -> Judgement<ExtractRows> {
    gate::judge_extract(
        config,
        ExtractShape::Quotes,
        source,
        None,
        raw,
        Some(opinion),
    )
}

/// Judge a raw classify response against what the request showed the model.
pub fn judge_classify(
    config: &GateConfig,
    input: &ClassifyInput,
    raw: &[u8],
) -> Judgement<ClassifyRows> {
    gate::judge_classify(config, input, raw)
}
