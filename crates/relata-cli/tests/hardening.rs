//! Hostile and mistaken settings, as processes: every one ends with a sentence and an
//! exit code, never a panic, a long wait, or a secret on the terminal.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const SENTINEL: &str = "SENTINEL-hunter2";

/// `relata` with no `RELATA_*` from the outside world, plus `env`.
fn relata(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_relata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("RELATA_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args).envs(env.iter().copied());
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A sentence and exit 2, no panic.
fn assert_refused(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains(SENTINEL), "{err}");
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hardening-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn numbers_beyond_their_range_are_usage_errors_not_panics() {
    for (args, needle) in [
        (&["report", "--days", "100000000"][..], "1..=3650"),
        (
            &["report", "--check-doubling", "--baseline-days", "99999999"][..],
            "1..=365",
        ),
        (
            &["backfill", "--task", "extract", "--rate", "1e-300"][..],
            "0.001 to 100000",
        ),
        (
            &["backfill", "--task", "extract", "--rate", "NaN"][..],
            "0.001 to 100000",
        ),
        (&["worker", "extract", "--concurrency", "0"][..], "1..=1024"),
        (&["serve", "--max-concurrency", "0"][..], "1..=65535"),
        (&["serve", "--request-timeout-secs", "0"][..], "1..=86400"),
    ] {
        assert_refused(&relata(args, &[]), needle);
    }
    for (var, value) in [
        ("RELATA_MAX_CHUNK_BYTES", "0"),
        ("RELATA_CANDIDATE_K", "0"),
        ("RELATA_RETRY_DELAYS_MS", "0"),
        ("RELATA_WORKER_CONCURRENCY", "70000"),
    ] {
        assert_refused(&relata(&["status"], &[(var, value)]), var);
    }
}

#[test]
fn each_kind_of_bad_setting_stops_start_up_naming_the_variable() {
    for (var, value, says) in [
        (
            "RELATA_WORKER_SHUTDOWN_DEADLINE_MS",
            "abc",
            r#"RELATA_WORKER_SHUTDOWN_DEADLINE_MS: "abc" is not a number of milliseconds"#,
        ),
        (
            "RELATA_MODEL_REQUEST_TIMEOUT_MS",
            "30s",
            r#"RELATA_MODEL_REQUEST_TIMEOUT_MS: "30s" is not a number of milliseconds"#,
        ),
        (
            "RELATA_REVIEW_STALE_AFTER_HOURS",
            "1.5",
            r#"RELATA_REVIEW_STALE_AFTER_HOURS: "1.5" is not a number of hours"#,
        ),
        (
            "RELATA_WORKER_SUMMARY_INTERVAL_MS",
            "-1",
            r#"RELATA_WORKER_SUMMARY_INTERVAL_MS: "-1" is not a number of milliseconds"#,
        ),
        (
            "RELATA_METRICS_ADDR",
            "localhost:9464",
            r#"RELATA_METRICS_ADDR: "localhost:9464" is not host:port"#,
        ),
        (
            "RELATA_DATABASE_MAX_CONNECTIONS",
            "ten",
            r#"RELATA_DATABASE_MAX_CONNECTIONS: "ten" is not a whole number"#,
        ),
        (
            "RELATA_MODEL_MAX_CONCURRENCY",
            "lots",
            r#"RELATA_MODEL_MAX_CONCURRENCY: "lots" is not a whole number"#,
        ),
        (
            "RELATA_SUPPORT_MIN_SHARE",
            "most",
            r#"RELATA_SUPPORT_MIN_SHARE: "most" is not a number"#,
        ),
        (
            "RELATA_DATABASE_URL",
            "mysql://u:SENTINEL-hunter2@h/db",
            "RELATA_DATABASE_URL: mysql://u:***@h/db is not a PostgreSQL URL",
        ),
        (
            "RELATA_AMQP_URL",
            "http://u:SENTINEL-hunter2@h/",
            "RELATA_AMQP_URL: ",
        ),
        (
            "RELATA_MODEL_URL",
            "ftp://h/v1",
            "RELATA_MODEL_URL: must start with http:// or https://",
        ),
        (
            "RELATA_WORKER_ON_PROVIDER_REFUSAL",
            "retry",
            "RELATA_WORKER_ON_PROVIDER_REFUSAL: ",
        ),
        ("RELATA_QUEUE_PREFIX", "has space", "RELATA_QUEUE_PREFIX"),
        ("RELATA_RETRY_DELAYS_MS", "5000,5000", "listed twice"),
    ] {
        // `status` calls no model and needs no worker setting: a bad value stops it all
        // the same, before anything connects.
        assert_refused(&relata(&["status"], &[(var, value)]), says);
    }
}

#[test]
fn a_log_filter_or_format_that_cannot_be_read_is_refused() {
    assert_refused(
        &relata(&["status"], &[("RELATA_LOG", "relata=[[nonsense")]),
        "RELATA_LOG",
    );
    assert_refused(
        &relata(&["status"], &[("RELATA_LOG_FORMAT", "yaml")]),
        "RELATA_LOG_FORMAT",
    );
}

#[test]
fn database_passwords_never_print_in_any_form() {
    for url in [
        format!("postgres://postgres@127.0.0.1:1/relata?password={SENTINEL}"),
        format!("postgres://postgres:{SENTINEL}@127.0.0.1:1/relata"),
        format!("host=127.0.0.1 port=1 password={SENTINEL} dbname=relata"),
        format!("host=127.0.0.1 password='{SENTINEL} x' dbname=relata"),
    ] {
        for cmd in [&["status"][..], &["migrate"][..]] {
            let out = relata(cmd, &[("RELATA_DATABASE_URL", &url)]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(!err.contains(SENTINEL), "{err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

#[test]
fn a_toml_error_names_line_and_key_but_never_the_value() {
    let d = dir("toml");
    let config = d.join("relata.toml");
    std::fs::write(
        &config,
        format!("metrics_addr = \"127.0.0.1:9464\"\ndatabase_url = \"postgres://u:{SENTINEL}@h/db\nx = 1\n"),
    )
    .unwrap();
    let out = relata(&["status", "--config", config.to_str().unwrap()], &[]);
    assert_refused(&out, "line 2, key database_url");
    std::fs::write(&config, "[worker]\nconcurrency = \"SENTINEL-hunter2\"\n").unwrap();
    let out = relata(&["status", "--config", config.to_str().unwrap()], &[]);
    assert_refused(&out, "line 2, key concurrency");
    assert!(!stderr(&out).contains("struct"), "{}", stderr(&out));
}

#[test]
fn a_wrong_database_port_fails_fast() {
    let started = Instant::now();
    let out = relata(
        &["status"],
        &[(
            "RELATA_DATABASE_URL",
            "postgres://postgres@127.0.0.1:1/relata",
        )],
    );
    assert_refused(&out, "cannot connect to PostgreSQL");
    // Before: the pool's 10 s acquire timeout.
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_unparsable_broker_url_is_a_usage_error_at_once() {
    let started = Instant::now();
    let out = relata(
        &["status"],
        &[(
            "RELATA_AMQP_URL",
            &format!("amqp://guest:{SENTINEL}@127.0.0.1:notaport/"),
        )],
    );
    assert_refused(&out, "is not an AMQP URL");
    // Before: 30 s of connection retries.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_missing_api_key_file_names_the_file_and_the_variable() {
    let out = relata(
        &["worker", "extract"],
        &[
            ("RELATA_MODEL_URL", "http://127.0.0.1:1/v1"),
            ("RELATA_MODEL_NAME", "m"),
            ("RELATA_MODEL_API_KEY_FILE", "/nonexistent/relata-key"),
        ],
    );
    assert_refused(&out, "/nonexistent/relata-key");
    assert!(
        stderr(&out).contains("point RELATA_MODEL_API_KEY_FILE"),
        "{}",
        stderr(&out)
    );
}
