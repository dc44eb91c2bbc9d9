//! A server restarted mid-run: the run completes and nothing is lost or duplicated.
//!
//! These restart the machine's shared PostgreSQL or RabbitMQ, which would break any test
//! running beside them, so they are ignored by default and run alone, one at a time:
//! `cargo nextest run --run-ignored only -E 'test(/restart/)' -j 1` (scripts/test does).

use std::process::Command;
use std::time::{Duration, Instant};

use relata_core::Task;
use relata_testkit::{Behaviour, FakeOptions, Route};

use crate::common::{Env, corpus_path};

const DOCS: usize = 12;

fn options() -> FakeOptions {
    let mut options = FakeOptions {
        models: vec!["fake-model".into()],
        ..FakeOptions::default()
    };
    for i in 0..DOCS {
        let content = r#"{"entities":[{"name":"Ada Lovelace","type":"person"}],"claims":[{"statement":"Ada Lovelace wrote the first published algorithm","quote":"Ada Lovelace wrote the first published algorithm","subject":"Ada Lovelace"}]}"#;
        // Slow enough that the restart lands while jobs are in flight.
        options.routes.push(Route {
            needle: format!("marker{i} "),
            behaviour: Behaviour::completion(content).delayed(Duration::from_millis(400)),
        });
    }
    options.routes.insert(
        0,
        Route {
            needle: "Requested pairs".into(),
            behaviour: Behaviour::completion(r#"{"relations":[]}"#),
        },
    );
    options
}

/// `felt`: a line the worker must have logged, proving the restart hit it mid-run.
async fn run_with_restart(felt: &str, restart: impl FnOnce()) {
    let env = Env::new(options(), vec![]).await;
    let mut corpus = None;
    for i in 0..DOCS {
        corpus = Some(env.write_doc(
            &format!("d{i}.txt"),
            &format!(
                "Document marker{i} says that Ada Lovelace wrote the first published algorithm.\n"
            ),
        ));
    }
    let worker = env.spawn_worker(Task::Extract);
    let out = env.relata(&["ingest", corpus_path(&corpus.unwrap()), "--source", "s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Let a few jobs through, then restart.
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.fake.chat_requests().len() < 3 {
        assert!(Instant::now() < deadline, "no progress before the restart");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    restart();

    let states = env
        .wait_for_jobs(Task::Extract, DOCS as i64, Duration::from_secs(120))
        .await;
    assert_eq!(
        states.get("accepted"),
        Some(&(DOCS as i64)),
        "{states:?}\n{}",
        worker.log_text()
    );
    let claims = env
        .export()
        .into_iter()
        .filter(|r| r["kind"] == "claim")
        .count();
    assert_eq!(claims, DOCS, "one claim per document, no duplicates");
    for i in 0..DOCS {
        let n = env.requests_mentioning(&format!("marker{i} "));
        assert!((1..=2).contains(&n), "document {i} sent {n} times");
    }
    let log = worker.log_text();
    assert!(
        log.contains(felt),
        "the worker never noticed the restart ({felt:?}):\n{log}"
    );
    assert_eq!(worker.terminate(), Some(0));
}

fn sh(cmd: &str, args: &[&str]) {
    let status = Command::new(cmd)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(status.success(), "{cmd} {args:?} failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "disruptive: restarts the shared RabbitMQ; run alone"]
async fn restart_rabbitmq_mid_run() {
    run_with_restart("consumer resumed", || {
        sh("rabbitmqctl", &["stop_app"]);
        std::thread::sleep(Duration::from_secs(1));
        sh("rabbitmqctl", &["start_app"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "disruptive: restarts the shared PostgreSQL; run alone"]
async fn restart_postgresql_mid_run() {
    // The pool waits up to its acquire timeout (10 s) for the server to come back, so a
    // short outage is absorbed there; what proves the outage hit live connections is the
    // server's own termination notice reaching the worker.
    run_with_restart(
        "terminating connection due to administrator command",
        || {
            let version = std::fs::read_dir("/etc/postgresql")
                .expect("PostgreSQL cluster config")
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .max()
                .expect("a PostgreSQL version");
            // Down for a few seconds, not a quick restart: sqlx's pool silently replaces
            // connections a fast restart killed, so only an outage that outlasts a commit
            // exercises the worker's own retry of the commit.
            sh(
                "pg_ctlcluster",
                &["--skip-systemctl-redirect", &version, "main", "stop"],
            );
            std::thread::sleep(Duration::from_secs(4));
            sh(
                "pg_ctlcluster",
                &["--skip-systemctl-redirect", &version, "main", "start"],
            );
        },
    )
    .await;
}
