//! Read-outs for the benchmarks and the reliability scenarios (`relata-bench`): counts,
//! timings and duplicate checks that no relata command needs, and the "floor" inserts
//! that measure what PostgreSQL alone costs. Compiled only with the `measure` feature, so
//! the SQL stays in this crate and a production build carries none of it.

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::Store;
use crate::error::Result;

/// Rows per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCounts {
    pub documents: i64,
    pub chunks: i64,
    pub entities: i64,
    pub claims: i64,
    pub relations: i64,
    pub warnings: i64,
    pub invalid_outputs: i64,
    pub model_calls: i64,
}

/// Pairs of claims in different documents (current revisions only), counted by what they
/// share: the normalised subject name, the canonical entity, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairsBy {
    pub subject_name: i64,
    pub canonical_entity: i64,
    pub both: i64,
}

/// When a task's terminal jobs ran, from the ledger and the evidence record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunTiming {
    /// Terminal jobs with a model call.
    pub jobs: i64,
    /// Seconds from the first model call's start to the last job's completion.
    pub span_s: Option<f64>,
    /// Per job, model call start to job completion, in milliseconds, ascending.
    pub latencies_ms: Vec<f64>,
}

/// What the answer calls of a run came to: calls made, their prompt and completion tokens
/// and milliseconds, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerUsage {
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub duration_ms: i64,
}

/// What the extract calls of a run came to (the real-model acceptance table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtractAcceptance {
    /// Model and prompt version of one extract call (`None`: no call was made).
    pub model_and_prompt: Option<(String, String)>,
    pub responses: i64,
    pub truncated: i64,
    /// Responses rejected whole.
    pub rejected_whole: i64,
    pub accepted_claims: i64,
    /// Rejected claim rows by reason, most frequent first.
    pub rejected_claims: Vec<(String, i64)>,
    pub completion_tokens: i64,
    pub prompt_tokens: i64,
    /// Entities stored (listed by the model or implied by a claim's subject).
    pub entities: i64,
    /// Bytes of chunk text the calls were about.
    pub source_bytes: i64,
}

/// A chunk and the claims accepted from it, for coverage: how many of its sentences
/// yielded a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkClaims {
    pub text: String,
    /// Each accepted claim's quote span, as byte offsets in the chunk.
    pub quotes: Vec<(usize, usize)>,
}

/// Rows written twice for one (job, row), and jobs with two outcomes: each must be 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Duplicates {
    pub claims: i64,
    pub entities: i64,
    pub model_calls: i64,
    pub invalid_outputs: i64,
}

impl Store {
    async fn count(&self, sql: &'static str) -> Result<i64> {
        Ok(sqlx::query_scalar(sql).fetch_one(&self.pool).await?)
    }

    async fn groups(&self, sql: &'static str) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(sql).fetch_all(&self.pool).await?)
    }

    pub async fn table_counts(&self) -> Result<TableCounts> {
        Ok(TableCounts {
            documents: self.count("SELECT count(*) FROM documents").await?,
            chunks: self.count("SELECT count(*) FROM chunks").await?,
            entities: self.count("SELECT count(*) FROM entities").await?,
            claims: self.count("SELECT count(*) FROM claims").await?,
            relations: self.count("SELECT count(*) FROM claim_relations").await?,
            warnings: self.count("SELECT count(*) FROM warnings").await?,
            invalid_outputs: self.count("SELECT count(*) FROM invalid_outputs").await?,
            model_calls: self.count("SELECT count(*) FROM model_calls").await?,
        })
    }

    /// Mentions placed in `entity_resolutions` (by the step beside the commits, or a full
    /// resolve).
    pub async fn resolved_mentions(&self) -> Result<i64> {
        self.count("SELECT count(*) FROM entity_resolutions").await
    }

    /// Every pair of claims about one thing in two documents, by what makes them one:
    /// the pairs classification may draw candidates from, before and after resolution.
    pub async fn claim_pairs_by(&self) -> Result<PairsBy> {
        let (subject_name, canonical_entity, both) = sqlx::query_as(
            "WITH c AS (
                 SELECT cl.id, cl.document_id, cl.subject_normalized, r.canonical_id
                   FROM claims cl
                   JOIN documents d ON d.current_revision_id = cl.revision_id
                   LEFT JOIN entity_resolutions r ON r.entity_id = cl.entity_id)
             SELECT count(*) FILTER (WHERE a.subject_normalized = b.subject_normalized),
                    count(*) FILTER (WHERE a.canonical_id = b.canonical_id),
                    count(*) FILTER (WHERE a.subject_normalized = b.subject_normalized
                                       AND a.canonical_id = b.canonical_id)
               FROM c a JOIN c b ON a.id < b.id AND a.document_id <> b.document_id
                    AND (a.subject_normalized = b.subject_normalized
                         OR a.canonical_id = b.canonical_id)",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(PairsBy {
            subject_name,
            canonical_entity,
            both,
        })
    }

    /// Jobs of `task` by state, in state order.
    pub async fn jobs_by_state(&self, task: &str) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(
            "SELECT state, count(*) FROM jobs WHERE task = $1 GROUP BY state ORDER BY state",
        )
        .bind(task)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Dead-lettered jobs by reason.
    pub async fn dead_by_reason(&self) -> Result<Vec<(String, i64)>> {
        self.groups(
            "SELECT dead_reason, count(*) FROM jobs WHERE state = 'dead' GROUP BY 1 ORDER BY 1",
        )
        .await
    }

    /// `invalid_outputs` rows by reason.
    pub async fn rejections_by_reason(&self) -> Result<Vec<(String, i64)>> {
        self.groups("SELECT reason, count(*) FROM invalid_outputs GROUP BY 1 ORDER BY 1")
            .await
    }

    /// `invalid_outputs` rows by (task, reason, row kind; `None` = whole response), most
    /// frequent first.
    pub async fn rejections_by_kind(&self) -> Result<Vec<(String, String, Option<String>, i64)>> {
        Ok(sqlx::query_as(
            "SELECT task, reason, row_kind, count(*) FROM invalid_outputs GROUP BY 1, 2, 3 ORDER BY 4 DESC",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Model calls by (task, outcome).
    pub async fn calls_by_outcome(&self) -> Result<Vec<(String, String, i64)>> {
        Ok(sqlx::query_as(
            "SELECT task, outcome, count(*) FROM model_calls GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Warnings by kind, most frequent first.
    pub async fn warnings_by_kind(&self) -> Result<Vec<(String, i64)>> {
        self.groups("SELECT warning, count(*) FROM warnings GROUP BY 1 ORDER BY 2 DESC")
            .await
    }

    /// The first `limit` claims' (statement, quote).
    pub async fn claim_sample(&self, limit: i64) -> Result<Vec<(String, String)>> {
        Ok(
            sqlx::query_as("SELECT statement, quote FROM claims ORDER BY id LIMIT $1")
                .bind(limit)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    pub async fn run_timing(&self, task: &str) -> Result<RunTiming> {
        let (jobs, span_s): (i64, Option<f64>) = sqlx::query_as(
            "SELECT count(*), extract(epoch FROM max(j.completed_at) - min(m.started_at))::float8
             FROM jobs j JOIN model_calls m ON m.job_id = j.job_id
             WHERE j.task = $1 AND j.state <> 'queued'",
        )
        .bind(task)
        .fetch_one(&self.pool)
        .await?;
        let mut latencies_ms: Vec<f64> = sqlx::query_scalar(
            "SELECT (extract(epoch FROM j.completed_at - m.started_at) * 1000)::float8
             FROM jobs j JOIN model_calls m ON m.job_id = j.job_id
             WHERE j.task = $1 AND j.state <> 'queued'",
        )
        .bind(task)
        .fetch_all(&self.pool)
        .await?;
        latencies_ms.sort_by(|a, b| a.total_cmp(b));
        Ok(RunTiming {
            jobs,
            span_s,
            latencies_ms,
        })
    }

    /// The process ids of this database's backends that serve a worker's promoter
    /// ([`crate::PROMOTER_APPLICATION_NAME`]).
    pub async fn promoter_backend_pids(&self) -> Result<Vec<i32>> {
        Ok(sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = $1",
        )
        .bind(crate::PROMOTER_APPLICATION_NAME)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Entities, claims and relations stored.
    pub async fn rows_stored(&self) -> Result<i64> {
        self.count(
            "SELECT (SELECT count(*) FROM entities) + (SELECT count(*) FROM claims) + (SELECT count(*) FROM claim_relations)",
        )
        .await
    }

    /// [`AnswerUsage`] over every recorded answer that asked the model.
    pub async fn answer_usage(&self) -> Result<AnswerUsage> {
        let (calls, prompt_tokens, completion_tokens, duration_ms): (i64, i64, i64, i64) =
            sqlx::query_as(
                "SELECT count(*), coalesce(sum(prompt_tokens), 0)::bigint,
                        coalesce(sum(completion_tokens), 0)::bigint,
                        coalesce(sum(duration_ms), 0)::bigint
                 FROM answers WHERE model IS NOT NULL",
            )
            .fetch_one(&self.pool)
            .await?;
        Ok(AnswerUsage {
            calls,
            prompt_tokens,
            completion_tokens,
            duration_ms,
        })
    }

    pub async fn extract_acceptance(&self) -> Result<ExtractAcceptance> {
        let model_and_prompt = sqlx::query_as(
            "SELECT model, prompt_version FROM model_calls WHERE task = 'extract' LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await?;
        let (completion_tokens, prompt_tokens): (Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT sum(completion_tokens)::bigint, sum(prompt_tokens)::bigint
             FROM model_calls WHERE task = 'extract'",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(ExtractAcceptance {
            model_and_prompt,
            responses: self
                .count("SELECT count(*) FROM model_calls WHERE task = 'extract'")
                .await?,
            truncated: self
                .count(
                    "SELECT count(*) FROM invalid_outputs WHERE task = 'extract' AND reason = 'truncated'",
                )
                .await?,
            rejected_whole: self
                .count(
                    "SELECT count(*) FROM invalid_outputs WHERE task = 'extract' AND row_kind IS NULL",
                )
                .await?,
            accepted_claims: self.count("SELECT count(*) FROM claims").await?,
            rejected_claims: self
                .groups(
                    "SELECT reason, count(*) FROM invalid_outputs WHERE row_kind = 'claim'
                     GROUP BY 1 ORDER BY 2 DESC, 1",
                )
                .await?,
            completion_tokens: completion_tokens.unwrap_or(0),
            prompt_tokens: prompt_tokens.unwrap_or(0),
            entities: self.count("SELECT count(*) FROM entities").await?,
            source_bytes: self
                .count(
                    "SELECT coalesce(sum(octet_length(c.text)), 0)::bigint FROM jobs j
                     JOIN chunks c ON c.id = j.chunk_id WHERE j.task = 'extract'",
                )
                .await?,
        })
    }

    /// Every chunk an extract job was about, with its accepted claims' quote spans.
    pub async fn chunk_claims(&self) -> Result<Vec<ChunkClaims>> {
        let chunks: Vec<(i64, i32, String)> = sqlx::query_as(
            "SELECT c.id, c.start_byte, c.text FROM jobs j JOIN chunks c ON c.id = j.chunk_id
             WHERE j.task = 'extract' ORDER BY c.id",
        )
        .fetch_all(&self.pool)
        .await?;
        let claims: Vec<(i64, i32, i32)> =
            sqlx::query_as("SELECT chunk_id, quote_start, quote_end FROM claims")
                .fetch_all(&self.pool)
                .await?;
        Ok(chunks
            .into_iter()
            .map(|(id, start, text)| ChunkClaims {
                quotes: claims
                    .iter()
                    .filter(|(c, _, _)| *c == id)
                    .map(|(_, s, e)| ((s - start).max(0) as usize, (e - start).max(0) as usize))
                    .collect(),
                text,
            })
            .collect())
    }

    /// Up to `limit` entities with the statements of the claims linked to them, the
    /// entities with the most claims first: what a person browsing the graph sees.
    pub async fn entities_with_claims(
        &self,
        limit: i64,
    ) -> Result<Vec<(String, String, Vec<String>)>> {
        Ok(sqlx::query_as(
            "SELECT e.name, e.entity_type, array_agg(c.statement ORDER BY c.id)
             FROM entities e JOIN claims c ON c.entity_id = e.id
             GROUP BY e.id, e.name, e.entity_type ORDER BY count(*) DESC, e.id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn duplicates(&self) -> Result<Duplicates> {
        Ok(Duplicates {
            claims: self
                .count("SELECT count(*) FROM (SELECT 1 FROM claims GROUP BY job_id, row_index HAVING count(*) > 1) d")
                .await?,
            entities: self
                .count("SELECT count(*) FROM (SELECT 1 FROM entities GROUP BY job_id, row_index HAVING count(*) > 1) d")
                .await?,
            // Two outcomes for one job: a job whose result was written twice.
            model_calls: self
                .count(
                    "SELECT count(*) FROM (SELECT 1 FROM model_calls WHERE outcome NOT IN ('transport_error', 'permanent_error')
                     GROUP BY job_id HAVING count(*) > 1) d",
                )
                .await?,
            invalid_outputs: self
                .count("SELECT count(*) FROM (SELECT 1 FROM invalid_outputs GROUP BY job_id, row_kind, row_index, reason HAVING count(*) > 1) d")
                .await?,
        })
    }

    /// The floor of what storing a job's rows costs: `jobs` transactions of one multi-row
    /// `INSERT` of `rows_per_job` rows each into a scratch table with no foreign key,
    /// trigger or secondary index, `concurrency` at a time. Returns the elapsed time.
    pub async fn floor_inserts(
        &self,
        jobs: usize,
        rows_per_job: usize,
        concurrency: usize,
    ) -> Result<Duration> {
        sqlx::query(
            "CREATE TABLE floor_rows (id bigserial PRIMARY KEY, job_id text NOT NULL, row_index int NOT NULL,
                                      statement text NOT NULL, quote text NOT NULL, quote_start int, quote_end int)",
        )
        .execute(&self.pool)
        .await?;
        let statement =
            "The source says that Orla1x1 Benton founded the Harbour Society of the northern coast";
        let quote = "Orla1x1 Benton founded the Harbour Society of the northern coast and wrote a long report";
        let t = Instant::now();
        let pool = self.pool.clone();
        let results: Vec<std::result::Result<(), sqlx::Error>> = futures::stream::iter(0..jobs)
            .map(|j| {
                let pool = pool.clone();
                async move {
                    let mut tx = pool.begin().await?;
                    let mut q = sqlx::QueryBuilder::new(
                        "INSERT INTO floor_rows (job_id, row_index, statement, quote, quote_start, quote_end) ",
                    );
                    q.push_values(0..rows_per_job, |mut b, r| {
                        b.push_bind(format!("{j:032x}"))
                            .push_bind(r as i32)
                            .push_bind(statement)
                            .push_bind(quote)
                            .push_bind(0i32)
                            .push_bind(80i32);
                    });
                    q.build().execute(&mut *tx).await?;
                    tx.commit().await
                }
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        for r in results {
            r?;
        }
        Ok(t.elapsed())
    }
}
