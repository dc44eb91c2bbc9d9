//! Bad input end to end: what the store cannot hold, in a corpus and in model output.

use std::time::Duration;

use relata_core::Task;
use relata_testkit::{Behaviour, FakeOptions};

use crate::common::{Env, sample};

const DOC: &str = "Ada Lovelace wrote the first published algorithm for a machine.\n";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_corpus_is_named_and_skipped_and_the_rest_is_ingested() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let jsonl = env.dir.join("corpus.jsonl");
    let lines = [
        r#"{"id": "a", "text": "Ada Lovelace wrote the first published algorithm."}"#,
        r#"{"id": "b", "text": "A NUL \u0000 in the text."}"#,
        r#"{"id": "c\u0000", "text": "A NUL in the id."}"#,
        r#"{"id": "d", "text": "Charles Babbage designed the Analytical Engine."}"#,
    ];
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();
    let path = jsonl.to_str().unwrap();
    let out = env.relata(&["ingest", "--jsonl", path, "--source", "s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("line 2: the text holds a NUL character"),
        "{err}"
    );
    assert!(
        err.contains("line 3: the id holds a NUL character"),
        "{err}"
    );
    assert!(err.contains("2 new"), "{err}");
    let store = env.store().await;
    let status = store.status().await.unwrap();
    assert_eq!(status.unpublished, 0, "{status:?}");
    // Scheduled again, the same corpus is not blocked: nothing new, the same two named.
    let out = env.relata(&["ingest", "--jsonl", path, "--source", "s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("2 unchanged"), "{err}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_model_output_is_recorded_once_as_unstorable_and_never_asked_again() {
    let nul = r#"{"entities":[{"name":"Ada\u0000Lovelace","type":"person"}],"claims":[{"statement":"Ada Lovelace wrote the first published algorithm\u0000","quote":"Ada Lovelace wrote the first published algorithm","subject":"Ada Lovelace"}],"extra\u0000":1}"#;
    let body = r#"{"entities":[{"name":"Ada Lovelace","type":"person"},{"name":"Ada\u0000Lovelace","type":"person"}],"claims":[{"statement":"Ada Lovelace wrote the first published algorithm\u0000","quote":"Ada Lovelace wrote the first published algorithm","subject":"Ada Lovelace"}]}"#;
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::completion(body),
        ..FakeOptions::default()
    };
    // A real NUL in the content (not an escape): rejected whole, and the excerpt of it
    // kept as evidence must still be storable.
    let raw_nul = "{\"entities\":[],\"claims\":[]}\u{0}";
    let queue = vec![Behaviour::completion(nul), Behaviour::completion(raw_nul)];
    let env = Env::new(options, queue).await;
    env.write_doc("ada1.txt", DOC);
    env.write_doc("ada2.txt", &DOC.replace("machine", "engine"));
    let corpus = env.write_doc("ada3.txt", &DOC.replace("machine", "loom"));
    let out = env.relata(&["ingest", corpus.to_str().unwrap(), "--source", "s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let worker = env.spawn_worker_with(Task::Extract, 1);

    let states = env
        .wait_for_jobs(Task::Extract, 3, Duration::from_secs(60))
        .await;
    // Two jobs rejected whole (an unknown field whose name holds a NUL; a raw NUL after
    // the JSON), one partial: the NUL rows rejected, the clean entity kept. Nothing dead,
    // nothing asked twice.
    assert_eq!(states.get("invalid"), Some(&2), "{states:?}");
    assert_eq!(states.get("partial"), Some(&1), "{states:?}");
    assert_eq!(env.fake.chat_requests().len(), 3);
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_model_invalid_output_total",
            &[("reason", "unstorable")]
        ),
        2.0,
        "{m}"
    );
    let store = env.store().await;
    let reasons: Vec<(String, String)> =
        sqlx::query_as("SELECT reason, detail FROM invalid_outputs ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let unstorable = reasons.iter().filter(|(r, _)| r == "unstorable").count();
    assert_eq!(unstorable, 2, "{reasons:?}");
    assert!(
        reasons.iter().any(|(r, _)| r == "unknown_field"),
        "{reasons:?}"
    );
    // The stored evidence (excerpt, details) holds no NUL either.
    let nuls: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM model_calls WHERE position(U&'\\FFFD' IN coalesce(excerpt, '')) > 0",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(
        nuls >= 1,
        "the excerpts keep a visible mark where a NUL was"
    );
    assert_eq!(worker.terminate(), Some(0));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_stdout_is_exit_2_with_a_sentence_not_a_panic() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    env.write_doc("ada.txt", DOC);
    let corpus = env.dir.join("corpus");
    let out = env.relata(&["ingest", corpus.to_str().unwrap(), "--source", "s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        &["status"][..],
        &["status", "--json"][..],
        &["export"][..],
        &["report"][..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = env.command(args).stdout(full).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Plain status is for people: no raw JSON.
    let out = env.relata(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('{'), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_message_cut_inside_a_character_is_dead_lettered() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let broker = env.broker().await;
    broker.declare_topology().await.unwrap();
    // serde_json's message echoes an unknown key whole; cut at 200 bytes it used to panic
    // inside a two-byte character, leaving the delivery unsettled. Two lengths, so one of
    // them puts the cut inside a character whatever the message's prefix.
    let v = relata_core::TaskVersion::new(&relata_core::EXTRACT_V1, "extract-p1", "fake-model");
    for n in [100, 101] {
        let payload = format!(r#"{{"{}":1}}"#, "é".repeat(n));
        broker
            .publish(
                Task::Extract,
                &relata_core::JobId::derive(&v, payload.as_bytes()),
                payload.as_bytes(),
            )
            .await
            .unwrap();
    }
    let worker = env.spawn_worker(Task::Extract);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let depths = broker.queue_depths().await.unwrap();
        let dead = depths.iter().find(|q| q.name.ends_with(".dead")).unwrap();
        if dead.messages == Some(2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{depths:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_jobs_dead_lettered_total",
            &[("reason", "poison")]
        ),
        2.0,
        "{m}"
    );
    assert_eq!(worker.terminate(), Some(0));
    broker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmigrated_database_says_run_migrate_and_a_worker_does_not_start() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let bare_db = env.bare_database().await;
    let bare = bare_db.url().to_owned();
    for args in [&["status"][..], &["worker", "extract"][..], &["export"][..]] {
        let out = env
            .command(args)
            .env("RELATA_DATABASE_URL", &bare)
            .env("RELATA_METRICS_ADDR", "127.0.0.1:0")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("run `relata migrate`"), "{args:?}: {err}");
        assert!(!err.contains("does not exist"), "{args:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_with_an_unreachable_broker_prints_the_store_and_exits_1() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    // Before: 30 s of connection retries, then exit 0. The bound leaves room for a loaded
    // machine, not for the old retry window.
    let started = std::time::Instant::now();
    let out = env
        .command(&["status"])
        .env("RELATA_AMQP_URL", "amqp://guest:guest@127.0.0.1:1/%2f")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("queue depths unavailable"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("jobs:"));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_refusal_is_dead_lettered_once_without_asking_the_model_again() {
    let good = r#"{"entities":[{"name":"Ada Lovelace","type":"person"}],"claims":[]}"#;
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::completion(good),
        ..FakeOptions::default()
    };
    let env = Env::new(options, vec![]).await;
    let store = env.store().await;
    // A refusal that is not about availability, whatever its cause: a data exception on
    // every entity insert.
    for sql in [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON entities FOR EACH ROW EXECUTE FUNCTION refuse()",
    ] {
        sqlx::query(sql).execute(store.pool()).await.unwrap();
    }
    let corpus = env.write_doc("ada.txt", DOC);
    let out = env.relata(&["ingest", corpus.to_str().unwrap(), "--source", "s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let worker = env.spawn_worker(Task::Extract);
    let states = env
        .wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("dead"), Some(&1), "{states:?}");
    assert_eq!(env.fake.chat_requests().len(), 1);
    let (reason, detail): (String, String) =
        sqlx::query_as("SELECT dead_reason, dead_detail FROM jobs")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(reason, "store_rejected");
    assert!(detail.contains("refused by the test"), "{detail}");
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_jobs_dead_lettered_total",
            &[("reason", "store_rejected")]
        ),
        1.0,
        "{m}"
    );
    let log = worker.log_text();
    assert_eq!(worker.terminate(), Some(0));
    assert!(!log.contains("store unavailable"), "{log}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_the_store_refuses_anyway_is_named_by_id_and_skipped() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let store = env.store().await;
    // Defence in depth: whatever gets past the readers and is refused as data concerns
    // that document only.
    for sql in [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.text LIKE '%refuse me%' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON document_revisions FOR EACH ROW EXECUTE FUNCTION refuse()",
    ] {
        sqlx::query(sql).execute(store.pool()).await.unwrap();
    }
    env.write_doc("a.txt", DOC);
    env.write_doc("b.txt", "Please refuse me, store.\n");
    let corpus = env.write_doc("c.txt", &DOC.replace("machine", "loom"));
    let out = env.relata(&["ingest", corpus.to_str().unwrap(), "--source", "s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(r#"document "b.txt": the store refused it"#),
        "{err}"
    );
    assert!(err.contains("2 new"), "{err}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_the_database_url_never_reaches_output_or_logs() {
    // Trust authentication ignores the password, so the query form works here and every
    // command runs through to its logs.
    let sentinel = "SENTINEL-pg-4242";
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::completion(
            r#"{"entities":[{"name":"Ada Lovelace","type":"person"}],"claims":[]}"#,
        ),
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    let url = format!("{}?password={sentinel}", env.database_url);
    env.set("RELATA_DATABASE_URL", &url);
    env.set("RELATA_MODEL_API_KEY", "sk-SENTINEL-key-4242");
    let corpus = env.write_doc("ada.txt", DOC);
    let mut seen = String::new();
    for args in [
        &["migrate"][..],
        &["ingest", corpus.to_str().unwrap(), "--source", "s"][..],
    ] {
        let out = env.relata(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        seen.push_str(&stderr(&out));
        seen.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    let worker = env.spawn_worker(Task::Extract);
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    for args in [&["status"][..], &["export"][..], &["report"][..]] {
        let out = env.relata(args);
        seen.push_str(&stderr(&out));
        seen.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    seen.push_str(&worker.log_text());
    assert_eq!(worker.terminate(), Some(0));
    assert!(!seen.contains("SENTINEL"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_refusal_is_a_sentence_without_a_debug_dump() {
    let mut env = Env::new(FakeOptions::default(), vec![]).await;
    let broker = env.broker().await;
    broker.declare_topology().await.unwrap();
    broker.close().await;
    // The queues exist with delivery limit 5; a worker asking for 7 is refused.
    env.set("RELATA_DELIVERY_LIMIT", "7");
    env.set("RELATA_METRICS_ADDR", "127.0.0.1:0");
    let out = env.relata(&["worker", "extract", "--exit-when-idle", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already exists with different arguments"),
        "{err}"
    );
    for dump in ["Close {", "ShortString", "AMQPError {"] {
        assert!(!err.contains(dump), "{dump}: {err}");
    }
}
