//! Tasks, task versions and deterministic job ids.

use sha2::{Digest, Sha256};

use crate::closed_enum;
use crate::contract::Contract;

closed_enum! {
    /// A kind of model job.
    pub enum Task: "task" {
        Extract = "extract",
        Classify = "classify",
        /// A question answered from retrieved sources (`relata ask`, `relata serve`):
        /// asked on request, never through the queue.
        Answer = "answer",
        /// Whether two entities that no rule joins are one thing (`relata entities
        /// propose`): asked on request, never through the queue; a verdict is a proposal
        /// that a person decides through the promotion path.
        Join = "join",
    }
}

impl Task {
    /// The tasks whose jobs travel through the broker and the job ledger. `answer` is
    /// asked synchronously by the command or server that received the question, so it
    /// has no queue, no retry tier and no ledger row.
    pub const QUEUED: &'static [Task] = &[Task::Extract, Task::Classify];
}

/// What makes a model output comparable: the same task, prompt, schema and model.
///
/// A backfill after any of these changes produces new jobs (new ids); a re-run of the
/// same version produces none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TaskVersion {
    pub task: Task,
    pub prompt_version: String,
    pub schema_id: String,
    pub schema_version: u32,
    pub schema_sha256: String,
    pub model: String,
}

impl TaskVersion {
    pub fn new(contract: &Contract, prompt_version: &str, model: &str) -> TaskVersion {
        TaskVersion {
            task: contract.task,
            prompt_version: prompt_version.to_owned(),
            schema_id: contract.schema_id.to_owned(),
            schema_version: contract.version,
            schema_sha256: contract.sha256(),
            model: model.to_owned(),
        }
    }

    /// A stable digest of every field, unambiguous because each field is
    /// length-prefixed.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        let version = self.schema_version.to_string();
        for part in [
            self.task.as_str(),
            &self.prompt_version,
            &self.schema_id,
            &version,
            &self.schema_sha256,
            &self.model,
        ] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        hex::encode(h.finalize())
    }
}

/// A job id: derived from the task version and the input, never random, so that a
/// redelivered or re-published job is recognisably the same job.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
// Deserialised through `parse` like every other way in: a `JobId` is 32 lowercase hex
// digits whoever built it.
#[serde(try_from = "String", into = "String")]
pub struct JobId(String);

impl TryFrom<String> for JobId {
    type Error = String;

    fn try_from(s: String) -> Result<JobId, String> {
        JobId::parse(&s).ok_or_else(|| {
            format!(
                "not a job id (32 lowercase hex digits): {:?}",
                crate::text::ellipsize(&s, 40)
            )
        })
    }
}

impl From<JobId> for String {
    fn from(id: JobId) -> String {
        id.0
    }
}

impl JobId {
    /// 128 bits of sha256(task-version fingerprint, input) as 32 hex characters.
    pub fn derive(version: &TaskVersion, input: &[u8]) -> JobId {
        let mut h = Sha256::new();
        h.update(version.fingerprint().as_bytes());
        h.update([0u8]);
        h.update(input);
        let digest = h.finalize();
        JobId(hex::encode(&digest[..16]))
    }

    /// Accept an id read back from the broker or the store.
    pub fn parse(s: &str) -> Option<JobId> {
        (s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .then(|| JobId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::EXTRACT_V1;

    #[test]
    fn a_job_id_is_deserialised_only_through_its_parser() {
        let v = TaskVersion::new(&EXTRACT_V1, "extract-p1", "smollm2-135m");
        let id = JobId::derive(&v, b"chunk");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<JobId>(&json).unwrap(), id);
        for bad in [
            "\"\"",
            "\"xyz\"",
            "\"0123456789ABCDEF0123456789abcdef\"",
            "42",
        ] {
            let e = serde_json::from_str::<JobId>(bad).unwrap_err().to_string();
            assert!(
                e.contains("not a job id") || e.contains("invalid type"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn job_ids_change_with_every_part_of_the_version_and_the_input() {
        let v = TaskVersion::new(&EXTRACT_V1, "extract-p1", "smollm2-135m");
        let id = JobId::derive(&v, b"chunk");
        assert_eq!(id, JobId::derive(&v, b"chunk"));
        assert_ne!(id, JobId::derive(&v, b"chunk2"));
        let mut p = v.clone();
        p.prompt_version = "extract-p2".into();
        assert_ne!(id, JobId::derive(&p, b"chunk"));
        let mut m = v.clone();
        m.model = "other".into();
        assert_ne!(id, JobId::derive(&m, b"chunk"));
        assert!(JobId::parse(id.as_str()).is_some());
        assert!(JobId::parse("xyz").is_none());
    }

    #[test]
    fn fingerprint_is_unambiguous_across_field_boundaries() {
        let mut a = TaskVersion::new(&EXTRACT_V1, "ab", "c");
        let mut b = a.clone();
        a.prompt_version = "a".into();
        a.model = "bc".into();
        b.prompt_version = "ab".into();
        b.model = "c".into();
        assert_ne!(a.fingerprint(), b.fingerprint());
    }
}
