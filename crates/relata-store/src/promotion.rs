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

use chrono::{DateTime, SubsecRound, Utc};
use futures::TryStreamExt;
use relata_core::{
    ActorKind, CandidateFacts, CandidateId, Decision, EntityType, EvidenceDecision, Policy,
    PolicyDecision, PromotionState, RelationKind, Reviewer, RowKind, Warning,
};
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::copy_binary::CopyBinary;
use crate::error::{Result, StoreError};
use crate::{Store, parse_label};

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
                        WHERE dr.id = ANY (p.revision_ids) AND d.current_revision_id <> dr.id),
                p.proposed_at, p.decided_at,
                coalesce(relata_candidate_row(p.candidate_kind, p.candidate_id), 'null'::jsonb)
         FROM candidate_decisions p"
    };
}

/// The `prev_sha256` of the first record.
pub const GENESIS_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How a person's decision was made: what the reviewer's name on a record cannot say
/// alone, since `--by` is whatever the person at a shell typed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum Via {
    /// The review page, by the signed-in reviewer (the session's name, never a form's).
    ReviewPage,
    /// `relata review approve|reject`, run as this operating-system user on this host.
    CommandLine { os_user: String, host: String },
}

impl Via {
    /// Every stored value of `evidence.via`.
    pub const LABELS: [&'static str; 2] = ["review_page", "command_line"];

    pub fn as_str(&self) -> &'static str {
        match self {
            Via::ReviewPage => Via::LABELS[0],
            Via::CommandLine { .. } => Via::LABELS[1],
        }
    }

    fn os_user(&self) -> Option<&str> {
        match self {
            Via::ReviewPage => None,
            Via::CommandLine { os_user, .. } => Some(os_user),
        }
    }

    fn host(&self) -> Option<&str> {
        match self {
            Via::ReviewPage => None,
            Via::CommandLine { host, .. } => Some(host),
        }
    }

    /// From the record's three columns (the schema's checks keep them consistent).
    fn from_columns(
        via: Option<String>,
        os_user: Option<String>,
        host: Option<String>,
    ) -> Result<Option<Via>> {
        match (via.as_deref(), os_user, host) {
            (None, None, None) => Ok(None),
            (Some("review_page"), None, None) => Ok(Some(Via::ReviewPage)),
            (Some("command_line"), Some(os_user), Some(host)) => {
                Ok(Some(Via::CommandLine { os_user, host }))
            }
            (via, ..) => Err(StoreError::Invariant(format!(
                "stored value: evidence via {via:?} with an operating-system user and host that do not go with it"
            ))),
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Via::ReviewPage => f.write_str("on the review page"),
            Via::CommandLine { os_user, host } => {
                write!(f, "on the command line as {os_user}@{host}")
            }
        }
    }
}

/// One record of the evidence log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EvidenceRecord {
    pub seq: i64,
    pub candidate: CandidateId,
    /// sha256 of the candidate's canonical content when the decision was made.
    pub candidate_sha256: String,
    /// The model call that proposed the candidate; `None` when it is not on record.
    pub call_id: Option<i64>,
    /// The task version (fingerprint) of the job that proposed it.
    pub task_version: String,
    pub actor_kind: ActorKind,
    /// The policy rule's name or the reviewer's name.
    pub actor: String,
    pub decision: EvidenceDecision,
    pub reasons: Vec<String>,
    pub note: Option<String>,
    pub decided_at: DateTime<Utc>,
    pub prev_sha256: String,
    pub sha256: String,
    /// How a person's decision was made; `None` for the policy's records and for every
    /// record written before relata recorded it.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

impl EvidenceRecord {
    /// The record's own hash: sha256 over a JSON array of every field but `sha256`, in a
    /// fixed order, the time as RFC 3339 UTC with microseconds (what PostgreSQL keeps).
    /// A record with `via` has one element more, `[via, os_user, host]`; one without is
    /// hashed exactly as every record was before `via` existed, so an old log verifies
    /// unchanged (and the two shapes cannot produce the same bytes).
    pub fn compute_sha256(&self) -> String {
        self.sha256_at(&decided_at_text(self.decided_at))
    }

    /// [`EvidenceRecord::compute_sha256`] with `decided_at` already formatted (a batch's
    /// records share one time): the array is written straight into the hash, without a
    /// JSON tree in between — the same bytes `serde_json` writes for that tree.
    fn sha256_at(&self, decided_at: &str) -> String {
        crate::hex_digest(self.digest_at(decided_at))
    }

    /// [`EvidenceRecord::sha256_at`] as the 32 bytes the log stores.
    fn digest_at(&self, decided_at: &str) -> [u8; 32] {
        struct Hashing(Sha256);
        impl std::io::Write for Hashing {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.update(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut hashing = Hashing(Sha256::new());
        macro_rules! fields {
            ($($more:expr),*) => {
                (
                    self.seq,
                    self.candidate.kind.as_str(),
                    self.candidate.id,
                    &self.candidate_sha256,
                    self.call_id,
                    &self.task_version,
                    self.actor_kind.as_str(),
                    &self.actor,
                    self.decision.as_str(),
                    &self.reasons,
                    &self.note,
                    decided_at,
                    &self.prev_sha256,
                    $($more),*
                )
            };
        }
        // Serializing strings, integers and options into memory cannot fail.
        match &self.via {
            None => serde_json::to_writer(&mut hashing, &fields!()),
            Some(via) => serde_json::to_writer(
                &mut hashing,
                &fields!((via.as_str(), via.os_user(), via.host())),
            ),
        }
        .expect("a record serializes");
        hashing.0.finalize().into()
    }
}

/// The time as a record's hash covers it.
fn decided_at_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// What one [`Store::promote_pending`] run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PromoteSummary {
    /// Decisions recorded, by candidate kind and policy decision.
    pub decided: Vec<(RowKind, PolicyDecision, u64)>,
    /// Another promoter held the evidence log; nothing was done (try again later).
    pub busy: bool,
    /// Where the next batch of the same pass goes on from.
    #[serde(skip)]
    pub reached: PromoteCursor,
    /// A kind's read stopped at the limit, so more candidates may wait above `reached`;
    /// when false, every candidate above the batch's cursor that was committed when it
    /// read was judged, by it or before it (bar a row whose document is not on record,
    /// which stays unjudged).
    #[serde(skip)]
    pub more: bool,
    /// Candidates offered to [`Store::promote_committed`] that a sweep had judged first
    /// (skipped: a candidate is judged once).
    #[serde(skip)]
    pub already_judged: u64,
}

/// How far a promotion pass has read, per candidate kind: the highest id it has read,
/// every row up to which was judged (by it or before it) when it was read.
/// Ids are the candidate tables' own (`entities.id`, `claims.id`, `claim_relations.id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromoteCursor {
    entity: i64,
    claim: i64,
    relation: i64,
}

impl PromoteCursor {
    /// Before every candidate: a pass from here reads the whole store.
    pub const START: PromoteCursor = PromoteCursor {
        entity: 0,
        claim: 0,
        relation: 0,
    };

    /// After every candidate: a pass up to here has no ceiling.
    pub const END: PromoteCursor = PromoteCursor {
        entity: i64::MAX,
        claim: i64::MAX,
        relation: i64::MAX,
    };

    pub fn get(&self, kind: RowKind) -> i64 {
        *{ *self }.slot(kind)
    }

    /// This cursor with `kind`'s position set to `id`.
    pub fn with(mut self, kind: RowKind, id: i64) -> PromoteCursor {
        *self.slot(kind) = id;
        self
    }

    fn slot(&mut self, kind: RowKind) -> &mut i64 {
        match kind {
            RowKind::Entity => &mut self.entity,
            RowKind::Claim => &mut self.claim,
            RowKind::Relation => &mut self.relation,
        }
    }

    fn advance(&mut self, kind: RowKind, id: i64) {
        let at = self.slot(kind);
        *at = (*at).max(id);
    }
}

impl PromoteSummary {
    pub fn total(&self) -> u64 {
        self.decided.iter().map(|(_, _, n)| n).sum()
    }

    fn add(&mut self, kind: RowKind, d: PolicyDecision) {
        match self
            .decided
            .iter_mut()
            .find(|(k, dd, _)| *k == kind && *dd == d)
        {
            Some((_, _, n)) => *n += 1,
            None => self.decided.push((kind, d, 1)),
        }
    }
}

/// Which candidates [`Store::review_list`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewFilter {
    pub kind: Option<RowKind>,
    /// Only candidates every document of which has this source.
    pub source: Option<String>,
    /// `Pending` for the review queue; `Proposed` is refused (not yet judged).
    pub state: PromotionState,
    pub limit: i64,
}

impl Default for ReviewFilter {
    fn default() -> Self {
        ReviewFilter {
            kind: None,
            source: None,
            state: PromotionState::Pending,
            limit: 100,
        }
    }
}

/// A candidate as the review queue shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReviewCandidate {
    /// `claim:42`: what approve and reject take.
    pub id: CandidateId,
    pub kind: RowKind,
    pub state: PromotionState,
    /// The policy rule that decided (absent while `proposed`).
    pub rule: Option<String>,
    /// Why it needs review (warnings, relation kind, "no policy rule matched").
    pub reasons: Vec<String>,
    pub sources: Vec<String>,
    /// Its document has a newer revision than the one it was proposed from: it can be
    /// rejected but not approved.
    pub stale: bool,
    pub proposed_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    /// The row itself.
    pub row: serde_json::Value,
}

/// The chunk a claim or entity came from, with a claim's quote located in it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChunkContext {
    pub chunk_id: i64,
    pub text: String,
    /// UTF-8 byte offsets of the claim's quote within `text`.
    pub quote: Option<(usize, usize)>,
}

/// A warning the gate attached to the candidate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CandidateWarning {
    pub warning: Warning,
    pub reason: Option<String>,
    pub detail: String,
}

/// The model call that proposed a candidate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallRecord {
    pub id: i64,
    pub job_id: String,
    pub model: String,
    pub prompt_version: String,
    pub schema_id: String,
    pub schema_version: i32,
    pub schema_sha256: String,
    pub started_at: DateTime<Utc>,
}

/// Everything `relata review show` prints.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CandidateDetail {
    #[serde(flatten)]
    pub candidate: ReviewCandidate,
    pub chunk: Option<ChunkContext>,
    pub warnings: Vec<CandidateWarning>,
    pub call: Option<CallRecord>,
    pub evidence: Vec<EvidenceRecord>,
}

/// Why a reviewer's decision about one candidate was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalReason {
    /// No such candidate.
    NotFound,
    /// The policy has not judged it yet (`relata promote` runs the policy now).
    NotJudged,
    /// It is not pending: already promoted, rejected or denied.
    AlreadyDecided(PromotionState),
    /// Its document changed since it was proposed.
    Stale,
    /// Its content is not what the policy judged (edited behind relata's back).
    Changed,
    /// The log holds it for a person but the review queue has no row for it (the row
    /// was deleted behind relata's back).
    NotQueued,
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefusalReason::NotFound => f.write_str("no such candidate"),
            RefusalReason::NotJudged => {
                f.write_str("not yet judged by the policy (`relata promote` runs it now)")
            }
            RefusalReason::AlreadyDecided(s) => write!(f, "already decided: {s}"),
            RefusalReason::Stale => f.write_str(
                "stale: its document changed since it was proposed (it can be rejected, not approved)",
            ),
            RefusalReason::Changed => f.write_str(
                "its content differs from what the policy judged (run `relata evidence verify`)",
            ),
            RefusalReason::NotQueued => f.write_str(
                "held for review, but its row in the review queue is missing (run `relata evidence verify`)",
            ),
        }
    }
}

/// One refused candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub id: CandidateId,
    pub reason: RefusalReason,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.id, self.reason)
    }
}

/// A decision recorded by [`Store::review_decide`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decided {
    pub id: CandidateId,
    pub state: PromotionState,
    pub evidence_seq: i64,
}

/// What [`Store::evidence_verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Records checked.
    pub records: i64,
    /// The first problem, if any; `None` means the chain, every candidate hash, every
    /// promotion state and every source (revision, chunk, claim quote) match.
    pub problem: Option<VerifyProblem>,
    /// The chain's last record, when everything verified: what an operator keeps
    /// elsewhere to hold the log to later ([`Store::evidence_verify_against`]).
    pub head: Option<ChainHead>,
}

/// A position in the evidence chain: a record's `seq` and its sha256, written
/// `SEQ:SHA256` (`0:000…0` before the first record). Kept outside the database, it
/// catches a rewrite of any record up to it: the chain is unkeyed sha256, so a database
/// user can recompute every hash after an edit, but not make record `SEQ` keep its hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChainHead {
    pub seq: i64,
    /// Lower-case hex.
    pub sha256: String,
}

impl std::fmt::Display for ChainHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.sha256)
    }
}

/// A `SEQ:SHA256` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a chain head: expected SEQ:SHA256, a record number and 64 hex digits (what `relata evidence verify` prints)"
)]
pub struct ParseChainHeadError(String);

impl std::str::FromStr for ChainHead {
    type Err = ParseChainHeadError;

    fn from_str(s: &str) -> std::result::Result<ChainHead, ParseChainHeadError> {
        let bad = || ParseChainHeadError(relata_core::text::cut(s, 200).to_owned());
        let (seq, sha256) = s.trim().split_once(':').ok_or_else(bad)?;
        let seq: i64 = seq.parse().map_err(|_| bad())?;
        if seq < 0 || sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Ok(ChainHead {
            seq,
            sha256: sha256.to_ascii_lowercase(),
        })
    }
}

/// The first place where the log and the store disagree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerifyProblem {
    /// The record at fault (or where the chain breaks), if one can be named.
    pub seq: Option<i64>,
    pub candidate: Option<CandidateId>,
    /// The document revision at fault when the problem is in a source: the document
    /// changed under what was drawn from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<i64>,
    pub what: String,
}

impl VerifyProblem {
    fn at_record(seq: i64, candidate: Option<CandidateId>, what: String) -> VerifyProblem {
        VerifyProblem {
            seq: Some(seq),
            candidate,
            document_id: None,
            revision_id: None,
            chunk_id: None,
            what,
        }
    }

    fn in_source(
        (document_id, revision_id): (i64, i64),
        chunk_id: Option<i64>,
        candidate: Option<CandidateId>,
        what: String,
    ) -> VerifyProblem {
        VerifyProblem {
            seq: None,
            candidate,
            document_id: Some(document_id),
            revision_id: Some(revision_id),
            chunk_id,
            what,
        }
    }
}

impl std::fmt::Display for VerifyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(seq) = self.seq {
            write!(f, "evidence record {seq}")?;
            if let Some(c) = self.candidate {
                write!(f, " ({c})")?;
            }
            write!(f, ": ")?;
        } else {
            let mut at = Vec::new();
            if let (Some(d), Some(r)) = (self.document_id, self.revision_id) {
                at.push(format!("document {d} revision {r}"));
            }
            if let Some(c) = self.chunk_id {
                at.push(format!("chunk {c}"));
            }
            if let Some(c) = self.candidate {
                at.push(c.to_string());
            }
            if !at.is_empty() {
                write!(f, "{}: ", at.join(", "))?;
            }
        }
        f.write_str(&self.what)
    }
}

/// Pending candidates of one kind, for the review-queue gauges.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingSummary {
    pub kind: RowKind,
    pub count: i64,
    pub oldest: Option<DateTime<Utc>>,
}

/// Candidates of one kind in one state, for `relata status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CandidateCount {
    pub kind: RowKind,
    pub state: PromotionState,
    pub count: i64,
}

/// A candidate as the policy judges it: what relata's own code established about a row
/// it committed (never the model's word), the hash of the row's canonical content and its
/// provenance. Only the store builds one: from the rows a commit has just written
/// ([`Committed::candidates`](crate::Committed::candidates), the worker's path) or from
/// the rows a sweep reads back ([`Store::promote_pending`]). Both give the same value for
/// the same row (a test compares them), so a decision never depends on which path judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub(crate) id: CandidateId,
    pub(crate) facts: CandidateFacts,
    pub(crate) call_id: Option<i64>,
    pub(crate) task_version: String,
    pub(crate) revision_ids: Vec<i64>,
    pub(crate) proposed_at: DateTime<Utc>,
    /// sha256 (hex) of the row's canonical content: the database's `relata_*_sha256` over
    /// the stored row, or, for a commit's rows, the same bytes hashed by
    /// [`crate::canonical`] from what the commit sent.
    pub(crate) sha256: String,
}

impl Candidate {
    pub fn id(&self) -> CandidateId {
        self.id
    }
}

// An entity or a claim is one row of one extract call: its own columns, hashed where they
// are read (`relata_entity_sha256(e)`, `relata_claim_sha256(c)`, the per-kind functions
// `relata_candidate_sha256` itself calls), and the facts it shares with the other rows of
// its call — the document's source, the call record (provenance complete, SQL
// `relata_provenance_complete`, one definition for every kind), the job's task version —
// which `CallFacts::read` looks up once per batch for each distinct document, call and
// job instead of joining them to every row (a job writes ten rows and more).
// Each query selects: id, call id, job id, document id, entity type, revision id,
// proposed at (a claim's own time; an entity's is its call's), candidate sha256.
//
// Which rows are not yet judged is found by `unjudged_ids`, not by an anti join here:
// with statistics taken while `promotions` was nearly empty (it grows by thousands of
// rows a second under load, faster than autovacuum analyses it) the planner turned
// `NOT EXISTS` into a join that compared each candidate against every promotion of its
// kind (a 10 s read for 500 rows), and a correlated subquery instead made it probe every
// row above the cursor before sorting. Three plain index look-ups cannot go that way.
const ENTITY_ROWS: &str = "
    SELECT e.id, e.call_id, e.job_id, e.document_id, e.entity_type, e.revision_id,
           NULL::timestamptz, relata_entity_sha256(e)
    FROM entities e
    WHERE e.id = ANY($1)
    ORDER BY e.id";

const CLAIM_ROWS: &str = "
    SELECT c.id, c.call_id, c.job_id, c.document_id, NULL::text, c.revision_id,
           c.created_at, relata_claim_sha256(c)
    FROM claims c
    WHERE c.id = ANY($1)
    ORDER BY c.id";

// A relation comes from two claims (and their documents) and its own call; where it came
// from — its sources, revisions and proposal time — is `relata_candidate_origin`, the one
// definition review listings show too (no row when a claim or document is gone: the
// relation stays unjudged). Selects: id, call id (null when the call is not on record),
// provenance complete, task version, warnings, entity type, relation, sources, revision
// ids, proposed at, candidate sha256.
const UNJUDGED_RELATIONS: &str = "
    SELECT x.id, m.id, relata_provenance_complete(m),
           x.task_version_fingerprint,
           ARRAY(SELECT w.warning FROM warnings w WHERE w.relation_id = x.id ORDER BY w.id),
           NULL::text, x.relation, o.sources, o.revision_ids,
           coalesce(o.proposed_at, now()), relata_relation_sha256(x)
    FROM claim_relations x
    CROSS JOIN LATERAL relata_candidate_origin('relation', x.id) o
    LEFT JOIN model_calls m ON m.id = x.call_id
    WHERE x.id = ANY($1)
    ORDER BY x.id";

/// How a kind's candidate rows are read.
#[derive(Clone, Copy)]
enum RowsOf {
    /// One row of one extract call: its rows, and its warnings for a range of its ids.
    Call {
        rows: &'static str,
        warnings: &'static str,
    },
    Relation(&'static str),
}

/// Per candidate kind: the next ids above a cursor and at most a ceiling, in order; then
/// the rows of given ids.
const CANDIDATE_READS: [(RowKind, &str, RowsOf); 3] = [
    (
        RowKind::Entity,
        "SELECT id FROM entities WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Call {
            rows: ENTITY_ROWS,
            warnings: "SELECT entity_id, warning FROM warnings
                       WHERE entity_id >= $1 AND entity_id <= $2 ORDER BY entity_id, id",
        },
    ),
    (
        RowKind::Claim,
        "SELECT id FROM claims WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Call {
            rows: CLAIM_ROWS,
            warnings: "SELECT claim_id, warning FROM warnings
                       WHERE claim_id >= $1 AND claim_id <= $2 ORDER BY claim_id, id",
        },
    ),
    (
        RowKind::Relation,
        "SELECT id FROM claim_relations WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Relation(UNJUDGED_RELATIONS),
    ),
];

/// An entity or claim as read, before the facts of its call are joined to it.
struct CallRow {
    id: CandidateId,
    call_id: i64,
    job_id: String,
    document_id: i64,
    entity_type: Option<String>,
    revision_id: i64,
    proposed_at: Option<DateTime<Utc>>,
    sha256: Option<String>,
    warnings: Vec<String>,
}

/// Read the entity or claim rows of `ids` (ascending) and their warnings: the warnings
/// of the whole id range in one scan of the kind's partial index, where a subquery per
/// row descended it once per row.
async fn call_rows(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    rows: &'static str,
    warnings: &'static str,
    ids: &[i64],
) -> Result<Vec<CallRow>> {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Ok(Vec::new());
    };
    let mut by_id: std::collections::HashMap<i64, Vec<String>> = std::collections::HashMap::new();
    for r in sqlx::query(warnings)
        .bind(first)
        .bind(last)
        .fetch_all(&mut *tx)
        .await?
    {
        by_id.entry(r.try_get(0)?).or_default().push(r.try_get(1)?);
    }
    let read = sqlx::query(rows).bind(ids).fetch_all(&mut *tx).await?;
    read.iter()
        .map(|r| {
            let id: i64 = r.try_get(0)?;
            Ok(CallRow {
                id: CandidateId { kind, id },
                call_id: r.try_get(1)?,
                job_id: r.try_get(2)?,
                document_id: r.try_get(3)?,
                entity_type: r.try_get(4)?,
                revision_id: r.try_get(5)?,
                proposed_at: r.try_get(6)?,
                sha256: r.try_get(7)?,
                warnings: by_id.remove(&id).unwrap_or_default(),
            })
        })
        .collect()
}

/// What a batch's entity and claim rows share with the other rows of their call, read
/// once per distinct document, call and job.
struct CallFacts {
    sources: std::collections::HashMap<i64, String>,
    /// Per call on record: provenance complete, finished at.
    calls: std::collections::HashMap<i64, (bool, DateTime<Utc>)>,
    task_versions: std::collections::HashMap<String, String>,
    /// The transaction's `now()`: an entity's proposal time when its call is not on
    /// record, as the joined read gave it.
    now: DateTime<Utc>,
}

impl CallFacts {
    async fn read(tx: &mut sqlx::PgConnection, rows: &[CallRow]) -> Result<CallFacts> {
        fn distinct<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
            let set: std::collections::BTreeSet<T> = items.collect();
            set.into_iter().collect()
        }
        let documents = distinct(rows.iter().map(|r| r.document_id));
        let calls = distinct(rows.iter().map(|r| r.call_id));
        let jobs = distinct(rows.iter().map(|r| r.job_id.clone()));
        let sources = sqlx::query_as::<_, (i64, String)>(
            "SELECT id, source FROM documents WHERE id = ANY($1)",
        )
        .bind(&documents)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        let calls = sqlx::query_as::<_, (i64, bool, DateTime<Utc>)>(
            "SELECT m.id, relata_provenance_complete(m), m.finished_at
             FROM model_calls m WHERE m.id = ANY($1)",
        )
        .bind(&calls)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id, complete, finished)| (id, (complete, finished)))
        .collect();
        let task_versions = sqlx::query_as::<_, (String, String)>(
            "SELECT job_id, task_version_fingerprint FROM jobs WHERE job_id = ANY($1)",
        )
        .bind(&jobs)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        let now = sqlx::query_scalar("SELECT now()")
            .fetch_one(&mut *tx)
            .await?;
        Ok(CallFacts {
            sources,
            calls,
            task_versions,
            now,
        })
    }

    /// The row with its call's facts; `None` when its document is not on record (the
    /// joined read left such a row out: it stays unjudged, so unpromoted).
    fn join(&self, row: CallRow) -> Result<Option<Candidate>> {
        let Some(source) = self.sources.get(&row.document_id) else {
            return Ok(None);
        };
        let call = self.calls.get(&row.call_id);
        let kind = row.id.kind;
        let sha256 = hashed(row.id, row.sha256)?;
        Ok(Some(Candidate {
            id: row.id,
            facts: CandidateFacts {
                kind,
                warnings: row
                    .warnings
                    .into_iter()
                    .map(parse_label::<Warning>)
                    .collect::<Result<_>>()?,
                entity_type: row.entity_type.map(parse_label::<EntityType>).transpose()?,
                relation: None,
                sources: vec![source.clone()],
                has_provenance: call.is_some_and(|(complete, _)| *complete),
            },
            call_id: call.map(|_| row.call_id),
            task_version: self
                .task_versions
                .get(&row.job_id)
                .cloned()
                .unwrap_or_default(),
            revision_ids: vec![row.revision_id],
            proposed_at: row
                .proposed_at
                .unwrap_or_else(|| call.map_or(self.now, |(_, finished)| *finished)),
            sha256,
        }))
    }
}

/// Up to `limit` ids of `kind` above `after` and at most `upto` that have no decision (no
/// evidence record) yet, in order, and how far the read got: the last id returned when
/// the limit was reached, else the last id that exists (every row up to it was judged
/// when read).
async fn unjudged_ids(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    ids_above: &'static str,
    (after, upto): (i64, i64),
    limit: i64,
) -> Result<(Vec<i64>, i64)> {
    let window = limit.max(1);
    let mut todo = Vec::new();
    let mut reached = after;
    loop {
        let ids: Vec<i64> = sqlx::query_scalar(ids_above)
            .bind(reached)
            .bind(window)
            .bind(upto)
            .fetch_all(&mut *tx)
            .await?;
        let Some(&last) = ids.last() else {
            return Ok((todo, reached));
        };
        // The window is every id in (reached, last].
        let judged: std::collections::HashSet<i64> = decided_between(tx, kind, reached, last)
            .await?
            .into_iter()
            .collect();
        for id in ids {
            if !judged.contains(&id) {
                todo.push(id);
                if i64::try_from(todo.len()).unwrap_or(i64::MAX) >= limit {
                    return Ok((todo, id));
                }
            }
        }
        reached = last;
    }
}

/// A hash read with its row: the per-row functions hash whatever row they are given, so
/// a null means the read itself is wrong.
fn hashed(id: CandidateId, sha256: Option<String>) -> Result<String> {
    sha256.ok_or_else(|| StoreError::Invariant(format!("candidate {id} was read without its hash")))
}

/// A relation as [`UNJUDGED_RELATIONS`] reads it.
fn relation_candidate(r: &PgRow) -> Result<Candidate> {
    let warnings: Vec<String> = r.try_get(4)?;
    let entity_type: Option<String> = r.try_get(5)?;
    let relation: Option<String> = r.try_get(6)?;
    let call_id: Option<i64> = r.try_get(1)?;
    let has_provenance: Option<bool> = r.try_get(2)?;
    let kind = RowKind::Relation;
    let id = CandidateId {
        kind,
        id: r.try_get(0)?,
    };
    Ok(Candidate {
        id,
        facts: CandidateFacts {
            kind,
            warnings: warnings
                .into_iter()
                .map(parse_label::<Warning>)
                .collect::<Result<_>>()?,
            entity_type: entity_type.map(parse_label::<EntityType>).transpose()?,
            relation: relation.map(parse_label::<RelationKind>).transpose()?,
            sources: r.try_get(7)?,
            has_provenance: has_provenance.unwrap_or(false),
        },
        call_id,
        task_version: r.try_get(3)?,
        revision_ids: r.try_get(8)?,
        proposed_at: r.try_get(9)?,
        sha256: hashed(id, r.try_get(10)?)?,
    })
}

/// Where the chain ends.
struct Head {
    seq: i64,
    sha256: String,
}

/// Appends evidence records to the chain inside one transaction.
struct Chain {
    head: Head,
    now: DateTime<Utc>,
    /// `now` as each record's hash covers it, formatted once.
    now_text: String,
    records: Vec<EvidenceRecord>,
    /// The chain's end as the log stores it (32 bytes) before the first record, then
    /// each record's own hash as bytes: what `write` sends, without decoding the hex
    /// back.
    digests: Vec<[u8; 32]>,
}

impl Chain {
    /// The `seq` the next [`Chain::append`] gives its record.
    fn next_seq(&self) -> i64 {
        self.head.seq + 1
    }

    fn new(head: Head) -> Result<Chain> {
        // PostgreSQL keeps microseconds; the hash must be over what is stored.
        let now = Utc::now().trunc_subsecs(6);
        let start = hash_bytes(&head.sha256)?;
        Ok(Chain {
            head,
            now,
            now_text: decided_at_text(now),
            records: Vec::new(),
            digests: vec![start],
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        candidate: CandidateId,
        candidate_sha256: String,
        call_id: Option<i64>,
        task_version: String,
        actor_kind: ActorKind,
        actor: String,
        decision: EvidenceDecision,
        reasons: Vec<String>,
        note: Option<String>,
        via: Option<Via>,
    ) -> i64 {
        let mut record = EvidenceRecord {
            seq: self.next_seq(),
            candidate,
            candidate_sha256,
            call_id,
            task_version,
            actor_kind,
            actor,
            decision,
            reasons,
            note,
            decided_at: self.now,
            prev_sha256: self.head.sha256.clone(),
            sha256: String::new(),
            via,
        };
        let digest = record.digest_at(&self.now_text);
        record.sha256 = crate::hex_digest(digest);
        self.digests.push(digest);
        self.head = Head {
            seq: record.seq,
            sha256: record.sha256.clone(),
        };
        self.records.push(record);
        self.head.seq
    }

    async fn write(self, tx: &mut sqlx::PgConnection) -> Result<()> {
        if self.records.is_empty() {
            return Ok(());
        }
        let mut rows = CopyBinary::new(17, self.records.len() * 300);
        for (r, link) in self.records.iter().zip(self.digests.windows(2)) {
            rows.int(r.seq)
                .text(r.candidate.kind.as_str())
                .int(r.candidate.id)
                .bytea(&hash_bytes(&r.candidate_sha256)?)
                .opt_int(r.call_id)
                .text(&r.task_version)
                .text(r.actor_kind.as_str())
                .text(&r.actor)
                .text(r.decision.as_str())
                .array(&r.reasons)
                .opt_text(r.note.as_deref())
                .timestamptz(r.decided_at)
                .bytea(&link[0])
                .bytea(&link[1])
                .opt_text(r.via.as_ref().map(Via::as_str))
                .opt_text(r.via.as_ref().and_then(Via::os_user))
                .opt_text(r.via.as_ref().and_then(Via::host))
                .end_row()?;
        }
        let first = self.records[0].seq;
        rows.copy_into(
            &mut *tx,
            "COPY evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
                 task_version, actor_kind, actor, decision, reasons, note, decided_at,
                 prev_sha256, sha256, via, via_os_user, via_host) FROM STDIN (FORMAT binary)",
        )
        .await
        .map_err(|e| taken_seq(e, first))?;
        sqlx::query("UPDATE evidence_head SET seq = $1, sha256 = $2")
            .bind(self.head.seq)
            .bind(self.digests.last().map(<[u8; 32]>::as_slice))
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}

/// A candidate's sources or revisions: one for an entity or claim, up to two for a
/// relation; anything else is a bug upstream, refused before it is recorded.
fn one_or_two<T>(id: CandidateId, items: &[T]) -> Result<&[T]> {
    if matches!(items.len(), 1 | 2) {
        Ok(items)
    } else {
        Err(StoreError::Invariant(format!(
            "candidate {id} has {} sources or revisions; one or two expected",
            items.len()
        )))
    }
}

/// A hash as the log stores it (32 bytes); relata computes and shows it as hex.
fn hash_bytes(hex_sha256: &str) -> Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(hex_sha256, &mut bytes)
        .map_err(|_| StoreError::Invariant(format!("{hex_sha256:?} is not a sha256 in hex")))?;
    Ok(bytes)
}

/// A record's `seq` already taken when a batch is appended: a row written past the head
/// after [`check_tail`] looked (nothing stops a plain `INSERT` from waiting for the head's
/// lock). Said as what it is, not as the key conflict; any other error is passed on.
fn taken_seq(e: StoreError, first: i64) -> StoreError {
    let StoreError::Database(sqlx::Error::Database(db)) = &e else {
        return e;
    };
    if db.code().as_deref() != Some("23505") || db.constraint() != Some("evidence_pkey") {
        return e;
    }
    // PostgreSQL's detail reads `Key (seq)=(4) already exists.`
    let seq = db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .and_then(|pg| pg.detail())
        .and_then(|d| d.split_once("=("))
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(first);
    StoreError::ChainBroken {
        seq,
        what: format!(
            "evidence record {seq} is already in the log, past the chain's head (record {}): it was written behind relata's back",
            first - 1
        ),
    }
}

/// Refuse to append to a chain whose end is not what its head says: the head's record
/// must be the log's last, and unaltered. A record written past the head (a plain
/// `INSERT` is all it takes; the triggers refuse only updates and deletes) would make
/// the next append collide with it on its `seq`, and one altered at the end would have
/// the next record vouch for the forgery by linking to it. One probe of the primary key
/// for at most two rows and one record's hash, per append transaction.
async fn check_tail(tx: &mut sqlx::PgConnection, head: &Head) -> Result<()> {
    let rows = sqlx::query(concat!(
        evidence_select!(),
        " WHERE seq >= $1 ORDER BY seq LIMIT 2"
    ))
    .bind(head.seq.max(1))
    .fetch_all(&mut *tx)
    .await?;
    let mut records = rows.iter().map(evidence_record);
    let broken = |seq: i64, what: String| Err(StoreError::ChainBroken { seq, what });
    if head.seq == 0 {
        if head.sha256 != GENESIS_SHA256 {
            return broken(
                0,
                "the chain's head says the log is empty, but its hash is not the chain's start: the head was altered".into(),
            );
        }
        if let Some(r) = records.next().transpose()? {
            return broken(
                r.seq,
                format!(
                    "evidence record {} is in the log, but the chain's head says the log is empty: it was written behind relata's back",
                    r.seq
                ),
            );
        }
        return Ok(());
    }
    match records.next().transpose()? {
        Some(r) if r.seq == head.seq => {
            if r.sha256 != head.sha256 {
                return broken(
                    r.seq,
                    format!(
                        "evidence record {}, the chain's head, does not have the hash the head holds: the record or the head was altered",
                        r.seq
                    ),
                );
            }
            if r.compute_sha256() != r.sha256 {
                return broken(
                    r.seq,
                    format!(
                        "evidence record {}, the chain's head, does not match its own sha256: it was altered",
                        r.seq
                    ),
                );
            }
        }
        _ => {
            return broken(
                head.seq,
                format!(
                    "evidence record {}, which the chain's head names, is not in the log",
                    head.seq
                ),
            );
        }
    }
    if let Some(r) = records.next().transpose()? {
        return broken(
            r.seq,
            format!(
                "evidence record {} is in the log, past the chain's head (record {}): it was written behind relata's back",
                r.seq, head.seq
            ),
        );
    }
    Ok(())
}

/// Begin an append: a transaction that holds the chain's end, checked to be where the
/// log ends ([`check_tail`]); no head when `wait` is false and another append holds it.
/// A log that fails the check is refused with the transaction rolled back at once: a
/// dropped transaction would keep the head's lock until its connection's return to the
/// pool flushed the rollback, and appends meanwhile would wait (or a sweep skip its turn).
async fn begin_append(
    pool: &sqlx::PgPool,
    wait: bool,
) -> Result<(sqlx::Transaction<'static, sqlx::Postgres>, Option<Head>)> {
    let mut tx = pool.begin().await?;
    let head = lock_head(&mut tx, wait).await?;
    if let Some(h) = &head
        && let Err(e) = check_tail(&mut tx, h).await
    {
        // The refusal is what matters; a failed rollback is the connection's end.
        let _ = tx.rollback().await;
        return Err(e);
    }
    Ok((tx, head))
}

async fn lock_head(tx: &mut sqlx::PgConnection, wait: bool) -> Result<Option<Head>> {
    let row = if wait {
        sqlx::query("SELECT seq, encode(sha256, 'hex') FROM evidence_head FOR UPDATE")
            .fetch_optional(&mut *tx)
            .await?
    } else {
        sqlx::query("SELECT seq, encode(sha256, 'hex') FROM evidence_head FOR UPDATE SKIP LOCKED")
            .fetch_optional(&mut *tx)
            .await?
    };
    row.map(|r| {
        Ok(Head {
            seq: r.try_get(0)?,
            sha256: r.try_get(1)?,
        })
    })
    .transpose()
}

/// Read the candidates of `ids` (ascending, all of `kind`) as a sweep judges them.
/// A row whose document is not on record is left out: it stays unjudged, so unpromoted.
pub(crate) async fn read_candidates(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    ids: &[i64],
) -> Result<Vec<Candidate>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let (_, _, rows_of) = CANDIDATE_READS
        .into_iter()
        .find(|(k, _, _)| *k == kind)
        .ok_or_else(|| StoreError::Invariant(format!("no read for {kind}")))?;
    match rows_of {
        RowsOf::Call { rows, warnings } => {
            let read = call_rows(tx, kind, rows, warnings, ids).await?;
            let facts = CallFacts::read(tx, &read).await?;
            let mut out = Vec::with_capacity(read.len());
            for row in read {
                out.extend(facts.join(row)?);
            }
            Ok(out)
        }
        RowsOf::Relation(rows) => sqlx::query(rows)
            .bind(ids)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(relation_candidate)
            .collect(),
    }
}

/// Which of `candidates` already have a decision: one range scan per kind present (a
/// batch's ids of one kind lie close together), not a probe per candidate.
async fn judged_among(
    tx: &mut sqlx::PgConnection,
    candidates: &[Candidate],
) -> Result<std::collections::HashSet<CandidateId>> {
    let mut judged = std::collections::HashSet::new();
    for &kind in RowKind::ALL {
        let ids = candidates
            .iter()
            .filter(|c| c.id.kind == kind)
            .map(|c| c.id.id);
        let (Some(lo), Some(hi)) = (ids.clone().min(), ids.max()) else {
            continue;
        };
        let found = decided_between(tx, kind, lo.saturating_sub(1), hi).await?;
        judged.extend(found.into_iter().map(|id| CandidateId { kind, id }));
    }
    Ok(judged)
}

/// The ids of `kind` in `(after, upto]` that have a decision (an evidence record; one id
/// per record, so a reviewed one comes twice): one range scan of the log's candidate
/// index, where `= ANY` over the ids descended it once per id.
async fn decided_between(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    after: i64,
    upto: i64,
) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT candidate_id FROM evidence
         WHERE candidate_kind = $1 AND candidate_id > $2 AND candidate_id <= $3",
    )
    .bind(kind.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(&mut *tx)
    .await?)
}

/// Evaluate the policy on each candidate and record every verdict: one evidence record
/// appended to the chain (whose end `head` this transaction has locked), and for a
/// candidate held for a person a row in the review queue (`promotions`); each kind of
/// write one statement for the whole batch. An allowed or denied candidate's state is its
/// record (`relata_candidate_state`): a second row would only repeat it.
async fn record_verdicts(
    tx: &mut sqlx::PgConnection,
    head: Head,
    policy: &Policy,
    todo: Vec<Candidate>,
    summary: &mut PromoteSummary,
) -> Result<()> {
    if todo.is_empty() {
        return Ok(());
    }
    let mut chain = Chain::new(head)?;
    let decided_at = chain.now;
    // Only held candidates get a queue row; a batch that holds none sends no `COPY` at
    // all (`copy_into` skips an empty one).
    let mut queue = CopyBinary::new(11, 0);
    for c in todo {
        let verdict = policy.evaluate(&c.facts);
        if verdict.decision == PolicyDecision::Review {
            queue
                .text(c.id.kind.as_str())
                .int(c.id.id)
                .text(PromotionState::after_policy(verdict.decision).as_str())
                .text(verdict.decision.as_str())
                .text(&verdict.rule)
                .array(&verdict.reasons)
                .array(one_or_two(c.id, &c.facts.sources)?)
                .array(one_or_two(c.id, &c.revision_ids)?)
                .int(chain.next_seq())
                .timestamptz(c.proposed_at)
                .timestamptz(decided_at)
                .end_row()?;
        }
        summary.add(c.id.kind, verdict.decision);
        chain.append(
            c.id,
            c.sha256,
            c.call_id,
            c.task_version,
            ActorKind::Policy,
            verdict.rule,
            verdict.decision.into(),
            verdict.reasons,
            None,
            None,
        );
    }
    chain.write(&mut *tx).await?;
    queue
        .copy_into(
            &mut *tx,
            "COPY promotions (candidate_kind, candidate_id, state, policy_decision, rule,
                 reasons, sources, revision_ids, evidence_seq, proposed_at, decided_at)
             FROM STDIN (FORMAT binary)",
        )
        .await?;
    Ok(())
}

impl Store {
    /// Judge up to `limit` candidates of each kind that have no decision yet, and record
    /// each verdict with its evidence in one transaction. With `wait == false` a run that
    /// finds another promoter appending returns at once with `busy` set (a worker's
    /// promoter tries again on its next tick); with `true` it waits its turn.
    pub async fn promote_pending(
        &self,
        policy: &Policy,
        limit: i64,
        wait: bool,
    ) -> Result<PromoteSummary> {
        self.promote_pending_after(policy, limit, wait, PromoteCursor::START)
            .await
    }

    /// [`Store::promote_pending`] over the candidates above `after` only: a pass that
    /// goes on from the batch before it passes `summary.reached`, so that each batch
    /// reads only new rows instead of walking past every candidate already judged (that
    /// walk grows with the store and made a pass quadratic). A candidate committed
    /// below the cursor after the pass went by is not lost: it stays unjudged, so
    /// unpromoted, until a pass from [`PromoteCursor::START`] finds it.
    pub async fn promote_pending_after(
        &self,
        policy: &Policy,
        limit: i64,
        wait: bool,
        after: PromoteCursor,
    ) -> Result<PromoteSummary> {
        self.promote_pending_between(policy, limit, wait, after, PromoteCursor::END)
            .await
    }

    /// [`Store::promote_pending_after`] over the candidates at most `upto` only: a
    /// worker's sweep leaves the rows committed since its last tick to the workers that
    /// committed them, which judge them from what the commit returned
    /// ([`Store::promote_committed`]) instead of reading them back.
    pub async fn promote_pending_between(
        &self,
        policy: &Policy,
        limit: i64,
        wait: bool,
        after: PromoteCursor,
        upto: PromoteCursor,
    ) -> Result<PromoteSummary> {
        let (mut tx, head) = begin_append(&self.pool, wait).await?;
        let Some(head) = head else {
            return Ok(PromoteSummary {
                busy: true,
                reached: after,
                more: true,
                ..PromoteSummary::default()
            });
        };
        let mut todo = Vec::new();
        let mut reached = after;
        let mut more = false;
        for (kind, ids_above, _) in CANDIDATE_READS {
            let (ids, read_to) = unjudged_ids(
                &mut tx,
                kind,
                ids_above,
                (after.get(kind), upto.get(kind)),
                limit,
            )
            .await?;
            reached.advance(kind, read_to);
            more |= i64::try_from(ids.len()).unwrap_or(i64::MAX) >= limit;
            todo.extend(read_candidates(&mut tx, kind, &ids).await?);
        }
        let mut summary = PromoteSummary {
            reached,
            more,
            ..PromoteSummary::default()
        };
        record_verdicts(&mut tx, head, policy, todo, &mut summary).await?;
        tx.commit().await?;
        Ok(summary)
    }

    /// Judge candidates a commit has just written, from what the commit returned
    /// ([`Committed::candidates`](crate::Committed::candidates)): nothing is read back
    /// but which of them a sweep has judged meanwhile (those are skipped and counted in
    /// `already_judged`). One transaction; it waits its turn for the chain's end, which
    /// only promoters and reviewers hold, never a commit.
    pub async fn promote_committed(
        &self,
        policy: &Policy,
        candidates: Vec<Candidate>,
    ) -> Result<PromoteSummary> {
        let mut summary = PromoteSummary::default();
        if candidates.is_empty() {
            return Ok(summary);
        }
        let (mut tx, head) = begin_append(&self.pool, true).await?;
        let head = head.ok_or_else(|| StoreError::Invariant("evidence_head has no row".into()))?;
        let judged = judged_among(&mut tx, &candidates).await?;
        let offered = candidates.len();
        let todo: Vec<Candidate> = candidates
            .into_iter()
            .filter(|c| !judged.contains(&c.id))
            .collect();
        summary.already_judged = (offered - todo.len()) as u64;
        record_verdicts(&mut tx, head, policy, todo, &mut summary).await?;
        tx.commit().await?;
        Ok(summary)
    }

    /// The highest id of each candidate kind now: where a sweep that must leave later
    /// commits alone stops ([`Store::promote_pending_between`]).
    pub async fn candidate_high_water(&self) -> Result<PromoteCursor> {
        let (entity, claim, relation): (Option<i64>, Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT (SELECT max(id) FROM entities), (SELECT max(id) FROM claims),
                    (SELECT max(id) FROM claim_relations)",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(PromoteCursor {
            entity: entity.unwrap_or(0),
            claim: claim.unwrap_or(0),
            relation: relation.unwrap_or(0),
        })
    }
    /// Candidates in one state (the review queue by default), oldest first.
    pub async fn review_list(&self, filter: &ReviewFilter) -> Result<Vec<ReviewCandidate>> {
        if filter.state == PromotionState::Proposed {
            return Err(StoreError::InvalidInput(
                "candidates not yet judged by the policy have no review state; run `relata promote`"
                    .into(),
            ));
        }
        let rows = sqlx::query(concat!(
            candidate_select!(),
            " WHERE p.state = $1
                AND ($2::text IS NULL OR p.candidate_kind = $2)
                AND ($3::text IS NULL OR p.sources = ARRAY[$3::text])
              ORDER BY p.proposed_at, p.candidate_kind, p.candidate_id
              LIMIT $4"
        ))
        .bind(filter.state.as_str())
        .bind(filter.kind.map(RowKind::as_str))
        .bind(filter.source.as_deref())
        .bind(filter.limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(review_candidate).collect()
    }

    /// One candidate with its chunk, warnings, model call and evidence; `None` when it
    /// does not exist. Also for candidates not yet judged (`proposed`).
    pub async fn review_show(&self, id: CandidateId) -> Result<Option<CandidateDetail>> {
        let row: Option<serde_json::Value> =
            sqlx::query_scalar("SELECT relata_candidate_row($1, $2)")
                .bind(id.kind.as_str())
                .bind(id.id)
                .fetch_one(&self.pool)
                .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let judged = sqlx::query(concat!(
            candidate_select!(),
            " WHERE p.candidate_kind = $1 AND p.candidate_id = $2"
        ))
        .bind(id.kind.as_str())
        .bind(id.id)
        .fetch_optional(&self.pool)
        .await?;
        let candidate = match judged {
            Some(r) => review_candidate(&r)?,
            None => ReviewCandidate {
                id,
                kind: id.kind,
                state: PromotionState::Proposed,
                rule: None,
                reasons: Vec::new(),
                sources: Vec::new(),
                stale: false,
                proposed_at: None,
                decided_at: None,
                row: row.clone(),
            },
        };
        let field = |k: &str| row.get(k).and_then(serde_json::Value::as_i64);
        let chunk = match (id.kind, field("chunk_id")) {
            (RowKind::Relation, _) | (_, None) => None,
            (_, Some(chunk_id)) => {
                let r = sqlx::query("SELECT text, start_byte FROM chunks WHERE id = $1")
                    .bind(chunk_id)
                    .fetch_one(&self.pool)
                    .await?;
                let text: String = r.try_get(0)?;
                let start: i32 = r.try_get(1)?;
                let quote = match (field("quote_start"), field("quote_end")) {
                    (Some(qs), Some(qe)) => {
                        let s = usize::try_from(qs - i64::from(start)).ok();
                        let e = usize::try_from(qe - i64::from(start)).ok();
                        s.zip(e).filter(|(s, e)| {
                            s < e
                                && *e <= text.len()
                                && text.is_char_boundary(*s)
                                && text.is_char_boundary(*e)
                        })
                    }
                    _ => None,
                };
                Some(ChunkContext {
                    chunk_id,
                    text,
                    quote,
                })
            }
        };
        let column = match id.kind {
            RowKind::Entity => "entity_id",
            RowKind::Claim => "claim_id",
            RowKind::Relation => "relation_id",
        };
        let warnings = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT warning, reason, detail FROM warnings WHERE {column} = $1 ORDER BY id"
        )))
        .bind(id.id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(CandidateWarning {
                warning: parse_label(r.try_get(0)?)?,
                reason: r.try_get(1)?,
                detail: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let call = match field("call_id") {
            None => None,
            Some(call_id) => sqlx::query(
                "SELECT id, job_id, model, prompt_version, schema_id, schema_version,
                        schema_sha256, started_at
                 FROM model_calls WHERE id = $1",
            )
            .bind(call_id)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| {
                Ok::<_, StoreError>(CallRecord {
                    id: r.try_get(0)?,
                    job_id: r.try_get(1)?,
                    model: r.try_get(2)?,
                    prompt_version: r.try_get(3)?,
                    schema_id: r.try_get(4)?,
                    schema_version: r.try_get(5)?,
                    schema_sha256: r.try_get(6)?,
                    started_at: r.try_get(7)?,
                })
            })
            .transpose()?,
        };
        let evidence = self.evidence_history(Some(id), i64::MAX).await?;
        Ok(Some(CandidateDetail {
            candidate,
            chunk,
            warnings,
            call,
            evidence,
        }))
    }

    /// Record a reviewer's decision about pending candidates: all of them or none. Each
    /// must be pending, unchanged since the policy judged it (its canonical content hashes
    /// as the evidence says) and — to be approved — not stale (its document has no newer
    /// revision). A rejection needs a note. Refusals come back as
    /// [`StoreError::ReviewRefused`], naming every refused candidate.
    ///
    /// `via` says how the decision was made, and goes on each record (and into its hash).
    /// A log that does not end where its head says refuses every decision with
    /// [`StoreError::ChainBroken`], naming the record.
    pub async fn review_decide(
        &self,
        ids: &[CandidateId],
        decision: Decision,
        reviewer: &Reviewer,
        note: Option<&str>,
        via: &Via,
    ) -> Result<Vec<Decided>> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if decision == Decision::Reject && note.is_none() {
            return Err(StoreError::InvalidInput(
                "a rejection needs a note saying why (--note)".into(),
            ));
        }
        if ids.is_empty() {
            return Err(StoreError::InvalidInput("no candidate named".into()));
        }
        let mut unique = ids.to_vec();
        unique.sort();
        unique.dedup();
        let (mut tx, head) = begin_append(&self.pool, true).await?;
        let head = head.ok_or_else(|| StoreError::Invariant("evidence_head has no row".into()))?;
        let mut refusals = Vec::new();
        let mut ok = Vec::new();
        for id in &unique {
            let r = sqlx::query(
                "SELECT p.state, relata_candidate_sha256(p.candidate_kind, p.candidate_id),
                        encode(e.candidate_sha256, 'hex'), e.call_id, e.task_version,
                        EXISTS (SELECT 1 FROM document_revisions dr
                                JOIN documents d ON d.id = dr.document_id
                                WHERE dr.id = ANY (p.revision_ids)
                                  AND d.current_revision_id <> dr.id)
                 FROM promotions p JOIN evidence e ON e.seq = p.evidence_seq
                 WHERE p.candidate_kind = $1 AND p.candidate_id = $2
                 FOR UPDATE OF p",
            )
            .bind(id.kind.as_str())
            .bind(id.id)
            .fetch_optional(&mut *tx)
            .await?;
            let refuse = |reason| Refusal { id: *id, reason };
            let Some(r) = r else {
                // Not in the review queue: the policy allowed or denied it (its record
                // says which), has not judged it, or it does not exist.
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT relata_candidate_state($1, $2)
                     WHERE relata_candidate_sha256($1, $2) IS NOT NULL",
                )
                .bind(id.kind.as_str())
                .bind(id.id)
                .fetch_optional(&mut *tx)
                .await?;
                refusals.push(refuse(match state.map(parse_label).transpose()? {
                    None => RefusalReason::NotFound,
                    Some(PromotionState::Proposed) => RefusalReason::NotJudged,
                    Some(PromotionState::Pending) => RefusalReason::NotQueued,
                    Some(decided) => RefusalReason::AlreadyDecided(decided),
                }));
                continue;
            };
            let state: PromotionState = parse_label(r.try_get(0)?)?;
            let now_sha: Option<String> = r.try_get(1)?;
            let judged_sha: String = r.try_get(2)?;
            let stale: bool = r.try_get(5)?;
            if state != PromotionState::Pending {
                refusals.push(refuse(RefusalReason::AlreadyDecided(state)));
            } else if now_sha.as_deref() != Some(judged_sha.as_str()) {
                refusals.push(refuse(RefusalReason::Changed));
            } else if stale && decision == Decision::Approve {
                refusals.push(refuse(RefusalReason::Stale));
            } else {
                ok.push((
                    *id,
                    judged_sha,
                    r.try_get::<Option<i64>, _>(3)?,
                    r.try_get::<String, _>(4)?,
                ));
            }
        }
        if !refusals.is_empty() {
            return Err(StoreError::ReviewRefused(refusals));
        }
        let mut chain = Chain::new(head)?;
        let state = PromotionState::after_review(decision);
        let mut decided = Vec::with_capacity(ok.len());
        for (id, sha, call_id, task_version) in ok {
            let seq = chain.append(
                id,
                sha,
                call_id,
                task_version,
                ActorKind::Reviewer,
                reviewer.name().to_owned(),
                decision.into(),
                Vec::new(),
                note.map(str::to_owned),
                Some(via.clone()),
            );
            decided.push(Decided {
                id,
                state,
                evidence_seq: seq,
            });
        }
        let at = chain.now;
        chain.write(&mut tx).await?;
        for d in &decided {
            sqlx::query(
                "UPDATE promotions SET state = $3, evidence_seq = $4, decided_at = $5
                 WHERE candidate_kind = $1 AND candidate_id = $2",
            )
            .bind(d.id.kind.as_str())
            .bind(d.id.id)
            .bind(d.state.as_str())
            .bind(d.evidence_seq)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(decided)
    }

    /// The last `limit` evidence records (of one candidate, or all), in chain order.
    pub async fn evidence_history(
        &self,
        candidate: Option<CandidateId>,
        limit: i64,
    ) -> Result<Vec<EvidenceRecord>> {
        let rows = sqlx::query(concat!(
            "SELECT * FROM (",
            evidence_select!(),
            " WHERE ($1::text IS NULL OR (candidate_kind = $1 AND candidate_id = $2))
              ORDER BY seq DESC LIMIT $3) t ORDER BY seq"
        ))
        .bind(candidate.map(|c| c.kind.as_str()))
        .bind(candidate.map(|c| c.id))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(evidence_record).collect()
    }

    /// Recompute the chain (every record's hash and link), every candidate's hash and
    /// every promotion state against its record, then check every source against its
    /// hashes and offsets ([`sources_problem`]); stop at the first disagreement.
    pub async fn evidence_verify(&self) -> Result<VerifyReport> {
        self.evidence_verify_against(None).await
    }

    /// [`Store::evidence_verify`], and hold the log to a head kept earlier: the record at
    /// `expect.seq` must still be in the log with that sha256. A chain that verifies on
    /// its own may still have been rewritten (every hash recomputed after an edit); only
    /// a hash kept outside the database tells.
    pub async fn evidence_verify_against(
        &self,
        expect: Option<&ChainHead>,
    ) -> Result<VerifyReport> {
        // One snapshot for the whole check: appends racing with it are not mistaken for
        // breaks.
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let mut records = 0i64;
        let mut prev = GENESIS_SHA256.to_owned();
        let mut expected_seq = 1i64;
        let mut problem = None;
        if let Some(kept) = expect.filter(|k| k.seq == 0 && k.sha256 != GENESIS_SHA256) {
            problem = Some(VerifyProblem::at_record(
                0,
                None,
                format!(
                    "the head kept earlier ({kept}) names the chain's start with a hash that is not the start's: it was not printed by `relata evidence verify`"
                ),
            ));
        }
        if problem.is_none() {
            let mut rows = sqlx::query(concat!(
                "SELECT t.*, relata_candidate_sha256(t.candidate_kind, t.candidate_id) AS now_sha256 FROM (",
                evidence_select!(),
                ") t ORDER BY seq"
            ))
            .fetch(&mut *tx);
            while let Some(r) = rows.try_next().await? {
                let rec = evidence_record(&r)?;
                let now_sha: Option<String> = r.try_get("now_sha256")?;
                records += 1;
                let at = |what: String| {
                    Some(VerifyProblem::at_record(rec.seq, Some(rec.candidate), what))
                };
                if rec.seq != expected_seq {
                    problem = at(format!(
                        "the log skips from record {} to {}: records were deleted",
                        expected_seq - 1,
                        rec.seq
                    ));
                } else if rec.prev_sha256 != prev {
                    problem = at(
                        "does not link to the record before it (prev_sha256 differs): the record before it was altered or removed"
                            .into(),
                    );
                } else if rec.compute_sha256() != rec.sha256 {
                    problem =
                        at("its content does not match its sha256: the record was altered".into());
                } else if let Some(kept) =
                    expect.filter(|k| k.seq == rec.seq && k.sha256 != rec.sha256)
                {
                    problem = at(format!(
                        "its sha256 is {}, not {} as in the head kept earlier: the log up to this record was rewritten (records edited and every hash after them recomputed)",
                        rec.sha256, kept.sha256
                    ));
                } else if now_sha.is_none() {
                    problem = at("its candidate no longer exists".into());
                } else if now_sha.as_deref() != Some(rec.candidate_sha256.as_str()) {
                    problem = at(
                        "its candidate's content no longer matches the hash recorded when it was decided: the row was edited"
                            .into(),
                    );
                }
                if problem.is_some() {
                    break;
                }
                prev = rec.sha256;
                expected_seq += 1;
            }
        }
        let last = expected_seq - 1;
        if problem.is_none() {
            let head = sqlx::query("SELECT seq, encode(sha256, 'hex') FROM evidence_head")
                .fetch_optional(&mut *tx)
                .await?;
            let (head_seq, head_sha): (i64, String) = match head {
                Some(h) => (h.try_get(0)?, h.try_get(1)?),
                None => (-1, String::new()),
            };
            if head_seq != last || head_sha != prev {
                problem = Some(VerifyProblem::at_record(
                    head_seq,
                    None,
                    format!(
                        "the chain's head names record {head_seq}, but the log ends at record {last}: records at the end were deleted or the head was altered"
                    ),
                ));
            }
        }
        if problem.is_none()
            && let Some(kept) = expect.filter(|k| k.seq > last)
        {
            problem = Some(VerifyProblem::at_record(
                kept.seq,
                None,
                format!(
                    "the head kept earlier ({kept}) names record {}, but the log ends at record {last}: records were removed and the log rewritten, or the head was kept from another database",
                    kept.seq
                ),
            ));
        }
        if problem.is_none() {
            problem = promotion_problem(&mut tx).await?;
        }
        if problem.is_none() {
            problem = sources_problem(&mut tx).await?;
        }
        tx.commit().await?;
        let head = problem.is_none().then_some(ChainHead {
            seq: last,
            sha256: prev,
        });
        Ok(VerifyReport {
            records,
            problem,
            head,
        })
    }

    /// Pending candidates by kind, with the oldest's proposal time.
    pub async fn review_pending_summary(&self) -> Result<Vec<PendingSummary>> {
        let rows = sqlx::query(
            "SELECT candidate_kind, count(*), min(proposed_at) FROM promotions
             WHERE state = 'pending' GROUP BY candidate_kind ORDER BY candidate_kind",
        )
        .fetch_all(&self.pool)
        .await?;
        let found: Vec<PendingSummary> = rows
            .iter()
            .map(|r| {
                Ok(PendingSummary {
                    kind: parse_label(r.try_get(0)?)?,
                    count: r.try_get(1)?,
                    oldest: r.try_get(2)?,
                })
            })
            .collect::<Result<_>>()?;
        // Every kind, so a gauge drops to zero when its queue empties.
        Ok(RowKind::ALL
            .iter()
            .map(|k| {
                found
                    .iter()
                    .find(|f| f.kind == *k)
                    .cloned()
                    .unwrap_or(PendingSummary {
                        kind: *k,
                        count: 0,
                        oldest: None,
                    })
            })
            .collect())
    }

    /// Candidates by kind and state (`proposed`: not yet judged).
    pub async fn candidate_counts(&self) -> Result<Vec<CandidateCount>> {
        sqlx::query(
            "SELECT kind, state, count(*) FROM candidate_states GROUP BY kind, state
             ORDER BY kind, state",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(CandidateCount {
                kind: parse_label(r.try_get(0)?)?,
                state: parse_label(r.try_get(1)?)?,
                count: r.try_get(2)?,
            })
        })
        .collect()
    }
}

/// A review queue that its evidence records do not support: a row set to `promoted` with
/// plain SQL, say, one added for a candidate the policy did not hold for a person, or a
/// held candidate's row deleted. (A candidate's state is its latest record, so no row can
/// promote anything; but the queue is what people work from.)
async fn promotion_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    let unqueued = sqlx::query(
        "SELECT e.seq, e.candidate_kind, e.candidate_id FROM evidence e
         WHERE e.decision = 'review'
           AND NOT EXISTS (SELECT 1 FROM promotions p
                           WHERE p.candidate_kind = e.candidate_kind
                             AND p.candidate_id = e.candidate_id)
         ORDER BY e.seq LIMIT 1",
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(r) = unqueued {
        return Ok(Some(VerifyProblem::at_record(
            r.try_get(0)?,
            Some(CandidateId {
                kind: parse_label(r.try_get(1)?)?,
                id: r.try_get(2)?,
            }),
            "the policy held it for review, but the review queue has no row for it: the row was deleted"
                .into(),
        )));
    }
    let mut rows = sqlx::query(
        "SELECT p.candidate_kind, p.candidate_id, p.state, p.evidence_seq, e.decision,
                e.candidate_kind, e.candidate_id,
                (SELECT max(x.seq) FROM evidence x
                 WHERE x.candidate_kind = p.candidate_kind AND x.candidate_id = p.candidate_id),
                (SELECT x.decision FROM evidence x
                 WHERE x.candidate_kind = p.candidate_kind AND x.candidate_id = p.candidate_id
                   AND x.actor_kind = 'policy'
                 ORDER BY x.seq LIMIT 1)
         FROM promotions p LEFT JOIN evidence e ON e.seq = p.evidence_seq
         ORDER BY p.evidence_seq",
    )
    .fetch(&mut *tx);
    while let Some(r) = rows.try_next().await? {
        let id = CandidateId {
            kind: parse_label(r.try_get(0)?)?,
            id: r.try_get(1)?,
        };
        let state: PromotionState = parse_label(r.try_get(2)?)?;
        let seq: i64 = r.try_get(3)?;
        let decision: Option<String> = r.try_get(4)?;
        let ekind: Option<String> = r.try_get(5)?;
        let eid: Option<i64> = r.try_get(6)?;
        let latest: Option<i64> = r.try_get(7)?;
        let policy: Option<String> = r.try_get(8)?;
        let problem = |what: String| Ok(Some(VerifyProblem::at_record(seq, Some(id), what)));
        if ekind.as_deref() != Some(id.kind.as_str()) || eid != Some(id.id) {
            return problem(
                "its promotion state points at a record about another candidate".into(),
            );
        }
        if latest != Some(seq) {
            return problem("its promotion state ignores a later decision".into());
        }
        if policy.as_deref() != Some(EvidenceDecision::Review.as_str()) {
            return problem(format!(
                "it is in the review queue, but the policy's decision was {}: the row was added behind relata's back",
                policy.as_deref().unwrap_or("none")
            ));
        }
        let decision: EvidenceDecision = parse_label(decision.unwrap_or_default())?;
        let implied = match decision {
            EvidenceDecision::Allow => PromotionState::Promoted,
            EvidenceDecision::Review => PromotionState::Pending,
            EvidenceDecision::Deny => PromotionState::Denied,
            EvidenceDecision::Approve => PromotionState::Promoted,
            EvidenceDecision::Reject => PromotionState::Rejected,
        };
        if implied != state {
            return problem(format!(
                "its promotion state is {state} but its last decision ({decision}) makes it {implied}: the state was edited"
            ));
        }
    }
    Ok(None)
}

fn evidence_record(r: &PgRow) -> Result<EvidenceRecord> {
    Ok(EvidenceRecord {
        seq: r.try_get(0)?,
        candidate: CandidateId {
            kind: parse_label(r.try_get(1)?)?,
            id: r.try_get(2)?,
        },
        candidate_sha256: r.try_get(3)?,
        call_id: r.try_get(4)?,
        task_version: r.try_get(5)?,
        actor_kind: parse_label(r.try_get(6)?)?,
        actor: r.try_get(7)?,
        decision: parse_label(r.try_get(8)?)?,
        reasons: r.try_get(9)?,
        note: r.try_get(10)?,
        decided_at: r.try_get(11)?,
        prev_sha256: r.try_get(12)?,
        sha256: r.try_get(13)?,
        via: Via::from_columns(r.try_get(14)?, r.try_get(15)?, r.try_get(16)?)?,
    })
}

/// Every document revision against its stored sha256, every chunk against the
/// revision's bytes at its offsets, and every claim's quote against the bytes at its
/// offsets: the first that differs, in revision order (a revision, then its chunks),
/// then in claim order. A record's hash covers its candidate's row, not the document
/// it quotes, so without this a document edited with plain SQL (the triggers guard
/// claims, not revisions) would go on vouching for a quote it no longer holds.
///
/// Revisions are streamed one at a time, each with its chunks' offsets and hashes read
/// by the `(revision_id, ordinal)` index and whether each chunk's text still hashes to
/// its sha256 (hashed by the server, so chunk texts are not sent): the check holds one
/// revision's text at a time and hashes each of its bytes once, where comparing in SQL
/// would copy the whole revision for every chunk. Claims are then read in id order
/// with their chunk (its primary key), and each quote compared with the chunk's text
/// at the quote's offsets, which the first pass has tied to the revision's bytes.
async fn sources_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    {
        let mut revisions = sqlx::query(
            "SELECT r.id, r.document_id, r.sha256, r.text, c.ids, c.starts, c.ends, c.shas,
                    c.texts_ok
             FROM document_revisions r
             CROSS JOIN LATERAL (
                 SELECT array_agg(x.id ORDER BY x.ordinal) AS ids,
                        array_agg(x.start_byte ORDER BY x.ordinal) AS starts,
                        array_agg(x.end_byte ORDER BY x.ordinal) AS ends,
                        array_agg(x.sha256 ORDER BY x.ordinal) AS shas,
                        array_agg(encode(sha256(convert_to(x.text, 'UTF8')), 'hex') = x.sha256
                                  ORDER BY x.ordinal) AS texts_ok
                 FROM chunks x WHERE x.revision_id = r.id
             ) c
             ORDER BY r.id",
        )
        .fetch(&mut *tx);
        while let Some(r) = revisions.try_next().await? {
            let revision: (i64, i64) = (r.try_get(1)?, r.try_get(0)?);
            let stored: String = r.try_get(2)?;
            let text: String = r.try_get(3)?;
            if crate::sha256_hex(text.as_bytes()) != stored {
                return Ok(Some(VerifyProblem::in_source(
                    revision,
                    None,
                    None,
                    "its text no longer hashes to its stored sha256: the text or the hash was edited"
                        .into(),
                )));
            }
            let ids: Vec<i64> = r.try_get::<Option<Vec<i64>>, _>(4)?.unwrap_or_default();
            let starts: Vec<i32> = r.try_get::<Option<Vec<i32>>, _>(5)?.unwrap_or_default();
            let ends: Vec<i32> = r.try_get::<Option<Vec<i32>>, _>(6)?.unwrap_or_default();
            let shas: Vec<String> = r.try_get::<Option<Vec<String>>, _>(7)?.unwrap_or_default();
            let texts_ok: Vec<bool> = r.try_get::<Option<Vec<bool>>, _>(8)?.unwrap_or_default();
            let bytes = text.as_bytes();
            for ((((&id, &start), &end), sha), &text_ok) in
                ids.iter().zip(&starts).zip(&ends).zip(&shas).zip(&texts_ok)
            {
                let chunk = |what: String| {
                    Ok(Some(VerifyProblem::in_source(
                        revision,
                        Some(id),
                        None,
                        what,
                    )))
                };
                if !text_ok {
                    return chunk(
                        "its text no longer hashes to its stored sha256: the chunk was edited"
                            .into(),
                    );
                }
                let span = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| bytes.get(s..e));
                let Some(span) = span else {
                    return chunk(format!(
                        "its offsets [{start}, {end}) lie outside the revision's {} bytes: the revision or the chunk was edited",
                        bytes.len()
                    ));
                };
                if crate::sha256_hex(span) != *sha {
                    return chunk(format!(
                        "the revision's bytes at [{start}, {end}) are not the chunk's text: the revision or the chunk was edited"
                    ));
                }
            }
        }
    }
    // A quote inside its chunk (every quote the gate accepts) is compared with the
    // chunk's text; one outside it, with the revision's.
    let claim = sqlx::query(
        "SELECT q.id, q.document_id, q.revision_id, q.quote_start, q.quote_end, q.quote,
                (SELECT substring(convert_to(r.text, 'UTF8')
                                  FROM q.quote_start + 1 FOR q.quote_end - q.quote_start)
                 FROM document_revisions r WHERE r.id = q.revision_id)
         FROM claims q JOIN chunks ch ON ch.id = q.chunk_id
         WHERE (CASE WHEN q.quote_start >= ch.start_byte AND q.quote_end <= ch.end_byte
                     THEN substring(convert_to(ch.text, 'UTF8')
                                    FROM q.quote_start - ch.start_byte + 1
                                    FOR q.quote_end - q.quote_start)
                     ELSE (SELECT substring(convert_to(r.text, 'UTF8')
                                            FROM q.quote_start + 1
                                            FOR q.quote_end - q.quote_start)
                           FROM document_revisions r WHERE r.id = q.revision_id)
                END) IS DISTINCT FROM convert_to(q.quote, 'UTF8')
         ORDER BY q.id LIMIT 1",
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(r) = claim else {
        return Ok(None);
    };
    let id = CandidateId {
        kind: RowKind::Claim,
        id: r.try_get(0)?,
    };
    let (start, end): (i32, i32) = (r.try_get(3)?, r.try_get(4)?);
    let quote: String = r.try_get(5)?;
    let now: Option<Vec<u8>> = r.try_get(6)?;
    let now = now.map_or_else(
        || "nothing (the revision is gone)".to_owned(),
        |b| {
            format!(
                "{:?}",
                relata_core::text::cut(&String::from_utf8_lossy(&b), 200)
            )
        },
    );
    Ok(Some(VerifyProblem::in_source(
        (r.try_get(1)?, r.try_get(2)?),
        None,
        Some(id),
        format!(
            "its quote {:?} is not the revision's text at bytes [{start}, {end}), which reads {now}: the document was edited after the claim was stored",
            relata_core::text::cut(&quote, 200)
        ),
    )))
}

fn review_candidate(r: &PgRow) -> Result<ReviewCandidate> {
    let kind: RowKind = parse_label(r.try_get(0)?)?;
    Ok(ReviewCandidate {
        id: CandidateId {
            kind,
            id: r.try_get(1)?,
        },
        kind,
        state: parse_label(r.try_get(2)?)?,
        rule: Some(r.try_get(3)?),
        reasons: r.try_get(4)?,
        sources: r.try_get(5)?,
        stale: r.try_get(6)?,
        proposed_at: Some(r.try_get(7)?),
        decided_at: Some(r.try_get(8)?),
        row: r.try_get(9)?,
    })
}

/// How a document is named on the review page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentHeading {
    pub source: String,
    pub external_id: String,
    pub title: Option<String>,
}

impl Store {
    /// A document's source, external id and title, for a candidate's card on the review
    /// page; `None` when there is no such document.
    pub async fn document_heading(&self, document_id: i64) -> Result<Option<DocumentHeading>> {
        let row: Option<(String, String, Option<String>)> =
            sqlx::query_as("SELECT source, external_id, title FROM documents WHERE id = $1")
                .bind(document_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(source, external_id, title)| DocumentHeading {
            source,
            external_id,
            title,
        }))
    }

    /// The evidence records of reviewers' decisions (not the policy's), newest first:
    /// the review page's history.
    pub async fn reviewer_decisions(&self, offset: i64, limit: i64) -> Result<Vec<EvidenceRecord>> {
        let rows = sqlx::query(concat!(
            evidence_select!(),
            " WHERE actor_kind = 'reviewer' ORDER BY seq DESC OFFSET $1 LIMIT $2"
        ))
        .bind(offset.max(0))
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(evidence_record).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// The hash as it was first written: through a `serde_json::Value` tree. Every
    /// record already in a log was hashed this way, so the streamed hash must match it.
    fn through_a_tree(r: &EvidenceRecord) -> String {
        let canonical = serde_json::json!([
            r.seq,
            r.candidate.kind.as_str(),
            r.candidate.id,
            r.candidate_sha256,
            r.call_id,
            r.task_version,
            r.actor_kind.as_str(),
            r.actor,
            r.decision.as_str(),
            r.reasons,
            r.note,
            r.decided_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            r.prev_sha256,
        ]);
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
    }

    #[test]
    fn the_streamed_record_hash_is_the_hash_every_earlier_record_was_given() {
        let base = EvidenceRecord {
            seq: 1,
            candidate: CandidateId {
                kind: RowKind::Claim,
                id: 42,
            },
            candidate_sha256: "ab".repeat(32),
            call_id: Some(7),
            task_version: "extract-v1".into(),
            actor_kind: ActorKind::Policy,
            actor: "claims-without-warnings".into(),
            decision: EvidenceDecision::Allow,
            reasons: Vec::new(),
            note: None,
            decided_at: Utc.with_ymd_and_hms(2026, 12, 3, 15, 4, 5).unwrap()
                + chrono::Duration::microseconds(123_456),
            prev_sha256: GENESIS_SHA256.into(),
            sha256: String::new(),
            via: None,
        };
        let awkward =
            "Ada \"Countess\" Lovelace\\ \u{0}\u{1f}\t\n\r\u{8}\u{c}\u{7f} é 漢 🦀 </script>";
        let variants = [
            base.clone(),
            EvidenceRecord {
                seq: i64::MAX,
                candidate: CandidateId {
                    kind: RowKind::Relation,
                    id: i64::MIN,
                },
                call_id: None,
                actor_kind: ActorKind::Reviewer,
                actor: awkward.into(),
                decision: EvidenceDecision::Reject,
                reasons: vec![awkward.into(), String::new(), "warning: demoted".into()],
                note: Some(awkward.into()),
                task_version: awkward.into(),
                ..base.clone()
            },
            EvidenceRecord {
                note: Some(String::new()),
                decided_at: Utc.with_ymd_and_hms(1999, 1, 1, 0, 0, 0).unwrap(),
                ..base.clone()
            },
        ];
        for r in &variants {
            assert_eq!(r.compute_sha256(), through_a_tree(r), "{r:?}");
        }
        // And the hash covers what it should: one changed field, another hash.
        let mut edited = base.clone();
        edited.reasons.push("x".into());
        assert_ne!(edited.compute_sha256(), base.compute_sha256());
    }

    /// A person's record says how the decision was made, inside its hash: one element
    /// more, `[via, os_user, host]`, after the thirteen every record has. A record
    /// without it keeps the old shape (the test above), so the two cannot collide.
    #[test]
    fn how_a_decision_was_made_is_covered_by_its_records_hash() {
        let base = EvidenceRecord {
            seq: 3,
            candidate: CandidateId {
                kind: RowKind::Claim,
                id: 42,
            },
            candidate_sha256: "ab".repeat(32),
            call_id: Some(7),
            task_version: "extract-v1".into(),
            actor_kind: ActorKind::Reviewer,
            actor: "Ada Lovelace".into(),
            decision: EvidenceDecision::Approve,
            reasons: Vec::new(),
            note: Some("checked".into()),
            decided_at: Utc.with_ymd_and_hms(2026, 12, 27, 9, 0, 0).unwrap(),
            prev_sha256: "cd".repeat(32),
            sha256: String::new(),
            via: Some(Via::CommandLine {
                os_user: "ada".into(),
                host: "analytical-engine".into(),
            }),
        };
        // The thirteen fields, as the tree above writes them, and then how.
        let r = &base;
        let mut expected = serde_json::json!([
            r.seq,
            r.candidate.kind.as_str(),
            r.candidate.id,
            r.candidate_sha256,
            r.call_id,
            r.task_version,
            r.actor_kind.as_str(),
            r.actor,
            r.decision.as_str(),
            r.reasons,
            r.note,
            r.decided_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            r.prev_sha256,
        ]);
        expected.as_array_mut().unwrap().push(serde_json::json!([
            "command_line",
            "ada",
            "analytical-engine"
        ]));
        assert_eq!(
            base.compute_sha256(),
            hex::encode(Sha256::digest(expected.to_string().as_bytes()))
        );
        let hashes: Vec<String> = [
            None,
            Some(Via::ReviewPage),
            Some(Via::CommandLine {
                os_user: "ada".into(),
                host: "elsewhere".into(),
            }),
            Some(Via::CommandLine {
                os_user: "mallory".into(),
                host: "analytical-engine".into(),
            }),
            base.via.clone(),
        ]
        .into_iter()
        .map(|via| {
            EvidenceRecord {
                via,
                ..base.clone()
            }
            .compute_sha256()
        })
        .collect();
        let distinct: std::collections::BTreeSet<&String> = hashes.iter().collect();
        assert_eq!(distinct.len(), hashes.len(), "{hashes:?}");
    }

    #[test]
    fn a_chain_head_is_read_as_verify_prints_it() {
        let head = ChainHead {
            seq: 42,
            sha256: "ab".repeat(32),
        };
        assert_eq!(head.to_string().parse::<ChainHead>(), Ok(head.clone()));
        assert_eq!(
            format!(" 42:{} ", "AB".repeat(32)).parse::<ChainHead>(),
            Ok(head)
        );
        assert_eq!(
            format!("0:{GENESIS_SHA256}")
                .parse::<ChainHead>()
                .unwrap()
                .seq,
            0
        );
        for bad in [
            "",
            "42",
            "42:",
            &format!("-1:{}", "ab".repeat(32)),
            &format!("x:{}", "ab".repeat(32)),
            &format!("42:{}", "ab".repeat(31)),
            &format!("42:{}g", "ab".repeat(31) + "a"),
            &format!("42 {}", "ab".repeat(32)),
        ] {
            let e = bad.parse::<ChainHead>().unwrap_err();
            assert!(e.to_string().contains("SEQ:SHA256"), "{bad:?}: {e}");
        }
    }
}
