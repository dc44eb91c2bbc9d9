//! The store's error type. The retry decision is made here, once: a caller asks
//! [`StoreError::is_retryable`] and never inspects SQLSTATE codes itself.

use relata_core::JobId;

/// What kind of failure a [`StoreError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The database could not be reached or went away: connection refused or reset, pool
    /// timeout, server shutting down, out of connections. Retryable.
    Unavailable,
    /// The transaction lost a race: serialization failure or deadlock. Retryable.
    Contention,
    /// A row the operation needs does not exist (a job, a chunk). Not retryable.
    NotFound,
    /// The caller passed something the store refuses (chunk spans outside the text, a
    /// model call whose task version is not the job's). Not retryable.
    InvalidInput,
    /// A constraint of the schema or an invariant checked in Rust was violated: a bug,
    /// never a transient condition. Not retryable.
    Invariant,
    /// Applying migrations failed.
    Migration,
    /// The database lacks migrations this relata needs (`relata migrate` has not run).
    /// Not retryable.
    NotMigrated,
    /// A reviewer's decision was refused (a candidate stale, changed, already decided or
    /// unknown). Not retryable: the same decision would be refused again.
    Refused,
    /// The evidence log does not end where its head says (a record appended behind
    /// relata's back), or its last record or the head was altered: no decision is
    /// appended to a chain that does not verify. Not retryable: a person must look
    /// (`relata evidence verify` names the record).
    ChainBroken,
    /// Anything else (decode errors, a closed pool, configuration).
    Other,
}

impl ErrorKind {
    /// See [`StoreError::is_retryable`]; the kind alone decides, so a caller that keeps
    /// only the kind decides the same way.
    pub fn is_retryable(self) -> bool {
        matches!(self, ErrorKind::Unavailable | ErrorKind::Contention)
    }
}

/// An error from the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("job {0} not found")]
    JobNotFound(JobId),
    #[error("chunk {0} not found")]
    ChunkNotFound(i64),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("store invariant violated: {0}")]
    Invariant(String),
    #[error("review refused: {}", refusals_text(.0))]
    ReviewRefused(Vec<crate::promotion::Refusal>),
    #[error(
        "the database lacks {pending} of relata's {total} migrations: run `relata migrate` first"
    )]
    NotMigrated { pending: usize, total: usize },
    /// `what` names the record (`evidence record 4 …`); `seq` is that record's.
    #[error("{what}; nothing was recorded: run `relata evidence verify`")]
    ChainBroken { seq: i64, what: String },
}

impl StoreError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Database(e) => classify(e),
            StoreError::Migrate(sqlx::migrate::MigrateError::Execute(e)) => match classify(e) {
                k @ (ErrorKind::Unavailable | ErrorKind::Contention) => k,
                _ => ErrorKind::Migration,
            },
            StoreError::Migrate(_) => ErrorKind::Migration,
            StoreError::JobNotFound(_) | StoreError::ChunkNotFound(_) => ErrorKind::NotFound,
            StoreError::InvalidInput(_) => ErrorKind::InvalidInput,
            StoreError::Invariant(_) => ErrorKind::Invariant,
            StoreError::NotMigrated { .. } => ErrorKind::NotMigrated,
            StoreError::ReviewRefused(_) => ErrorKind::Refused,
            StoreError::ChainBroken { .. } => ErrorKind::ChainBroken,
        }
    }

    /// True when the same operation may succeed if tried again later: the database was
    /// unreachable or the transaction lost a race. Every commit is one transaction and
    /// idempotent on the job, so retrying it is always safe.
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }

    /// The SQLSTATE of a database error, if there is one.
    pub fn sqlstate(&self) -> Option<String> {
        match self {
            StoreError::Database(sqlx::Error::Database(db)) => db.code().map(|c| c.into_owned()),
            _ => None,
        }
    }
}

fn refusals_text(r: &[crate::promotion::Refusal]) -> String {
    r.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

fn classify(e: &sqlx::Error) -> ErrorKind {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => ErrorKind::Unavailable,
        sqlx::Error::Database(db) => match db.code().as_deref() {
            // serialization_failure, deadlock_detected
            Some("40001" | "40P01") => ErrorKind::Contention,
            // 08: connection exception; 53: insufficient resources (too many connections,
            // out of memory or disk); 57: operator intervention (shutdown, cancel,
            // cannot connect now); 58: system error (I/O)
            Some(c) if ["08", "53", "57", "58"].iter().any(|p| c.starts_with(p)) => {
                ErrorKind::Unavailable
            }
            // 23: integrity constraint violation
            Some(c) if c.starts_with("23") => ErrorKind::Invariant,
            // 22: data exception (a NUL in text, a value out of range): the same values
            // would be refused again, so this is never "try later".
            Some(c) if c.starts_with("22") => ErrorKind::InvalidInput,
            // 42P01 undefined_table, 42703 undefined_column: a schema older than this
            // relata — `relata migrate` has not run.
            Some("42P01" | "42703") => ErrorKind::NotMigrated,
            _ => ErrorKind::Other,
        },
        sqlx::Error::RowNotFound => ErrorKind::NotFound,
        _ => ErrorKind::Other,
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
