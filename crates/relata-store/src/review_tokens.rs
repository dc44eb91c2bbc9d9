//! Sign-in tokens of the review page. The store keeps one row per reviewer holding the
//! sha256 of the reviewer's current token; issuing a token replaces that row (revoking
//! the previous token in the same statement), and checking a token compares hashes, so
//! a token never exists in the database in a form that would sign anyone in.
//!
//! The store does not know who may review: the caller checks the name against the
//! configured reviewers before it issues or accepts a token.

use chrono::{DateTime, Utc};

use crate::{Result, Store};

/// The sha256 of a sign-in token, lowercase hex: what the store keeps and compares.
pub fn review_token_sha256(token: &str) -> String {
    crate::sha256_hex(token.as_bytes())
}

impl Store {
    /// Record `token` as `reviewer`'s only valid sign-in token, revoking any earlier one.
    /// Returns when it was issued.
    pub async fn issue_review_token(&self, reviewer: &str, token: &str) -> Result<DateTime<Utc>> {
        let issued: DateTime<Utc> = sqlx::query_scalar(
            "INSERT INTO review_tokens (reviewer, token_sha256) VALUES ($1, $2)
             ON CONFLICT (reviewer) DO UPDATE
                SET token_sha256 = EXCLUDED.token_sha256, issued_at = now()
             RETURNING issued_at",
        )
        .bind(reviewer)
        .bind(review_token_sha256(token))
        .fetch_one(&self.pool)
        .await?;
        Ok(issued)
    }

    /// Revoke `reviewer`'s token without issuing another; true when there was one.
    pub async fn revoke_review_token(&self, reviewer: &str) -> Result<bool> {
        let gone = sqlx::query("DELETE FROM review_tokens WHERE reviewer = $1")
            .bind(reviewer)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(gone > 0)
    }

    /// True when `token` is `reviewer`'s current token.
    pub async fn check_review_token(&self, reviewer: &str, token: &str) -> Result<bool> {
        self.check_review_token_sha256(reviewer, &review_token_sha256(token))
            .await
    }

    /// True when `reviewer`'s current token has the sha256 (hex) `token_sha256`: what a
    /// session opened by an earlier token checks on each request.
    pub async fn check_review_token_sha256(
        &self,
        reviewer: &str,
        token_sha256: &str,
    ) -> Result<bool> {
        let stored: Option<String> =
            sqlx::query_scalar("SELECT token_sha256 FROM review_tokens WHERE reviewer = $1")
                .bind(reviewer)
                .fetch_optional(&self.pool)
                .await?;
        Ok(stored.is_some_and(|s| constant_time_eq(s.as_bytes(), token_sha256.as_bytes())))
    }
}

/// Compare without stopping at the first difference, so the time taken says nothing about
/// how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_hex_sha256_and_compare_exactly() {
        let h = review_token_sha256("rlt_abc");
        assert_eq!(h.len(), 64);
        assert!(
            h.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert!(constant_time_eq(
            h.as_bytes(),
            review_token_sha256("rlt_abc").as_bytes()
        ));
        assert!(!constant_time_eq(
            h.as_bytes(),
            review_token_sha256("rlt_abd").as_bytes()
        ));
        assert!(!constant_time_eq(b"ab", b"abc"));
    }
}
