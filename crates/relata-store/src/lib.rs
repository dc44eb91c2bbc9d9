//! relata's PostgreSQL store: the system of record.
//!
//! The store is where guarantees 2, 4, 5, 7 and 8 of the design become true:
//!
//! * **Rejections are recorded once** (2, 4): a commit writes one `invalid_outputs` row per
//!   rejection of a [`Judgement`](relata_validate::Judgement) — one per rejected row, or one
//!   for a rejected response — in the same transaction as the accepted rows.
//! * **Claims keep their link to the source** (5): a claim's `quote_start..quote_end` are
//!   UTF-8 byte offsets into its *revision* text (chunk start + the gate's offset within the
//!   chunk), checked in Rust before insert and again by a trigger in the database. Texts are
//!   never rewritten: a changed document gets a new revision, and old rows keep pointing at
//!   the text they were found in.
//! * **Provenance** (7): model output reaches the store only as a `Judgement`, whose accepted
//!   rows only the gate can build; every stored entity, claim, relation, warning and
//!   rejection points at the `model_calls` row (model, prompt version, schema
//!   id/version/sha256, time) that proposed it.
//! * **Nothing is duplicated** (8): every terminal operation on a job locks its ledger row
//!   (`SELECT … FOR UPDATE`; the extract commit, which is a single statement, does it with
//!   its first step, `UPDATE jobs … WHERE state = 'queued'`, that every insert depends on)
//!   and does nothing, returning [`CommitOutcome::AlreadyCommitted`], when the job is
//!   already terminal. A redelivered job therefore never writes twice, and the worker can
//!   ack it without a model call.
//!
//! The crate knows nothing of AMQP or HTTP. Errors say themselves whether a retry can help
//! ([`StoreError::is_retryable`]).
//!
//! Job ids ([`JobId::derive`](relata_core::JobId::derive)) are derived from the task
//! version and these input bytes:
//!
//! * extract: `"chunk:" + chunk id + ":" + chunk sha256`. The chunk id makes the job
//!   belong to one revision of one document (two documents with an identical paragraph each
//!   get their own claims, with offsets into their own text); the sha256 makes the input
//!   self-describing.
//! * classify: `"pairs:" + "lo-hi,lo-hi,…"` over the pairs in ascending order.
// A function over 100 lines (clippy's default threshold) is split by concern; tests are
// exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod answers;
mod backfill;
pub mod canonical;
mod commit;
mod copy_binary;
mod documents;
pub mod entities;
mod error;
mod export;
mod failure_rates;
mod jobs;
mod join_asks;
mod lock;
#[cfg(feature = "measure")]
pub mod measure;
mod normalize;
mod pairs;
pub mod promotion;
mod review_tokens;
mod status;
#[cfg(feature = "test-support")]
pub mod testing;
mod types;

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

pub use answers::{
    AnswerCall, AttachedClaim, Contradiction, DEFAULT_K, MAX_K, NewAnswer, PASSAGE_MAX_BYTES,
    Passage, Retriever,
};
pub use backfill::{
    BackfillAction, BackfillCount, BackfillSelector, ExtractCandidate, PairCandidate, PriorState,
};
pub use error::{ErrorKind, Result, StoreError};
pub use export::{
    CurrentVersions, ExportClaim, ExportDocument, ExportEntity, ExportRecord, ExportRelation,
    ExportResolution, Provenance,
};
pub use failure_rates::{
    DoublingCheck, DoublingVerdict, DriftRow, FailureCounts, RateLevel, ReasonCount, judge_doubling,
};
pub use jobs::{classify_job_id, extract_job_id};
pub use join_asks::{AskSide, AskedSentence, JoinAnswer, JoinCommit, join_job_id};
pub use lock::{LockHolder, RunLock, lock_key};
pub use normalize::normalize_name;
pub use promotion::{
    Candidate, CandidateCount, CandidateDetail, ChainHead, Decided, DocumentHeading,
    EvidenceRecord, ParseChainHeadError, PendingSummary, PromoteCursor, PromoteSummary, Refusal,
    RefusalReason, ReviewCandidate, ReviewFilter, Sweep, VerifyProblem, VerifyReport, Via, Wait,
};
/// Dead-letter reasons are relata-core's closed set (also the queue's header and label).
pub use relata_core::DeadReason;
pub use review_tokens::review_token_sha256;
pub use status::{DeadLetterCount, InvalidRate, JobCount, Status};
pub use types::{
    CallOutcome, ChunkRow, ChunkSpan, ClaimForClassify, CommitOutcome, Committed, JobRow, JobState,
    JobToPublish, NewModelCall, RowCounts, UpsertKind, UpsertOutcome,
};

/// The schema migrations, compiled in from the workspace's `migrations/` directory.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// The `application_name` of a worker's promoter connections
/// ([`StoreOptions::application_name`]): what tells promotion's database work from the
/// jobs' in `pg_stat_activity`.
pub const PROMOTER_APPLICATION_NAME: &str = "relata-promoter";

/// Longest excerpt (in characters) kept on a model call record.
pub const EXCERPT_MAX_CHARS: usize = 2000;

/// Connection settings beyond the URL.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub max_connections: u32,
    /// How long an operation waits for a free (or new) connection before failing with a
    /// retryable error.
    pub acquire_timeout: Duration,
    /// The `application_name` these connections show in `pg_stat_activity` (`None`: the
    /// URL's, if it names one).
    pub application_name: Option<&'static str>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            application_name: None,
        }
    }
}

/// The store: a PostgreSQL connection pool and the operations relata performs on it.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

impl Store {
    /// Connect with default options. Fails (retryably) if the server cannot be reached.
    pub async fn connect(url: &str) -> Result<Store> {
        Store::connect_with(url, &StoreOptions::default()).await
    }

    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<Store> {
        use sqlx::{ConnectOptions, Connection};
        let mut connect: PgConnectOptions = url.parse()?;
        if let Some(name) = options.application_name {
            connect = connect.application_name(name);
        }
        // One direct connection first: the pool retries a refused connection until its
        // acquire timeout, so a wrong port or host would take that long to be reported.
        connect.connect().await?.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await?;
        Ok(Store { pool })
    }

    /// Create the database named in `url` if it does not exist, connecting to the
    /// server's `postgres` database to do so. Returns whether it was created. For
    /// `relata migrate` on a fresh server; the name is quoted as an identifier.
    pub async fn create_database_if_missing(url: &str) -> Result<bool> {
        use sqlx::ConnectOptions;
        let target: PgConnectOptions = url.parse()?;
        let Some(name) = target.get_database().map(str::to_owned) else {
            return Ok(false);
        };
        let mut admin = target.clone().database("postgres").connect().await?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(&name)
                .fetch_one(&mut admin)
                .await?;
        if exists {
            return Ok(false);
        }
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {quoted}")))
            .execute(&mut admin)
            .await?;
        Ok(true)
    }

    /// The pool, for tests that inspect or damage the database directly. Only with the
    /// `test-support` feature: outside this crate nothing runs SQL of its own.
    #[cfg(feature = "test-support")]
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Apply every pending migration. Idempotent; safe to run from several processes at
    /// once (sqlx takes an advisory lock).
    pub async fn migrate(&self) -> Result<()> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Fails with [`StoreError::NotMigrated`] when a migration this relata knows has not
    /// been applied: every command but `relata migrate` checks this before it starts, so a
    /// missing table is reported as "run `relata migrate`", not as the first query's error.
    pub async fn check_migrated(&self) -> Result<()> {
        let applied: Vec<i64> =
            match sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(&self.pool)
                .await
            {
                Ok(v) => v,
                Err(e) => match StoreError::from(e) {
                    e if e.kind() == ErrorKind::NotMigrated => Vec::new(),
                    e => return Err(e),
                },
            };
        let known: Vec<i64> = MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .map(|m| m.version)
            .collect();
        let pending = known.iter().filter(|v| !applied.contains(v)).count();
        if pending > 0 {
            return Err(StoreError::NotMigrated {
                pending,
                total: known.len(),
            });
        }
        Ok(())
    }

    /// Close the pool, waiting for connections to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Parse a stored closed-enum value (a task, a state, a reason). The CHECK constraints make
/// an unknown value impossible, so one is an invariant violation, not bad input.
pub(crate) fn parse_label<T: std::str::FromStr<Err = relata_core::UnknownLabel>>(
    s: String,
) -> Result<T> {
    s.parse()
        .map_err(|e| StoreError::Invariant(format!("stored value: {e}")))
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex_digest(Sha256::digest(bytes).into())
}

/// A sha256 in lower-case hex. `hex::encode` goes a character at a time through an
/// iterator; promotion hex-encodes two digests a decision, so this fills a buffer.
pub(crate) fn hex_digest(digest: [u8; 32]) -> String {
    let mut out = [0u8; 64];
    // 64 bytes is exactly twice 32, and hex digits are ASCII: neither can fail.
    let _ = hex::encode_to_slice(digest, &mut out);
    std::str::from_utf8(&out).unwrap_or_default().to_owned()
}

pub(crate) fn to_i32(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| StoreError::InvalidInput(format!("{what} {v} out of range")))
}

pub(crate) fn to_usize(v: i32, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| StoreError::Invariant(format!("stored {what} {v} is negative")))
}
