//! Named run locks: PostgreSQL session advisory locks, so that two overlapping runs of a
//! scheduled command (two `relata ingest --source wiki` from cron, a CronJob whose previous
//! run is still going) cannot both publish.
//!
//! The lock lives on a connection taken out of the pool for the purpose: it is released
//! by [`RunLock::release`] (an explicit unlock, then the connection is closed), and —
//! because PostgreSQL ends a session's advisory locks with the session — also when the
//! process dies, however it dies. Nothing is left to clean up by hand.

use sha2::{Digest, Sha256};
use sqlx::{Connection, PgConnection};

use crate::Store;
use crate::error::Result;

/// A held run lock. Drop closes the connection (and so releases the lock) without
/// waiting; [`RunLock::release`] does it gracefully.
#[derive(Debug)]
pub struct RunLock {
    name: String,
    conn: PgConnection,
}

/// Who holds a lock (best effort; from `pg_stat_activity`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LockHolder {
    /// The PostgreSQL backend process of the holding session.
    pub pid: i32,
    /// The holder's client address, if it connected over TCP.
    pub client_addr: Option<String>,
    /// When the holding session connected.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

/// The advisory-lock key of a name: the first 8 bytes of its sha256.
pub fn lock_key(name: &str) -> i64 {
    let digest = Sha256::digest(format!("relata:{name}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

impl Store {
    /// Take the lock `name` if nobody holds it; `None` when another session does.
    pub async fn try_run_lock(&self, name: &str) -> Result<Option<RunLock>> {
        let mut conn = self.pool.acquire().await?.detach();
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(name))
            .fetch_one(&mut conn)
            .await?;
        if got {
            Ok(Some(RunLock {
                name: name.to_owned(),
                conn,
            }))
        } else {
            let _ = conn.close().await;
            Ok(None)
        }
    }

    /// Take the lock `name`, waiting for as long as another session holds it.
    pub async fn run_lock_wait(&self, name: &str) -> Result<RunLock> {
        let mut conn = self.pool.acquire().await?.detach();
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(lock_key(name))
            .execute(&mut conn)
            .await?;
        Ok(RunLock {
            name: name.to_owned(),
            conn,
        })
    }

    /// The session holding the lock `name`, if any.
    pub async fn run_lock_holder(&self, name: &str) -> Result<Option<LockHolder>> {
        let key = lock_key(name);
        let row: Option<(i32, Option<String>, Option<chrono::DateTime<chrono::Utc>>)> =
            sqlx::query_as(
                "SELECT a.pid, host(a.client_addr), a.backend_start
                 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND l.classid = (($1 >> 32) & 4294967295)::oid
                   AND l.objid = ($1 & 4294967295)::oid
                 LIMIT 1",
            )
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(pid, client_addr, since)| LockHolder {
            pid,
            client_addr,
            since,
        }))
    }
}

impl RunLock {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Release the lock, then close its session.
    ///
    /// The unlock is explicit because closing alone is asynchronous on the server: the
    /// backend frees its locks only once it has read the terminate message and exited,
    /// which can be after `close` has returned, so a caller that releases and at once
    /// re-takes the lock could find it still held.
    pub async fn release(mut self) -> Result<()> {
        let released: bool = sqlx::query_scalar("SELECT pg_advisory_unlock($1)")
            .bind(lock_key(&self.name))
            .fetch_one(&mut self.conn)
            .await?;
        self.conn.close().await?;
        if released {
            Ok(())
        } else {
            Err(crate::error::StoreError::Invariant(format!(
                "run lock {:?} was not held when released",
                self.name
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_differ_by_name_and_are_stable() {
        assert_eq!(
            super::lock_key("ingest:wiki"),
            super::lock_key("ingest:wiki")
        );
        assert_ne!(
            super::lock_key("ingest:wiki"),
            super::lock_key("ingest:wiki2")
        );
    }
}
