//! Promotion: candidates, decisions and the evidence log.
//!
//! Every entity, claim and relation a worker committed is a *candidate*. Nothing about
//! it is final until a decision is recorded here:
//!
//! * [`Store::promote_pending`] judges the candidates the policy has not seen, in batches,
//!   and records each verdict (`allow` → promoted, `review` → pending, `deny` → denied);
//! * [`Store::review_decide`] records a named reviewer's approval or rejection of pending
//!   candidates, refusing stale, changed and already decided ones;
//! * every decision appends one record to `evidence`, a hash chain: the record holds the
//!   sha256 of its candidate's canonical content (SQL `relata_candidate_sha256`), the
//!   previous record's sha256 and its own, computed here over its fields
//!   ([`EvidenceRecord::compute_sha256`]); a person's record also says how the decision
//!   was made ([`Via`]). [`Store::evidence_verify`] recomputes both and names the first
//!   record that does not match, then checks the sources the candidates were drawn from
//!   (every revision against its sha256, every chunk and claim quote against the
//!   revision's bytes at its offsets); [`Store::evidence_verify_against`] also holds the
//!   log to a [`ChainHead`] kept elsewhere;
//! * an append first checks that the log ends where its head says, unaltered, and
//!   refuses with [`StoreError::ChainBroken`] (naming the record) when it does not;
//! * a candidate's state is its latest record (SQL `relata_candidate_state`); only the
//!   candidates the policy held for a person also get a row in the review queue
//!   (`promotions`), which their reviewer's decision updates, and verify checks that
//!   queue against the log.
//!
//! Decisions are appended by a promoter beside the workers' commits, never inside them:
//! the chain's end (`evidence_head`) is locked once per batch, by one promoter at a time,
//! and a commit never waits for it.
//!
//! The module is cut by concern, so that each rule has one file to live in: `chain`
//! writes and checks the hash chain, `candidate` reads committed rows back as the policy
//! judges them, `sweep` judges and records verdicts, `review` serves the people who
//! decide, and `verify` recomputes everything the log vouches for.
//!
//! [`Store::promote_pending`]: crate::Store::promote_pending
//! [`Store::review_decide`]: crate::Store::review_decide
//! [`Store::evidence_verify`]: crate::Store::evidence_verify
//! [`Store::evidence_verify_against`]: crate::Store::evidence_verify_against
//! [`StoreError::ChainBroken`]: crate::StoreError::ChainBroken

// The column lists live here, before the submodules, so that every one of them reads a
// record or a decided candidate the same way (macros are scoped by textual order).
macro_rules! evidence_select {
    () => {
        "SELECT seq, candidate_kind, candidate_id, encode(candidate_sha256, 'hex') AS candidate_sha256, call_id,
                task_version, actor_kind, actor, decision, reasons, note, decided_at,
                encode(prev_sha256, 'hex') AS prev_sha256, encode(sha256, 'hex') AS sha256,
                via, via_os_user, via_host
         FROM evidence"
    };
}

macro_rules! candidate_select {
    () => {
        "SELECT p.candidate_kind, p.candidate_id, p.state, p.rule, p.reasons, p.sources,
                EXISTS (SELECT 1 FROM document_revisions dr
                        JOIN documents d ON d.id = dr.document_id
                        WHERE dr.id = ANY (p.revision_ids) AND d.current_revision_id <> dr.id)
                    AS stale,
                p.proposed_at, p.decided_at,
                coalesce(relata_candidate_row(p.candidate_kind, p.candidate_id), 'null'::jsonb)
                    AS row
         FROM candidate_decisions p"
    };
}

mod candidate;
mod chain;
mod review;
mod sweep;
mod verify;

pub use candidate::Candidate;
pub(crate) use candidate::read_candidates;
pub use chain::{EvidenceRecord, GENESIS_SHA256, Via, Wait};
pub use review::{
    CallRecord, CandidateCount, CandidateDetail, CandidateWarning, ChunkContext, Decided,
    DocumentHeading, PendingSummary, Refusal, RefusalReason, ReviewCandidate, ReviewFilter,
};
pub use sweep::{PromoteCursor, PromoteSummary, Sweep};
pub use verify::{ChainHead, ParseChainHeadError, VerifyProblem, VerifyReport};
