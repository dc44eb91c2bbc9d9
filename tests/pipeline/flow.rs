//! The whole flow with a well-behaved (and partly misbehaving) model.

use std::time::Duration;

use relata_core::{JobId, JobMessage, Task};
use relata_testkit::FakeOptions;

use crate::common::{CURIE_A, CURIE_B, Env, corpus_path, route, sample};

pub(crate) const TOWER: &str = "The Eiffel Tower is located in Paris. It was completed in 1889.\n";

pub(crate) fn options() -> FakeOptions {
    FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            // Classify requests first: their bodies quote claim statements.
            route(
                "Requested pairs",
                r#"{"relations":[{"a":"C1","b":"C2","relation":"contradicts"},{"a":"C1","b":"C3","relation":"contradicts"},{"a":"C2","b":"C3","relation":"unrelated"}]}"#,
            ),
            // Partly valid: the second claim's quote is not in the source.
            route(
                "physicist and chemist",
                r#"{"entities":[{"name":"Marie Curie","type":"person"},{"name":"Pierre Curie","type":"person"}],
                    "claims":[{"statement":"Marie Curie won the Nobel Prize in Physics in 1903","quote":"She won the Nobel Prize in Physics in 1903","subject":"Marie Curie"},
                              {"statement":"Marie Curie discovered radium in a shed","quote":"She discovered radium in a shed","subject":"Marie Curie"}]}"#,
            ),
            // Fully valid, fenced, with whitespace differences in a quote.
            route(
                "born in Warsaw",
                "```json\n{\"entities\":[{\"name\":\"Marie Curie\",\"type\":\"person\"},{\"name\":\"Warsaw\",\"type\":\"location\"}],\"claims\":[{\"statement\":\"Marie Curie was born in Warsaw in 1867\",\"quote\":\"Marie Curie was born  in Warsaw in 1867\",\"subject\":\"marie curie\"},{\"statement\":\"Marie Curie never won a Nobel Prize in Physics\",\"quote\":\"She never won any Nobel Prize in Physics\",\"subject\":\"Marie Curie\"}]}\n```",
            ),
            // Not JSON at all.
            route(
                "Eiffel Tower",
                "Sure! Here is the JSON you asked for: {\"entities\": []}",
            ),
        ],
        ..FakeOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_extract_classify_end_to_end() {
    let mut env = Env::new(options(), vec![]).await;
    // A short summary interval, so the progress line shows within the test.
    env.set("RELATA_WORKER_SUMMARY_INTERVAL_MS", "200");
    env.write_doc("curie-a.txt", CURIE_A);
    env.write_doc("curie-b.md", CURIE_B);
    let corpus = env.write_doc("tower.txt", TOWER);

    let extract = env.spawn_worker(Task::Extract);
    let classify = env.spawn_worker(Task::Classify);

    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["new"], 3);
    assert_eq!(summary["jobs_published"], 3);

    let extract_states = env
        .wait_for_jobs(Task::Extract, 3, Duration::from_secs(60))
        .await;
    assert_eq!(
        extract_states.get("accepted"),
        Some(&1),
        "{extract_states:?}"
    );
    assert_eq!(
        extract_states.get("partial"),
        Some(&1),
        "{extract_states:?}"
    );
    assert_eq!(
        extract_states.get("invalid"),
        Some(&1),
        "{extract_states:?}"
    );
    // The periodic summary counts the same jobs: one of each outcome, three in all.
    let progress = progress_lines(&extract, "extract: ", "3 since start").await;
    for outcome in ["accepted 1", "partial 1", "invalid 1"] {
        assert_eq!(
            progress.iter().filter(|l| l.contains(outcome)).count(),
            1,
            "{outcome}: {progress:#?}"
        );
    }
    assert!(
        progress
            .iter()
            .any(|l| l.contains("jobs (") && l.contains("/min")),
        "{progress:#?}"
    );
    let classify_states = env
        .wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
        .await;
    assert_eq!(
        classify_states.get("partial"),
        Some(&1),
        "{classify_states:?}"
    );

    // Invalid output: one request for that document, ever, and one count.
    assert_eq!(env.requests_mentioning("Eiffel Tower"), 1);
    let m = extract.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_model_invalid_output_total",
            &[("task", "extract"), ("reason", "not_json")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_model_invalid_output_total",
            &[("task", "extract"), ("reason", "quote_not_found")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_rows_committed_total",
            &[("task", "extract"), ("kind", "claim")]
        ),
        3.0,
        "{m}"
    );
    // Every finished job is timed once, under the same labels as its count.
    let finished = sample(&m, "relata_jobs_total", &[("task", "extract")]);
    assert!(finished > 0.0, "{m}");
    assert_eq!(
        sample(
            &m,
            "relata_job_duration_seconds_count",
            &[("task", "extract")]
        ),
        finished,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_validation_check_enabled",
            &[("check", "quote_found"), ("severity", "reject")]
        ),
        1.0,
        "{m}"
    );
    let m = classify.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_model_invalid_output_total",
            &[("task", "classify"), ("reason", "unrequested_pair")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "relata_rows_committed_total",
            &[("task", "classify"), ("kind", "relation")]
        ),
        2.0,
        "{m}"
    );

    assert_eq!(extract.get("/readyz").await.0, 200);

    // Redelivery of committed jobs (the broker's at-least-once): acked, no model call.
    let before = env.fake.chat_requests().len();
    let broker = env.broker().await;
    let committed: Vec<JobId> = env
        .export()
        .iter()
        .filter(|r| r["kind"] == "claim")
        .filter_map(|r| JobId::parse(r["provenance"]["job_id"].as_str()?))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(committed.len(), 2);
    for id in &committed {
        let msg = JobMessage::new(Task::Extract, id.clone());
        broker
            .publish(Task::Extract, id, &msg.encode())
            .await
            .unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let m = extract.metrics().await;
        if sample(
            &m,
            "relata_jobs_total",
            &[("task", "extract"), ("outcome", "already_done")],
        ) >= 2.0
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "redeliveries not acked: {m}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        env.fake.chat_requests().len(),
        before,
        "a committed job went to the model again"
    );
    broker.close().await;

    // Graceful stop.
    assert_eq!(extract.terminate(), Some(0));
    assert_eq!(classify.terminate(), Some(0));

    // Exactly the expected rows, each claim anchored in its document's text.
    let records = env.export();
    let kinds = |k: &str| {
        records
            .iter()
            .filter(|r| r["kind"] == k)
            .collect::<Vec<_>>()
    };
    let docs = kinds("document");
    assert_eq!(docs.len(), 3);
    let claims = kinds("claim");
    assert_eq!(claims.len(), 3, "{claims:#?}");
    for c in &claims {
        let doc = docs
            .iter()
            .find(|d| d["id"] == c["document_id"])
            .expect("claim's document");
        let text = doc["text"].as_str().unwrap().as_bytes();
        let (s, e) = (
            c["quote_start"].as_u64().unwrap() as usize,
            c["quote_end"].as_u64().unwrap() as usize,
        );
        assert_eq!(&text[s..e], c["quote"].as_str().unwrap().as_bytes(), "{c}");
        assert!(
            c["provenance"]["schema_sha256"]
                .as_str()
                .is_some_and(|h| h.len() == 64),
            "{c}"
        );
        assert_eq!(c["provenance"]["model"], "fake-model");
    }
    // The whitespace-differing quote is stored as the source's own text.
    assert!(
        claims
            .iter()
            .any(|c| c["quote"] == "Marie Curie was born in Warsaw in 1867")
    );
    assert_eq!(kinds("entity").len(), 4);
    let relations = kinds("relation");
    assert_eq!(relations.len(), 2, "{relations:#?}");

    // Idempotent: a second run publishes nothing and calls no model.
    let before = env.fake.chat_requests().len();
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["unchanged"], 3);
    assert_eq!(again["jobs_published"], 0);
    assert_eq!(env.fake.chat_requests().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_named_counted_and_the_rest_ingested() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let jsonl = env.dir.join("docs.jsonl");
    std::fs::write(
        &jsonl,
        "{\"id\":\"1\",\"text\":\"A fine document about things.\"}\nnot json\n{\"id\":\"3\"}\n{\"id\":\"4\",\"text\":\"Another fine document.\"}\n",
    )
    .unwrap();
    let out = env.relata(&[
        "ingest",
        "--jsonl",
        jsonl.to_str().unwrap(),
        "--source",
        "j",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(
        stderr.contains("line 3") && stderr.contains("text"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["new"], 2);
    assert_eq!(summary["bad_input"], 2);
    assert_eq!(summary["jobs_published"], 2);
}

/// The worker's progress lines (`<task>: … since start; … queued`) once one of them
/// contains `until`; fails after 15 s.
async fn progress_lines(worker: &crate::common::Worker, task: &str, until: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let log = worker.log_text();
        let lines: Vec<String> = log
            .lines()
            .filter(|l| l.contains(task) && l.contains("since start"))
            .map(str::to_owned)
            .collect();
        if lines.iter().any(|l| l.contains(until)) {
            return lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no progress line with {until:?}; log:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
