//! The promotion schema as the migrations leave it, held to the checked-in snapshot
//! `crates/relata-store/schema/promotion.sql`: the one place to read it, since it is
//! spread over a dozen migrations that alter and replace what came before (and shipped
//! migrations are never edited: sqlx checks their checksums).
//!
//! The test migrates a fresh database, describes the promotion tables, views, functions
//! and triggers from the catalogs, and compares the description with the snapshot
//! (header comments aside). Run with `RELATA_BLESS_SCHEMA=1` to rewrite the snapshot
//! after a migration, and read the diff before committing it.

#![allow(clippy::unwrap_used)]

use std::fmt::Write;

use crate::common::TestDb;

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/promotion.sql");

/// The promotion tables, the views over them, in the snapshot's order.
const TABLES: [&str; 4] = ["evidence", "evidence_head", "promotions", "review_tokens"];
const VIEWS: [&str; 3] = ["decided_states", "candidate_states", "candidate_decisions"];

/// Functions: relata's own (`relata_*`) and the log's trigger function.
const FUNCTIONS: &str = "p.proname LIKE 'relata\\_%' OR p.proname = 'evidence_is_append_only'";

async fn columns(db: &TestDb, relation: &str) -> Vec<(String, String, bool, Option<String>)> {
    sqlx::query_as(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                pg_get_expr(d.adbin, d.adrelid)
         FROM pg_attribute a
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
         ORDER BY a.attnum",
    )
    .bind(relation)
    .fetch_all(db.pool())
    .await
    .unwrap()
}

async fn describe_table(db: &TestDb, out: &mut String, table: &str) {
    writeln!(out, "TABLE {table}").unwrap();
    for (name, ty, not_null, default) in columns(db, table).await {
        let not_null = if not_null { " NOT NULL" } else { "" };
        let default = default.map_or_else(String::new, |d| format!(" DEFAULT {d}"));
        writeln!(out, "    {name} {ty}{not_null}{default}").unwrap();
    }
    let constraints: Vec<(String, String)> = sqlx::query_as(
        "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = $1::regclass ORDER BY conname",
    )
    .bind(table)
    .fetch_all(db.pool())
    .await
    .unwrap();
    for (name, def) in constraints {
        writeln!(out, "    CONSTRAINT {name} {def}").unwrap();
    }
    let indexes: Vec<(String,)> = sqlx::query_as(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index
         WHERE indrelid = $1::regclass ORDER BY indexrelid::regclass::text",
    )
    .bind(table)
    .fetch_all(db.pool())
    .await
    .unwrap();
    for (def,) in indexes {
        writeln!(out, "    {def}").unwrap();
    }
    let triggers: Vec<(String,)> = sqlx::query_as(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger
         WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname",
    )
    .bind(table)
    .fetch_all(db.pool())
    .await
    .unwrap();
    for (def,) in triggers {
        writeln!(out, "    {def}").unwrap();
    }
    out.push('\n');
}

async fn describe_view(db: &TestDb, out: &mut String, view: &str) {
    writeln!(out, "VIEW {view}").unwrap();
    for (name, ty, _, _) in columns(db, view).await {
        writeln!(out, "    {name} {ty}").unwrap();
    }
    out.push('\n');
}

/// Each function's signature, result, volatility and body as written in its migration
/// (PostgreSQL keeps the body's text as given).
async fn describe_functions(db: &TestDb, out: &mut String) {
    let functions: Vec<(String, String, String, String, String, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT p.proname::text, pg_get_function_arguments(p.oid),
                    pg_get_function_result(p.oid), l.lanname::text,
                    CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE'
                                       ELSE 'VOLATILE' END,
                    p.prosrc
             FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace
             JOIN pg_language l ON l.oid = p.prolang
             WHERE n.nspname = 'public' AND ({FUNCTIONS})
             ORDER BY p.proname, pg_get_function_arguments(p.oid)"
        )))
        .fetch_all(db.pool())
        .await
        .unwrap();
    for (name, args, result, language, volatility, body) in functions {
        writeln!(
            out,
            "FUNCTION {name}({args}) RETURNS {result} LANGUAGE {language} {volatility} AS $$"
        )
        .unwrap();
        writeln!(out, "{}", body.trim_matches('\n')).unwrap();
        out.push_str("$$\n\n");
    }
}

/// The live schema, described as the snapshot describes it.
async fn describe(db: &TestDb) -> String {
    let mut out = String::new();
    for table in TABLES {
        describe_table(db, &mut out, table).await;
    }
    for view in VIEWS {
        describe_view(db, &mut out, view).await;
    }
    describe_functions(db, &mut out).await;
    out.trim_end().to_owned() + "\n"
}

/// The snapshot without its header: every line before the first blank line that
/// follows the leading comment.
fn body(snapshot: &str) -> &str {
    let mut rest = snapshot;
    while let Some(line) = rest.lines().next() {
        if !line.starts_with("--") && !line.is_empty() {
            break;
        }
        rest = &rest[(line.len() + 1).min(rest.len())..];
    }
    rest
}

/// A line diff of `want` and `got` (`-` only in the snapshot, `+` only in the live
/// schema), each changed line with its table, view or function heading for context.
fn diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    // Longest common subsequence, filled from the ends.
    let mut lcs = vec![vec![0usize; g.len() + 1]; w.len() + 1];
    for i in (0..w.len()).rev() {
        for j in (0..g.len()).rev() {
            lcs[i][j] = if w[i] == g[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let mut heading = "";
    let mut shown = "";
    let (mut i, mut j) = (0, 0);
    while i < w.len() || j < g.len() {
        let (line, sign) = if i < w.len() && j < g.len() && w[i] == g[j] {
            i += 1;
            j += 1;
            (w[i - 1], ' ')
        } else if j < g.len() && (i == w.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            j += 1;
            (g[j - 1], '+')
        } else {
            i += 1;
            (w[i - 1], '-')
        };
        if !line.starts_with(' ') && !line.is_empty() {
            heading = line;
        }
        if sign != ' ' {
            if shown != heading {
                writeln!(out, "  {heading}").unwrap();
                shown = heading;
            }
            writeln!(out, "{sign} {line}").unwrap();
        }
    }
    out
}

#[tokio::test]
async fn the_promotion_schema_is_the_checked_in_snapshot() {
    let db = TestDb::new().await;
    let live = describe(&db).await;
    let snapshot = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    if std::env::var_os("RELATA_BLESS_SCHEMA").is_some() {
        let header_len = snapshot.len() - body(&snapshot).len();
        std::fs::write(SNAPSHOT, format!("{}{live}", &snapshot[..header_len])).unwrap();
        return;
    }
    let want = body(&snapshot);
    assert!(
        want == live,
        "the migrated schema differs from {SNAPSHOT} (rerun with RELATA_BLESS_SCHEMA=1 to \
         rewrite it, then read the diff):\n{}",
        diff(want, &live)
    );
}
