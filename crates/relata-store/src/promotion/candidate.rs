//! Candidates as the policy judges them, read back from the rows a worker committed.

use chrono::{DateTime, Utc};
use relata_core::{CandidateFacts, CandidateId, EntityType, RelationKind, RowKind, Warning};

use crate::error::{Result, StoreError};
use crate::parse_label;
/// A candidate as the policy judges it: what relata's own code established about a row
/// it committed (never the model's word), the hash of the row's canonical content and its
/// provenance. Only the store builds one: from the rows a commit has just written
/// ([`Committed::candidates`](crate::Committed::candidates), the worker's path) or from
/// the rows a sweep reads back ([`Store::promote_pending`](crate::Store::promote_pending)). Both give the same value for
/// the same row (a test compares them), so a decision never depends on which path judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub(crate) id: CandidateId,
    pub(crate) facts: CandidateFacts,
    pub(crate) call_id: Option<i64>,
    pub(crate) task_version: String,
    pub(crate) revision_ids: Vec<i64>,
    pub(crate) proposed_at: DateTime<Utc>,
    /// sha256 (hex) of the row's canonical content: the database's `relata_*_sha256` over
    /// the stored row, or, for a commit's rows, the same bytes hashed by
    /// [`crate::canonical`] from what the commit sent.
    pub(crate) sha256: String,
}

impl Candidate {
    pub fn id(&self) -> CandidateId {
        self.id
    }
}

// An entity or a claim is one row of one extract call: its own columns, hashed where they
// are read (`relata_entity_sha256(e)`, `relata_claim_sha256(c)`, the per-kind functions
// `relata_candidate_sha256` itself calls), and the facts it shares with the other rows of
// its call — the document's source, the call record (provenance complete, SQL
// `relata_provenance_complete`, one definition for every kind), the job's task version —
// which `CallFacts::read` looks up once per batch for each distinct document, call and
// job instead of joining them to every row (a job writes ten rows and more).
// Each query selects the columns of `CallRowRead` (proposed at: a claim's own time; an
// entity's is its call's).
//
// Which rows are not yet judged is found by `unjudged_ids`, not by an anti join here:
// with statistics taken while `promotions` was nearly empty (it grows by thousands of
// rows a second under load, faster than autovacuum analyses it) the planner turned
// `NOT EXISTS` into a join that compared each candidate against every promotion of its
// kind (a 10 s read for 500 rows), and a correlated subquery instead made it probe every
// row above the cursor before sorting. Three plain index look-ups cannot go that way.
const ENTITY_ROWS: &str = "
    SELECT e.id, e.call_id, e.job_id, e.document_id, e.entity_type, e.revision_id,
           NULL::timestamptz AS proposed_at, relata_entity_sha256(e) AS sha256
    FROM entities e
    WHERE e.id = ANY($1)
    ORDER BY e.id";

const CLAIM_ROWS: &str = "
    SELECT c.id, c.call_id, c.job_id, c.document_id, NULL::text AS entity_type,
           c.revision_id, c.created_at AS proposed_at, relata_claim_sha256(c) AS sha256
    FROM claims c
    WHERE c.id = ANY($1)
    ORDER BY c.id";

// A relation comes from two claims (and their documents) and its own call; where it came
// from — its sources, revisions and proposal time — is `relata_candidate_origin`, the one
// definition review listings show too (no row when a claim or document is gone: the
// relation stays unjudged). Selects the columns of `RelationRow`.
const UNJUDGED_RELATIONS: &str = "
    SELECT x.id, m.id AS call_id, relata_provenance_complete(m) AS has_provenance,
           x.task_version_fingerprint AS task_version,
           ARRAY(SELECT w.warning FROM warnings w WHERE w.relation_id = x.id ORDER BY w.id)
               AS warnings,
           NULL::text AS entity_type, x.relation, o.sources, o.revision_ids,
           coalesce(o.proposed_at, now()) AS proposed_at, relata_relation_sha256(x) AS sha256
    FROM claim_relations x
    CROSS JOIN LATERAL relata_candidate_origin('relation', x.id) o
    LEFT JOIN model_calls m ON m.id = x.call_id
    WHERE x.id = ANY($1)
    ORDER BY x.id";

// A join proposal comes from two mentions (and their documents) and its own call, read
// like a relation. Its entity type is the two mentions' one type, null when they differ:
// the policy never allows a join across types. A proposal carries no warnings. Selects
// the columns of `OriginRow`.
const UNJUDGED_JOINS: &str = "
    SELECT p.id, m.id AS call_id, relata_provenance_complete(m) AS has_provenance,
           j.task_version_fingerprint AS task_version, ARRAY[]::text[] AS warnings,
           CASE WHEN a.entity_type = b.entity_type THEN a.entity_type END AS entity_type,
           NULL::text AS relation, o.sources, o.revision_ids,
           coalesce(o.proposed_at, now()) AS proposed_at, relata_join_sha256(p) AS sha256
    FROM entity_join_proposals p
    JOIN jobs j ON j.job_id = p.job_id
    JOIN entities a ON a.id = p.entity_id
    JOIN entities b ON b.id = p.joined_to
    CROSS JOIN LATERAL relata_candidate_origin('join', p.id) o
    LEFT JOIN model_calls m ON m.id = p.call_id
    WHERE p.id = ANY($1) AND p.verdict = 'one'
    ORDER BY p.id";

/// How a kind's candidate rows are read.
#[derive(Clone, Copy)]
pub(super) enum RowsOf {
    /// One row of one extract call: its rows, and its warnings for a range of its ids.
    Call {
        rows: &'static str,
        warnings: &'static str,
    },
    /// A row drawn from two others (a relation's claims, a join's mentions): one query
    /// that reads its origin through `relata_candidate_origin`.
    Origin(&'static str),
}

/// Per candidate kind: the next ids above a cursor and at most a ceiling, in order; then
/// the rows of given ids.
pub(super) const CANDIDATE_READS: [(RowKind, &str, RowsOf); 4] = [
    (
        RowKind::Entity,
        "SELECT id FROM entities WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Call {
            rows: ENTITY_ROWS,
            warnings: "SELECT entity_id AS id, warning FROM warnings
                       WHERE entity_id >= $1 AND entity_id <= $2 ORDER BY entity_id, id",
        },
    ),
    (
        RowKind::Claim,
        "SELECT id FROM claims WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Call {
            rows: CLAIM_ROWS,
            warnings: "SELECT claim_id AS id, warning FROM warnings
                       WHERE claim_id >= $1 AND claim_id <= $2 ORDER BY claim_id, id",
        },
    ),
    (
        RowKind::Relation,
        "SELECT id FROM claim_relations WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2",
        RowsOf::Origin(UNJUDGED_RELATIONS),
    ),
    (
        RowKind::Join,
        "SELECT id FROM entity_join_proposals
         WHERE id > $1 AND id <= $3 AND verdict = 'one' ORDER BY id LIMIT $2",
        RowsOf::Origin(UNJUDGED_JOINS),
    ),
];

/// An entity's or claim's columns as `ENTITY_ROWS` and `CLAIM_ROWS` read them.
#[derive(sqlx::FromRow)]
struct CallRowRead {
    id: i64,
    call_id: i64,
    job_id: String,
    document_id: i64,
    entity_type: Option<String>,
    revision_id: i64,
    proposed_at: Option<DateTime<Utc>>,
    sha256: Option<String>,
}

/// One warning of a candidate, as a kind's warnings query reads it.
#[derive(sqlx::FromRow)]
struct WarningRow {
    id: i64,
    warning: String,
}

/// An entity or claim as read, before the facts of its call are joined to it.
struct CallRow {
    id: CandidateId,
    call_id: i64,
    job_id: String,
    document_id: i64,
    entity_type: Option<String>,
    revision_id: i64,
    proposed_at: Option<DateTime<Utc>>,
    sha256: Option<String>,
    warnings: Vec<String>,
}

/// Read the entity or claim rows of `ids` (ascending) and their warnings: the warnings
/// of the whole id range in one scan of the kind's partial index, where a subquery per
/// row descended it once per row.
async fn call_rows(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    rows: &'static str,
    warnings: &'static str,
    ids: &[i64],
) -> Result<Vec<CallRow>> {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Ok(Vec::new());
    };
    let mut by_id: std::collections::HashMap<i64, Vec<String>> = std::collections::HashMap::new();
    for w in sqlx::query_as::<_, WarningRow>(warnings)
        .bind(first)
        .bind(last)
        .fetch_all(&mut *tx)
        .await?
    {
        by_id.entry(w.id).or_default().push(w.warning);
    }
    let read = sqlx::query_as::<_, CallRowRead>(rows)
        .bind(ids)
        .fetch_all(&mut *tx)
        .await?;
    Ok(read
        .into_iter()
        .map(|r| CallRow {
            id: CandidateId { kind, id: r.id },
            call_id: r.call_id,
            job_id: r.job_id,
            document_id: r.document_id,
            entity_type: r.entity_type,
            revision_id: r.revision_id,
            proposed_at: r.proposed_at,
            sha256: r.sha256,
            warnings: by_id.remove(&r.id).unwrap_or_default(),
        })
        .collect())
}

/// What a batch's entity and claim rows share with the other rows of their call, read
/// once per distinct document, call and job.
struct CallFacts {
    sources: std::collections::HashMap<i64, String>,
    /// Per call on record: provenance complete, finished at.
    calls: std::collections::HashMap<i64, (bool, DateTime<Utc>)>,
    task_versions: std::collections::HashMap<String, String>,
    /// The transaction's `now()`: an entity's proposal time when its call is not on
    /// record, as the joined read gave it.
    now: DateTime<Utc>,
}

impl CallFacts {
    async fn read(tx: &mut sqlx::PgConnection, rows: &[CallRow]) -> Result<CallFacts> {
        fn distinct<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
            let set: std::collections::BTreeSet<T> = items.collect();
            set.into_iter().collect()
        }
        let documents = distinct(rows.iter().map(|r| r.document_id));
        let calls = distinct(rows.iter().map(|r| r.call_id));
        let jobs = distinct(rows.iter().map(|r| r.job_id.clone()));
        let sources = sqlx::query_as::<_, (i64, String)>(
            "SELECT id, source FROM documents WHERE id = ANY($1)",
        )
        .bind(&documents)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        let calls = sqlx::query_as::<_, (i64, bool, DateTime<Utc>)>(
            "SELECT m.id, relata_provenance_complete(m), m.finished_at
             FROM model_calls m WHERE m.id = ANY($1)",
        )
        .bind(&calls)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id, complete, finished)| (id, (complete, finished)))
        .collect();
        let task_versions = sqlx::query_as::<_, (String, String)>(
            "SELECT job_id, task_version_fingerprint FROM jobs WHERE job_id = ANY($1)",
        )
        .bind(&jobs)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        let now = sqlx::query_scalar("SELECT now()")
            .fetch_one(&mut *tx)
            .await?;
        Ok(CallFacts {
            sources,
            calls,
            task_versions,
            now,
        })
    }

    /// The row with its call's facts; `None` when its document is not on record (the
    /// joined read left such a row out: it stays unjudged, so unpromoted).
    fn join(&self, row: CallRow) -> Result<Option<Candidate>> {
        let Some(source) = self.sources.get(&row.document_id) else {
            return Ok(None);
        };
        let call = self.calls.get(&row.call_id);
        let kind = row.id.kind;
        let sha256 = hashed(row.id, row.sha256)?;
        Ok(Some(Candidate {
            id: row.id,
            facts: CandidateFacts {
                kind,
                warnings: row
                    .warnings
                    .into_iter()
                    .map(parse_label::<Warning>)
                    .collect::<Result<_>>()?,
                entity_type: row.entity_type.map(parse_label::<EntityType>).transpose()?,
                relation: None,
                sources: vec![source.clone()],
                has_provenance: call.is_some_and(|(complete, _)| *complete),
            },
            call_id: call.map(|_| row.call_id),
            task_version: self
                .task_versions
                .get(&row.job_id)
                .cloned()
                .unwrap_or_default(),
            revision_ids: vec![row.revision_id],
            proposed_at: row
                .proposed_at
                .unwrap_or_else(|| call.map_or(self.now, |(_, finished)| *finished)),
            sha256,
        }))
    }
}

/// A hash read with its row: the per-row functions hash whatever row they are given, so
/// a null means the read itself is wrong.
fn hashed(id: CandidateId, sha256: Option<String>) -> Result<String> {
    sha256.ok_or_else(|| StoreError::Invariant(format!("candidate {id} was read without its hash")))
}

/// A relation's or join's columns as [`UNJUDGED_RELATIONS`] and [`UNJUDGED_JOINS`] read
/// them.
#[derive(sqlx::FromRow)]
struct OriginRow {
    id: i64,
    /// Null when the call is not on record.
    call_id: Option<i64>,
    has_provenance: Option<bool>,
    task_version: String,
    warnings: Vec<String>,
    entity_type: Option<String>,
    relation: Option<String>,
    sources: Vec<String>,
    revision_ids: Vec<i64>,
    proposed_at: DateTime<Utc>,
    sha256: Option<String>,
}

/// A relation or a join as the policy judges it.
fn origin_candidate(kind: RowKind, r: OriginRow) -> Result<Candidate> {
    let id = CandidateId { kind, id: r.id };
    Ok(Candidate {
        id,
        facts: CandidateFacts {
            kind,
            warnings: r
                .warnings
                .into_iter()
                .map(parse_label::<Warning>)
                .collect::<Result<_>>()?,
            entity_type: r.entity_type.map(parse_label::<EntityType>).transpose()?,
            relation: r.relation.map(parse_label::<RelationKind>).transpose()?,
            sources: r.sources,
            has_provenance: r.has_provenance.unwrap_or(false),
        },
        call_id: r.call_id,
        task_version: r.task_version,
        revision_ids: r.revision_ids,
        proposed_at: r.proposed_at,
        sha256: hashed(id, r.sha256)?,
    })
}

/// Read the candidates of `ids` (ascending, all of `kind`) as a sweep judges them.
/// A row whose document is not on record is left out: it stays unjudged, so unpromoted.
pub(crate) async fn read_candidates(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    ids: &[i64],
) -> Result<Vec<Candidate>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let (_, _, rows_of) = CANDIDATE_READS
        .into_iter()
        .find(|(k, _, _)| *k == kind)
        .ok_or_else(|| StoreError::Invariant(format!("no read for {kind}")))?;
    match rows_of {
        RowsOf::Call { rows, warnings } => {
            let read = call_rows(tx, kind, rows, warnings, ids).await?;
            let facts = CallFacts::read(tx, &read).await?;
            let mut out = Vec::with_capacity(read.len());
            for row in read {
                out.extend(facts.join(row)?);
            }
            Ok(out)
        }
        RowsOf::Origin(rows) => sqlx::query_as::<_, OriginRow>(rows)
            .bind(ids)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| origin_candidate(kind, r))
            .collect(),
    }
}
