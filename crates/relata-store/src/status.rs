//! What the ledger holds now, for `relata status` and readiness: jobs by task and state,
//! dead letters by reason, unpublished jobs, candidates by promotion state (the review
//! queue is the `pending` ones) and the invalid-output rate of the last 24 hours.

use sqlx::Row;

use crate::Store;
use crate::error::Result;

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
///   rejected or invalid_envelope — transport and provider errors are not responses),
///   and answers whose model was asked;
/// * `responses_with_rejection`: those with at least one rejection (partial, rejected,
///   invalid_envelope; a `degraded` answer);
/// * `rejections`: `invalid_outputs` rows (one per rejected row or rejected response)
///   and the reasons of answers;
/// * `accepted_rows`: entities, claims and relations committed, and one per answer that
///   was not degraded;
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
    /// Candidates waiting for a reviewer (promotion state `pending`): the review queue.
    pub review_pending: i64,
    /// Candidates (entities, claims, relations) by kind and promotion state.
    pub candidates: Vec<crate::promotion::CandidateCount>,
    pub invalid_last_24h: InvalidRate,
}

impl Store {
    /// Cheap liveness check of the database (for `/readyz`).
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
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
        // The same counts as `relata report` and the doubling check, answers included, so
        // the three never disagree about what failed. The upper bound is a second ahead
        // so a call recorded this instant is not missed.
        let now = chrono::Utc::now();
        let c = self
            .failure_counts(
                now - chrono::Duration::hours(24),
                now + chrono::Duration::seconds(1),
            )
            .await?;
        let candidates = self.candidate_counts().await?;
        let review_pending = candidates
            .iter()
            .filter(|c| c.state == relata_core::PromotionState::Pending)
            .map(|c| c.count)
            .sum();
        Ok(Status {
            jobs,
            dead_letters,
            unpublished,
            review_pending,
            candidates,
            invalid_last_24h: InvalidRate {
                window_hours: 24,
                responses: c.responses,
                responses_with_rejection: c.responses_with_rejection,
                rejections: c.rejections,
                accepted_rows: c.accepted_rows,
                response_rate: c.response_rate(),
                row_rate: c.row_rate(),
            },
        })
    }
}
