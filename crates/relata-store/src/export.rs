//! Every stored record as a stream of export records (documents, entities, claims,
//! relations, each with its provenance and promotion state), with the current task
//! version's results superseding older ones.

use chrono::{DateTime, Utc};
use futures::{Stream, StreamExt};
use relata_core::PromotionState;
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::error::{Result, StoreError};
use crate::{Store, parse_label, to_usize};

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

impl Store {
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
                    m.schema_version, m.schema_sha256, m.started_at, coalesce(p.state, 'proposed'),
                    res.canonical_id, res.rule, res.joined_to, res.evidence_revision_id,
                    res.evidence_start, res.evidence_end, res.evidence_quote, ",
            crate::entities::described_columns!("res"),
            "
             FROM entities e JOIN model_calls m ON m.id = e.call_id
             JOIN documents d ON d.id = e.document_id
             LEFT JOIN entity_resolutions res ON res.entity_id = e.id
             LEFT JOIN decided_states p ON p.candidate_kind = 'entity' AND p.candidate_id = e.id
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
                    m.schema_version, m.schema_sha256, m.started_at, coalesce(p.state, 'proposed'),
                    res.canonical_id
             FROM claims c JOIN model_calls m ON m.id = c.call_id
             JOIN documents d ON d.id = c.document_id
             LEFT JOIN entity_resolutions res ON res.entity_id = c.entity_id
             LEFT JOIN decided_states p ON p.candidate_kind = 'claim' AND p.candidate_id = c.id
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
             LEFT JOIN decided_states p ON p.candidate_kind = 'relation' AND p.candidate_id = x.id
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
    /// The canonical entity this mention resolved to (`relata entities`); `None` until
    /// resolution has run over it.
    pub canonical_id: Option<i64>,
    /// Why it belongs to that entity: the rule, the mention it joined through, and the
    /// text's own bytes where the text gives the join.
    pub resolution: Option<ExportResolution>,
    pub provenance: Provenance,
    /// Promotion state: `promoted` unless the export included pending candidates.
    pub state: PromotionState,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportResolution {
    pub rule: crate::entities::Resolution,
    pub joined_to: Option<i64>,
    pub evidence: Option<crate::entities::Evidence>,
    /// What the mention's document says its name stands for, where it says (why two
    /// mentions of one name may be two entities); left out when it says nothing.
    #[serde(skip_serializing_if = "relata_validate::resolve::Described::is_empty")]
    pub described: relata_validate::resolve::Described,
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
    /// The canonical entity of `entity_id`, once resolved.
    pub canonical_id: Option<i64>,
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
        canonical_id: r.try_get(16)?,
        resolution: match r.try_get::<Option<String>, _>(17)? {
            None => None,
            Some(rule) => Some(ExportResolution {
                rule: parse_label(rule)?,
                joined_to: r.try_get(18)?,
                evidence: crate::entities::Evidence::read(r, [19, 20, 21, 22])?,
                described: crate::entities::read_described(r, 23)?,
            }),
        },
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
        canonical_id: r.try_get(19)?,
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
