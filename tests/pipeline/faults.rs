//! Faults: provider refusals, poison messages, transport failures, a worker killed mid-job.

use std::time::{Duration, Instant};

use relata_core::{EXTRACT_V1, JobId, Task, TaskVersion};
use relata_testkit::{Behaviour, FakeOptions};

use crate::common::{Env, corpus_path, route, sample};

const DOC: &str = "Ada Lovelace wrote the first published algorithm for a machine.\n";
const GOOD: &str = r#"{"entities":[{"name":"Ada Lovelace","type":"person"}],"claims":[{"statement":"Ada Lovelace wrote the first published algorithm","quote":"Ada Lovelace wrote the first published algorithm","subject":"Ada Lovelace"}]}"#;

const BACKLOG: usize = 20;

/// A backlog of documents that each accept an empty extraction.
fn backlog(env: &Env) -> std::path::PathBuf {
    let mut corpus = None;
    for i in 0..BACKLOG {
        corpus = Some(env.write_doc(
            &format!("d{i}.txt"),
            &format!("Backlog document number{i} mentions Ada Lovelace.\n"),
        ));
    }
    corpus.unwrap()
}

/// Ledger jobs of `task` by state.
async fn states(env: &Env, task: Task) -> std::collections::BTreeMap<String, i64> {
    let status = env.store().await.status().await.unwrap();
    let mut by_state = std::collections::BTreeMap::new();
    for j in status.jobs.iter().filter(|j| j.task == task.as_str()) {
        *by_state.entry(j.state.clone()).or_insert(0) += j.count;
    }
    by_state
}

/// Ready messages in the extract work queue and in the dead-letter queue.
async fn depths(broker: &relata_queue::Broker, prefix: &str) -> (u32, u32) {
    let depths = broker.queue_depths().await.unwrap();
    let of = |name: String| {
        depths
            .iter()
            .find(|q| q.name == name)
            .and_then(|q| q.messages)
            .unwrap_or(0)
    };
    (
        of(format!("{prefix}.extract")),
        of(format!("{prefix}.dead")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_with_a_backlog_leaves_every_job_queued_and_none_dead_lettered() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::error(401, "invalid api key"),
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    env.set("RELATA_WORKER_PROVIDER_RETRY_MIN_MS", "200");
    env.set("RELATA_WORKER_PROVIDER_RETRY_MAX_MS", "400");
    // Garbage straight onto the work queue, before any real job: poison is still a
    // per-message failure, and it does not stop the worker.
    let broker = env.broker().await;
    broker.declare_topology().await.unwrap();
    let v = TaskVersion::new(&EXTRACT_V1, "extract-p1", "fake-model");
    broker
        .publish(
            Task::Extract,
            &JobId::derive(&v, b"garbage"),
            b"\x00\xffnot a job",
        )
        .await
        .unwrap();

    let worker = env.spawn_worker(Task::Extract);
    let out = env.relata(&["ingest", corpus_path(&backlog(&env)), "--source", "s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Paused: the gauge says so, readiness drops with the provider's words.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = worker.metrics().await;
        if sample(
            &m,
            "relata_worker_consumption_paused",
            &[("task", "extract")],
        ) == 1.0
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never paused; log:\n{}",
            worker.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(worker.get("/healthz").await.0, 200);
    let (status, body) = worker.get("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("model provider refused"), "{body}");

    // Several slow retries of the provider later, still: every job queued in the ledger
    // and in the broker, only the poison message dead-lettered, and no job sent to the
    // model more than the one in-flight batch that met the refusal.
    let probes_before = env.fake.chat_requests().len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.fake.chat_requests().len() < probes_before + 3 {
        assert!(
            Instant::now() < deadline,
            "the provider was not asked again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let by_state = states(&env, Task::Extract).await;
    assert_eq!(
        by_state.get("queued"),
        Some(&(BACKLOG as i64)),
        "{by_state:?}"
    );
    assert_eq!(by_state.len(), 1, "{by_state:?}");
    assert_eq!(depths(&broker, &env.prefix).await, (BACKLOG as u32, 1));
    assert!(
        env.requests_mentioning("Backlog document") <= 2,
        "a paused worker sent jobs to the model"
    );
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_jobs_dead_lettered_total",
            &[("reason", "permanent_provider")]
        ),
        0.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_jobs_dead_lettered_total",
            &[("reason", "poison")]
        ),
        1.0,
        "{m}"
    );
    assert!(
        worker
            .log_text()
            .contains("consumption paused, jobs stay queued"),
        "{}",
        worker.log_text()
    );

    // The key is fixed: the provider answers, the worker resumes and works the backlog.
    env.fake
        .push((0..BACKLOG + 5).map(|_| Behaviour::completion(r#"{"entities":[],"claims":[]}"#)));
    let states = env
        .wait_for_jobs(Task::Extract, BACKLOG as i64, Duration::from_secs(60))
        .await;
    assert_eq!(
        states.get("accepted"),
        Some(&(BACKLOG as i64)),
        "{states:?}"
    );
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_worker_consumption_paused",
            &[("task", "extract")]
        ),
        0.0,
        "{m}"
    );
    assert_eq!(worker.get("/readyz").await.0, 200);
    assert_eq!(depths(&broker, &env.prefix).await, (0, 1));
    assert_eq!(worker.terminate(), Some(0));
    broker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_with_the_exit_policy_exits_3_and_leaves_every_job_queued() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::error(404, "The model `fake-model` does not exist"),
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    env.set("RELATA_WORKER_ON_PROVIDER_REFUSAL", "exit");
    let out = env.relata(&["ingest", corpus_path(&backlog(&env)), "--source", "s"]);
    assert!(out.status.success());
    let worker = env.spawn_worker(Task::Extract);
    let log = worker.log.clone();
    assert_eq!(worker.wait_exit(Duration::from_secs(30)), Some(3));
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("does not exist"), "{log}");
    let by_state = states(&env, Task::Extract).await;
    assert_eq!(
        by_state.get("queued"),
        Some(&(BACKLOG as i64)),
        "{by_state:?}"
    );
    let broker = env.broker().await;
    assert_eq!(depths(&broker, &env.prefix).await, (BACKLOG as u32, 0));
    broker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_400_about_one_request_stays_a_per_job_permanent_failure() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::error(400, "context length exceeded"),
        ..FakeOptions::default()
    };
    let env = Env::new(options, vec![]).await;
    let corpus = env.write_doc("ada.txt", DOC);
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "s"]);
    assert!(out.status.success());
    let worker = env.spawn_worker(Task::Extract);
    let states = env
        .wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("dead"), Some(&1), "{states:?}");
    assert_eq!(env.fake.chat_requests().len(), 1, "never retried");
    let m = worker.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_jobs_dead_lettered_total",
            &[("reason", "permanent_provider")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_worker_consumption_paused",
            &[("task", "extract")]
        ),
        0.0,
        "{m}"
    );
    assert_eq!(worker.get("/readyz").await.0, 200);
    assert_eq!(worker.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_faults_are_retried_until_every_job_completes() {
    // Ten documents; the first requests fail in mixed transport ways (about a third of
    // all requests), some more times in a row than the in-process retries allow, so
    // both the adapter's retries and the broker's delayed requeue are exercised.
    let mut options = FakeOptions {
        models: vec!["fake-model".into()],
        ..FakeOptions::default()
    };
    let mut docs = Vec::new();
    for i in 0..10 {
        let text = format!(
            "Document number{i} says that Ada Lovelace wrote the first published algorithm.\n"
        );
        let content = format!(
            r#"{{"entities":[{{"name":"Ada Lovelace","type":"person"}}],"claims":[{{"statement":"Document number{i} says Ada Lovelace wrote the first published algorithm","quote":"Document number{i} says that Ada Lovelace wrote the first published algorithm","subject":"Document number{i}"}}]}}"#
        );
        options.routes.push(route(&format!("number{i} "), &content));
        docs.push(text);
    }
    options
        .routes
        .insert(0, route("Requested pairs", r#"{"relations":[]}"#));
    let faults = vec![
        Behaviour::error(503, "overloaded"),
        Behaviour::error(429, "slow down").retry_after(0),
        Behaviour::reset_mid_body(GOOD),
        Behaviour::close_immediately(),
        Behaviour::error(502, "bad gateway"),
        Behaviour::error(500, "oops"),
        Behaviour::error(504, "gateway timeout"),
    ];
    let mut env = Env::new(options, faults).await;
    env.set("RELATA_MODEL_RETRY_MAX_ATTEMPTS", "2");
    let mut corpus = None;
    for (i, d) in docs.iter().enumerate() {
        corpus = Some(env.write_doc(&format!("d{i}.txt"), d));
    }
    let worker = env.spawn_worker(Task::Extract);
    let out = env.relata(&["ingest", corpus_path(&corpus.unwrap()), "--source", "s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let states = env
        .wait_for_jobs(Task::Extract, 10, Duration::from_secs(90))
        .await;
    assert_eq!(
        states.get("accepted"),
        Some(&10),
        "{states:?}; log:\n{}",
        worker.log_text()
    );
    let m = worker.metrics().await;
    assert_eq!(
        sample(&m, "relata_model_invalid_output_total", &[]),
        0.0,
        "{m}"
    );
    assert!(
        sample(&m, "relata_model_transport_errors_total", &[]) >= 7.0,
        "{m}"
    );
    assert_eq!(
        sample(&m, "relata_jobs_dead_lettered_total", &[]),
        0.0,
        "{m}"
    );
    let calls = env.fake.chat_requests().len();
    assert_eq!(calls, 17, "10 successful requests + 7 faults");
    assert_eq!(worker.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_job_loses_nothing_and_duplicates_nothing() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            route("Requested pairs", r#"{"relations":[]}"#),
            route(
                "FIRST",
                &GOOD.replace("Ada Lovelace wrote", "FIRST Ada Lovelace wrote"),
            ),
        ],
        ..FakeOptions::default()
    };
    // The second document's first answer is slow: the worker is killed while waiting.
    let slow =
        Behaviour::completion(&GOOD.replace("Ada Lovelace wrote", "SECOND Ada Lovelace wrote"))
            .delayed(Duration::from_secs(30));
    let fast =
        Behaviour::completion(&GOOD.replace("Ada Lovelace wrote", "SECOND Ada Lovelace wrote"));
    let mut options = options;
    options.routes.push(relata_testkit::Route {
        needle: "SECOND".into(),
        behaviour: fast,
    });
    let env = Env::new(options, vec![]).await;
    let corpus = env.write_doc(
        "a.txt",
        "FIRST Ada Lovelace wrote the first published algorithm.\n",
    );
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "s"]);
    assert!(out.status.success());
    let worker = env.spawn_worker(Task::Extract);
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;

    // Now the slow one.
    env.fake.push([slow]);
    let corpus = env.write_doc(
        "b.txt",
        "SECOND Ada Lovelace wrote the first published algorithm.\n",
    );
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "s"]);
    assert!(out.status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.requests_mentioning("SECOND") == 0 {
        assert!(Instant::now() < deadline, "the slow request never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.kill9();

    let worker = env.spawn_worker(Task::Extract);
    let states = env
        .wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("accepted"), Some(&2), "{states:?}");
    // The committed job was never sent again; the interrupted one was sent once more.
    assert_eq!(env.requests_mentioning("FIRST"), 1);
    assert_eq!(env.requests_mentioning("SECOND"), 2);
    let claims: Vec<_> = env
        .export()
        .into_iter()
        .filter(|r| r["kind"] == "claim")
        .collect();
    assert_eq!(claims.len(), 2, "{claims:#?}");
    assert_eq!(worker.terminate(), Some(0));
}

/// SIGTERM while a job waits out a long `Retry-After`: the job is abandoned at the
/// deadline and stays queued, and the shutdown logs no error (lapin used to report a
/// channel-state error when a dropped channel raced the connection's close).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_retry_after_wait_is_clean() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::error(429, "slow down").retry_after(60),
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    env.set("RELATA_WORKER_SHUTDOWN_DEADLINE_MS", "1000");
    let corpus = env.write_doc("ada.txt", DOC);
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "s"]);
    assert!(out.status.success());
    let worker = env.spawn_worker(Task::Extract);
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.fake.chat_requests().is_empty() {
        assert!(Instant::now() < deadline, "no request");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = worker.log.clone();
    assert_eq!(worker.terminate(), Some(0));
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("abandoning in-flight jobs"), "{log}");
    assert!(!log.contains("invalid channel state"), "{log}");
    assert!(!log.contains(" ERROR "), "{log}");
    let by_state = states(&env, Task::Extract).await;
    assert_eq!(by_state.get("queued"), Some(&1), "{by_state:?}");
}

/// What the provider's filter stopped, and content that is not text, are recorded once as
/// invalid output — the job completes `invalid`, nothing is stored from it, and the model
/// is asked once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_and_non_text_content_are_recorded_once_and_never_stored() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            relata_testkit::Route {
                needle: "FILTERED".into(),
                behaviour: Behaviour::content_filter(GOOD),
            },
            relata_testkit::Route {
                needle: "OBJECT".into(),
                behaviour: Behaviour::content_value(
                    serde_json::json!({"entities": [], "claims": []}),
                ),
            },
        ],
        ..FakeOptions::default()
    };
    let env = Env::new(options, vec![]).await;
    env.write_doc("a.txt", &DOC.replace("Ada", "FILTERED Ada"));
    let corpus = env.write_doc("b.txt", &DOC.replace("Ada", "OBJECT Ada"));
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "s"]);
    assert!(out.status.success());
    let worker = env.spawn_worker(Task::Extract);
    let states = env
        .wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("invalid"), Some(&2), "{states:?}");
    assert_eq!(env.fake.chat_requests().len(), 2, "each asked once");
    let m = worker.metrics().await;
    for reason in ["refusal", "schema"] {
        assert_eq!(
            sample(
                &m,
                "relata_model_invalid_output_total",
                &[("task", "extract"), ("reason", reason)]
            ),
            1.0,
            "{reason}: {m}"
        );
    }
    assert!(
        env.export()
            .iter()
            .all(|r| r["kind"] != "claim" && r["kind"] != "entity"),
        "nothing from a filtered or non-text answer is stored"
    );
    assert!(
        worker.log_text().contains("finish_reason = content_filter"),
        "the rejection is logged with its detail"
    );
    assert_eq!(worker.terminate(), Some(0));
}

/// A batch run (`--exit-when-idle`) paused by a refusal does not wait forever: it exits 3
/// with its jobs queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_batch_worker_exits_3_after_its_idle_time() {
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        default: Behaviour::error(403, "this key may not use fake-model"),
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    env.set("RELATA_WORKER_PROVIDER_RETRY_MIN_MS", "200");
    env.set(
        "RELATA_METRICS_ADDR",
        &format!("127.0.0.1:{}", crate::common::free_port()),
    );
    let out = env.relata(&["ingest", corpus_path(&backlog(&env)), "--source", "s"]);
    assert!(out.status.success());
    let mut cmd = env.command(&["worker", "extract", "--exit-when-idle", "2"]);
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{log}");
    assert!(started.elapsed() < Duration::from_secs(30), "{log}");
    assert!(log.contains("may not use fake-model"), "{log}");
    let by_state = states(&env, Task::Extract).await;
    assert_eq!(
        by_state.get("queued"),
        Some(&(BACKLOG as i64)),
        "{by_state:?}"
    );
}
