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
}
