//! The values the store takes and returns.

use chrono::{DateTime, Utc};
use relata_core::{DeadReason, JobId, JobInput, JobMessage, Task, TaskVersion, closed_enum};

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
    /// The document's title, when it has one: a name a prompt may offer (the chunk of a
    /// concept article opens "Chamber music is …").
    pub title: Option<String>,
}

/// A job the caller must publish (then report with [`crate::Store::mark_published`]).
///
/// In JSON it keeps the ledger's shape, `{"job_id", "task", "chunk_id", "pairs"}` with the
/// input the task does not take `null`; decoding refuses any other combination.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "JobColumns", try_from = "JobColumns")]
pub struct JobToPublish {
    pub job_id: JobId,
    pub input: JobInput,
}

impl JobToPublish {
    pub fn task(&self) -> Task {
        self.input.task()
    }

    /// The broker message for this job: a reference into the ledger.
    pub fn message(&self) -> JobMessage {
        JobMessage::new(self.task(), self.job_id.clone())
    }
}

/// [`JobToPublish`] as JSON holds it: the ledger's columns.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JobColumns {
    job_id: JobId,
    task: Task,
    chunk_id: Option<i64>,
    pairs: Option<Vec<(i64, i64)>>,
}

impl From<JobToPublish> for JobColumns {
    fn from(j: JobToPublish) -> JobColumns {
        let task = j.task();
        let (chunk_id, pairs) = match j.input {
            JobInput::Extract { chunk_id } => (Some(chunk_id), None),
            JobInput::Classify { pairs } => (None, Some(pairs)),
        };
        JobColumns {
            job_id: j.job_id,
            task,
            chunk_id,
            pairs,
        }
    }
}

impl TryFrom<JobColumns> for JobToPublish {
    type Error = String;
    fn try_from(c: JobColumns) -> Result<JobToPublish, String> {
        let input = JobInput::from_columns(c.task, c.chunk_id, c.pairs)
            .map_err(|e| format!("job {}: {e}", c.job_id))?;
        Ok(JobToPublish {
            job_id: c.job_id,
            input,
        })
    }
}

/// A job as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobRow {
    pub job_id: JobId,
    pub version: TaskVersion,
    pub task_version_fingerprint: String,
    /// Its task is `version.task`.
    #[serde(flatten)]
    pub input: JobInput,
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
    /// The rows this commit wrote, as the promotion policy judges them: what the worker
    /// hands its promoter ([`Store::promote_committed`](crate::Store::promote_committed))
    /// so that nothing has to be read back. Empty when nothing was accepted.
    #[serde(skip)]
    pub candidates: Vec<crate::promotion::Candidate>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use relata_core::EXTRACT_V1;

    fn id() -> JobId {
        JobId::derive(&TaskVersion::new(&EXTRACT_V1, "p", "m"), b"x")
    }

    #[test]
    fn a_job_to_publish_keeps_the_ledgers_json_shape() {
        let extract = JobToPublish {
            job_id: id(),
            input: JobInput::Extract { chunk_id: 7 },
        };
        let classify = JobToPublish {
            job_id: id(),
            input: JobInput::Classify {
                pairs: vec![(1, 2), (3, 4)],
            },
        };
        let json = serde_json::to_value(&extract).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"job_id": id().as_str(), "task": "extract", "chunk_id": 7, "pairs": null})
        );
        let json = serde_json::to_value(&classify).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"job_id": id().as_str(), "task": "classify", "chunk_id": null, "pairs": [[1, 2], [3, 4]]})
        );
        for job in [extract, classify] {
            let back: JobToPublish =
                serde_json::from_slice(&serde_json::to_vec(&job).unwrap()).unwrap();
            assert_eq!(back, job);
        }
    }

    #[test]
    fn a_job_with_both_inputs_or_neither_is_refused_at_decode() {
        let id = id();
        for (json, says) in [
            (
                format!(r#"{{"job_id":"{id}","task":"extract","chunk_id":7,"pairs":[[1,2]]}}"#),
                "a job of task extract needs a chunk and must carry nothing else (it has a chunk and pairs)",
            ),
            (
                format!(r#"{{"job_id":"{id}","task":"extract","chunk_id":null,"pairs":null}}"#),
                "(it has neither)",
            ),
            (
                format!(r#"{{"job_id":"{id}","task":"classify","chunk_id":7,"pairs":null}}"#),
                "a job of task classify needs pairs and must carry nothing else (it has a chunk)",
            ),
            (
                format!(r#"{{"job_id":"{id}","task":"classify","chunk_id":null,"pairs":null}}"#),
                "(it has neither)",
            ),
            (
                format!(r#"{{"job_id":"{id}","task":"answer","chunk_id":null,"pairs":null}}"#),
                "answer is not a queued task",
            ),
        ] {
            let err = serde_json::from_str::<JobToPublish>(&json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
            assert!(err.contains(id.as_str()), "the error names the job: {err}");
        }
    }
}
