//! Warnings waiting for a person: the review queue and marking an item reviewed.

use chrono::{DateTime, Utc};
use sqlx::Row;

use crate::Store;
use crate::error::Result;

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
}
