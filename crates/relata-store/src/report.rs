//! `relata status` and `relata export`.

use chrono::{DateTime, Utc};
use futures::{Stream, StreamExt};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::error::{Result, StoreError};
use crate::{Store, parse_label, to_usize};
use relata_core::PromotionState;

// The one extract job per chunk whose rows are exported. $2: the current extract
// fingerprint ('' for none).
macro_rules! winning_extract_jobs {
    () => {
        "WITH win AS (
             SELECT DISTINCT ON (chunk_id) job_id FROM jobs
             WHERE task = 'extract' AND state IN ('accepted', 'partial')
             ORDER BY chunk_id, (task_version_fingerprint = $2) DESC, completed_at DESC, job_id DESC)
         "
    };
}

/// Jobs of one task in one state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobCount {
    pub task: String,
    pub state: String,
    pub count: i64,
}

/// Dead-lettered jobs of one task with one reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeadLetterCount {
    pub task: String,
    pub reason: String,
    pub count: i64,
}

/// The invalid-output rate over a window.
///
/// * `responses`: model calls that returned a response (outcome accepted, partial,
///   rejected or invalid_envelope — transport and provider errors are not responses);
/// * `responses_with_rejection`: those with at least one rejection (partial, rejected,
///   invalid_envelope);
/// * `rejections`: `invalid_outputs` rows (one per rejected row or rejected response);
/// * `accepted_rows`: entities, claims and relations committed;
/// * `response_rate` = responses_with_rejection / responses — the number to watch: it is
///   what doubles when a model or prompt goes bad;
/// * `row_rate` = rejections / (rejections + accepted_rows).
///
/// Rates are `None` when their denominator is zero (no traffic is not a 0% failure rate).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InvalidRate {
    pub window_hours: i64,
    pub responses: i64,
    pub responses_with_rejection: i64,
    pub rejections: i64,
    pub accepted_rows: i64,
    pub response_rate: Option<f64>,
    pub row_rate: Option<f64>,
}

/// What `relata status` shows from the store.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Status {
    pub jobs: Vec<JobCount>,
    pub dead_letters: Vec<DeadLetterCount>,
    /// Queued jobs never published (a producer or extractor crashed in between).
    pub unpublished: i64,
    /// Warnings not yet reviewed.
    pub review_queue: i64,
    /// Candidates (entities, claims, relations) by kind and promotion state.
    pub candidates: Vec<crate::promotion::CandidateCount>,
    pub invalid_last_24h: InvalidRate,
}

/// A warning waiting for review.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReviewItem {
    pub warning_id: i64,
    pub job_id: String,
    pub call_id: i64,
    pub row_kind: String,
    pub row_index: i32,
    pub entity_id: Option<i64>,
    pub claim_id: Option<i64>,
    pub relation_id: Option<i64>,
    pub warning: String,
    pub reason: Option<String>,
    pub detail: String,
    pub created_at: DateTime<Utc>,
}

impl Store {
    /// Cheap liveness check of the database (for `/readyz`).
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// The oldest unreviewed warnings, at most `limit`.
    pub async fn review_queue(&self, limit: i64) -> Result<Vec<ReviewItem>> {
        let rows = sqlx::query(
            "SELECT id, job_id, call_id, row_kind, row_index, entity_id, claim_id, relation_id,
                    warning, reason, detail, created_at
             FROM warnings WHERE reviewed_at IS NULL ORDER BY created_at, id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ReviewItem {
                    warning_id: r.try_get(0)?,
                    job_id: r.try_get(1)?,
                    call_id: r.try_get(2)?,
                    row_kind: r.try_get(3)?,
                    row_index: r.try_get(4)?,
                    entity_id: r.try_get(5)?,
                    claim_id: r.try_get(6)?,
                    relation_id: r.try_get(7)?,
                    warning: r.try_get(8)?,
                    reason: r.try_get(9)?,
                    detail: r.try_get(10)?,
                    created_at: r.try_get(11)?,
                })
            })
            .collect()
    }

    /// Mark a warning reviewed by `reviewer`. Returns false if it was already reviewed or
    /// does not exist.
    pub async fn mark_reviewed(&self, warning_id: i64, reviewer: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE warnings SET reviewed_at = now(), reviewed_by = $2
             WHERE id = $1 AND reviewed_at IS NULL",
        )
        .bind(warning_id)
        .bind(reviewer)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn status(&self) -> Result<Status> {
        let jobs = sqlx::query(
            "SELECT task, state, count(*) FROM jobs GROUP BY task, state ORDER BY task, state",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(JobCount {
                task: r.try_get(0)?,
                state: r.try_get(1)?,
                count: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let dead_letters = sqlx::query(
            "SELECT task, dead_reason, count(*) FROM jobs WHERE state = 'dead'
             GROUP BY task, dead_reason ORDER BY task, dead_reason",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(DeadLetterCount {
                task: r.try_get(0)?,
                reason: r.try_get(1)?,
                count: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let unpublished: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs WHERE state = 'queued' AND published_at IS NULL",
        )
        .fetch_one(&self.pool)
        .await?;
        let review_queue: i64 =
            sqlx::query_scalar("SELECT count(*) FROM warnings WHERE reviewed_at IS NULL")
                .fetch_one(&self.pool)
                .await?;
        let r = sqlx::query(
            "WITH calls AS (
                 SELECT id, outcome FROM model_calls
                 WHERE started_at > now() - interval '24 hours'
                   AND outcome IN ('accepted', 'partial', 'rejected', 'invalid_envelope'))
             SELECT
                 (SELECT count(*) FROM calls),
                 (SELECT count(*) FROM calls WHERE outcome <> 'accepted'),
                 (SELECT count(*) FROM invalid_outputs WHERE call_id IN (SELECT id FROM calls)),
                 (SELECT count(*) FROM entities WHERE call_id IN (SELECT id FROM calls))
               + (SELECT count(*) FROM claims WHERE call_id IN (SELECT id FROM calls))
               + (SELECT count(*) FROM claim_relations WHERE call_id IN (SELECT id FROM calls))",
        )
        .fetch_one(&self.pool)
        .await?;
        let (responses, with_rej, rejections, accepted): (i64, i64, i64, i64) =
            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        let candidates = self.candidate_counts().await?;
        let ratio = |n: i64, d: i64| (d > 0).then(|| n as f64 / d as f64);
        Ok(Status {
            jobs,
            dead_letters,
            unpublished,
            review_queue,
            candidates,
            invalid_last_24h: InvalidRate {
                window_hours: 24,
                responses,
                responses_with_rejection: with_rej,
                rejections,
                accepted_rows: accepted,
                response_rate: ratio(with_rej, responses),
                row_rate: ratio(rejections, rejections + accepted),
            },
        })
    }

    /// Every stored record, streamed, with no task version named current: as
    /// [`Store::export_versions`] with [`CurrentVersions::default`] (the most recently
    /// completed result of each chunk and pair wins).
    pub fn export(
        &self,
        all_versions: bool,
        include_pending: bool,
    ) -> impl Stream<Item = Result<ExportRecord>> + Send + '_ {
        self.export_versions(all_versions, include_pending, CurrentVersions::default())
    }

    /// Every stored record, streamed (rows are decoded as they arrive; nothing is
    /// collected): documents first, then entities, claims, relations, each in id order.
    ///
    /// With `all_versions == false`: one `document` record per document with its current
    /// text, and the *current* results only:
    ///
    /// * of each chunk of a current revision, the entities and claims of one extract job —
    ///   the job of `current.extract` if it completed `accepted` or `partial`, else the most
    ///   recently completed `accepted`/`partial` job of any task version (a result that
    ///   was rejected whole has no rows to supersede older ones with);
    /// * of each unordered claim pair, one relation — the one of `current.classify` if
    ///   there is one, else the newest — and only between claims that are exported.
    ///
    /// With `true`: one `document` record per revision, and every row ever extracted,
    /// whatever its task version. Either way a claim's offsets index the text of the
    /// document record with the same `revision_id`, and every row carries its provenance.
    ///
    /// With `include_pending == false` only promoted entities, claims and relations are
    /// emitted (a relation only between promoted claims); with `true` every candidate,
    /// each with its promotion state (`proposed` when the policy has not judged it yet).
    ///
    /// The four queries run one after another, each on its own snapshot.
    pub fn export_versions(
        &self,
        all_versions: bool,
        include_pending: bool,
        current: CurrentVersions,
    ) -> impl Stream<Item = Result<ExportRecord>> + Send + '_ {
        let extract_fp = current.extract.unwrap_or_default();
        let classify_fp = current.classify.unwrap_or_default();
        let docs = sqlx::query(
            "SELECT d.id, r.id, d.source, d.external_id, d.title, r.sha256, r.text,
                    r.id = d.current_revision_id
             FROM documents d JOIN document_revisions r ON r.document_id = d.id
             WHERE $1 OR r.id = d.current_revision_id
             ORDER BY d.id, r.id",
        )
        .bind(all_versions)
        .fetch(&self.pool)
        .map(|r| decode(r, document));
        let entities = sqlx::query(concat!(
            winning_extract_jobs!(),
            "SELECT e.id, e.document_id, e.revision_id, e.chunk_id, e.name, e.name_normalized,
                    e.entity_type, m.id, m.job_id, m.model, m.prompt_version, m.schema_id,
                    m.schema_version, m.schema_sha256, m.started_at, coalesce(p.state, 'proposed')
             FROM entities e JOIN model_calls m ON m.id = e.call_id
             JOIN documents d ON d.id = e.document_id
             LEFT JOIN promotions p ON p.candidate_kind = 'entity' AND p.candidate_id = e.id
             WHERE ($1 OR (e.revision_id = d.current_revision_id
                           AND e.job_id IN (SELECT job_id FROM win)))
               AND ($3 OR p.state = 'promoted')
             ORDER BY e.id"
        ))
        .bind(all_versions)
        .bind(extract_fp.clone())
        .bind(include_pending)
        .fetch(&self.pool)
        .map(|r| decode(r, entity));
        let claims = sqlx::query(concat!(
            winning_extract_jobs!(),
            "SELECT c.id, c.document_id, c.revision_id, c.chunk_id, c.statement, c.quote,
                    c.quote_start, c.quote_end, c.subject, c.entity_id,
                    m.id, m.job_id, m.model, m.prompt_version, m.schema_id,
                    m.schema_version, m.schema_sha256, m.started_at, coalesce(p.state, 'proposed')
             FROM claims c JOIN model_calls m ON m.id = c.call_id
             JOIN documents d ON d.id = c.document_id
             LEFT JOIN promotions p ON p.candidate_kind = 'claim' AND p.candidate_id = c.id
             WHERE ($1 OR (c.revision_id = d.current_revision_id
                           AND c.job_id IN (SELECT job_id FROM win)))
               AND ($3 OR p.state = 'promoted')
             ORDER BY c.id"
        ))
        .bind(all_versions)
        .bind(extract_fp.clone())
        .bind(include_pending)
        .fetch(&self.pool)
        .map(|r| decode(r, claim));
        let relations = sqlx::query(concat!(
            winning_extract_jobs!(),
            ", live AS (
                 SELECT c.id FROM claims c JOIN documents d ON d.id = c.document_id
                 WHERE c.revision_id = d.current_revision_id
                   AND c.job_id IN (SELECT job_id FROM win)),
             best AS (
                 SELECT DISTINCT ON (least(x.claim_a, x.claim_b), greatest(x.claim_a, x.claim_b)) x.id
                 FROM claim_relations x
                 ORDER BY least(x.claim_a, x.claim_b), greatest(x.claim_a, x.claim_b),
                          (x.task_version_fingerprint = $3) DESC, x.id DESC)
             SELECT x.id, x.claim_a, x.claim_b, x.relation,
                    m.id, m.job_id, m.model, m.prompt_version, m.schema_id,
                    m.schema_version, m.schema_sha256, m.started_at, coalesce(p.state, 'proposed')
             FROM claim_relations x JOIN model_calls m ON m.id = x.call_id
             LEFT JOIN promotions p ON p.candidate_kind = 'relation' AND p.candidate_id = x.id
             WHERE ($1 OR (x.id IN (SELECT id FROM best)
                           AND x.claim_a IN (SELECT id FROM live)
                           AND x.claim_b IN (SELECT id FROM live)))
               AND ($4 OR (p.state = 'promoted'
                           AND relata_promoted('claim', x.claim_a)
                           AND relata_promoted('claim', x.claim_b)))
             ORDER BY x.id"
        ))
        .bind(all_versions)
        .bind(extract_fp)
        .bind(classify_fp)
        .bind(include_pending)
        .fetch(&self.pool)
        .map(|r| decode(r, relation));
        docs.chain(entities).chain(claims).chain(relations)
    }
}

/// The task versions whose results supersede others in [`Store::export_versions`], by
/// fingerprint ([`TaskVersion::fingerprint`](relata_core::TaskVersion::fingerprint)).
/// `None`: no version is preferred; the newest completed result wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentVersions {
    pub extract: Option<String>,
    pub classify: Option<String>,
}

fn decode(
    row: std::result::Result<PgRow, sqlx::Error>,
    f: fn(&PgRow) -> Result<ExportRecord>,
) -> Result<ExportRecord> {
    let row = row.map_err(StoreError::from)?;
    f(&row)
}

/// Which model call proposed a row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Provenance {
    pub call_id: i64,
    pub job_id: String,
    pub model: String,
    pub prompt_version: String,
    pub schema_id: String,
    pub schema_version: i32,
    pub schema_sha256: String,
    /// When the call was made.
    pub called_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportDocument {
    pub id: i64,
    pub revision_id: i64,
    pub current: bool,
    pub source: String,
    pub external_id: String,
    pub title: Option<String>,
    pub sha256: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportEntity {
    pub id: i64,
    pub document_id: i64,
    pub revision_id: i64,
    pub chunk_id: i64,
    pub name: String,
    pub name_normalized: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    pub provenance: Provenance,
    /// Promotion state: `promoted` unless the export included pending candidates.
    pub state: PromotionState,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportClaim {
    pub id: i64,
    pub document_id: i64,
    pub revision_id: i64,
    pub chunk_id: i64,
    pub statement: String,
    pub quote: String,
    /// UTF-8 byte offsets of `quote` in the text of the document revision `revision_id`.
    pub quote_start: usize,
    pub quote_end: usize,
    pub subject: String,
    pub entity_id: Option<i64>,
    pub provenance: Provenance,
    /// Promotion state: `promoted` unless the export included pending candidates.
    pub state: PromotionState,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportRelation {
    pub id: i64,
    pub claim_a: i64,
    pub claim_b: i64,
    pub relation: String,
    pub provenance: Provenance,
    /// Promotion state: `promoted` unless the export included pending candidates.
    pub state: PromotionState,
}

/// One line of `relata export`, tagged with its `kind`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportRecord {
    Document(ExportDocument),
    Entity(ExportEntity),
    Claim(ExportClaim),
    Relation(ExportRelation),
}

fn provenance(r: &PgRow, at: usize) -> Result<Provenance> {
    Ok(Provenance {
        call_id: r.try_get(at)?,
        job_id: r.try_get(at + 1)?,
        model: r.try_get(at + 2)?,
        prompt_version: r.try_get(at + 3)?,
        schema_id: r.try_get(at + 4)?,
        schema_version: r.try_get(at + 5)?,
        schema_sha256: r.try_get(at + 6)?,
        called_at: r.try_get(at + 7)?,
    })
}

fn document(r: &PgRow) -> Result<ExportRecord> {
    Ok(ExportRecord::Document(ExportDocument {
        id: r.try_get(0)?,
        revision_id: r.try_get(1)?,
        source: r.try_get(2)?,
        external_id: r.try_get(3)?,
        title: r.try_get(4)?,
        sha256: r.try_get(5)?,
        text: r.try_get(6)?,
        current: r.try_get(7)?,
    }))
}

fn entity(r: &PgRow) -> Result<ExportRecord> {
    Ok(ExportRecord::Entity(ExportEntity {
        id: r.try_get(0)?,
        document_id: r.try_get(1)?,
        revision_id: r.try_get(2)?,
        chunk_id: r.try_get(3)?,
        name: r.try_get(4)?,
        name_normalized: r.try_get(5)?,
        entity_type: r.try_get(6)?,
        provenance: provenance(r, 7)?,
        state: parse_label(r.try_get(15)?)?,
    }))
}

fn claim(r: &PgRow) -> Result<ExportRecord> {
    Ok(ExportRecord::Claim(ExportClaim {
        id: r.try_get(0)?,
        document_id: r.try_get(1)?,
        revision_id: r.try_get(2)?,
        chunk_id: r.try_get(3)?,
        statement: r.try_get(4)?,
        quote: r.try_get(5)?,
        quote_start: to_usize(r.try_get(6)?, "quote_start")?,
        quote_end: to_usize(r.try_get(7)?, "quote_end")?,
        subject: r.try_get(8)?,
        entity_id: r.try_get(9)?,
        provenance: provenance(r, 10)?,
        state: parse_label(r.try_get(18)?)?,
    }))
}

fn relation(r: &PgRow) -> Result<ExportRecord> {
    Ok(ExportRecord::Relation(ExportRelation {
        id: r.try_get(0)?,
        claim_a: r.try_get(1)?,
        claim_b: r.try_get(2)?,
        relation: r.try_get(3)?,
        provenance: provenance(r, 4)?,
        state: parse_label(r.try_get(12)?)?,
    }))
}
