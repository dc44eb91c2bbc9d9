//! Committing a job's outcome: one transaction per job, idempotent on the job.

use std::collections::{BTreeMap, HashMap};

use relata_core::{Handle, JobId, Reason, RowKind, Task};
use relata_validate::{ClassifyRows, ExtractRows, Finding, Judgement, Rejection, Verdict};
use sqlx::PgConnection;

use crate::error::{Result, StoreError};
use crate::jobs::{LockedJob, bounded, finish_job, insert_call, lock_job};
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
    /// Commit an extract job's outcome in one transaction: the model call, the accepted
    /// entities and claims, their warnings, one `invalid_outputs` row per rejection, and
    /// the job's terminal state (`accepted`, `partial`, or `invalid` when the verdict is
    /// `Rejected`).
    ///
    /// `chunk` must be the job's chunk, and the judgement must have been made with
    /// `chunk.text` as the source: claim offsets are the gate's offsets within the chunk
    /// plus `chunk.start_byte`, and every quote is checked against the text before insert.
    ///
    /// If the job is already terminal, nothing is written and
    /// [`CommitOutcome::AlreadyCommitted`] is returned.
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
        let mut tx = self.pool.begin().await?;
        let job = lock_job(&mut tx, job_id).await?;
        if job.state.is_terminal() {
            tx.rollback().await?;
            return Ok(CommitOutcome::AlreadyCommitted { state: job.state });
        }
        expect_task(job_id, &job, Task::Extract)?;
        if job.chunk_id != Some(chunk.id) {
            return Err(StoreError::InvalidInput(format!(
                "job {job_id} is for chunk {:?}, not chunk {}",
                job.chunk_id, chunk.id
            )));
        }

        let (call_outcome, state) = outcome_of(judgement.verdict());
        let call_reason = judgement.response_rejection().map(|r| r.reason.as_str());
        let call_id = insert_call(&mut tx, job_id, &job, call, call_outcome, call_reason).await?;
        let mut counts = RowCounts::default();
        let rows = judgement.accepted();

        // All accepted entities in one statement (one round trip, not one per row); ids
        // come back with their row index.
        let entities = rows.entities();
        let mut entity_by_index: HashMap<usize, i64> = HashMap::new();
        if !entities.is_empty() {
            let mut indices = Vec::with_capacity(entities.len());
            let mut names = Vec::with_capacity(entities.len());
            let mut keys = Vec::with_capacity(entities.len());
            let mut types = Vec::with_capacity(entities.len());
            for e in entities {
                indices.push(to_i32(e.index(), "row index")?);
                names.push(e.name());
                keys.push(normalize_name(e.name()));
                types.push(e.entity_type().as_str());
            }
            let inserted: Vec<(i64, i32)> = sqlx::query_as(
                "INSERT INTO entities (call_id, job_id, document_id, revision_id, chunk_id,
                                       row_index, name, name_normalized, entity_type)
                 SELECT $1, $2, $3, $4, $5, r.row_index, r.name, r.name_normalized, r.entity_type
                 FROM UNNEST($6::int[], $7::text[], $8::text[], $9::text[])
                      WITH ORDINALITY AS r(row_index, name, name_normalized, entity_type, n)
                 ORDER BY r.n
                 RETURNING id, row_index",
            )
            .bind(call_id)
            .bind(job_id.as_str())
            .bind(chunk.document_id)
            .bind(chunk.revision_id)
            .bind(chunk.id)
            .bind(&indices)
            .bind(&names)
            .bind(&keys)
            .bind(&types)
            .fetch_all(&mut *tx)
            .await?;
            for (id, index) in inserted {
                entity_by_index.insert(index as usize, id);
            }
        }
        let mut entity_ids = Vec::with_capacity(entities.len());
        let mut entity_by_name: HashMap<String, i64> = HashMap::new();
        for e in entities {
            let id = *entity_by_index.get(&e.index()).ok_or_else(|| {
                StoreError::Invariant(format!("entity row {} was not inserted", e.index()))
            })?;
            entity_ids.push(id);
            entity_by_name.entry(normalize_name(e.name())).or_insert(id);
            counts.warnings += insert_warnings(
                &mut tx,
                call_id,
                job_id,
                RowKind::Entity,
                e.index(),
                Target::Entity(id),
                e.warnings(),
            )
            .await?;
        }
        counts.entities = entity_ids.len();

        // Every claim is checked first, then all are inserted in one statement.
        let claims = rows.claims();
        let mut c_index = Vec::with_capacity(claims.len());
        let mut c_statement = Vec::with_capacity(claims.len());
        let mut c_quote = Vec::with_capacity(claims.len());
        let mut c_start = Vec::with_capacity(claims.len());
        let mut c_end = Vec::with_capacity(claims.len());
        let mut c_subject = Vec::with_capacity(claims.len());
        let mut c_subject_key = Vec::with_capacity(claims.len());
        let mut c_entity: Vec<Option<i64>> = Vec::with_capacity(claims.len());
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
            let entity_id = match c.subject_entity_index() {
                Some(i) => Some(*entity_by_index.get(&i).ok_or_else(|| {
                    StoreError::Invariant(format!(
                        "claim {} names entity row {i}, which was not accepted",
                        c.index()
                    ))
                })?),
                // The subject check was disabled: link by name if this response has the
                // entity, otherwise leave the claim without one.
                None => entity_by_name.get(&subject_key).copied(),
            };
            c_index.push(to_i32(c.index(), "row index")?);
            c_statement.push(c.statement());
            c_quote.push(c.quote());
            c_start.push(to_i32(chunk.start_byte + qs, "quote start")?);
            c_end.push(to_i32(chunk.start_byte + qe, "quote end")?);
            c_subject.push(c.subject());
            c_subject_key.push(subject_key);
            c_entity.push(entity_id);
        }
        let mut claim_by_index: HashMap<usize, i64> = HashMap::new();
        if !claims.is_empty() {
            let inserted: Vec<(i64, i32)> = sqlx::query_as(
                "INSERT INTO claims (call_id, job_id, document_id, revision_id, chunk_id,
                                     row_index, statement, quote, quote_start, quote_end,
                                     subject, subject_normalized, entity_id)
                 SELECT $1, $2, $3, $4, $5, r.row_index, r.statement, r.quote, r.quote_start,
                        r.quote_end, r.subject, r.subject_normalized, r.entity_id
                 FROM UNNEST($6::int[], $7::text[], $8::text[], $9::int[], $10::int[],
                             $11::text[], $12::text[], $13::bigint[])
                      WITH ORDINALITY AS r(row_index, statement, quote, quote_start, quote_end,
                                           subject, subject_normalized, entity_id, n)
                 ORDER BY r.n
                 RETURNING id, row_index",
            )
            .bind(call_id)
            .bind(job_id.as_str())
            .bind(chunk.document_id)
            .bind(chunk.revision_id)
            .bind(chunk.id)
            .bind(&c_index)
            .bind(&c_statement)
            .bind(&c_quote)
            .bind(&c_start)
            .bind(&c_end)
            .bind(&c_subject)
            .bind(&c_subject_key)
            .bind(&c_entity)
            .fetch_all(&mut *tx)
            .await?;
            for (id, index) in inserted {
                claim_by_index.insert(index as usize, id);
            }
        }
        let mut claim_ids = Vec::with_capacity(claims.len());
        for c in claims {
            let id = *claim_by_index.get(&c.index()).ok_or_else(|| {
                StoreError::Invariant(format!("claim row {} was not inserted", c.index()))
            })?;
            claim_ids.push(id);
            counts.warnings += insert_warnings(
                &mut tx,
                call_id,
                job_id,
                RowKind::Claim,
                c.index(),
                Target::Claim(id),
                c.warnings(),
            )
            .await?;
        }
        counts.claims = claim_ids.len();

        counts.rejections = insert_rejections(
            &mut tx,
            Some(call_id),
            job_id,
            Task::Extract,
            &judgement.rejections(),
        )
        .await?;
        finish_job(&mut tx, job_id, state).await?;
        tx.commit().await?;
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state,
            entity_ids,
            claim_ids,
            relation_ids: Vec::new(),
            counts,
        }))
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
            counts.warnings += insert_warnings(
                &mut tx,
                call_id,
                job_id,
                RowKind::Relation,
                r.index(),
                Target::Relation(id),
                r.warnings(),
            )
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

enum Target {
    Entity(i64),
    Claim(i64),
    Relation(i64),
}

async fn insert_warnings(
    conn: &mut PgConnection,
    call_id: i64,
    job_id: &JobId,
    kind: RowKind,
    index: usize,
    target: Target,
    findings: &[Finding],
) -> Result<usize> {
    let (entity, claim, relation) = match target {
        Target::Entity(id) => (Some(id), None, None),
        Target::Claim(id) => (None, Some(id), None),
        Target::Relation(id) => (None, None, Some(id)),
    };
    for f in findings {
        sqlx::query(
            "INSERT INTO warnings (call_id, job_id, row_kind, row_index, entity_id, claim_id,
                                   relation_id, warning, reason, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(call_id)
        .bind(job_id.as_str())
        .bind(kind.as_str())
        .bind(to_i32(index, "row index")?)
        .bind(entity)
        .bind(claim)
        .bind(relation)
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
    let mut reasons = Vec::with_capacity(rejections.len());
    let mut kinds = Vec::with_capacity(rejections.len());
    let mut indices = Vec::with_capacity(rejections.len());
    let mut details = Vec::with_capacity(rejections.len());
    for r in rejections {
        reasons.push(r.reason.as_str());
        kinds.push(r.kind.map(|k| k.as_str()));
        indices.push(r.index.map(|i| to_i32(i, "row index")).transpose()?);
        details.push(bounded(&r.detail));
    }
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
    .bind(&reasons)
    .bind(&kinds)
    .bind(&indices)
    .bind(&details)
    .execute(&mut *conn)
    .await?;
    Ok(rejections.len())
}
