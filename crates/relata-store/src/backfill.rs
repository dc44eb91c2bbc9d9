//! Backfill selection: which inputs a backfill would (re-)run under the current task
//! version, and why.
//!
//! A backfill never decides anything the ledger has not: job ids are derived from the task
//! version and the input, so an input that already has a job of the current version is
//! never given a second one. Selection therefore sorts every selected input into one of
//! three [`BackfillAction`]s — `publish` (no job of the current version yet), `resume` (a
//! job of the current version exists but was never published: an earlier backfill or
//! ingest was interrupted) and `already_current` (done, or on the broker) — and only the
//! first two are ever returned for publishing.
//!
//! The inputs:
//!
//! * **extract**: chunks of *current* document revisions (a superseded revision's chunks are
//!   never re-run). Their [`PriorState`] is the state of the chunk's most recent extract job
//!   of any *other* task version, `never` when there is none. Ingestion time is the
//!   revision's `created_at`.
//! * **classify**: claim pairs that were classified (reserved) under another task version,
//!   both claims still in current revisions. A classify job's input is a batch of pairs, and
//!   which claims are paired is decided by the bounded candidate search at extraction time
//!   (at most K partners per new claim); a backfill re-asks exactly those pairs under the
//!   new version rather than re-running the candidate search, so it cannot grow the pair
//!   set beyond what the bound allowed. Their prior state is the state of the job that last
//!   classified the pair; ingestion time is the later of the two claims' revisions.

use chrono::{DateTime, Utc};
use relata_core::{TaskVersion, closed_enum};
use sqlx::Row;

use crate::error::Result;
use crate::jobs::to_publish;
use crate::types::JobToPublish;
use crate::{Store, parse_label};

closed_enum! {
    /// What an input's previous result (under another task version) was.
    pub enum PriorState: "prior state" {
        /// No job of another version (extract only: e.g. ingested before any job existed).
        Never = "never",
        /// A job of another version is still queued (published, never completed).
        Queued = "queued",
        Accepted = "accepted",
        Partial = "partial",
        Invalid = "invalid",
        Dead = "dead",
    }
}

closed_enum! {
    /// What a backfill does with a selected input.
    pub enum BackfillAction: "backfill action" {
        /// No job of the current version: one is created and published.
        Publish = "publish",
        /// A job of the current version exists but was never published: it is published.
        Resume = "resume",
        /// A job of the current version exists and was published (or completed): nothing.
        AlreadyCurrent = "already_current",
    }
}

/// The selectors of a backfill; every one that is set must hold (they combine with AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackfillSelector {
    /// Documents of this source (classify: either claim's document).
    pub source: Option<String>,
    /// Ingested at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Ingested before this time.
    pub until: Option<DateTime<Utc>>,
    /// The prior state is one of these (empty: any).
    pub statuses: Vec<PriorState>,
    /// Only inputs that have a result of another task version and none published of the
    /// current one ("not produced by the current version"): `never` and `already_current`
    /// inputs are left out of the selection altogether.
    pub not_version: bool,
}

/// How many selected inputs have one prior state and one action.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BackfillCount {
    pub prior: PriorState,
    pub action: BackfillAction,
    pub count: i64,
}

/// One selected chunk that needs publishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractCandidate {
    pub chunk_id: i64,
    pub prior: PriorState,
    pub action: BackfillAction,
}

/// One selected claim pair (`lo < hi`) that needs publishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairCandidate {
    pub pair: (i64, i64),
    pub prior: PriorState,
    pub action: BackfillAction,
}

// The selection of chunks. $1 fingerprint, $2 source, $3 since, $4 until, $5 statuses,
// $6 not_version, $7 after chunk id.
macro_rules! extract_selection {
    () => {
        "WITH sel AS (
             SELECT c.id AS chunk_id,
                    coalesce((SELECT j.state FROM jobs j
                              WHERE j.chunk_id = c.id AND j.task = 'extract'
                                AND j.task_version_fingerprint <> $1
                              ORDER BY j.created_at DESC, j.job_id DESC LIMIT 1), 'never') AS prior,
                    coalesce((SELECT CASE WHEN j.state = 'queued' AND j.published_at IS NULL
                                          THEN 'resume' ELSE 'already_current' END
                              FROM jobs j
                              WHERE j.chunk_id = c.id AND j.task_version_fingerprint = $1
                              LIMIT 1), 'publish') AS action
             FROM chunks c
             JOIN documents d ON d.current_revision_id = c.revision_id
             JOIN document_revisions r ON r.id = c.revision_id
             WHERE ($2::text IS NULL OR d.source = $2)
               AND ($3::timestamptz IS NULL OR r.created_at >= $3)
               AND ($4::timestamptz IS NULL OR r.created_at < $4)
               AND c.id > $7)
         , fsel AS (
             SELECT chunk_id, prior, action FROM sel
             WHERE (cardinality($5::text[]) = 0 OR prior = ANY($5::text[]))
               AND (NOT $6 OR (prior <> 'never' AND action <> 'already_current'))) "
    };
}

// The selection of pairs. $1 fingerprint, $2 source, $3 since, $4 until, $5 statuses,
// $6 not_version, $7/$8 after (lo, hi).
macro_rules! classify_selection {
    () => {
        "WITH p AS (
             SELECT DISTINCT ON (cp.claim_lo, cp.claim_hi) cp.claim_lo, cp.claim_hi, j.state AS prior
             FROM classified_pairs cp JOIN jobs j ON j.job_id = cp.job_id
             WHERE cp.task_version_fingerprint <> $1
               AND (cp.claim_lo, cp.claim_hi) > ($7, $8)
             ORDER BY cp.claim_lo, cp.claim_hi, cp.created_at DESC, cp.job_id DESC),
         sel AS (
             SELECT p.claim_lo, p.claim_hi, p.prior,
                    coalesce((SELECT CASE WHEN j.state = 'queued' AND j.published_at IS NULL
                                          THEN 'resume' ELSE 'already_current' END
                              FROM classified_pairs c2 JOIN jobs j ON j.job_id = c2.job_id
                              WHERE c2.task_version_fingerprint = $1
                                AND c2.claim_lo = p.claim_lo AND c2.claim_hi = p.claim_hi),
                             'publish') AS action
             FROM p
             JOIN claims a ON a.id = p.claim_lo
             JOIN documents da ON da.current_revision_id = a.revision_id
             JOIN document_revisions ra ON ra.id = a.revision_id
             JOIN claims b ON b.id = p.claim_hi
             JOIN documents db ON db.current_revision_id = b.revision_id
             JOIN document_revisions rb ON rb.id = b.revision_id
             WHERE ($2::text IS NULL OR da.source = $2 OR db.source = $2)
               AND ($3::timestamptz IS NULL OR greatest(ra.created_at, rb.created_at) >= $3)
               AND ($4::timestamptz IS NULL OR greatest(ra.created_at, rb.created_at) < $4))
         , fsel AS (
             SELECT claim_lo, claim_hi, prior, action FROM sel
             WHERE (cardinality($5::text[]) = 0 OR prior = ANY($5::text[]))
               AND (NOT $6 OR action <> 'already_current')) "
    };
}

impl Store {
    /// What an extract backfill of `version` with `selector` would do, counted by prior
    /// state and action (read-only: `--dry-run`, the summary and the progress bar).
    pub async fn backfill_extract_counts(
        &self,
        version: &TaskVersion,
        selector: &BackfillSelector,
    ) -> Result<Vec<BackfillCount>> {
        let q = sqlx::query(concat!(
            extract_selection!(),
            "SELECT prior, action, count(*) FROM fsel GROUP BY 1, 2 ORDER BY 1, 2"
        ));
        let rows = bind_selector(q, version, selector)
            .bind(0_i64)
            .fetch_all(&self.pool)
            .await?;
        counts(&rows)
    }

    /// The next `page` selected chunks after chunk id `after` (ascending) that need
    /// publishing (`publish` or `resume`). Pass the last chunk id returned to continue.
    pub async fn backfill_extract_page(
        &self,
        version: &TaskVersion,
        selector: &BackfillSelector,
        after: i64,
        page: i64,
    ) -> Result<Vec<ExtractCandidate>> {
        let q = sqlx::query(concat!(
            extract_selection!(),
            "SELECT chunk_id, prior, action FROM fsel WHERE action <> 'already_current'
             ORDER BY chunk_id LIMIT $8"
        ));
        let rows = bind_selector(q, version, selector)
            .bind(after)
            .bind(page)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(ExtractCandidate {
                    chunk_id: r.try_get(0)?,
                    prior: parse_label(r.try_get(1)?)?,
                    action: parse_label(r.try_get(2)?)?,
                })
            })
            .collect()
    }

    /// What a classify backfill of `version` would do, counted in pairs.
    pub async fn backfill_classify_counts(
        &self,
        version: &TaskVersion,
        selector: &BackfillSelector,
    ) -> Result<Vec<BackfillCount>> {
        let q = sqlx::query(concat!(
            classify_selection!(),
            "SELECT prior, action, count(*) FROM fsel GROUP BY 1, 2 ORDER BY 1, 2"
        ));
        let rows = bind_selector(q, version, selector)
            .bind(0_i64)
            .bind(0_i64)
            .fetch_all(&self.pool)
            .await?;
        counts(&rows)
    }

    /// The next `page` selected pairs after `after` (ascending) that have no job of the
    /// current version yet (`publish`). Pairs in an unpublished job of the current version
    /// are published as that job by [`Store::unpublished_backfill_classify_jobs`].
    pub async fn backfill_classify_page(
        &self,
        version: &TaskVersion,
        selector: &BackfillSelector,
        after: (i64, i64),
        page: i64,
    ) -> Result<Vec<PairCandidate>> {
        let q = sqlx::query(concat!(
            classify_selection!(),
            "SELECT claim_lo, claim_hi, prior, action FROM fsel WHERE action = 'publish'
             ORDER BY claim_lo, claim_hi LIMIT $9"
        ));
        let rows = bind_selector(q, version, selector)
            .bind(after.0)
            .bind(after.1)
            .bind(page)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(PairCandidate {
                    pair: (r.try_get(0)?, r.try_get(1)?),
                    prior: parse_label(r.try_get(2)?)?,
                    action: parse_label(r.try_get(3)?)?,
                })
            })
            .collect()
    }

    /// Queued, never-published classify jobs of `version` that a backfill created (no
    /// origin extract job) — what an interrupted classify backfill left behind — oldest
    /// first, at most `limit`.
    pub async fn unpublished_backfill_classify_jobs(
        &self,
        version: &TaskVersion,
        limit: i64,
    ) -> Result<Vec<JobToPublish>> {
        let rows = sqlx::query(
            "SELECT job_id, task, chunk_id, pairs FROM jobs
             WHERE task = 'classify' AND task_version_fingerprint = $1 AND origin_job_id IS NULL
               AND state = 'queued' AND published_at IS NULL
             ORDER BY created_at, job_id LIMIT $2",
        )
        .bind(version.fingerprint())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(to_publish).collect()
    }
}

/// Bind $1..$6 of a selection.
fn bind_selector<'q>(
    q: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    version: &TaskVersion,
    s: &BackfillSelector,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let statuses: Vec<&'static str> = s.statuses.iter().map(|p| p.as_str()).collect();
    q.bind(version.fingerprint())
        .bind(s.source.clone())
        .bind(s.since)
        .bind(s.until)
        .bind(statuses)
        .bind(s.not_version)
}

fn counts(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<BackfillCount>> {
    rows.iter()
        .map(|r| {
            Ok(BackfillCount {
                prior: parse_label(r.try_get(0)?)?,
                action: parse_label(r.try_get(1)?)?,
                count: r.try_get(2)?,
            })
        })
        .collect()
}
