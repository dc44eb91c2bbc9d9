//! A model asked whether two entities that no rule joins are one thing (`relata entities
//! propose`): what it is shown, and what is recorded of each ask.
//!
//! Each ask is a job in the ledger, created terminal in the transaction that records its
//! call (no queue: the command asks and commits in one go), so a second run under the
//! same task version asks nothing twice. A verdict the gate accepted is one row of
//! `entity_join_proposals` with its evidence located in its revision; a `one` is a
//! candidate that the policy holds for a person, and an approved one is applied by
//! re-resolution as a person's join. A rejected response is one invalid-output row. A
//! failed call (transport, provider) records nothing: the next run asks again.

use std::collections::HashSet;

use relata_core::{EntityType, JobId, JoinVerdict, Reason, RowKind, Task, TaskVersion};
use relata_validate::Rejection;
use sqlx::Row;

use crate::Store;
use crate::commit::insert_rejections;
use crate::error::{Result, StoreError};
use crate::jobs::insert_call;
use crate::parse_label;
use crate::promotion::{Candidate, read_candidates};
use crate::types::{CallOutcome, JobState, NewModelCall};

/// The job id of a join ask about two mentions (either order).
pub fn join_job_id(version: &TaskVersion, a: i64, b: i64) -> JobId {
    JobId::derive(
        version,
        format!("join:{}-{}", a.min(b), a.max(b)).as_bytes(),
    )
}

/// A sentence of a mention's document as shown to the model, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedSentence {
    pub revision_id: i64,
    /// Byte offset of the sentence in its revision.
    pub start: usize,
    /// The sentence's bytes, as the revision holds them.
    pub text: String,
}

/// One side of a join ask: the mention, its document's title, and the sentences shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskSide {
    pub mention_id: i64,
    pub name: String,
    pub entity_type: EntityType,
    pub title: Option<String>,
    /// The chunk's first sentence (what the document is about) and the first that writes
    /// the name on its own; one when they are the same.
    pub sentences: Vec<AskedSentence>,
}

/// What the gate made of one ask's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinAnswer<'a> {
    /// A verdict with its evidence: `sentence` is the one cited, `start..end` the quote's
    /// bytes inside it.
    Accepted {
        verdict: JoinVerdict,
        source_handle: &'a str,
        sentence: &'a AskedSentence,
        start: usize,
        end: usize,
    },
    /// The whole response refused (by the gate, or at the envelope: truncated, refused).
    Rejected {
        rejection: &'a Rejection,
        envelope: bool,
    },
}

/// What a committed ask wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinCommit {
    /// Recorded: the proposal row (none for a rejection), and the candidate the policy
    /// judges (a `one` only).
    Committed {
        proposal_id: Option<i64>,
        candidate: Option<Candidate>,
    },
    /// A job of this id is already on record; nothing was written.
    AlreadyAsked,
}

impl Store {
    /// The two sides of an ask about mentions `a` and `b`.
    ///
    /// # Errors
    /// `InvalidInput` when a mention is not stored or is the other.
    pub async fn join_sides(&self, a: i64, b: i64) -> Result<[AskSide; 2]> {
        if a == b {
            return Err(StoreError::InvalidInput(format!(
                "a join needs two mentions, and {a} is given twice"
            )));
        }
        let rows = sqlx::query(
            "SELECT e.id, e.name, e.entity_type, d.title, c.revision_id, c.start_byte, c.text,
                    ARRAY(SELECT o.name FROM entities o WHERE o.chunk_id = e.chunk_id) AS names
             FROM entities e
             JOIN chunks c ON c.id = e.chunk_id
             JOIN documents d ON d.id = e.document_id
             WHERE e.id = ANY($1)",
        )
        .bind([a, b])
        .fetch_all(&self.pool)
        .await?;
        let side = |id: i64| -> Result<AskSide> {
            let row = rows
                .iter()
                .find(|r| r.try_get::<i64, _>("id").is_ok_and(|x| x == id))
                .ok_or_else(|| StoreError::InvalidInput(format!("no entity {id}")))?;
            let name: String = row.try_get("name")?;
            let text: String = row.try_get("text")?;
            let names: Vec<String> = row.try_get("names")?;
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let revision_id: i64 = row.try_get("revision_id")?;
            let chunk_start =
                usize::try_from(row.try_get::<i32, _>("start_byte")?).map_err(|_| {
                    StoreError::Invariant(format!("chunk of entity {id} starts below 0"))
                })?;
            let mut spans: Vec<(usize, usize)> = relata_core::sentences::handled(&text)
                .into_iter()
                .take(1)
                .collect();
            if let Some(span) = crate::entities::sentence_span_naming(&text, &name, &names)
                && !spans.contains(&span)
            {
                spans.push(span);
            }
            Ok(AskSide {
                mention_id: id,
                entity_type: parse_label(row.try_get::<String, _>("entity_type")?)?,
                title: row.try_get("title")?,
                sentences: spans
                    .into_iter()
                    .map(|(s, e)| AskedSentence {
                        revision_id,
                        start: chunk_start + s,
                        text: text[s..e].to_owned(),
                    })
                    .collect(),
                name,
            })
        };
        Ok([side(a)?, side(b)?])
    }

    /// Which of `ids` are jobs on record.
    pub async fn jobs_on_record(&self, ids: &[JobId]) -> Result<HashSet<String>> {
        let ids: Vec<&str> = ids.iter().map(JobId::as_str).collect();
        Ok(
            sqlx::query_scalar("SELECT job_id FROM jobs WHERE job_id = ANY($1)")
                .bind(&ids)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .collect(),
        )
    }

    /// Record one join ask about mentions `sides` in one transaction: its job (terminal),
    /// the call, and the proposal or the rejection. The call's task version names the job.
    ///
    /// # Errors
    /// `InvalidInput` for a call of another task, or evidence outside its sentence.
    pub async fn commit_join(
        &self,
        sides: [i64; 2],
        call: &NewModelCall,
        answer: &JoinAnswer<'_>,
    ) -> Result<JoinCommit> {
        if call.version.task != Task::Join {
            return Err(StoreError::InvalidInput(format!(
                "commit_join needs a join call, not {}",
                call.version.task
            )));
        }
        let job_id = join_job_id(&call.version, sides[0], sides[1]);
        let fingerprint = call.version.fingerprint();
        let (call_outcome, state, reason) = match answer {
            JoinAnswer::Accepted { .. } => (CallOutcome::Accepted, JobState::Accepted, None),
            JoinAnswer::Rejected {
                rejection,
                envelope,
            } => (
                if *envelope {
                    CallOutcome::InvalidEnvelope
                } else {
                    CallOutcome::Rejected
                },
                JobState::Invalid,
                Some(rejection.reason),
            ),
        };
        let mut tx = self.pool.begin().await?;
        let created = insert_join_job(&mut tx, &job_id, &call.version, &fingerprint, state).await?;
        if !created {
            tx.rollback().await?;
            return Ok(JoinCommit::AlreadyAsked);
        }
        let call_id = insert_call(
            &mut tx,
            &job_id,
            &fingerprint,
            call,
            call_outcome,
            reason.map(Reason::as_str),
        )
        .await?;
        let committed = match answer {
            JoinAnswer::Rejected { rejection, .. } => {
                insert_rejections(
                    &mut tx,
                    Some(call_id),
                    &job_id,
                    Task::Join,
                    std::slice::from_ref(*rejection),
                )
                .await?;
                JoinCommit::Committed {
                    proposal_id: None,
                    candidate: None,
                }
            }
            JoinAnswer::Accepted { verdict, .. } => {
                let id = insert_proposal(&mut tx, call_id, &job_id, sides, answer).await?;
                let candidate = if *verdict == JoinVerdict::One {
                    read_candidates(&mut tx, RowKind::Join, &[id])
                        .await?
                        .into_iter()
                        .next()
                } else {
                    None
                };
                JoinCommit::Committed {
                    proposal_id: Some(id),
                    candidate,
                }
            }
        };
        tx.commit().await?;
        Ok(committed)
    }
}

/// The ask's job, terminal from the start; `false` when a job of this id is on record.
async fn insert_join_job(
    tx: &mut sqlx::PgConnection,
    job_id: &JobId,
    v: &TaskVersion,
    fingerprint: &str,
    state: JobState,
) -> Result<bool> {
    let created: Option<String> = sqlx::query_scalar(
        "INSERT INTO jobs (job_id, task, task_version_fingerprint, prompt_version, schema_id,
                           schema_version, schema_sha256, model, state, attempts, completed_at)
         VALUES ($1, 'join', $2, $3, $4, $5, $6, $7, $8, 1, now())
         ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
    )
    .bind(job_id.as_str())
    .bind(fingerprint)
    .bind(&v.prompt_version)
    .bind(&v.schema_id)
    .bind(i32::try_from(v.schema_version).unwrap_or(i32::MAX))
    .bind(&v.schema_sha256)
    .bind(&v.model)
    .bind(state.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    Ok(created.is_some())
}

/// An accepted verdict's row, its evidence located in its revision.
async fn insert_proposal(
    tx: &mut sqlx::PgConnection,
    call_id: i64,
    job_id: &JobId,
    sides: [i64; 2],
    answer: &JoinAnswer<'_>,
) -> Result<i64> {
    let JoinAnswer::Accepted {
        verdict,
        source_handle,
        sentence,
        start,
        end,
    } = answer
    else {
        return Err(StoreError::Invariant("a rejection has no proposal".into()));
    };
    let quote = sentence
        .text
        .get(*start..*end)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| {
            StoreError::InvalidInput(format!(
                "evidence {start}..{end} is not inside its sentence"
            ))
        })?;
    let offset = |at: usize| {
        i32::try_from(sentence.start + at)
            .map_err(|_| StoreError::InvalidInput("evidence offset too large".into()))
    };
    Ok(sqlx::query_scalar(
        "INSERT INTO entity_join_proposals (call_id, job_id, entity_id, joined_to, verdict,
             source_handle, evidence_revision_id, evidence_start, evidence_end, evidence_quote)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
    )
    .bind(call_id)
    .bind(job_id.as_str())
    .bind(sides[0])
    .bind(sides[1])
    .bind(verdict.as_str())
    .bind(*source_handle)
    .bind(sentence.revision_id)
    .bind(offset(*start)?)
    .bind(offset(*end)?)
    .bind(quote)
    .fetch_one(&mut *tx)
    .await?)
}
