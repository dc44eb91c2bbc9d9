//! Committing a job's outcome: one transaction per job, idempotent on the job.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use relata_core::{
    CandidateFacts, CandidateId, EntityType, Handle, JobId, JobInput, Reason, RowKind, Task,
};
use relata_validate::{
    AcceptedEntity, ClassifyRows, ExtractRows, Finding, Judgement, Rejection, Verdict,
};
use sqlx::query::QueryAs;
use sqlx::{PgConnection, Postgres};

use crate::canonical;
use crate::error::{Result, StoreError};
use crate::jobs::{
    CallColumns, LockedJob, bounded, check_call_version, finish_job, insert_call, lock_job,
};
use crate::normalize::normalize_name;
use crate::promotion::{Candidate, read_candidates};
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

fn wrong_task(job_id: &JobId, job: &LockedJob, task: Task) -> StoreError {
    StoreError::InvalidInput(format!(
        "job {job_id} is a {} job, not {task}",
        job.input.task()
    ))
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
        let guard = ExtractGuard {
            job_id,
            state,
            chunk,
            fingerprint: call.version.fingerprint(),
        };
        let call_row = CallRow {
            columns: CallColumns::of(call)?,
            outcome: call_outcome,
            reason: judgement.response_rejection().map(|r| r.reason.as_str()),
        };
        let rows = judgement.accepted();
        let mut warnings = WarningColumns::default();
        let entities = EntityColumns::of(rows.entities(), &mut warnings)?;
        // Every claim is checked before anything is sent.
        let claims = ClaimColumns::of(job_id, rows, &entities, chunk, &mut warnings)?;
        let rejections = judgement.rejections();
        let rejections = RejectionColumns::of(&rejections)?;

        let query = sqlx::query_as(COMMIT_EXTRACT);
        let query = guard.bind(query);
        let query = call_row.bind(query);
        let query = guard.bind_source(query);
        let query = entities.bind(query);
        let query = claims.bind(query);
        let query = warnings.bind(query);
        let query = rejections.bind(query);
        let query = query.bind(call_row.columns.sent_schema_sha256); // $43
        let written = Written::read(query.fetch_all(&self.pool).await?)?;

        let Some(written_call) = &written.call else {
            return self.refused_extract(job_id, call, chunk).await;
        };
        let call_id = written_call.id;
        let entity_ids =
            written.ids_of(RowKind::Entity, rows.entities().iter().map(|e| e.index()))?;
        let claim_ids = written.ids_of(RowKind::Claim, rows.claims().iter().map(|c| c.index()))?;
        let candidates = written.candidates(written_call, &guard, rows, &entities, &claims)?;
        let counts = RowCounts {
            entities: entity_ids.len(),
            claims: claim_ids.len(),
            warnings: written.warnings,
            rejections: written.rejections,
            ..RowCounts::default()
        };
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state,
            entity_ids,
            claim_ids,
            relation_ids: Vec::new(),
            counts,
            candidates,
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
        let JobInput::Extract { chunk_id } = job.input else {
            return Err(wrong_task(job_id, &job, Task::Extract));
        };
        if chunk_id != chunk.id {
            return Err(StoreError::InvalidInput(format!(
                "job {job_id} is for chunk {chunk_id}, not chunk {}",
                chunk.id
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
        let JobInput::Classify { pairs } = &job.input else {
            return Err(wrong_task(job_id, &job, Task::Classify));
        };

        let (call_outcome, state) = outcome_of(judgement.verdict());
        let call_reason = judgement.response_rejection().map(|r| r.reason.as_str());
        let call_id = insert_call(
            &mut tx,
            job_id,
            &job.fingerprint,
            call,
            call_outcome,
            call_reason,
        )
        .await?;
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
        // A relation's facts come from its two claims' documents: read here, in the
        // commit's transaction, by the sweep's own read.
        let candidates = read_candidates(&mut tx, RowKind::Relation, &relation_ids).await?;
        finish_job(&mut tx, job_id, state).await?;
        tx.commit().await?;
        Ok(CommitOutcome::Committed(Committed {
            call_id: Some(call_id),
            state,
            entity_ids: Vec::new(),
            claim_ids: Vec::new(),
            relation_ids,
            counts,
            candidates,
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
            &job.fingerprint,
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
        let rejections = insert_rejections(
            &mut tx,
            Some(call_id),
            job_id,
            job.input.task(),
            &[rejection],
        )
        .await?;
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
            candidates: Vec::new(),
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

pub(crate) async fn insert_rejections(
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
///
/// It returns what the promotion policy needs of every row it wrote beyond what the
/// caller sent, so that nothing is read back to judge them: the ids, a claim's time, and
/// the call's provenance (`relata_provenance_complete`), time and document source. The
/// rows' canonical-content hashes are computed from the same values in Rust
/// ([`crate::canonical`]), not here: in this statement they cost every commit database
/// time.
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
    RETURNING id, relata_provenance_complete(model_calls) AS complete, finished_at
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
    RETURNING id, row_index, created_at
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
SELECT 0::int2, id, 0, finished_at, complete, (SELECT source FROM documents WHERE id = $20) FROM call
UNION ALL SELECT 1::int2, id, row_index, NULL, NULL, NULL FROM e
UNION ALL SELECT 2::int2, id, row_index, created_at, NULL, NULL FROM c
UNION ALL SELECT 3::int2, count(*), 0, NULL, NULL, NULL FROM w
UNION ALL SELECT 4::int2, count(*), 0, NULL, NULL, NULL FROM x";

/// The extract commit statement with its parameters bound so far.
type ExtractQuery<'q> = QueryAs<'q, Postgres, WrittenRow, <Postgres as sqlx::Database>::Arguments>;

/// One row the extract commit statement returns: `(kind, id or count, row index, time,
/// provenance complete, source)`; the last three are null where they do not apply.
type WrittenRow = (
    i16,
    i64,
    i32,
    Option<DateTime<Utc>>,
    Option<bool>,
    Option<String>,
);

/// What a row the extract commit statement returns stands for: the first column of each
/// `UNION ALL` branch at the end of [`COMMIT_EXTRACT`], which must use these values (a
/// test reads the statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
enum WrittenKind {
    /// `id` is the model call's id, with its finish time, whether it is complete
    /// provenance, and the source of the chunk's document.
    Call = 0,
    /// `id` is an entity's id, at `row_index`.
    Entity = 1,
    /// `id` is a claim's id, at `row_index`, with its time.
    Claim = 2,
    /// `id` is how many warnings were written.
    Warnings = 3,
    /// `id` is how many `invalid_outputs` rows were written.
    Rejections = 4,
}

impl WrittenKind {
    const ALL: [WrittenKind; 5] = [
        WrittenKind::Call,
        WrittenKind::Entity,
        WrittenKind::Claim,
        WrittenKind::Warnings,
        WrittenKind::Rejections,
    ];

    fn of(value: i16) -> Result<WrittenKind> {
        WrittenKind::ALL
            .into_iter()
            .find(|k| *k as i16 == value)
            .ok_or_else(|| StoreError::Invariant(format!("unknown row kind {value}")))
    }
}

/// The model call as the extract commit statement wrote it.
struct WrittenCall {
    id: i64,
    finished_at: DateTime<Utc>,
    provenance_complete: bool,
    /// The source of the chunk's document.
    source: String,
}

/// An entity or claim as the extract commit statement wrote it.
struct WrittenCandidate {
    id: i64,
    /// A claim's `created_at`; `None` for an entity (its time is its call's).
    created_at: Option<DateTime<Utc>>,
}

/// What the extract commit statement wrote, read back from its rows.
#[derive(Default)]
struct Written {
    /// `None` when the guard matched nothing and nothing was written.
    call: Option<WrittenCall>,
    entity_by_index: HashMap<usize, WrittenCandidate>,
    claim_by_index: HashMap<usize, WrittenCandidate>,
    warnings: usize,
    rejections: usize,
}

impl Written {
    fn read(rows: Vec<WrittenRow>) -> Result<Written> {
        let mut w = Written::default();
        for (kind, id, index, at, complete, source) in rows {
            let kind = WrittenKind::of(kind)?;
            let missing = |what: &str| {
                StoreError::Invariant(format!("the commit returned a {kind:?} row without {what}"))
            };
            let candidate = WrittenCandidate { id, created_at: at };
            match kind {
                WrittenKind::Call => {
                    w.call = Some(WrittenCall {
                        id,
                        finished_at: at.ok_or_else(|| missing("its time"))?,
                        provenance_complete: complete.ok_or_else(|| missing("its provenance"))?,
                        source: source.ok_or_else(|| missing("its document's source"))?,
                    });
                }
                WrittenKind::Entity => {
                    w.entity_by_index.insert(index as usize, candidate);
                }
                WrittenKind::Claim => {
                    w.claim_by_index.insert(index as usize, candidate);
                }
                WrittenKind::Warnings => w.warnings = count(id)?,
                WrittenKind::Rejections => w.rejections = count(id)?,
            }
        }
        Ok(w)
    }

    /// The row written at `index`; every accepted row must have been.
    fn row(&self, kind: RowKind, index: usize) -> Result<&WrittenCandidate> {
        let by_index = match kind {
            RowKind::Entity => &self.entity_by_index,
            RowKind::Claim => &self.claim_by_index,
            RowKind::Relation | RowKind::Join => {
                return Err(StoreError::Invariant(format!(
                    "an extract commit writes no {kind} rows"
                )));
            }
        };
        by_index
            .get(&index)
            .ok_or_else(|| StoreError::Invariant(format!("{kind} row {index} was not inserted")))
    }

    /// The ids of the rows at these indexes, in their order.
    fn ids_of(&self, kind: RowKind, indexes: impl Iterator<Item = usize>) -> Result<Vec<i64>> {
        indexes.map(|i| Ok(self.row(kind, i)?.id)).collect()
    }

    /// The accepted rows as promotion candidates: the facts a sweep would read back
    /// (warnings, entity type, source, provenance, task version, revision, time) and the
    /// hash of each row's canonical content, here from the judgement, the columns the
    /// statement was sent and what it returned.
    fn candidates(
        &self,
        call: &WrittenCall,
        guard: &ExtractGuard<'_>,
        rows: &ExtractRows,
        entities: &EntityColumns<'_>,
        claims: &ClaimColumns<'_>,
    ) -> Result<Vec<Candidate>> {
        let chunk = guard.chunk;
        let job_id = guard.job_id.as_str();
        let candidate = |kind: RowKind,
                         row: &WrittenCandidate,
                         warnings: &[Finding],
                         entity_type: Option<EntityType>,
                         sha256: String|
         -> Candidate {
            Candidate {
                id: CandidateId { kind, id: row.id },
                facts: CandidateFacts {
                    kind,
                    warnings: warnings.iter().map(|f| f.warning).collect(),
                    entity_type,
                    relation: None,
                    sources: vec![call.source.clone()],
                    has_provenance: call.provenance_complete,
                },
                call_id: Some(call.id),
                task_version: guard.fingerprint.clone(),
                revision_ids: vec![chunk.revision_id],
                proposed_at: row.created_at.unwrap_or(call.finished_at),
                sha256,
            }
        };
        let mut out = Vec::with_capacity(entities.index.len() + claims.index.len());
        // The columns were built from these rows, in this order.
        for (i, e) in rows.entities().iter().enumerate() {
            let row = self.row(RowKind::Entity, e.index())?;
            // As `relata_entity_sha256(e)` lists the row's columns.
            let sha256 = canonical::sha256_hex(&[
                "entity".into(),
                row.id.into(),
                call.id.into(),
                job_id.into(),
                chunk.document_id.into(),
                chunk.revision_id.into(),
                chunk.id.into(),
                entities.index[i].into(),
                entities.name[i].into(),
                entities.key[i].as_str().into(),
                entities.entity_type[i].into(),
            ]);
            out.push(candidate(
                RowKind::Entity,
                row,
                e.warnings(),
                Some(e.entity_type()),
                sha256,
            ));
        }
        for (i, c) in rows.claims().iter().enumerate() {
            let row = self.row(RowKind::Claim, c.index())?;
            let entity_id = claims.entity_row[i]
                .map(|r| Ok::<_, StoreError>(self.row(RowKind::Entity, r as usize)?.id))
                .transpose()?;
            // As `relata_claim_sha256(c)` lists the row's columns.
            let sha256 = canonical::sha256_hex(&[
                "claim".into(),
                row.id.into(),
                call.id.into(),
                job_id.into(),
                chunk.document_id.into(),
                chunk.revision_id.into(),
                chunk.id.into(),
                claims.index[i].into(),
                claims.statement[i].into(),
                claims.quote[i].into(),
                claims.start[i].into(),
                claims.end[i].into(),
                claims.subject[i].into(),
                claims.subject_key[i].as_str().into(),
                entity_id.into(),
            ]);
            out.push(candidate(RowKind::Claim, row, c.warnings(), None, sha256));
        }
        Ok(out)
    }
}

/// The guard of the extract commit ($1–$4): the job, queued, of this task, chunk and task
/// version, and the state it moves to.
struct ExtractGuard<'a> {
    job_id: &'a JobId,
    state: JobState,
    chunk: &'a ChunkRow,
    fingerprint: String,
}

impl ExtractGuard<'_> {
    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(self.job_id.as_str()) // $1
            .bind(self.state.as_str())
            .bind(self.chunk.id)
            .bind(&self.fingerprint)
    }

    /// $20–$21: the document and revision every row comes from (the chunk is $3).
    fn bind_source<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(self.chunk.document_id) // $20
            .bind(self.chunk.revision_id)
    }
}

/// The model call's record ($5–$19; its sent schema is $43).
struct CallRow<'a> {
    columns: CallColumns<'a>,
    outcome: CallOutcome,
    reason: Option<&'static str>,
}

impl CallRow<'_> {
    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        let c = &self.columns;
        q.bind(c.task) // $5
            .bind(c.model)
            .bind(c.prompt_version)
            .bind(c.schema_id)
            .bind(c.schema_version)
            .bind(c.schema_sha256) // $10
            .bind(c.started_at)
            .bind(c.finished_at)
            .bind(c.duration_ms)
            .bind(c.attempts)
            .bind(c.prompt_tokens) // $15
            .bind(c.completion_tokens)
            .bind(self.outcome.as_str())
            .bind(self.reason)
            .bind(c.excerpt.as_deref())
    }
}

/// Accepted entities, column by column ($22–$25).
struct EntityColumns<'a> {
    index: Vec<i32>,
    name: Vec<&'a str>,
    key: Vec<String>,
    entity_type: Vec<&'static str>,
    /// Normalised name -> row index of the first entity with it.
    first_by_name: HashMap<String, usize>,
}

impl<'a> EntityColumns<'a> {
    fn of(
        entities: &'a [AcceptedEntity],
        warnings: &mut WarningColumns<'a>,
    ) -> Result<EntityColumns<'a>> {
        let mut x = EntityColumns {
            index: Vec::with_capacity(entities.len()),
            name: Vec::with_capacity(entities.len()),
            key: Vec::with_capacity(entities.len()),
            entity_type: Vec::with_capacity(entities.len()),
            first_by_name: HashMap::new(),
        };
        for e in entities {
            let key = normalize_name(e.name());
            x.index.push(to_i32(e.index(), "row index")?);
            x.name.push(e.name());
            x.first_by_name.entry(key.clone()).or_insert(e.index());
            x.key.push(key);
            x.entity_type.push(e.entity_type().as_str());
            warnings.push(RowKind::Entity, e.index(), e.warnings())?;
        }
        Ok(x)
    }

    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(&self.index) // $22
            .bind(&self.name)
            .bind(&self.key)
            .bind(&self.entity_type)
    }
}

/// Accepted claims, column by column ($26–$33). Offsets are the revision's: the gate's
/// offsets within the chunk plus the chunk's start.
struct ClaimColumns<'a> {
    index: Vec<i32>,
    statement: Vec<&'a str>,
    quote: Vec<&'a str>,
    start: Vec<i32>,
    end: Vec<i32>,
    subject: Vec<&'a str>,
    subject_key: Vec<String>,
    /// The row index of the claim's entity; the statement turns it into the id it has
    /// just assigned.
    entity_row: Vec<Option<i32>>,
}

impl<'a> ClaimColumns<'a> {
    fn of(
        job_id: &JobId,
        rows: &'a ExtractRows,
        entities: &EntityColumns<'_>,
        chunk: &ChunkRow,
        warnings: &mut WarningColumns<'a>,
    ) -> Result<ClaimColumns<'a>> {
        let claims = rows.claims();
        let mut x = ClaimColumns {
            index: Vec::with_capacity(claims.len()),
            statement: Vec::with_capacity(claims.len()),
            quote: Vec::with_capacity(claims.len()),
            start: Vec::with_capacity(claims.len()),
            end: Vec::with_capacity(claims.len()),
            subject: Vec::with_capacity(claims.len()),
            subject_key: Vec::with_capacity(claims.len()),
            entity_row: Vec::with_capacity(claims.len()),
        };
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
                Some(i) if rows.entities().iter().any(|e| e.index() == i) => Some(i),
                Some(i) => {
                    return Err(StoreError::Invariant(format!(
                        "claim {} names entity row {i}, which was not accepted",
                        c.index()
                    )));
                }
                // The subject check was disabled: link by name if this response has the
                // entity, otherwise leave the claim without one.
                None => entities.first_by_name.get(&subject_key).copied(),
            };
            x.index.push(to_i32(c.index(), "row index")?);
            x.statement.push(c.statement());
            x.quote.push(c.quote());
            x.start.push(to_i32(chunk.start_byte + qs, "quote start")?);
            x.end.push(to_i32(chunk.start_byte + qe, "quote end")?);
            x.subject.push(c.subject());
            x.subject_key.push(subject_key);
            x.entity_row
                .push(entity_row.map(|i| to_i32(i, "row index")).transpose()?);
            warnings.push(RowKind::Claim, c.index(), c.warnings())?;
        }
        Ok(x)
    }

    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(&self.index) // $26
            .bind(&self.statement)
            .bind(&self.quote)
            .bind(&self.start)
            .bind(&self.end) // $30
            .bind(&self.subject)
            .bind(&self.subject_key)
            .bind(&self.entity_row)
    }
}

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
    /// $34–$38 of the extract commit.
    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(&self.kind) // $34
            .bind(&self.index)
            .bind(&self.warning)
            .bind(&self.reason)
            .bind(&self.detail)
    }

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
    /// $39–$42 of the extract commit.
    fn bind<'q>(&'q self, q: ExtractQuery<'q>) -> ExtractQuery<'q> {
        q.bind(&self.reason) // $39
            .bind(&self.kind)
            .bind(&self.index)
            .bind(&self.detail)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The statement's closing `SELECT`s and [`WrittenKind`] must agree: each kind's value
    /// heads exactly the branch that reads its step.
    #[test]
    fn the_commit_statements_row_kinds_are_written_kind() {
        let branches: Vec<&str> = COMMIT_EXTRACT
            .lines()
            .filter(|l| l.contains("::int2"))
            .collect();
        assert_eq!(branches.len(), WrittenKind::ALL.len(), "{branches:?}");
        for kind in WrittenKind::ALL {
            let (value, reads) = match kind {
                WrittenKind::Call => (
                    0,
                    "id, 0, finished_at, complete, (SELECT source FROM documents WHERE id = $20) FROM call",
                ),
                WrittenKind::Entity => (1, "id, row_index, NULL, NULL, NULL FROM e"),
                WrittenKind::Claim => (2, "id, row_index, created_at, NULL, NULL FROM c"),
                WrittenKind::Warnings => (3, "count(*), 0, NULL, NULL, NULL FROM w"),
                WrittenKind::Rejections => (4, "count(*), 0, NULL, NULL, NULL FROM x"),
            };
            assert_eq!(kind as i16, value);
            assert_eq!(WrittenKind::of(value).unwrap(), kind);
            let branch = format!("SELECT {}::int2, {reads}", kind as i16);
            assert!(
                branches.iter().any(|l| l.ends_with(&branch)),
                "no branch {branch:?} in {branches:?}"
            );
        }
        assert!(WrittenKind::of(5).is_err());
    }
}
