//! relata-answer: questions answered from the store, with citations that cannot be
//! fabricated, degrading instead of failing.
//!
//! [`Answerer::ask`] retrieves at most `k` passages of stored documents (full-text search
//! in PostgreSQL, current revisions only), shows them to the model under opaque handles
//! `S1..Sk` — never database ids — and judges the model's `relata.answer` response with
//! the answer gate (`relata_validate::judge_answer`). Three outcomes, all answers:
//!
//! * `answered` — the response passed the gate and says the sources answer the question;
//!   every citation is a handle that was sent, so it resolves to a passage whose text is
//!   the document's own bytes at its offsets. Warnings are kept as caveats.
//! * `abstained` — no source was retrieved (the model is not asked, and a `no_sources`
//!   caveat says so), the question names what no source mentions (`not_in_sources`,
//!   [`answerability`]) or asks for a kind of figure no source gives about what it names
//!   (`figure_not_given`, [`figure_asked`]), both also without a model call; or the
//!   model's valid response is the abstention sentence.
//! * `degraded` — the response failed the gate: no prose, `sufficient: false`, the
//!   retrieved sources intact, the stored contradictions between them, and every
//!   rejection reason as a caveat. Each rejection is counted once on
//!   `relata_model_invalid_output_total{task="answer",reason}` and never retried or
//!   repaired: a citation "corrected" to satisfy a validator is worse than none.
//!
//! Only a model that is unavailable after the adapter's bounded retries (or refuses the
//! request) and a failing store are errors ([`AskError`]).
//!
//! Only **promoted** claims (allowed by the policy or approved by a named person) are
//! attached to sources. Contradictions are surfaced by relata, not by the model: every
//! stored `contradicts` relation of the current classify version between claims whose
//! quotes lie in the sources, on every outcome — including those still waiting for
//! review, marked `pending_review`, because a warning waiting for a person must never be
//! hidden from the person asking. Rejected and denied ones are left out. A claim outside
//! the retrieved passages that contradicts one inside them brings its passage in as an
//! extra source (at most [`CONTRADICTING_SOURCES`], `retrieved: false`), and a relation
//! between claims that entity resolution now keeps apart is neither listed nor followed.
//!
//! Every answer is recorded (`answers`): the question, the sources and their claim ids in
//! handle order, the outcome and its reasons, and the model call's provenance.
//!
//! [`server`] serves the same over HTTP (`POST /v1/answers`). This crate knows nothing of
//! AMQP, SQL or the OpenAI wire format.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod answer;
pub mod answerability;
pub mod figure_asked;
pub mod listen;
mod metrics;
pub mod server;

pub use answer::{
    Answer, Answerer, AskError, CONTRADICTING_SOURCES, Caveat, ContradictionOut, FIGURE_NOT_GIVEN,
    MAX_QUESTION_BYTES, NO_SOURCES, NOT_IN_SOURCES, SOURCE_ALTERED, Source, SourceClaim,
    check_request,
};
pub use metrics::{AnswerChecksConfigured, AnswerMetrics};
