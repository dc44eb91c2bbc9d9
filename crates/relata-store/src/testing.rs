//! Operations only tests perform: creating and dropping whole databases. relata itself
//! never drops anything, so these are compiled only with the `test-support` feature
//! (which `relata-testkit` turns on); a production build has no such function.

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::Result;

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Create the database `name` on the server of `admin_url` (a URL naming any database
/// the caller may connect to, usually `postgres`).
pub async fn create_database(admin_url: &str, name: &str) -> Result<()> {
    let admin: PgConnectOptions = admin_url.parse()?;
    let mut conn = admin.connect().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE DATABASE {}",
        quoted(name)
    )))
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    Ok(())
}

/// Drop the database `name` if it exists, disconnecting its sessions first.
pub async fn drop_database(admin_url: &str, name: &str) -> Result<()> {
    let admin: PgConnectOptions = admin_url.parse()?;
    let mut conn = admin.connect().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        quoted(name)
    )))
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    Ok(())
}

/// Whether a database of this name exists on the server of `admin_url`.
pub async fn database_exists(admin_url: &str, name: &str) -> Result<bool> {
    let admin: PgConnectOptions = admin_url.parse()?;
    let mut conn = admin.connect().await?;
    let exists = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(name)
        .fetch_one(&mut conn)
        .await?;
    conn.close().await?;
    Ok(exists)
}

/// The candidates of `ids` (all of `kind`, ascending) as a sweep reads them back, for
/// tests that hold what a commit returned against what a sweep would have judged.
pub async fn candidates_as_swept(
    store: &crate::Store,
    kind: relata_core::RowKind,
    ids: &[i64],
) -> Result<Vec<crate::Candidate>> {
    let mut conn = store.pool().acquire().await?;
    crate::promotion::read_candidates(&mut conn, kind, ids).await
}

/// Run `sql` as it is on the store's database: for tests that damage a store on purpose,
/// as a database user could behind relata's back, from crates that know no SQL of their
/// own. Returns the rows affected.
pub async fn execute(store: &crate::Store, sql: &str) -> Result<u64> {
    Ok(sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(store.pool())
        .await?
        .rows_affected())
}
