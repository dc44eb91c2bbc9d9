//! Candidate claim pairs and classify jobs.
//!
//! A pair is an unordered pair of claims about the same normalised subject, or about one
//! canonical entity (`entities`), in different documents. Each pair is classified at most
//! once per classify task version: a `classified_pairs` row reserves it, written in the
//! same transaction as the classify job that carries it, so a crash can neither lose a
//! reserved pair nor classify it twice.

use std::collections::HashSet;

use relata_core::{JobId, JobInput, Task, TaskVersion};
use sqlx::Row;
use sqlx::types::Json;

use crate::Store;
use crate::error::{ErrorKind, Result, StoreError};
use crate::jobs::{classify_job_id, schema_version, to_publish};
use crate::types::{ClaimForClassify, JobToPublish};

/// How often a pair reservation that lost a race with a concurrent transaction is redone.
const RESERVE_TRIES: usize = 5;

impl Store {
    /// Candidate pairs for newly committed claims, as `(lower id, higher id)`.
    ///
    /// For each new claim: the `k` newest claims (by commit time, then id) with the same
    /// normalised subject or the same canonical entity (`entities`), from *other*
    /// documents, taken from those documents' current revisions only (claims of superseded
    /// text are not paired). Pairs already reserved
    /// for `version` are then left out — `k` bounds the neighbourhood looked at, not the
    /// number of pairs found after skipping, so asking twice never reaches further back.
    /// Output is ordered by new claim, then newest partner first, without repeats.
    ///
    /// Read-only: [`Store::ensure_classify_jobs`] reserves the pairs.
    pub async fn candidate_pairs(
        &self,
        new_claim_ids: &[i64],
        k: u32,
        version: &TaskVersion,
    ) -> Result<Vec<(i64, i64)>> {
        if new_claim_ids.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        // A new claim's mention is placed among the canonical entities beside the commits,
        // often after this runs; until then its entity is the one its name and type
        // resolve to (the first resolved mention of that name, which `same_name` joins it
        // to), so an alias an earlier document gave already counts.
        let named: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT c.id, e.name, e.entity_type FROM claims c JOIN entities e ON e.id = c.entity_id
             WHERE c.id = ANY($1)",
        )
        .bind(new_claim_ids)
        .fetch_all(&self.pool)
        .await?;
        let (mut claim, mut key, mut kind) = (Vec::new(), Vec::new(), Vec::new());
        for (id, name, entity_type) in named {
            claim.push(id);
            key.push(relata_validate::resolve::name_key(&name));
            kind.push(entity_type);
        }
        let rows = sqlx::query(
            "SELECT n.id, o.id
             FROM claims n
             LEFT JOIN unnest($4::bigint[], $5::text[], $6::text[])
                  AS k(claim_id, name_key, entity_type) ON k.claim_id = n.id
             CROSS JOIN LATERAL (
                 SELECT coalesce(
                     (SELECT r.canonical_id FROM entity_resolutions r
                       WHERE r.entity_id = n.entity_id),
                     (SELECT r.canonical_id FROM entity_resolutions r
                       WHERE r.name_key = k.name_key AND r.entity_type = k.entity_type
                       ORDER BY r.entity_id LIMIT 1)) AS canonical_id
             ) mine
             CROSS JOIN LATERAL (
                 SELECT u.id, u.created_at FROM (
                     (SELECT c.id, c.created_at
                      FROM claims c
                      JOIN documents d ON d.current_revision_id = c.revision_id
                      WHERE c.subject_normalized = n.subject_normalized
                        AND c.document_id <> n.document_id
                        -- Resolution keeps a homonym (another type, or a join a person
                        -- undid) apart even where the names match.
                        AND NOT EXISTS (
                            SELECT 1 FROM entity_resolutions b
                            WHERE b.entity_id = c.entity_id
                              AND b.canonical_id <> mine.canonical_id)
                      ORDER BY c.created_at DESC, c.id DESC
                      LIMIT $2)
                     UNION
                     (SELECT c.id, c.created_at
                      FROM entity_resolutions same
                      JOIN claims c ON c.entity_id = same.entity_id
                      JOIN documents d ON d.current_revision_id = c.revision_id
                      WHERE same.canonical_id = mine.canonical_id
                        AND c.document_id <> n.document_id
                      ORDER BY c.created_at DESC, c.id DESC
                      LIMIT $2)
                 ) u
                 ORDER BY u.created_at DESC, u.id DESC
                 LIMIT $2
             ) o
             WHERE n.id = ANY($1)
               AND NOT EXISTS (
                   SELECT 1 FROM classified_pairs p
                   WHERE p.task_version_fingerprint = $3
                     AND p.claim_lo = least(n.id, o.id)
                     AND p.claim_hi = greatest(n.id, o.id))
             ORDER BY n.id, o.created_at DESC, o.id DESC",
        )
        .bind(new_claim_ids)
        .bind(i64::from(k))
        .bind(version.fingerprint())
        .bind(&claim)
        .bind(&key)
        .bind(&kind)
        .fetch_all(&self.pool)
        .await?;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for row in &rows {
            let (a, b): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            let pair = (a.min(b), a.max(b));
            if seen.insert(pair) {
                out.push(pair);
            }
        }
        Ok(out)
    }

    /// Create one classify job per batch of pairs, reserving each pair for `version` in
    /// the same transaction. Pairs already reserved (by an earlier call or a concurrent
    /// worker) are dropped from their batch; a batch left empty creates no job.
    ///
    /// Returns the jobs to publish: the ones created now and, when `origin` is given, every
    /// queued unpublished classify job created earlier for that origin (the extract job
    /// whose claims produced them) — so an extract job redelivered after a crash between
    /// creating and publishing its classify jobs publishes them then.
    pub async fn ensure_classify_jobs(
        &self,
        version: &TaskVersion,
        origin: Option<&JobId>,
        batches: &[Vec<(i64, i64)>],
    ) -> Result<Vec<JobToPublish>> {
        if version.task != Task::Classify {
            return Err(StoreError::InvalidInput(format!(
                "ensure_classify_jobs needs a classify task version, got {}",
                version.task
            )));
        }
        for pair in batches.iter().flatten() {
            if pair.0 == pair.1 {
                return Err(StoreError::InvalidInput(format!(
                    "claim {} paired with itself",
                    pair.0
                )));
            }
        }
        let mut tries = 0;
        loop {
            tries += 1;
            match self
                .try_ensure_classify_jobs(version, origin, batches)
                .await
            {
                Ok(Some(jobs)) => return Ok(jobs),
                // A concurrent transaction reserved some of these pairs between our read
                // and our insert: do it again, now seeing its reservations.
                Ok(None) if tries < RESERVE_TRIES => continue,
                Err(e) if e.kind() == ErrorKind::Contention && tries < RESERVE_TRIES => continue,
                Ok(None) => {
                    return Err(StoreError::Invariant(
                        "pair reservations kept conflicting".into(),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn try_ensure_classify_jobs(
        &self,
        version: &TaskVersion,
        origin: Option<&JobId>,
        batches: &[Vec<(i64, i64)>],
    ) -> Result<Option<Vec<JobToPublish>>> {
        let fingerprint = version.fingerprint();
        let mut tx = self.pool.begin().await?;
        let mut created = Vec::new();
        let mut taken: HashSet<(i64, i64)> = HashSet::new();
        for batch in batches {
            let mut pairs: Vec<(i64, i64)> = batch
                .iter()
                .map(|&(a, b)| (a.min(b), a.max(b)))
                .filter(|p| !taken.contains(p))
                .collect();
            pairs.sort_unstable();
            pairs.dedup();
            if pairs.is_empty() {
                continue;
            }
            let (los, his): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
            let reserved: Vec<(i64, i64)> = sqlx::query_as(
                "SELECT claim_lo, claim_hi FROM classified_pairs
                 WHERE task_version_fingerprint = $1
                   AND (claim_lo, claim_hi) IN (SELECT * FROM unnest($2::bigint[], $3::bigint[]))",
            )
            .bind(&fingerprint)
            .bind(&los)
            .bind(&his)
            .fetch_all(&mut *tx)
            .await?;
            pairs.retain(|p| !reserved.contains(p));
            if pairs.is_empty() {
                continue;
            }
            let job_id = classify_job_id(version, &pairs);
            sqlx::query(
                "INSERT INTO jobs (job_id, task, task_version_fingerprint, prompt_version,
                                   schema_id, schema_version, schema_sha256, model, pairs,
                                   origin_job_id)
                 VALUES ($1, 'classify', $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (job_id) DO NOTHING",
            )
            .bind(job_id.as_str())
            .bind(&fingerprint)
            .bind(&version.prompt_version)
            .bind(&version.schema_id)
            .bind(schema_version(version)?)
            .bind(&version.schema_sha256)
            .bind(&version.model)
            .bind(Json(&pairs))
            .bind(origin.map(JobId::as_str))
            .execute(&mut *tx)
            .await?;
            let (los, his): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
            let inserted = sqlx::query(
                "INSERT INTO classified_pairs (task_version_fingerprint, claim_lo, claim_hi, job_id)
                 SELECT $1, lo, hi, $4 FROM unnest($2::bigint[], $3::bigint[]) AS t(lo, hi)
                 ON CONFLICT DO NOTHING",
            )
            .bind(&fingerprint)
            .bind(&los)
            .bind(&his)
            .bind(job_id.as_str())
            .execute(&mut *tx)
            .await?;
            if inserted.rows_affected() != pairs.len() as u64 {
                tx.rollback().await?;
                return Ok(None);
            }
            taken.extend(pairs.iter().copied());
            created.push(JobToPublish {
                job_id,
                input: JobInput::Classify { pairs },
            });
        }
        if let Some(origin) = origin {
            let rows = sqlx::query(
                "SELECT job_id, task, chunk_id, pairs FROM jobs
                 WHERE origin_job_id = $1 AND task_version_fingerprint = $2
                   AND state = 'queued' AND published_at IS NULL
                 ORDER BY created_at, job_id",
            )
            .bind(origin.as_str())
            .bind(&fingerprint)
            .fetch_all(&mut *tx)
            .await?;
            for row in &rows {
                let job = to_publish(row)?;
                if !created.iter().any(|c| c.job_id == job.job_id) {
                    created.push(job);
                }
            }
        }
        tx.commit().await?;
        Ok(Some(created))
    }

    /// Candidate pairs for `new_claim_ids` (see [`Store::candidate_pairs`]), cut into
    /// batches of at most `batch_size` pairs, each made a classify job of `version`
    /// (see [`Store::ensure_classify_jobs`]). Call it after [`Store::commit_extract`] with
    /// the committed claim ids and the extract job as `origin`; calling it again for the
    /// same job (after a redelivery) creates nothing new and returns what is still
    /// unpublished.
    pub async fn plan_classify_jobs(
        &self,
        origin: &JobId,
        new_claim_ids: &[i64],
        k: u32,
        batch_size: usize,
        version: &TaskVersion,
    ) -> Result<Vec<JobToPublish>> {
        let pairs = self.candidate_pairs(new_claim_ids, k, version).await?;
        let batches: Vec<Vec<(i64, i64)>> = pairs
            .chunks(batch_size.max(1))
            .map(<[(i64, i64)]>::to_vec)
            .collect();
        self.ensure_classify_jobs(version, Some(origin), &batches)
            .await
    }

    /// The claims of the pairs of a classify job, by id, for showing to the model under
    /// handles. A claim that no longer exists is simply absent: the caller dead-letters
    /// the job as `missing_input`.
    pub async fn load_claims_for_pairs(
        &self,
        pairs: &[(i64, i64)],
    ) -> Result<Vec<ClaimForClassify>> {
        let mut ids: Vec<i64> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        ids.sort_unstable();
        ids.dedup();
        let rows = sqlx::query(
            "SELECT id, document_id, statement, quote, subject FROM claims
             WHERE id = ANY($1) ORDER BY id",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ClaimForClassify {
                    id: row.try_get(0)?,
                    document_id: row.try_get(1)?,
                    statement: row.try_get(2)?,
                    quote: row.try_get(3)?,
                    subject: row.try_get(4)?,
                })
            })
            .collect()
    }

    /// The ids of the claims a job committed, in response order (to plan classify jobs
    /// again for an extract job found already committed).
    pub async fn claim_ids_of_job(&self, job_id: &JobId) -> Result<Vec<i64>> {
        Ok(
            sqlx::query_scalar("SELECT id FROM claims WHERE job_id = $1 ORDER BY row_index")
                .bind(job_id.as_str())
                .fetch_all(&self.pool)
                .await?,
        )
    }
}
