//! The values the store takes and returns.

use chrono::{DateTime, Utc};
use relata_core::{DeadReason, JobId, JobMessage, Task, TaskVersion, closed_enum};

closed_enum! {
    /// A job's state in the ledger. Everything but `Queued` is terminal.
    pub enum JobState: "job state" {
        Queued = "queued",
        /// Every row accepted (or a valid response with no rows).
        Accepted = "accepted",
        /// Some rows accepted, some rejected.
        Partial = "partial",
        /// The response was rejected whole, or every row was.
        Invalid = "invalid",
        /// Dead-lettered; see [`DeadReason`].
        Dead = "dead",
    }
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        self != JobState::Queued
    }
}

closed_enum! {
    /// What came of one model call (the `outcome` of a model call record).
    pub enum CallOutcome: "call outcome" {
        Accepted = "accepted",
        Partial = "partial",
        Rejected = "rejected",
        /// Rejected before the gate: truncated, refusal, empty.
        InvalidEnvelope = "invalid_envelope",
        TransportError = "transport_error",
        PermanentError = "permanent_error",
    }
}

closed_enum! {
    /// What an upsert found.
    pub enum UpsertKind: "upsert kind" {
        /// The document was not known.
        New = "new",
        /// Known, with different text: a new current revision.
        Changed = "changed",
        /// Known, with the same text (sha256) as its current revision: nothing written.
        Unchanged = "unchanged",
    }
}

/// A chunk of a document's text, as UTF-8 byte offsets `[start, end)` into that text. Both
/// must sit on character boundaries; chunks are given in order and must not overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkSpan {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UpsertOutcome {
    pub document_id: i64,
    /// The document's current revision after the upsert.
    pub revision_id: i64,
    pub kind: UpsertKind,
    /// The chunks of the current revision, in order (for `Unchanged` too, so that a
    /// producer that crashed before publishing publishes them on the next run).
    pub chunk_ids: Vec<i64>,
}

/// A stored chunk: the input of an extract job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChunkRow {
    pub id: i64,
    pub document_id: i64,
    pub revision_id: i64,
    pub ordinal: i32,
    /// Byte offsets of this chunk in its revision's text.
    pub start_byte: usize,
    pub end_byte: usize,
    /// Exactly the revision text's bytes at `start_byte..end_byte`. This is the source the
    /// gate must judge quotes against.
    pub text: String,
    pub sha256: String,
}

/// A job the caller must publish (then report with [`crate::Store::mark_published`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobToPublish {
    pub job_id: JobId,
    pub task: Task,
    /// Extract jobs: the chunk.
    pub chunk_id: Option<i64>,
    /// Classify jobs: the claim pairs, each `(lower id, higher id)`.
    pub pairs: Option<Vec<(i64, i64)>>,
}

impl JobToPublish {
    /// The broker message for this job: a reference into the ledger.
    pub fn message(&self) -> JobMessage {
        JobMessage::new(self.task, self.job_id.clone())
    }
}

/// A job as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobRow {
    pub job_id: JobId,
    pub version: TaskVersion,
    pub task_version_fingerprint: String,
    pub chunk_id: Option<i64>,
    pub pairs: Option<Vec<(i64, i64)>>,
    pub origin_job_id: Option<JobId>,
    pub state: JobState,
    pub attempts: i32,
    pub dead_reason: Option<DeadReason>,
    pub published_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// The evidence of one model call, as the worker observed it. The store adds the outcome
/// (from the judgement or the operation) and the duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewModelCall {
    /// The task version the request was made with; must be the job's.
    pub version: TaskVersion,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// HTTP requests made for this call, including the adapter's in-process retries.
    pub attempts: u32,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// A short excerpt of the response (or error body), already redacted by the caller.
    /// The store keeps at most [`crate::EXCERPT_MAX_CHARS`] characters of it.
    pub excerpt: Option<String>,
    /// sha256 of the exact schema sent, when it was sent (it may be tighter than the
    /// contract named by `version`).
    pub sent_schema_sha256: Option<String>,
}

/// Rows written by a commit, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RowCounts {
    pub entities: usize,
    pub claims: usize,
    pub relations: usize,
    pub warnings: usize,
    /// invalid_outputs rows: one per rejected row, or one for a rejected response.
    pub rejections: usize,
}

/// What a commit wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Committed {
    pub call_id: Option<i64>,
    pub state: JobState,
    pub entity_ids: Vec<i64>,
    pub claim_ids: Vec<i64>,
    pub relation_ids: Vec<i64>,
    pub counts: RowCounts,
}

/// The result of a terminal operation on a job (commit, invalid envelope, dead letter).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum CommitOutcome {
    /// This call wrote the job's outcome.
    Committed(Committed),
    /// The job already had a terminal outcome; nothing was written. The worker acks the
    /// delivery without calling the model.
    AlreadyCommitted { state: JobState },
}

/// A claim as shown to the classifier.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClaimForClassify {
    pub id: i64,
    pub document_id: i64,
    pub statement: String,
    pub quote: String,
    pub subject: String,
}
