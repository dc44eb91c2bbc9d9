//! Committing a job's outcome: one transaction per job, idempotent on the job.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use relata_core::{Handle, JobId, Reason, RowKind, Task};
use relata_validate::{ClassifyRows, ExtractRows, Finding, Judgement, Rejection, Verdict};
use sqlx::PgConnection;

use crate::error::{Result, StoreError};
use crate::jobs::{
    CallColumns, LockedJob, bounded, check_call_version, finish_job, insert_call, lock_job,
};
use crate::normalize::normalize_name;
use crate::types::{
    CallOutcome, ChunkRow, CommitOutcome, Committed, JobState, NewModelCall, RowCounts,
};
use crate::{Store, to_i32};

fn outcome_of(verdict: Verdict) -> (CallOutcome, JobState) {
    match verdict {
        Verdict::Accepted => (CallOutcome::Accepted, JobState::Accepted),
        Verdict::Partial => (CallOutcome::Partial, JobState::Partial),
        Verdict::Rejected => (CallOutcome::Rejected, JobState::Invalid),
    }
}

fn expect_task(job_id: &JobId, job: &LockedJob, task: Task) -> Result<()> {
    if job.task != task {
        return Err(StoreError::InvalidInput(format!(
            "job {job_id} is a {} job, not {task}",
            job.task
        )));
    }
    Ok(())
}

impl Store {
    /// Commit an extract job's outcome: the model call, the accepted entities and claims,
    /// their warnings, one `invalid_outputs` row per rejection, and the job's terminal
    /// state (`accepted`, `partial`, or `invalid` when the verdict is `Rejected`).
    ///
    /// `chunk` must be the job's chunk, and the judgement must have been made with
    /// `chunk.text` as the source: claim offsets are the gate's offsets within the chunk
    /// plus `chunk.start_byte`, and every quote is checked against the text before insert.
    ///
    /// All of it is **one statement** (and so one implicit transaction, one round trip):
    /// its first step moves the job from `queued` to its terminal state, guarded on the
    /// job's task, chunk and task version, and every insert reads the call id through that
    /// step, so when the guard matches nothing, nothing is written. A concurrent commit of
    /// the same job waits on the job's row lock and then finds it terminal. If the job is
    /// already terminal, [`CommitOutcome::AlreadyCommitted`] is returned; if it is another
    /// task's, another chunk's or another task version's, the error says which.
    pub async fn commit_extract(
        &self,
        job_id: &JobId,
        call: &NewModelCall,
        judgement: &Judgement<ExtractRows>,
        chunk: &ChunkRow,
    ) -> Result<CommitOutcome> {
        if judgement.task() != Task::Extract {
            return Err(StoreError::InvalidInput(
                "commit_extract needs an extract judgement".into(),
            ));
        }
        let (call_outcome, state) = outcome_of(judgement.verdict());
        let call_reason = judgement.response_rejection().map(|r| r.reason.as_str());
        let columns = CallColumns::of(call)?;
        let rows = judgement.accepted();

        let entities = rows.entities();
        let mut e_index = Vec::with_capacity(entities.len());
        let mut e_name = Vec::with_capacity(entities.len());
        let mut e_key = Vec::with_capacity(entities.len());
        let mut e_type = Vec::with_capacity(entities.len());
        let mut first_by_name: HashMap<String, usize> = HashMap::new();
        let mut w = WarningColumns::default();
        for e in entities {
            let key = normalize_name(e.name());
            e_index.push(to_i32(e.index(), "row index")?);
            e_name.push(e.name());
            first_by_name.entry(key.clone()).or_insert(e.index());
            e_key.push(key);
            e_type.push(e.entity_type().as_str());
            w.push(RowKind::Entity, e.index(), e.warnings())?;
        }

        // Every claim is checked before anything is sent. A claim names its entity by the
        // entity's row index; the statement turns that into the id it has just assigned.
        let claims = rows.claims();
        let mut c_index = Vec::with_capacity(claims.len());
        let mut c_statement = Vec::with_capacity(claims.len());
        let mut c_quote = Vec::with_capacity(claims.len());
        let mut c_start = Vec::with_capacity(claims.len());
        let mut c_end = Vec::with_capacity(claims.len());
        let mut c_subject = Vec::with_capacity(claims.len());
        let mut c_subject_key = Vec::with_capacity(claims.len());
        let mut c_entity_row: Vec<Option<i32>> = Vec::with_capacity(claims.len());
        for c in claims {
            let (qs, qe) = c.quote_span();
            // Guarantee 5: the quote is the chunk's own text at the gate's offsets. The
            // database checks the same against the revision text (trigger).
            if chunk.text.get(qs..qe) != Some(c.quote()) {
                return Err(StoreError::Invariant(format!(
                    "claim {} of job {job_id}: quote is not the chunk text at [{qs}, {qe})",
                    c.index()
                )));
            }
            let subject_key = normalize_name(c.subject());
            let entity_row = match c.subject_entity_index() {
                Some(i) if entities.iter().any(|e| e.index() == i) => Some(i),
                Some(i) => {
                    return Err(StoreError::Invariant(format!(
                        "claim {} names entity row {i}, which was not accepted",
                        c.index()
                    )));
                }
                // The subject check was disabled: link by name if this response has the
                // entity, otherwise leave the claim without one.
                None => first_by_name.get(&subject_key).copied(),
            };
            c_index.push(to_i32(c.index(), "row index")?);
            c_statement.push(c.statement());
            c_quote.push(c.quote());
            c_start.push(to_i32(chunk.start_byte + qs, "quote start")?);
            c_end.push(to_i32(chunk.start_byte + qe, "quote end")?);
            c_subject.push(c.subject());
            c_subject_key.push(subject_key);
            c_entity_row.push(entity_row.map(|i| to_i32(i, "row index")).transpose()?);
            w.push(RowKind::Claim, c.index(), c.warnings())?;
        }
        let rejections = judgement.rejections();
        let x = RejectionColumns::of(&rejections)?;

        let written: Vec<(i16, i64, i32)> = sqlx::query_as(COMMIT_EXTRACT)
            .bind(job_id.as_str()) // $1
            .bind(state.as_str())
            .bind(chunk.id)
            .bind(call.version.fingerprint())
            .bind(columns.task) // $5
            .bind(columns.model)
            .bind(columns.prompt_version)
            .bind(columns.schema_id)
            .bind(columns.schema_version)
            .bind(columns.schema_sha256) // $10
            .bind(columns.started_at)
            .bind(columns.finished_at)
            .bind(columns.duration_ms)
            .bind(columns.attempts)
            .bind(columns.prompt_tokens) // $15
            .bind(columns.completion_tokens)
            .bind(call_outcome.as_str())
            .bind(call_reason)
            .bind(columns.excerpt)
            .bind(chunk.document_id) // $20
            .bind(chunk.revision_id)
            .bind(&e_index)
            .bind(&e_name)
            .bind(&e_key)
            .bind(&e_type) // $25
            .bind(&c_index)
            .bind(&c_statement)
            .bind(&c_quote)
            .bind(&c_start)
            .bind(&c_end) // $30
            .bind(&c_subject)
            .bind(&c_subject_key)
            .bind(&c_entity_row)
            .bind(&w.kind)
            .bind(&w.index) // $35
            .bind(&w.warning)
            .bind(&w.reason)
            .bind(&w.detail)
            .bind(&x.reason)
            .bind(&x.kind) // $40
            .bind(&x.index)
            .bind(&x.detail)
            .bind(columns.sent_schema_sha256) // $43
            .fetch_all(&self.pool)
            .await?;

        let mut call_id = None;
        let mut entity_by_index: HashMap<usize, i64> = HashMap::new();
        let mut claim_by_index: HashMap<usize, i64> = HashMap::new();
        let mut counts = RowCounts::default();
        for (kind, id, index) in written {
            match kind {
                0 => call_id = Some(id),
                1 => {
                    entity_by_index.insert(index as usize, id);
                }
                2 => {
                    claim_by_index.insert(index as usize, id);
                }
                3 => counts.warnings = count(id)?,
                4 => counts.rejections = count(id)?,
                k => return Err(StoreError::Invariant(format!("unknown row kind {k}"))),
            }
        }
        let Some(call_id) = call_id else {
            return self.refused_extract(job_id, call, chunk).await;
        };
        let mut entity_ids = Vec::with_capacity(entities.len());
        for e in entities {
            entity_ids.push(*entity_by_index.get(&e.index()).ok_or_else(|| {
                StoreError::Invariant(format!("entity row {} was not inserted", e.index()))
            })?);
        }
        let mut claim_ids = Vec::with_capacity(claims.len());
        for c in claims {
            claim_ids.push(*claim_by_index.get(&c.index()).ok_or_else(|| {
                StoreError::Invariant(format!("claim row {} was not inserted", c.index()))
            })?);
        }
        counts.entities = entity_ids.len();
        counts.claims = claim_ids.len();
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state,
            entity_ids,
            claim_ids,
            relation_ids: Vec::new(),
            counts,
        }))
    }

    /// Why the guarded commit statement wrote nothing: the job is missing, already
    /// terminal, or not the job the caller believes it is.
    async fn refused_extract(
        &self,
        job_id: &JobId,
        call: &NewModelCall,
        chunk: &ChunkRow,
    ) -> Result<CommitOutcome> {
        let mut conn = self.pool.acquire().await?;
        let job = lock_job(&mut conn, job_id).await?;
        if job.state.is_terminal() {
            return Ok(CommitOutcome::AlreadyCommitted { state: job.state });
        }
        expect_task(job_id, &job, Task::Extract)?;
        if job.chunk_id != Some(chunk.id) {
            return Err(StoreError::InvalidInput(format!(
                "job {job_id} is for chunk {:?}, not chunk {}",
                job.chunk_id, chunk.id
            )));
        }
        check_call_version(job_id, &job.fingerprint, call)?;
        Err(StoreError::Invariant(format!(
            "job {job_id} is queued and matches the commit, yet the commit wrote nothing"
        )))
    }

    /// Commit a classify job's outcome in one transaction. Relations name claims by the
    /// handles shown to the model; `handle_map` is the worker's own record of what each
    /// handle it sent stands for. Every accepted relation must resolve through it to a pair
    /// the job carries (the gate has already checked the handles and pairs against what
    /// was sent; a failure here is a bug and aborts the commit).
    pub async fn commit_classify(
        &self,
        job_id: &JobId,
        call: &NewModelCall,
        judgement: &Judgement<ClassifyRows>,
        handle_map: &BTreeMap<Handle, i64>,
    ) -> Result<CommitOutcome> {
        if judgement.task() != Task::Classify {
            return Err(StoreError::InvalidInput(
                "commit_classify needs a classify judgement".into(),
            ));
        }
        let mut tx = self.pool.begin().await?;
        let job = lock_job(&mut tx, job_id).await?;
        if job.state.is_terminal() {
            tx.rollback().await?;
            return Ok(CommitOutcome::AlreadyCommitted { state: job.state });
        }
        expect_task(job_id, &job, Task::Classify)?;
        let pairs = job.pairs.clone().unwrap_or_default();

        let (call_outcome, state) = outcome_of(judgement.verdict());
        let call_reason = judgement.response_rejection().map(|r| r.reason.as_str());
        let call_id = insert_call(&mut tx, job_id, &job, call, call_outcome, call_reason).await?;
        let mut counts = RowCounts::default();
        let mut relation_ids = Vec::new();
        for r in judgement.accepted().relations() {
            let (ha, hb) = r.pair();
            let resolve = |h: Handle| {
                handle_map.get(&h).copied().ok_or_else(|| {
                    StoreError::Invariant(format!(
                        "relation {} names handle {h}, not in the handle map",
                        r.index()
                    ))
                })
            };
            let (a, b) = (resolve(ha)?, resolve(hb)?);
            if !pairs.contains(&(a.min(b), a.max(b))) {
                return Err(StoreError::Invariant(format!(
                    "relation {} pairs claims {a} and {b}, which job {job_id} did not carry",
                    r.index()
                )));
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO claim_relations (call_id, job_id, claim_a, claim_b, relation,
                                              task_version_fingerprint, row_index)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(call_id)
            .bind(job_id.as_str())
            .bind(a)
            .bind(b)
            .bind(r.relation().as_str())
            .bind(&job.fingerprint)
            .bind(to_i32(r.index(), "row index")?)
            .fetch_one(&mut *tx)
            .await?;
            relation_ids.push(id);
            counts.warnings +=
                insert_relation_warnings(&mut tx, call_id, job_id, r.index(), id, r.warnings())
                    .await?;
        }
        counts.relations = relation_ids.len();
        counts.rejections = insert_rejections(
            &mut tx,
            Some(call_id),
            job_id,
            Task::Classify,
            &judgement.rejections(),
        )
        .await?;
        finish_job(&mut tx, job_id, state).await?;
        tx.commit().await?;
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state,
            entity_ids: Vec::new(),
            claim_ids: Vec::new(),
            relation_ids,
            counts,
        }))
    }

    /// Commit a response rejected before the gate saw it (truncated at the token limit,
    /// a refusal, an empty body): the call (`invalid_envelope`), one whole-response
    /// `invalid_outputs` row, and the job `invalid`. Never retried.
    pub async fn commit_invalid_envelope(
        &self,
        job_id: &JobId,
        call: &NewModelCall,
        reason: Reason,
        detail: &str,
    ) -> Result<CommitOutcome> {
        let mut tx = self.pool.begin().await?;
        let job = lock_job(&mut tx, job_id).await?;
        if job.state.is_terminal() {
            tx.rollback().await?;
            return Ok(CommitOutcome::AlreadyCommitted { state: job.state });
        }
        let call_id = insert_call(
            &mut tx,
            job_id,
            &job,
            call,
            CallOutcome::InvalidEnvelope,
            Some(reason.as_str()),
        )
        .await?;
        let rejection = Rejection {
            kind: None,
            index: None,
            reason,
            detail: detail.to_owned(),
        };
        let rejections =
            insert_rejections(&mut tx, Some(call_id), job_id, job.task, &[rejection]).await?;
        finish_job(&mut tx, job_id, JobState::Invalid).await?;
        tx.commit().await?;
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state: JobState::Invalid,
            entity_ids: Vec::new(),
            claim_ids: Vec::new(),
            relation_ids: Vec::new(),
            counts: RowCounts {
                rejections,
                ..RowCounts::default()
            },
        }))
    }
}

/// A relation's warnings (extract rows' warnings go in with the extract statement).
async fn insert_relation_warnings(
    conn: &mut PgConnection,
    call_id: i64,
    job_id: &JobId,
    index: usize,
    relation_id: i64,
    findings: &[Finding],
) -> Result<usize> {
    for f in findings {
        sqlx::query(
            "INSERT INTO warnings (call_id, job_id, row_kind, row_index, relation_id, warning,
                                   reason, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(call_id)
        .bind(job_id.as_str())
        .bind(RowKind::Relation.as_str())
        .bind(to_i32(index, "row index")?)
        .bind(relation_id)
        .bind(f.warning.as_str())
        .bind(f.reason.map(|r| r.as_str()))
        .bind(bounded(&f.detail))
        .execute(&mut *conn)
        .await?;
    }
    Ok(findings.len())
}

async fn insert_rejections(
    conn: &mut PgConnection,
    call_id: Option<i64>,
    job_id: &JobId,
    task: Task,
    rejections: &[Rejection],
) -> Result<usize> {
    if rejections.is_empty() {
        return Ok(0);
    }
    // One statement for all of a response's rejections.
    let x = RejectionColumns::of(rejections)?;
    sqlx::query(
        "INSERT INTO invalid_outputs (call_id, job_id, task, reason, row_kind, row_index, detail)
         SELECT $1, $2, $3, r.reason, r.row_kind, r.row_index, r.detail
         FROM UNNEST($4::text[], $5::text[], $6::int[], $7::text[])
              WITH ORDINALITY AS r(reason, row_kind, row_index, detail, n)
         ORDER BY r.n",
    )
    .bind(call_id)
    .bind(job_id.as_str())
    .bind(task.as_str())
    .bind(&x.reason)
    .bind(&x.kind)
    .bind(&x.index)
    .bind(&x.detail)
    .execute(&mut *conn)
    .await?;
    Ok(rejections.len())
}

/// The extract commit (see [`Store::commit_extract`]). Every data-modifying step reads
/// `call`, which reads `job`: the guard decides for all of them. Foreign keys between
/// rows inserted by sibling steps (a claim's entity, a warning's row) are checked at the
/// end of the statement, when all of them exist.
const COMMIT_EXTRACT: &str = "
WITH job AS (
    UPDATE jobs SET state = $2, attempts = attempts + 1, completed_at = now(), updated_at = now()
    WHERE job_id = $1 AND state = 'queued' AND task = 'extract' AND chunk_id = $3
      AND task_version_fingerprint = $4
    RETURNING job_id
), call AS (
    INSERT INTO model_calls (job_id, task, model, prompt_version, schema_id, schema_version,
                             schema_sha256, started_at, finished_at, duration_ms, attempts,
                             prompt_tokens, completion_tokens, outcome, reason, excerpt,
                             sent_schema_sha256)
    SELECT job.job_id, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
           $43
    FROM job
    RETURNING id
), e AS (
    INSERT INTO entities (call_id, job_id, document_id, revision_id, chunk_id, row_index, name,
                          name_normalized, entity_type)
    SELECT call.id, $1, $20, $21, $3, r.row_index, r.name, r.name_normalized, r.entity_type
    FROM call, UNNEST($22::int[], $23::text[], $24::text[], $25::text[])
         WITH ORDINALITY AS r(row_index, name, name_normalized, entity_type, n)
    ORDER BY r.n
    RETURNING id, row_index
), c AS (
    INSERT INTO claims (call_id, job_id, document_id, revision_id, chunk_id, row_index,
                        statement, quote, quote_start, quote_end, subject, subject_normalized,
                        entity_id)
    SELECT call.id, $1, $20, $21, $3, r.row_index, r.statement, r.quote, r.quote_start,
           r.quote_end, r.subject, r.subject_normalized,
           (SELECT e.id FROM e WHERE e.row_index = r.entity_row)
    FROM call, UNNEST($26::int[], $27::text[], $28::text[], $29::int[], $30::int[],
                      $31::text[], $32::text[], $33::int[])
         WITH ORDINALITY AS r(row_index, statement, quote, quote_start, quote_end, subject,
                              subject_normalized, entity_row, n)
    ORDER BY r.n
    RETURNING id, row_index
), w AS (
    INSERT INTO warnings (call_id, job_id, row_kind, row_index, entity_id, claim_id, warning,
                          reason, detail)
    SELECT call.id, $1, r.row_kind, r.row_index,
           CASE WHEN r.row_kind = 'entity'
                THEN (SELECT e.id FROM e WHERE e.row_index = r.row_index) END,
           CASE WHEN r.row_kind = 'claim'
                THEN (SELECT c.id FROM c WHERE c.row_index = r.row_index) END,
           r.warning, r.reason, r.detail
    FROM call, UNNEST($34::text[], $35::int[], $36::text[], $37::text[], $38::text[])
         WITH ORDINALITY AS r(row_kind, row_index, warning, reason, detail, n)
    ORDER BY r.n
    RETURNING 1
), x AS (
    INSERT INTO invalid_outputs (call_id, job_id, task, reason, row_kind, row_index, detail)
    SELECT call.id, $1, 'extract', r.reason, r.row_kind, r.row_index, r.detail
    FROM call, UNNEST($39::text[], $40::text[], $41::int[], $42::text[])
         WITH ORDINALITY AS r(reason, row_kind, row_index, detail, n)
    ORDER BY r.n
    RETURNING 1
)
SELECT 0::int2, id, 0 FROM call
UNION ALL SELECT 1::int2, id, row_index FROM e
UNION ALL SELECT 2::int2, id, row_index FROM c
UNION ALL SELECT 3::int2, count(*), 0 FROM w
UNION ALL SELECT 4::int2, count(*), 0 FROM x";

fn count(n: i64) -> Result<usize> {
    usize::try_from(n).map_err(|_| StoreError::Invariant(format!("negative row count {n}")))
}

/// Warnings of accepted rows, column by column, for one multi-row insert.
#[derive(Default)]
struct WarningColumns<'a> {
    kind: Vec<&'static str>,
    index: Vec<i32>,
    warning: Vec<&'static str>,
    reason: Vec<Option<&'static str>>,
    detail: Vec<Cow<'a, str>>,
}

impl<'a> WarningColumns<'a> {
    fn push(&mut self, kind: RowKind, index: usize, findings: &'a [Finding]) -> Result<()> {
        for f in findings {
            self.kind.push(kind.as_str());
            self.index.push(to_i32(index, "row index")?);
            self.warning.push(f.warning.as_str());
            self.reason.push(f.reason.map(|r| r.as_str()));
            self.detail.push(bounded(&f.detail));
        }
        Ok(())
    }
}

/// Rejections, column by column, for one multi-row insert.
struct RejectionColumns<'a> {
    reason: Vec<&'static str>,
    kind: Vec<Option<&'static str>>,
    index: Vec<Option<i32>>,
    detail: Vec<Cow<'a, str>>,
}

impl<'a> RejectionColumns<'a> {
    fn of(rejections: &'a [Rejection]) -> Result<RejectionColumns<'a>> {
        let mut x = RejectionColumns {
            reason: Vec::with_capacity(rejections.len()),
            kind: Vec::with_capacity(rejections.len()),
            index: Vec::with_capacity(rejections.len()),
            detail: Vec::with_capacity(rejections.len()),
        };
        for r in rejections {
            x.reason.push(r.reason.as_str());
            x.kind.push(r.kind.map(|k| k.as_str()));
            x.index
                .push(r.index.map(|i| to_i32(i, "row index")).transpose()?);
            x.detail.push(bounded(&r.detail));
        }
        Ok(x)
    }
}
