//! The job ledger: creating jobs, publishing them, attempts and dead letters, and the
//! helpers every terminal operation shares (lock the job, record the call, finish).

use chrono::{DateTime, Utc};
use relata_core::{JobId, JobInput, Task, TaskVersion};
use sqlx::types::Json;
use sqlx::{PgConnection, Row};
use std::borrow::Cow;

use crate::error::{Result, StoreError};
use relata_core::DeadReason;

use crate::documents::{chunk_columns, chunk_row};
use crate::types::{
    CallOutcome, ChunkRow, CommitOutcome, Committed, JobRow, JobState, JobToPublish, NewModelCall,
    RowCounts,
};
use crate::{EXCERPT_MAX_CHARS, Store, parse_label};

/// The columns [`job_row`] reads, from `jobs` aliased `j`.
macro_rules! job_columns {
    () => {
        "j.job_id, j.task, j.task_version_fingerprint, j.prompt_version, j.schema_id,
         j.schema_version, j.schema_sha256, j.model, j.chunk_id, j.pairs, j.origin_job_id,
         j.state, j.attempts, j.dead_reason, j.published_at, j.created_at, j.updated_at,
         j.completed_at"
    };
}

/// The job id of the extract job for a chunk (see the crate docs for the input bytes).
pub fn extract_job_id(version: &TaskVersion, chunk_id: i64, chunk_sha256: &str) -> JobId {
    JobId::derive(
        version,
        format!("chunk:{chunk_id}:{chunk_sha256}").as_bytes(),
    )
}

/// The job id of a classify job for a set of pairs (each `(lo, hi)`; any order).
pub fn classify_job_id(version: &TaskVersion, pairs: &[(i64, i64)]) -> JobId {
    let mut sorted = pairs.to_vec();
    sorted.sort_unstable();
    let body = sorted
        .iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(",");
    JobId::derive(version, format!("pairs:{body}").as_bytes())
}

impl Store {
    /// Create (idempotently) the extract job of `version` for each chunk, and return every
    /// job of this version for these chunks that is still queued and not yet published —
    /// the new ones, and any created earlier by a run that crashed before publishing.
    /// Once published ([`Store::mark_published`]) or completed, a job is never returned
    /// again: a second ingestion of the same corpus publishes nothing.
    pub async fn ensure_extract_jobs(
        &self,
        version: &TaskVersion,
        chunk_ids: &[i64],
    ) -> Result<Vec<JobToPublish>> {
        if version.task != Task::Extract {
            return Err(StoreError::InvalidInput(format!(
                "ensure_extract_jobs needs an extract task version, got {}",
                version.task
            )));
        }
        if chunk_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query("SELECT id, sha256 FROM chunks WHERE id = ANY($1)")
            .bind(chunk_ids)
            .fetch_all(&mut *tx)
            .await?;
        let mut ids = Vec::with_capacity(rows.len());
        let mut chunks = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get(0)?;
            let sha: String = row.try_get(1)?;
            ids.push(extract_job_id(version, id, &sha).as_str().to_owned());
            chunks.push(id);
        }
        if let Some(missing) = chunk_ids.iter().find(|c| !chunks.contains(c)) {
            return Err(StoreError::ChunkNotFound(*missing));
        }
        sqlx::query(
            "INSERT INTO jobs (job_id, task, task_version_fingerprint, prompt_version, schema_id,
                               schema_version, schema_sha256, model, chunk_id)
             SELECT j, 'extract', $3, $4, $5, $6, $7, $8, c
             FROM unnest($1::text[], $2::bigint[]) AS t(j, c)
             ON CONFLICT (job_id) DO NOTHING",
        )
        .bind(&ids)
        .bind(&chunks)
        .bind(version.fingerprint())
        .bind(&version.prompt_version)
        .bind(&version.schema_id)
        .bind(schema_version(version)?)
        .bind(&version.schema_sha256)
        .bind(&version.model)
        .execute(&mut *tx)
        .await?;
        let pending = sqlx::query(
            "SELECT job_id, chunk_id FROM jobs
             WHERE job_id = ANY($1) AND state = 'queued' AND published_at IS NULL
             ORDER BY chunk_id",
        )
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        pending
            .iter()
            .map(|row| {
                Ok(JobToPublish {
                    job_id: parse_job_id(row.try_get(0)?)?,
                    input: JobInput::Extract {
                        chunk_id: row.try_get(1)?,
                    },
                })
            })
            .collect()
    }

    /// Record that these jobs were published (confirmed by the broker).
    pub async fn mark_published(&self, job_ids: &[JobId]) -> Result<u64> {
        let ids: Vec<&str> = job_ids.iter().map(JobId::as_str).collect();
        let done = sqlx::query(
            "UPDATE jobs SET published_at = now(), updated_at = now()
             WHERE job_id = ANY($1) AND published_at IS NULL",
        )
        .bind(&ids)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Every queued, unpublished job of a task version (for a producer or sweeper that
    /// re-publishes what a crash left behind), oldest first, at most `limit`.
    pub async fn unpublished_jobs(
        &self,
        version: &TaskVersion,
        limit: i64,
    ) -> Result<Vec<JobToPublish>> {
        let rows = sqlx::query(
            "SELECT job_id, task, chunk_id, pairs FROM jobs
             WHERE task_version_fingerprint = $1 AND state = 'queued' AND published_at IS NULL
             ORDER BY created_at, job_id LIMIT $2",
        )
        .bind(version.fingerprint())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(to_publish).collect()
    }

    /// A job as the ledger holds it.
    pub async fn job(&self, job_id: &JobId) -> Result<Option<JobRow>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs j WHERE j.job_id = $1"
        ))
        .bind(job_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(job_row).transpose()
    }

    /// An extract job and its chunk, in one round trip: what an extractor reads before it
    /// calls the model. The chunk is joined, not optional: the jobs table's check gives
    /// every extract job a `chunk_id` and its foreign key keeps that chunk. `None` when no
    /// job with a chunk has this id (no job at all, or a classify job: [`Store::job`]
    /// tells them apart).
    pub async fn job_with_chunk(&self, job_id: &JobId) -> Result<Option<(JobRow, ChunkRow)>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            ", ",
            chunk_columns!(),
            " FROM jobs j JOIN chunks c ON c.id = j.chunk_id WHERE j.job_id = $1"
        ))
        .bind(job_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(|row| Ok((job_row(row)?, chunk_row(row)?)))
            .transpose()
    }

    /// Count one failed execution of a job that will be tried again (a delayed requeue
    /// after transport failures), recording the call if one was made. Returns the job's
    /// attempt count. A terminal job is left as it is.
    pub async fn record_attempt(&self, job_id: &JobId, call: Option<&NewModelCall>) -> Result<i32> {
        let mut tx = self.pool.begin().await?;
        let job = lock_job(&mut tx, job_id).await?;
        if job.state.is_terminal() {
            tx.rollback().await?;
            return Ok(job.attempts);
        }
        if let Some(call) = call {
            insert_call(
                &mut tx,
                job_id,
                &job.fingerprint,
                call,
                CallOutcome::TransportError,
                None,
            )
            .await?;
        }
        let attempts: i32 = sqlx::query_scalar(
            "UPDATE jobs SET attempts = attempts + 1, updated_at = now() WHERE job_id = $1
             RETURNING attempts",
        )
        .bind(job_id.as_str())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(attempts)
    }

    /// Dead-letter a job: terminal, with its reason. The call that failed (if any) is
    /// recorded as `transport_error` (for `transport_exhausted`) or `permanent_error`.
    pub async fn mark_dead(
        &self,
        job_id: &JobId,
        reason: DeadReason,
        detail: &str,
        call: Option<&NewModelCall>,
    ) -> Result<CommitOutcome> {
        let mut tx = self.pool.begin().await?;
        let job = lock_job(&mut tx, job_id).await?;
        if job.state.is_terminal() {
            tx.rollback().await?;
            return Ok(CommitOutcome::AlreadyCommitted { state: job.state });
        }
        let call_id = match call {
            Some(call) => {
                let outcome = match reason {
                    DeadReason::TransportExhausted => CallOutcome::TransportError,
                    _ => CallOutcome::PermanentError,
                };
                Some(
                    insert_call(
                        &mut tx,
                        job_id,
                        &job.fingerprint,
                        call,
                        outcome,
                        Some(reason.as_str()),
                    )
                    .await?,
                )
            }
            None => None,
        };
        sqlx::query(
            "UPDATE jobs SET state = 'dead', dead_reason = $2, dead_detail = $3,
                             attempts = attempts + 1, completed_at = now(), updated_at = now()
             WHERE job_id = $1",
        )
        .bind(job_id.as_str())
        .bind(reason.as_str())
        .bind(bounded(detail))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(CommitOutcome::Committed(Committed {
            call_id,
            state: JobState::Dead,
            entity_ids: Vec::new(),
            claim_ids: Vec::new(),
            relation_ids: Vec::new(),
            counts: RowCounts::default(),
            candidates: Vec::new(),
        }))
    }
}

/// The ledger row of a job, locked for the rest of the transaction.
#[derive(Debug)]
pub(crate) struct LockedJob {
    pub fingerprint: String,
    pub state: JobState,
    pub attempts: i32,
    pub input: JobInput,
}

/// A job's input from its `task`, `chunk_id` and `pairs` columns; a row that holds other
/// than exactly its task's input is refused, naming the job.
fn job_input(
    job_id: &str,
    task: Task,
    chunk_id: Option<i64>,
    pairs: Option<Json<Vec<(i64, i64)>>>,
) -> Result<JobInput> {
    JobInput::from_columns(task, chunk_id, pairs.map(|p| p.0))
        .map_err(|e| StoreError::Invariant(format!("stored job {job_id}: {e}")))
}

/// A `jobs` row as a [`JobRow`], from a row that selected `job_columns!`.
fn job_row(row: &sqlx::postgres::PgRow) -> Result<JobRow> {
    let version = TaskVersion {
        task: parse_label(row.try_get("task")?)?,
        prompt_version: row.try_get("prompt_version")?,
        schema_id: row.try_get("schema_id")?,
        schema_version: u32::try_from(row.try_get::<i32, _>("schema_version")?)
            .map_err(|_| StoreError::Invariant("negative schema_version".into()))?,
        schema_sha256: row.try_get("schema_sha256")?,
        model: row.try_get("model")?,
    };
    let job_id: String = row.try_get("job_id")?;
    let input = job_input(
        &job_id,
        version.task,
        row.try_get("chunk_id")?,
        row.try_get("pairs")?,
    )?;
    let dead: Option<String> = row.try_get("dead_reason")?;
    let origin: Option<String> = row.try_get("origin_job_id")?;
    Ok(JobRow {
        job_id: parse_job_id(job_id)?,
        version,
        task_version_fingerprint: row.try_get("task_version_fingerprint")?,
        input,
        origin_job_id: origin.map(parse_job_id).transpose()?,
        state: parse_label(row.try_get("state")?)?,
        attempts: row.try_get("attempts")?,
        dead_reason: dead.map(parse_label).transpose()?,
        published_at: row.try_get("published_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        completed_at: row.try_get("completed_at")?,
    })
}

/// `SELECT … FOR UPDATE` the job: a concurrent commit of the same job waits here, then
/// sees the terminal state the first one wrote.
pub(crate) async fn lock_job(conn: &mut PgConnection, job_id: &JobId) -> Result<LockedJob> {
    let row = sqlx::query(
        "SELECT task, task_version_fingerprint, state, attempts, chunk_id, pairs
         FROM jobs WHERE job_id = $1 FOR UPDATE",
    )
    .bind(job_id.as_str())
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| StoreError::JobNotFound(job_id.clone()))?;
    Ok(LockedJob {
        fingerprint: row.try_get(1)?,
        state: parse_label(row.try_get(2)?)?,
        attempts: row.try_get(3)?,
        input: job_input(
            job_id.as_str(),
            parse_label(row.try_get(0)?)?,
            row.try_get(4)?,
            row.try_get(5)?,
        )?,
    })
}

/// A model call's columns as the database stores them; shared by every statement that
/// writes a call record, so that each writes the same values the same way.
pub(crate) struct CallColumns<'a> {
    pub task: &'static str,
    pub model: &'a str,
    pub prompt_version: &'a str,
    pub schema_id: &'a str,
    pub schema_version: i32,
    pub schema_sha256: &'a str,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: i64,
    pub attempts: i32,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub excerpt: Option<Cow<'a, str>>,
    pub sent_schema_sha256: Option<&'a str>,
}

impl<'a> CallColumns<'a> {
    pub(crate) fn of(call: &'a NewModelCall) -> Result<CallColumns<'a>> {
        let tokens = |t: Option<u64>| t.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        Ok(CallColumns {
            task: call.version.task.as_str(),
            model: &call.version.model,
            prompt_version: &call.version.prompt_version,
            schema_id: &call.version.schema_id,
            schema_version: schema_version(&call.version)?,
            schema_sha256: &call.version.schema_sha256,
            started_at: call.started_at,
            finished_at: call.finished_at,
            duration_ms: duration_ms(call.started_at, call.finished_at),
            attempts: i32::try_from(call.attempts.max(1)).unwrap_or(i32::MAX),
            prompt_tokens: tokens(call.prompt_tokens),
            completion_tokens: tokens(call.completion_tokens),
            excerpt: call.excerpt.as_deref().map(bounded),
            sent_schema_sha256: call.sent_schema_sha256.as_deref(),
        })
    }
}

/// The call's task version must be the job's: a call made under another prompt, schema
/// or model is evidence about a different job.
pub(crate) fn check_call_version(
    job_id: &JobId,
    job_fingerprint: &str,
    call: &NewModelCall,
) -> Result<()> {
    if call.version.fingerprint() != job_fingerprint {
        return Err(StoreError::InvalidInput(format!(
            "model call for job {job_id} was made with task version {} (model {}, prompt {}), not the job's",
            call.version.fingerprint(),
            call.version.model,
            call.version.prompt_version
        )));
    }
    Ok(())
}

/// Write the evidence record of one call. The call's task version must be the job's.
pub(crate) async fn insert_call(
    conn: &mut PgConnection,
    job_id: &JobId,
    job_fingerprint: &str,
    call: &NewModelCall,
    outcome: CallOutcome,
    reason: Option<&str>,
) -> Result<i64> {
    check_call_version(job_id, job_fingerprint, call)?;
    let c = CallColumns::of(call)?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO model_calls (job_id, task, model, prompt_version, schema_id, schema_version,
                                  schema_sha256, started_at, finished_at, duration_ms, attempts,
                                  prompt_tokens, completion_tokens, outcome, reason, excerpt,
                                  sent_schema_sha256)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         RETURNING id",
    )
    .bind(job_id.as_str())
    .bind(c.task)
    .bind(c.model)
    .bind(c.prompt_version)
    .bind(c.schema_id)
    .bind(c.schema_version)
    .bind(c.schema_sha256)
    .bind(c.started_at)
    .bind(c.finished_at)
    .bind(c.duration_ms)
    .bind(c.attempts)
    .bind(c.prompt_tokens)
    .bind(c.completion_tokens)
    .bind(outcome.as_str())
    .bind(reason)
    .bind(c.excerpt)
    .bind(c.sent_schema_sha256)
    .fetch_one(&mut *conn)
    .await?;
    Ok(id)
}

/// Make a job terminal with the state of its outcome.
pub(crate) async fn finish_job(
    conn: &mut PgConnection,
    job_id: &JobId,
    state: JobState,
) -> Result<()> {
    sqlx::query(
        "UPDATE jobs SET state = $2, attempts = attempts + 1, completed_at = now(),
                         updated_at = now()
         WHERE job_id = $1",
    )
    .bind(job_id.as_str())
    .bind(state.as_str())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

fn duration_ms(start: DateTime<Utc>, end: DateTime<Utc>) -> i64 {
    (end - start).num_milliseconds().max(0)
}

/// Diagnostic text (a detail, an excerpt) as the store can hold it: at most
/// [`EXCERPT_MAX_CHARS`] characters, a NUL (which PostgreSQL text refuses) shown as U+FFFD.
///
/// Diagnostics quote model output and inputs, so they can carry anything; a detail that
/// made its own commit fail would turn a recorded rejection into a failed job.
pub(crate) fn bounded(s: &str) -> Cow<'_, str> {
    let (s, _) = relata_core::text::head_chars(s, EXCERPT_MAX_CHARS);
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\u{fffd}"))
    } else {
        Cow::Borrowed(s)
    }
}

pub(crate) fn schema_version(v: &TaskVersion) -> Result<i32> {
    i32::try_from(v.schema_version).map_err(|_| {
        StoreError::InvalidInput(format!("schema version {} too large", v.schema_version))
    })
}

pub(crate) fn parse_job_id(s: String) -> Result<JobId> {
    JobId::parse(&s)
        .ok_or_else(|| StoreError::Invariant(format!("stored job id {s:?} is malformed")))
}

pub(crate) fn to_publish(row: &sqlx::postgres::PgRow) -> Result<JobToPublish> {
    let job_id: String = row.try_get("job_id")?;
    let input = job_input(
        &job_id,
        parse_label(row.try_get("task")?)?,
        row.try_get("chunk_id")?,
        row.try_get("pairs")?,
    )?;
    Ok(JobToPublish {
        job_id: parse_job_id(job_id)?,
        input,
    })
}
