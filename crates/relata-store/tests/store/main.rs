//! Integration tests of the store against a real PostgreSQL.
//!
//! Each test gets a fresh database `relata_test_<random>` from relata-testkit's harness,
//! created through the server named by `RELATA_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), migrated with `MIGRATOR`, and dropped
//! (`WITH (FORCE)`) when the test's `TestDb` goes out of scope — also when the test fails. (Our own helper rather than `#[sqlx::test]`, so the
//! migrations are applied by the code under test and the URL variable is relata's own.)
//! `scripts/ensure-services.sh` starts the server when it is not running.

mod common;

mod answers;
mod commit;
mod documents;
mod entities;
mod errors;
mod jobs;
mod migrations;
mod ops;
mod pairs;
mod promotion;
mod report;
mod review_tokens;
mod schema;
mod twins;
