//! The job message: what travels through the broker.
//!
//! A message is a reference, not a payload: it names the job, and the job ledger in the
//! store holds its input (a chunk, or claim pairs) and its task version. So a message can
//! never disagree with the ledger, a redelivered message is recognisably the same job, and
//! an undecodable message is poison rather than something to guess at.

use crate::task::{JobId, Task};

/// Version of the message format.
pub const JOB_MESSAGE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobMessage {
    pub v: u32,
    pub task: Task,
    pub job_id: JobId,
}

/// Why a message is not a job.
#[derive(Debug, thiserror::Error)]
pub enum JobMessageError {
    #[error("job message is not valid: {0}")]
    Decode(String),
    #[error("job message format version {0} is not supported (expected {JOB_MESSAGE_VERSION})")]
    Version(u32),
    #[error("job id {0:?} is not 32 lowercase hex characters")]
    JobId(String),
}

impl JobMessage {
    pub fn new(task: Task, job_id: JobId) -> JobMessage {
        JobMessage {
            v: JOB_MESSAGE_VERSION,
            task,
            job_id,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        // Serialising a struct of strings and integers cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<JobMessage, JobMessageError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            v: u32,
            task: Task,
            job_id: String,
        }
        let raw: Raw = serde_json::from_slice(bytes).map_err(|e| {
            let s = e.to_string();
            JobMessageError::Decode(crate::text::cut(&s, 200).to_owned())
        })?;
        if raw.v != JOB_MESSAGE_VERSION {
            return Err(JobMessageError::Version(raw.v));
        }
        let job_id = JobId::parse(&raw.job_id).ok_or_else(|| {
            JobMessageError::JobId(crate::text::head_chars(&raw.job_id, 40).0.to_owned())
        })?;
        Ok(JobMessage {
            v: raw.v,
            task: raw.task,
            job_id,
        })
    }
}

/// What a job works on: an extract job, one chunk; a classify job, claim pairs. The
/// ledger stores it as two nullable columns (a CHECK keeps exactly one set, by task); in
/// code there is no job with both, neither, or the other task's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobInput {
    Extract {
        chunk_id: i64,
    },
    Classify {
        /// Each `(lower claim id, higher claim id)`.
        pairs: Vec<(i64, i64)>,
    },
}

/// As the ledger's two columns, `{"chunk_id", "pairs"}`, the one the task does not take
/// `null`.
impl serde::Serialize for JobInput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (chunk_id, pairs) = (self.chunk_id(), self.pairs());
        let mut columns = s.serialize_struct("JobInput", 2)?;
        columns.serialize_field("chunk_id", &chunk_id)?;
        columns.serialize_field("pairs", &pairs)?;
        columns.end()
    }
}

/// Why stored columns are not a job's input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobInputError {
    #[error("a job of task {task} needs {wanted} and must carry nothing else (it has {has})")]
    Mismatch {
        task: Task,
        wanted: &'static str,
        has: &'static str,
    },
    #[error("{0} is not a queued task: no job has it")]
    NotQueued(Task),
}

impl JobInput {
    pub fn task(&self) -> Task {
        match self {
            JobInput::Extract { .. } => Task::Extract,
            JobInput::Classify { .. } => Task::Classify,
        }
    }

    /// The input from the ledger's columns: exactly the one its task needs.
    pub fn from_columns(
        task: Task,
        chunk_id: Option<i64>,
        pairs: Option<Vec<(i64, i64)>>,
    ) -> Result<JobInput, JobInputError> {
        let has = match (chunk_id.is_some(), pairs.is_some()) {
            (true, true) => "a chunk and pairs",
            (true, false) => "a chunk",
            (false, true) => "pairs",
            (false, false) => "neither",
        };
        match (task, chunk_id, pairs) {
            (Task::Extract, Some(chunk_id), None) => Ok(JobInput::Extract { chunk_id }),
            (Task::Classify, None, Some(pairs)) => Ok(JobInput::Classify { pairs }),
            (Task::Extract, ..) => Err(JobInputError::Mismatch {
                task,
                wanted: "a chunk",
                has,
            }),
            (Task::Classify, ..) => Err(JobInputError::Mismatch {
                task,
                wanted: "pairs",
                has,
            }),
            (Task::Answer | Task::Join, ..) => Err(JobInputError::NotQueued(task)),
        }
    }

    /// The `chunk_id` column: set for an extract job.
    pub fn chunk_id(&self) -> Option<i64> {
        match self {
            JobInput::Extract { chunk_id } => Some(*chunk_id),
            JobInput::Classify { .. } => None,
        }
    }

    /// The `pairs` column: set for a classify job.
    pub fn pairs(&self) -> Option<&[(i64, i64)]> {
        match self {
            JobInput::Extract { .. } => None,
            JobInput::Classify { pairs } => Some(pairs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EXTRACT_V1, TaskVersion};

    #[test]
    fn round_trips_and_refuses_garbage() {
        let v = TaskVersion::new(&EXTRACT_V1, "p", "m");
        let m = JobMessage::new(Task::Extract, JobId::derive(&v, b"x"));
        assert_eq!(JobMessage::decode(&m.encode()).unwrap(), m);
        for bad in [
            &b"garbage"[..],
            br#"{"v":1,"task":"extract"}"#,
            br#"{"v":2,"task":"extract","job_id":"00000000000000000000000000000000"}"#,
            br#"{"v":1,"task":"nope","job_id":"00000000000000000000000000000000"}"#,
            br#"{"v":1,"task":"extract","job_id":"../../etc"}"#,
            br#"{"v":1,"task":"extract","job_id":"00000000000000000000000000000000","x":1}"#,
        ] {
            assert!(
                JobMessage::decode(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_decode_error_cut_inside_a_character_is_an_error_not_a_panic() {
        // serde_json echoes an unknown key, or a string where a number belongs, whole; at
        // two bytes a character, one of two lengths puts byte 200 inside one.
        for n in 95..=105 {
            let long = "é".repeat(n);
            for msg in [
                format!(r#"{{"{long}":1}}"#),
                format!(r#"{{"v":"{long}","task":"extract","job_id":"x"}}"#),
            ] {
                let err = JobMessage::decode(msg.as_bytes()).unwrap_err().to_string();
                assert!(err.len() <= 260, "{err}");
            }
        }
        // And bytes that are not UTF-8 at all.
        assert!(JobMessage::decode(&[0xff, 0xfe, 0x00, 0xc3]).is_err());
    }

    #[test]
    fn a_job_input_is_exactly_its_tasks_input() {
        assert_eq!(
            JobInput::from_columns(Task::Extract, Some(7), None),
            Ok(JobInput::Extract { chunk_id: 7 })
        );
        assert_eq!(
            JobInput::from_columns(Task::Classify, None, Some(vec![(1, 2)])),
            Ok(JobInput::Classify {
                pairs: vec![(1, 2)]
            })
        );
        for (task, chunk, pairs, says) in [
            (
                Task::Extract,
                Some(7),
                Some(vec![(1, 2)]),
                "a chunk and pairs",
            ),
            (Task::Extract, None, None, "neither"),
            (Task::Extract, None, Some(vec![(1, 2)]), "(it has pairs)"),
            (
                Task::Classify,
                Some(7),
                Some(vec![(1, 2)]),
                "a chunk and pairs",
            ),
            (Task::Classify, None, None, "neither"),
            (Task::Classify, Some(7), None, "(it has a chunk)"),
        ] {
            let err = JobInput::from_columns(task, chunk, pairs).unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("a job of task {task} needs")),
                "{text}"
            );
            assert!(text.contains(says), "{text}");
        }
        assert_eq!(
            JobInput::from_columns(Task::Answer, None, None),
            Err(JobInputError::NotQueued(Task::Answer))
        );
    }

    #[test]
    fn a_job_input_gives_back_its_columns() {
        for input in [
            JobInput::Extract { chunk_id: 3 },
            JobInput::Classify {
                pairs: vec![(1, 2), (3, 4)],
            },
        ] {
            let back = JobInput::from_columns(
                input.task(),
                input.chunk_id(),
                input.pairs().map(<[_]>::to_vec),
            );
            assert_eq!(back, Ok(input));
        }
    }
}
