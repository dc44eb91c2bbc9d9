//! What the page needs from the promotion store, as a small trait: the page knows nothing
//! of SQL, and everything it shows or records goes through these calls. A decision made
//! here is the same call `relata review` makes, so it meets the same conditions and
//! writes the same evidence record.

use std::future::Future;
use std::ops::Range;

use chrono::{DateTime, Utc};
pub use relata_core::{CandidateId, Decision, RowKind};

/// Which candidates to list: pending ones, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewFilter {
    pub kind: Option<RowKind>,
    /// A document source, exactly as ingested (`--source`).
    pub source: Option<String>,
    pub offset: u64,
    pub limit: u64,
}

/// One page of pending candidates, and whether there are more after it.
#[derive(Debug, Clone, Default)]
pub struct CandidatePage {
    pub candidates: Vec<Candidate>,
    pub more: bool,
}

/// A flag the gate raised on a row it kept, as stored (`figure_not_in_quote`, `demoted`)
/// with its detail; the page puts it in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningView {
    pub warning: String,
    pub detail: String,
}

/// A claim as a reviewer needs to see it.
#[derive(Debug, Clone)]
pub struct ClaimView {
    pub claim_id: i64,
    pub statement: String,
    pub subject: String,
    pub quote: String,
    pub document_title: Option<String>,
    pub source: String,
    pub external_id: String,
    /// The text of the chunk the quote was found in.
    pub chunk_text: String,
    /// The quote's UTF-8 byte range inside `chunk_text` (the stored offsets less the
    /// chunk's start); `None` when the store could not place it there.
    pub quote_in_chunk: Option<Range<usize>>,
}

/// An entity as a reviewer needs to see it.
#[derive(Debug, Clone)]
pub struct EntityView {
    pub entity_id: i64,
    pub name: String,
    pub entity_type: String,
    pub document_title: Option<String>,
    pub source: String,
    pub external_id: String,
    /// The text of the chunk it was found in.
    pub chunk_text: String,
}

/// What is being reviewed.
#[derive(Debug, Clone)]
pub enum CandidateBody {
    Entity(EntityView),
    Claim(ClaimView),
    Relation {
        relation: String,
        a: Box<ClaimView>,
        b: Box<ClaimView>,
    },
    /// A model's proposal that two entities are one thing, with its evidence: words
    /// copied from a sentence of one of their documents.
    Join {
        a: Box<EntityView>,
        b: Box<EntityView>,
        quote: String,
        /// Whether the quote is from `a`'s document (else from `b`'s).
        quote_from_a: bool,
    },
}

/// A pending candidate with the provenance of the model call that proposed it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: CandidateId,
    /// False once a decision has settled it.
    pub pending: bool,
    /// Its document changed since it was proposed: it can be rejected, not approved.
    pub stale: bool,
    /// Why the policy sent it to review, one reason a line.
    pub reasons: Vec<String>,
    pub proposed_at: DateTime<Utc>,
    pub model: String,
    pub prompt_version: String,
    pub warnings: Vec<WarningView>,
    pub body: CandidateBody,
}

/// What became of one candidate of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecideOutcome {
    /// Recorded: the evidence record's sequence number.
    Recorded { evidence_seq: i64 },
    /// Refused, with the reason in words (already decided, superseded, not found, …).
    Refused { reason: String },
}

/// One decision recorded in the evidence log.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    pub seq: i64,
    pub candidate: String,
    pub decision: String,
    pub reviewer: String,
    pub at: DateTime<Utc>,
    pub note: Option<String>,
}

/// Whether the evidence log's hash chain verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainStatus {
    /// Every record's hash and link checked.
    Intact { records: u64 },
    /// The first place that does not verify (a record, when one can be named), and why.
    Broken { seq: Option<i64>, reason: String },
}

/// A failure of the backend (the store could not be reached, or refused a query).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    pub message: String,
    /// True when the same request may succeed later (the store was unavailable).
    pub retryable: bool,
    /// `message` is a sentence for the reviewer, to be shown as it is: the store refused
    /// for a reason a person must act on (the evidence log does not end where its head
    /// says). Otherwise the page says only that the store failed, and the log says why.
    pub shown: bool,
}

pub type BackendResult<T> = Result<T, BackendError>;

/// The operations of the review page. Implemented over the store for `relata serve`, and
/// by anything else that holds candidates.
pub trait ReviewBackend: Clone + Send + Sync + 'static {
    /// True when `reviewer` is a configured reviewer and `secret` is their current
    /// sign-in token.
    fn sign_in(
        &self,
        reviewer: &str,
        secret: &str,
    ) -> impl Future<Output = BackendResult<bool>> + Send;

    /// True while `reviewer` is a configured reviewer whose current sign-in token has the
    /// sha256 (hex) `token_sha256`: a session lasts no longer than the token that opened it.
    fn token_current(
        &self,
        reviewer: &str,
        token_sha256: &str,
    ) -> impl Future<Output = BackendResult<bool>> + Send;

    /// Pending candidates, oldest first.
    fn list(
        &self,
        filter: &ReviewFilter,
    ) -> impl Future<Output = BackendResult<CandidatePage>> + Send;

    /// One candidate, pending or not; `None` when there is no such row.
    fn show(
        &self,
        id: CandidateId,
    ) -> impl Future<Output = BackendResult<Option<Candidate>>> + Send;

    /// Decide each of `ids` as `reviewer`; one outcome per id, in order. A note is
    /// required to reject (the backend refuses a rejection without one).
    fn decide(
        &self,
        ids: &[CandidateId],
        decision: Decision,
        reviewer: &str,
        note: Option<&str>,
    ) -> impl Future<Output = BackendResult<Vec<DecideOutcome>>> + Send;

    /// Recorded decisions, newest first.
    fn history(
        &self,
        offset: u64,
        limit: u64,
    ) -> impl Future<Output = BackendResult<Vec<HistoryEntry>>> + Send;

    /// Verify the evidence log's hash chain.
    fn verify(&self) -> impl Future<Output = BackendResult<ChainStatus>> + Send;
}
