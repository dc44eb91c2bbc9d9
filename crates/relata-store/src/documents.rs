//! Documents, revisions and chunks: the producer's side.

use sqlx::{PgConnection, Row};

use crate::error::{Result, StoreError};
use crate::types::{ChunkRow, ChunkSpan, UpsertKind, UpsertOutcome};
use crate::{Store, sha256_hex, to_i32, to_usize};

/// The columns [`chunk_row`] reads, from `chunks` aliased `c`, each renamed `c_…` so that
/// a join with another table can carry them without clashing names.
macro_rules! chunk_columns {
    () => {
        "c.id AS c_id, c.document_id AS c_document_id, c.revision_id AS c_revision_id,
         c.ordinal AS c_ordinal, c.start_byte AS c_start_byte, c.end_byte AS c_end_byte,
         c.text AS c_text, c.sha256 AS c_sha256,
         (SELECT d.title FROM documents d WHERE d.id = c.document_id) AS c_title"
    };
}
pub(crate) use chunk_columns;

impl Store {
    /// Insert or update a document keyed by `(source, external_id)`, in one transaction.
    ///
    /// * unknown document: a document, its first revision and its chunks (`New`);
    /// * same sha256 as the current revision: nothing but the title is touched
    ///   (`Unchanged`), and the existing chunks are returned;
    /// * different text: a new revision with its chunks becomes current (`Changed`); the
    ///   old revision and everything extracted from it stay. If the text equals an *older*
    ///   revision (a revert), that revision becomes current again with its own chunks.
    ///
    /// `chunks` are byte spans of `text` (see [`ChunkSpan`]); they are only used when a
    /// revision is created.
    pub async fn upsert_document(
        &self,
        source: &str,
        external_id: &str,
        title: Option<&str>,
        text: &str,
        chunks: &[ChunkSpan],
    ) -> Result<UpsertOutcome> {
        check_spans(text, chunks)?;
        let sha = sha256_hex(text.as_bytes());
        let mut tx = self.pool.begin().await?;

        let inserted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO documents (source, external_id, title) VALUES ($1, $2, $3)
             ON CONFLICT (source, external_id) DO NOTHING RETURNING id",
        )
        .bind(source)
        .bind(external_id)
        .bind(title)
        .fetch_optional(&mut *tx)
        .await?;

        let (document_id, current, is_new) = match inserted {
            Some(id) => (id, None, true),
            None => {
                let row = sqlx::query(
                    "SELECT id, current_revision_id FROM documents
                     WHERE source = $1 AND external_id = $2 FOR UPDATE",
                )
                .bind(source)
                .bind(external_id)
                .fetch_one(&mut *tx)
                .await?;
                (
                    row.try_get::<i64, _>(0)?,
                    row.try_get::<Option<i64>, _>(1)?,
                    false,
                )
            }
        };

        // Does a revision with this text exist already?
        let existing: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM document_revisions WHERE document_id = $1 AND sha256 = $2",
        )
        .bind(document_id)
        .bind(&sha)
        .fetch_optional(&mut *tx)
        .await?;

        let (revision_id, kind) = match existing {
            Some(rev) if Some(rev) == current => {
                sqlx::query(
                    "UPDATE documents SET title = $2, updated_at = now()
                     WHERE id = $1 AND title IS DISTINCT FROM $2",
                )
                .bind(document_id)
                .bind(title)
                .execute(&mut *tx)
                .await?;
                (rev, UpsertKind::Unchanged)
            }
            Some(rev) => (rev, UpsertKind::Changed),
            None => {
                let rev = insert_revision(&mut tx, document_id, &sha, text, chunks).await?;
                let kind = if is_new {
                    UpsertKind::New
                } else {
                    UpsertKind::Changed
                };
                (rev, kind)
            }
        };

        if kind != UpsertKind::Unchanged {
            sqlx::query(
                "UPDATE documents SET current_revision_id = $2, title = $3, updated_at = now()
                 WHERE id = $1",
            )
            .bind(document_id)
            .bind(revision_id)
            .bind(title)
            .execute(&mut *tx)
            .await?;
        }

        let chunk_ids: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM chunks WHERE revision_id = $1 ORDER BY ordinal")
                .bind(revision_id)
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(UpsertOutcome {
            document_id,
            revision_id,
            kind,
            chunk_ids,
        })
    }

    /// A chunk, the input of an extract job.
    pub async fn load_chunk(&self, chunk_id: i64) -> Result<ChunkRow> {
        let row = sqlx::query(concat!(
            "SELECT ",
            chunk_columns!(),
            " FROM chunks c WHERE c.id = $1"
        ))
        .bind(chunk_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::ChunkNotFound(chunk_id))?;
        chunk_row(&row)
    }
}

/// A chunk from a row that selected [`chunk_columns!`].
pub(crate) fn chunk_row(row: &sqlx::postgres::PgRow) -> Result<ChunkRow> {
    Ok(ChunkRow {
        id: row.try_get("c_id")?,
        document_id: row.try_get("c_document_id")?,
        revision_id: row.try_get("c_revision_id")?,
        ordinal: row.try_get("c_ordinal")?,
        start_byte: to_usize(row.try_get("c_start_byte")?, "start_byte")?,
        end_byte: to_usize(row.try_get("c_end_byte")?, "end_byte")?,
        text: row.try_get("c_text")?,
        sha256: row.try_get("c_sha256")?,
        title: row.try_get("c_title")?,
    })
}

fn check_spans(text: &str, chunks: &[ChunkSpan]) -> Result<()> {
    let mut prev_end = 0;
    for (i, c) in chunks.iter().enumerate() {
        let ok = c.start < c.end
            && c.start >= prev_end
            && c.end <= text.len()
            && text.is_char_boundary(c.start)
            && text.is_char_boundary(c.end);
        if !ok {
            return Err(StoreError::InvalidInput(format!(
                "chunk {i} [{}, {}) is empty, out of order, outside the text ({} bytes) or not on character boundaries",
                c.start,
                c.end,
                text.len()
            )));
        }
        prev_end = c.end;
    }
    Ok(())
}

async fn insert_revision(
    conn: &mut PgConnection,
    document_id: i64,
    sha: &str,
    text: &str,
    chunks: &[ChunkSpan],
) -> Result<i64> {
    let revision_id: i64 = sqlx::query_scalar(
        "INSERT INTO document_revisions (document_id, sha256, text) VALUES ($1, $2, $3)
         RETURNING id",
    )
    .bind(document_id)
    .bind(sha)
    .bind(text)
    .fetch_one(&mut *conn)
    .await?;
    for (ordinal, span) in chunks.iter().enumerate() {
        // Spans were checked against `text` above.
        let Some(chunk_text) = text.get(span.start..span.end) else {
            return Err(StoreError::Invariant(format!(
                "chunk span [{}, {}) not in text",
                span.start, span.end
            )));
        };
        sqlx::query(
            "INSERT INTO chunks (revision_id, document_id, ordinal, start_byte, end_byte, text, sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(revision_id)
        .bind(document_id)
        .bind(to_i32(ordinal, "chunk ordinal")?)
        .bind(to_i32(span.start, "chunk start")?)
        .bind(to_i32(span.end, "chunk end")?)
        .bind(chunk_text)
        .bind(sha256_hex(chunk_text.as_bytes()))
        .execute(&mut *conn)
        .await?;
    }
    Ok(revision_id)
}
