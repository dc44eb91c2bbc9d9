//! `relata backfill`: selectors, --dry-run, --limit, --rate, and an interrupted run
//! resumed without publishing any job twice. No workers run: every published job stays on
//! the queue, so the queue depth counts publications exactly.

use std::process::Stdio;
use std::time::{Duration, Instant};

use relata_core::Task;
use relata_testkit::FakeOptions;

use crate::common::{CURIE_A, CURIE_B, Env, corpus_path, route};

fn options() -> FakeOptions {
    FakeOptions {
        models: vec!["fake-model".into()],
        ..FakeOptions::default()
    }
}

/// Ready messages on the task's work queue.
async fn depth(env: &Env, task: Task) -> u32 {
    let broker = env.broker().await;
    let name = format!("{}.{}", env.prefix, task.as_str());
    let depths = broker.queue_depths().await.unwrap();
    broker.close().await;
    depths
        .iter()
        .find(|q| q.name == name)
        .and_then(|q| q.messages)
        .unwrap_or_else(|| panic!("no queue {name} in {depths:?}"))
}

fn corpus(env: &Env, name: &str, docs: usize, word: &str) -> std::path::PathBuf {
    let dir = env.dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..docs {
        std::fs::write(
            dir.join(format!("{word}-{i}.txt")),
            format!("{word} document number {i} says something about {word}.\n"),
        )
        .unwrap();
    }
    dir
}

fn json_out(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn ingest(env: &Env, dir: &std::path::Path, source: &str) {
    let out = env.relata(&["ingest", corpus_path(dir), "--source", source, "--json"]);
    json_out(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_selectors_publish_exactly_the_selected_jobs_once() {
    let mut env = Env::new(options(), vec![]).await;
    let a = corpus(&env, "a", 3, "alpha");
    let b = corpus(&env, "b", 2, "beta");
    ingest(&env, &a, "a");
    ingest(&env, &b, "b");
    assert_eq!(depth(&env, Task::Extract).await, 5);

    // Same task version: every chunk already has its job; nothing to publish.
    let out = json_out(&env.relata(&["backfill", "--task", "extract", "--json"]));
    assert_eq!(out["to_publish"], 0, "{out}");
    assert_eq!(out["jobs_published"], 0);

    // A model change makes a new task version.
    env.set("RELATA_MODEL_NAME", "fake-model-2");

    let dry = json_out(&env.relata(&[
        "backfill",
        "--task",
        "extract",
        "--source",
        "a",
        "--dry-run",
        "--json",
    ]));
    assert_eq!(dry["to_publish"], 3, "{dry}");
    assert_eq!(dry["selected"][0]["prior"], "queued", "{dry}");
    assert_eq!(dry["selected"][0]["action"], "publish", "{dry}");
    assert_eq!(depth(&env, Task::Extract).await, 5, "--dry-run published");

    // A status nothing has: nothing selected.
    let none = json_out(&env.relata(&[
        "backfill",
        "--task",
        "extract",
        "--status",
        "invalid,dead",
        "--json",
    ]));
    assert_eq!(none["to_publish"], 0, "{none}");
    assert_eq!(depth(&env, Task::Extract).await, 5);

    // Ingested in the future: nothing.
    let later = json_out(&env.relata(&[
        "backfill",
        "--task",
        "extract",
        "--since",
        "2999-01-01",
        "--json",
    ]));
    assert_eq!(later["to_publish"], 0, "{later}");

    // --limit publishes part, the next run the rest, the one after nothing.
    let first = json_out(&env.relata(&[
        "backfill", "--task", "extract", "--source", "a", "--limit", "2", "--json",
    ]));
    assert_eq!(first["jobs_published"], 2, "{first}");
    assert_eq!(depth(&env, Task::Extract).await, 7);
    let rest = json_out(&env.relata(&["backfill", "--task", "extract", "--source", "a", "--json"]));
    assert_eq!(rest["jobs_published"], 1, "{rest}");
    assert_eq!(rest["published_by_prior"]["queued"], 1, "{rest}");
    let again =
        json_out(&env.relata(&["backfill", "--task", "extract", "--source", "a", "--json"]));
    assert_eq!(again["jobs_published"], 0, "{again}");
    assert_eq!(depth(&env, Task::Extract).await, 8);

    // --not-version: what has no result of the current version — source b's two chunks.
    let nv = json_out(&env.relata(&["backfill", "--task", "extract", "--not-version", "--json"]));
    assert_eq!(nv["jobs_published"], 2, "{nv}");
    assert_eq!(depth(&env, Task::Extract).await, 10);

    // Every job in the ledger was published exactly once: 5 of each version.
    let store = env.store().await;
    let status = store.status().await.unwrap();
    assert_eq!(status.unpublished, 0);
    let queued: i64 = status
        .jobs
        .iter()
        .filter(|j| j.task == "extract")
        .map(|j| j.count)
        .sum();
    assert_eq!(queued, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_backfill_resumes_without_publishing_twice_and_holds_its_rate() {
    let mut env = Env::new(options(), vec![]).await;
    let c = corpus(&env, "c", 30, "gamma");
    ingest(&env, &c, "c");
    assert_eq!(depth(&env, Task::Extract).await, 30);
    env.set("RELATA_MODEL_NAME", "fake-model-2");

    // 30 jobs at 10 per second take ~3 s; stop the run once it has published some.
    // (Waiting for the queue rather than a fixed time: a slow start under load must not
    // make the run publish nothing before the signal.)
    let mut child = env
        .command(&["backfill", "--task", "extract", "--rate", "10", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while depth(&env, Task::Extract).await <= 30 {
        assert!(Instant::now() < deadline, "backfill published nothing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "backfill did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first["interrupted"], true);
    let n1 = first["jobs_published"].as_u64().unwrap();
    assert!(n1 > 0 && n1 < 30, "interrupted run published {n1}");
    assert_eq!(u64::from(depth(&env, Task::Extract).await), 30 + n1);

    // Resume: the rest, at 20 per second, and not one job twice.
    let started = Instant::now();
    let rest = json_out(&env.relata(&["backfill", "--task", "extract", "--rate", "20", "--json"]));
    let elapsed = started.elapsed();
    let n2 = rest["jobs_published"].as_u64().unwrap();
    assert_eq!(n1 + n2, 30, "{first} then {rest}");
    assert_eq!(depth(&env, Task::Extract).await, 60);
    // Job k is not published before k/rate seconds: n2 jobs take at least (n2-1)/20 s.
    let floor = Duration::from_secs_f64((n2 - 1) as f64 / 20.0);
    assert!(
        elapsed >= floor,
        "{n2} jobs in {elapsed:?}, rate floor {floor:?}"
    );

    let again = json_out(&env.relata(&["backfill", "--task", "extract", "--json"]));
    assert_eq!(again["jobs_published"], 0, "{again}");
    assert_eq!(depth(&env, Task::Extract).await, 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_ingests_of_one_source_do_not_both_run() {
    let env = Env::new(options(), vec![]).await;
    let a = corpus(&env, "a", 2, "delta");
    // Hold the ingest lock of source "a" as a running ingest would.
    let store = env.store().await;
    let lock = store.try_run_lock("ingest:a").await.unwrap().expect("lock");
    let out = env.relata(&["ingest", corpus_path(&a), "--source", "a"]);
    assert_eq!(
        out.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("another `relata ingest --source a` is running"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another source is not blocked.
    let out = env.relata(&["ingest", corpus_path(&a), "--source", "b"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --wait waits for the lock, then runs.
    let child = env
        .command(&[
            "ingest",
            corpus_path(&a),
            "--source",
            "a",
            "--wait",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    lock.release().await.unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["jobs_published"], 2);
    assert_eq!(depth(&env, Task::Extract).await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classify_backfill_republishes_classified_pairs_under_a_new_version_once() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            route(
                "physicist and chemist",
                r#"{"entities":[{"name":"Marie Curie","type":"person"}],
                    "claims":[{"statement":"Marie Curie won the Nobel Prize in Physics in 1903","quote":"She won the Nobel Prize in Physics in 1903","subject":"Marie Curie"}]}"#,
            ),
            route(
                "born in Warsaw",
                r#"{"entities":[{"name":"Marie Curie","type":"person"}],
                    "claims":[{"statement":"Marie Curie was born in Warsaw in 1867","quote":"Marie Curie was born in Warsaw in 1867","subject":"Marie Curie"},
                              {"statement":"Marie Curie never won a Nobel Prize in Physics","quote":"She never won any Nobel Prize in Physics","subject":"Marie Curie"}]}"#,
            ),
        ],
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    // Ingest the documents one at a time, each extracted before the next arrives, so the
    // candidate pairs do not depend on which commit lands first: B's two claims each
    // pair with A's one claim (pairs never join claims of one document).
    let extract = env.spawn_worker(Task::Extract);
    ingest(&env, &env.write_doc("curie-a.txt", CURIE_A), "wiki");
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    ingest(&env, &env.write_doc("curie-b.txt", CURIE_B), "wiki");
    env.wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while depth(&env, Task::Classify).await < 1 {
        assert!(Instant::now() < deadline, "no classify job was published");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(extract.terminate(), Some(0));
    assert_eq!(depth(&env, Task::Classify).await, 1);

    // Same task version: the pairs are already reserved; nothing to do.
    let same = json_out(&env.relata(&["backfill", "--task", "classify", "--json"]));
    assert_eq!(same["to_publish"], 0, "{same}");
    assert_eq!(same["jobs_published"], 0, "{same}");

    // A model change makes a new classify version: both pairs are selected, once.
    env.set("RELATA_MODEL_NAME", "fake-model-2");
    let dry = json_out(&env.relata(&["backfill", "--task", "classify", "--dry-run", "--json"]));
    assert_eq!(dry["to_publish"], 2, "{dry}");
    assert_eq!(depth(&env, Task::Classify).await, 1, "--dry-run published");
    let elsewhere = json_out(&env.relata(&[
        "backfill",
        "--task",
        "classify",
        "--source",
        "another-source",
        "--json",
    ]));
    assert_eq!(elsewhere["jobs_published"], 0, "{elsewhere}");

    let run = json_out(&env.relata(&["backfill", "--task", "classify", "--json"]));
    assert_eq!(run["jobs_published"], 1, "two pairs fit one batch: {run}");
    assert_eq!(depth(&env, Task::Classify).await, 2);
    let again = json_out(&env.relata(&["backfill", "--task", "classify", "--json"]));
    assert_eq!(again["to_publish"], 0, "{again}");
    assert_eq!(again["jobs_published"], 0, "{again}");
    assert_eq!(depth(&env, Task::Classify).await, 2);

    // The new job carries exactly the two pairs, under the new version.
    let store = env.store().await;
    let jobs: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT model, pairs FROM jobs WHERE task = 'classify' ORDER BY created_at")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[0].0, "fake-model");
    assert_eq!(jobs[1].0, "fake-model-2");
    assert_eq!(
        jobs[0].1, jobs[1].1,
        "the backfill classifies the same pairs"
    );
    assert_eq!(jobs[1].1.as_array().map(Vec::len), Some(2), "{jobs:?}");
}

/// A store extracted under `extract-p1` moves to `extract-p2` by a backfill: one new job
/// per chunk under the new prompt, its request holding quotes to the chunk's sentences,
/// each call recording the sha256 of the schema it sent, and export returning the p2
/// results as current.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extract_backfill_moves_a_store_from_p1_to_p2() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![route(
            "physicist and chemist",
            r#"{"entities":[{"name":"Marie Curie","type":"person"}],
                "claims":[{"statement":"Marie Curie won the Nobel Prize in Physics in 1903","quote":"She won the Nobel Prize in Physics in 1903","subject":"Marie Curie"}]}"#,
        )],
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p1");
    let worker = env.spawn_worker(Task::Extract);
    ingest(&env, &env.write_doc("curie-a.txt", CURIE_A), "wiki");
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    assert_eq!(worker.terminate(), Some(0));

    env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p2");
    let run = json_out(&env.relata(&["backfill", "--task", "extract", "--json"]));
    assert_eq!(run["jobs_published"], 1, "{run}");
    let worker = env.spawn_worker(Task::Extract);
    env.wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(worker.terminate(), Some(0));

    // Only the p2 request listed the chunk's sentences as the allowed quotes (the closing
    // quotation mark is the JSON string's end: in the prompt a newline follows instead).
    assert_eq!(env.requests_mentioning("with Pierre Curie.\""), 1);
    let store = env.store().await;
    let calls: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT j.prompt_version, j.state, c.sent_schema_sha256 FROM jobs j
         JOIN model_calls c USING (job_id) WHERE j.task = 'extract' ORDER BY j.created_at",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    // p1 sends the contract as every dialect sends it (annotations left out, lengths
    // capped for grammar compilers).
    let contract_sha = relata_model::schema_sha256(&relata_model::portable::sendable(
        relata_core::EXTRACT_V1.schema_value(),
    ));
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        (calls[0].0.as_str(), calls[0].2.as_deref()),
        ("extract-p1", Some(contract_sha.as_str())),
        "p1 sends the contract"
    );
    assert_eq!(calls[1].0, "extract-p2");
    assert!(
        calls[1].2.as_deref().is_some_and(|s| s != contract_sha),
        "p2 sends its own, tighter schema: {calls:?}"
    );
    assert!(calls.iter().all(|c| c.1 == "accepted"), "{calls:?}");

    let current: Vec<_> = env
        .export()
        .into_iter()
        .filter(|r| r["kind"] == "claim")
        .collect();
    assert_eq!(current.len(), 1, "{current:?}");
    assert_eq!(current[0]["provenance"]["prompt_version"], "extract-p2");
}

/// A store extracted under `extract-p3` moves to the default, `extract-p10`, by a backfill:
/// the new job sends the chunk as numbered sentences and the `relata.extract` v3 schema,
/// the p10 claims replace the p3 ones as current (the first sentence taken as shown, a
/// `null` statement), and the claim whose sentence began with "She" is stored
/// standalone, about the entity the sentence before names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extract_backfill_moves_a_store_from_p3_to_the_default() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        // First match wins: only the p10 request speaks of numbered sentences.
        routes: vec![
            route(
                "numbered sentences",
                r#"{"entities":[{"name":"Marie Curie","type":"person"},{"name":"Pierre Curie","type":"person"}],
                    "claims":{"S1":{"subject":"Marie Curie","statement":null},
                              "S2":{"subject":"Marie Curie","statement":"Marie Curie won the Nobel Prize in Physics in 1903, with Pierre Curie."}}}"#,
            ),
            route(
                "physicist and chemist",
                r#"{"entities":[{"name":"Marie Curie","type":"person"}],
                    "claims":[{"statement":"Marie Curie won the Nobel Prize in Physics in 1903","quote":"She won the Nobel Prize in Physics in 1903","subject":"Marie Curie"}]}"#,
            ),
        ],
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    // p3's tuple schema is refused with `json_schema`; llama-cpp-python's dialect takes both.
    env.set("RELATA_MODEL_DIALECT", "json_object_schema");
    env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p3");
    let worker = env.spawn_worker(Task::Extract);
    ingest(&env, &env.write_doc("curie-a.txt", CURIE_A), "wiki");
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    assert_eq!(worker.terminate(), Some(0));

    env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p10");
    let run = json_out(&env.relata(&["backfill", "--task", "extract", "--json"]));
    assert_eq!(run["jobs_published"], 1, "{run}");
    let worker = env.spawn_worker(Task::Extract);
    env.wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(worker.terminate(), Some(0));

    let p10 = env
        .chat_bodies()
        .into_iter()
        .filter(|b| b.contains("numbered sentences"))
        .collect::<Vec<_>>();
    assert_eq!(p10.len(), 1, "one p10 request");
    // The v3 schema: claims keyed by the handles of the chunk's two sentences.
    assert!(p10[0].contains(r#""required":["S1","S2"]"#), "{}", p10[0]);
    // ... whose statements may be null (the sentence as shown).
    assert!(p10[0].contains(r#""statement":{"anyOf":["#), "{}", p10[0]);
    assert!(
        p10[0].contains("S2: She won the Nobel Prize in Physics in 1903"),
        "{}",
        p10[0]
    );

    let store = env.store().await;
    let calls: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT j.prompt_version, j.state, c.sent_schema_sha256 FROM jobs j
         JOIN model_calls c USING (job_id) WHERE j.task = 'extract' ORDER BY j.created_at",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].0, "extract-p3");
    assert_eq!(calls[1].0, "extract-p10");
    assert_ne!(
        calls[0].2, calls[1].2,
        "p10 sends another schema: {calls:?}"
    );
    assert!(calls.iter().all(|c| c.1 == "accepted"), "{calls:?}");

    let records = env.export();
    let mut current: Vec<_> = records
        .iter()
        .filter(|r| r["kind"] == "claim")
        .map(|r| {
            (
                r["provenance"]["prompt_version"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                r["statement"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    current.sort();
    assert_eq!(
        current,
        vec![
            (
                "extract-p10".to_owned(),
                "Marie Curie was a physicist and chemist.".to_owned()
            ),
            (
                "extract-p10".to_owned(),
                "Marie Curie won the Nobel Prize in Physics in 1903, with Pierre Curie.".to_owned()
            ),
        ],
        "{records:?}"
    );
}
