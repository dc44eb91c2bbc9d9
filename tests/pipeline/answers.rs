//! `relata ask` and `relata serve` against a store filled by the real pipeline (extract and
//! classify workers with the fake model), with the fake model scripted per question.

use std::process::Stdio;
use std::time::Duration;

use relata_core::{AnswerCheck, Task};
use relata_testkit::{Behaviour, FakeOptions};
use relata_validate::AnswerConfig;
use serde_json::Value;

use crate::common::{CURIE_A, CURIE_B, Env, corpus_path, free_port, route, sample};

/// Extraction and classification of the two Curie documents: claims in both, and a
/// `contradicts` relation between them.
fn options() -> FakeOptions {
    FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            route(
                "Requested pairs",
                r#"{"relations":[{"a":"C1","b":"C2","relation":"contradicts"},{"a":"C1","b":"C3","relation":"contradicts"},{"a":"C2","b":"C3","relation":"unrelated"}]}"#,
            ),
            route(
                "physicist and chemist",
                r#"{"entities":[{"name":"Marie Curie","type":"person"},{"name":"Pierre Curie","type":"person"}],
                    "claims":[{"statement":"Marie Curie won the Nobel Prize in Physics in 1903","quote":"She won the Nobel Prize in Physics in 1903","subject":"Marie Curie"}]}"#,
            ),
            route(
                "born in Warsaw",
                r#"{"entities":[{"name":"Marie Curie","type":"person"},{"name":"Warsaw","type":"location"}],"claims":[{"statement":"Marie Curie was born in Warsaw in 1867","quote":"Marie Curie was born in Warsaw in 1867","subject":"Marie Curie"},{"statement":"Marie Curie never won a Nobel Prize in Physics","quote":"She never won any Nobel Prize in Physics","subject":"Marie Curie"}]}"#,
            ),
        ],
        ..FakeOptions::default()
    }
}

/// An environment whose store holds both documents and, `with_claims`, their claims and
/// the relations between them (extracted and classified by worker processes).
async fn filled(with_claims: bool) -> Env {
    let env = Env::new(options(), vec![]).await;
    env.write_doc("curie-a.txt", CURIE_A);
    let corpus = env.write_doc("curie-b.md", CURIE_B);
    let workers = with_claims.then(|| {
        (
            env.spawn_worker(Task::Extract),
            env.spawn_worker(Task::Classify),
        )
    });
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if workers.is_some() {
        env.wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
            .await;
        env.wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
            .await;
    }
    drop(workers);
    if with_claims {
        // The shipped policy: clean claims are promoted (and so attached to sources); the
        // `contradicts` relations wait for a reviewer.
        let out = env.relata(&["promote"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    env
}

fn answer_requests(env: &Env) -> usize {
    env.requests_mentioning("Question: ")
}

fn ask(env: &Env, question: &str) -> (Option<i32>, Value, String) {
    let out = env.relata(&["ask", question, "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let body = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), body, stderr)
}

/// Every source's text is its document's bytes at its offsets (current revision).
async fn assert_sources_resolve(env: &Env, body: &Value) {
    let store = env.store().await;
    let sources = body["sources"].as_array().unwrap();
    for (i, s) in sources.iter().enumerate() {
        assert_eq!(s["handle"], format!("S{}", i + 1));
        let bytes: Vec<u8> = sqlx::query_scalar(
            "SELECT substring(convert_to(r.text, 'UTF8') FROM $2 + 1 FOR $3 - $2)
               FROM documents d JOIN document_revisions r ON r.id = d.current_revision_id
              WHERE d.id = $1",
        )
        .bind(s["document_id"].as_i64().unwrap())
        .bind(s["start"].as_i64().unwrap() as i32)
        .bind(s["end"].as_i64().unwrap() as i32)
        .fetch_one(store.pool())
        .await
        .unwrap();
        assert_eq!(s["text"].as_str().unwrap().as_bytes(), bytes, "{s}");
        for c in s["claims"].as_array().unwrap() {
            let (qs, qe) = (
                c["quote_start"].as_u64().unwrap(),
                c["quote_end"].as_u64().unwrap(),
            );
            assert!(qs >= s["start"].as_u64().unwrap() && qe <= s["end"].as_u64().unwrap());
        }
    }
}

/// The stored `contradicts` relations between claims attached to the answer's sources.
async fn expected_contradictions(env: &Env, body: &Value) -> Vec<(i64, i64)> {
    let attached: Vec<i64> = body["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["claims"].as_array().unwrap().iter())
        .map(|c| c["claim_id"].as_i64().unwrap())
        .collect();
    let store = env.store().await;
    sqlx::query_as(
        "SELECT claim_a, claim_b FROM claim_relations
          WHERE relation = 'contradicts' AND claim_a = ANY($1) AND claim_b = ANY($1) ORDER BY id",
    )
    .bind(&attached)
    .fetch_all(store.pool())
    .await
    .unwrap()
}

/// Whether every listed contradiction is marked as pending review.
fn all_pending(body: &Value) -> bool {
    body["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["pending_review"] == true)
}

fn contradictions(body: &Value) -> Vec<(i64, i64)> {
    body["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["claims"][0].as_i64().unwrap(),
                c["claims"][1].as_i64().unwrap(),
            )
        })
        .collect()
}

fn caveat_reasons(body: &Value) -> Vec<String> {
    body["caveats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap().to_owned())
        .collect()
}

/// status, model, schema sha256, reasons of a stored answer.
type AnswerRow = (String, Option<String>, Option<String>, Vec<String>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_answers_abstains_and_degrades_without_ever_failing() {
    let env = filled(true).await;
    let question = "Did Marie Curie win the Nobel Prize in Physics?";

    // Answered: the citation resolves to a source whose text is the document's bytes. (The
    // sentence is S1's: one S1 did not support would be refused by `citation_supported`.)
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie won the Nobel Prize in Physics in 1903 [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "answered", "{body}");
    assert_eq!(body["sufficient"], true);
    assert_eq!(body["citations"], serde_json::json!(["S1"]));
    assert_eq!(body["question"], question);
    assert!(body["sources"].as_array().unwrap().len() >= 2, "{body}");
    assert_sources_resolve(&env, &body).await;
    let expected = expected_contradictions(&env, &body).await;
    assert!(
        !expected.is_empty(),
        "the two documents' claims contradict: {body}"
    );
    assert_eq!(contradictions(&body), expected);
    // Not yet approved by anyone, so listed and marked.
    assert!(all_pending(&body), "{body}");
    // What the model saw: handles and passages, never a database id.
    let sent = env.fake.chat_requests();
    let last = String::from_utf8_lossy(&sent.last().unwrap().body).into_owned();
    assert!(last.contains("[S1]") && last.contains("[S2]"), "{last}");
    assert!(last.contains("relata_answer_v1"), "{last}");

    // `{"answer": "sufficient", "found": true, "citations": []}` degrades, for both reasons.
    let before = answer_requests(&env);
    env.fake.push([Behaviour::completion(
        r#"{"answer": "sufficient", "found": true, "citations": []}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(body["sufficient"], false);
    assert_eq!(body["answer"], Value::Null);
    assert_eq!(body["citations"], serde_json::json!([]));
    assert_eq!(caveat_reasons(&body), ["degenerate", "uncited_answer"]);
    assert_sources_resolve(&env, &body).await;
    assert_eq!(
        contradictions(&body),
        expected_contradictions(&env, &body).await
    );
    assert!(!contradictions(&body).is_empty());
    assert!(all_pending(&body), "{body}");
    assert_eq!(answer_requests(&env), before + 1, "asked exactly once");

    // A fabricated citation: S99 when fewer were sent. Degraded, every source intact.
    let before = answer_requests(&env);
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie won the prize in Physics [S99].", "citations": ["S99"], "found": true}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(caveat_reasons(&body), ["unknown_handle"]);
    assert!(
        body["caveats"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("S99")
    );
    assert_sources_resolve(&env, &body).await;
    assert_eq!(answer_requests(&env), before + 1, "never re-asked");

    // A valid abstention.
    env.fake.push([Behaviour::completion(
        r#"{"answer": "The sources do not answer this question.", "citations": [], "found": false}"#,
    )]);
    let (code, body, _) = ask(&env, question);
    assert_eq!(code, Some(0));
    assert_eq!(body["status"], "abstained", "{body}");
    assert_eq!(body["sufficient"], false);

    // Nothing retrieved: abstained without a model call, and it says so.
    let before = env.fake.chat_requests().len();
    let (code, body, stderr) = ask(&env, "xylophone zeppelin quasar");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "abstained", "{body}");
    assert_eq!(body["sources"], serde_json::json!([]));
    assert_eq!(caveat_reasons(&body), ["no_sources"]);
    assert_eq!(
        env.fake.chat_requests().len(),
        before,
        "the model was asked"
    );

    // Passages about Marie Curie are found, but none gives a length: abstained without a
    // model call; asked for a year they give, the model is asked.
    let before = env.fake.chat_requests().len();
    let (code, body, stderr) = ask(&env, "How tall was Marie Curie?");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "abstained", "{body}");
    assert_ne!(body["sources"], serde_json::json!([]), "{body}");
    assert_eq!(caveat_reasons(&body), ["figure_not_given"]);
    assert_eq!(
        env.fake.chat_requests().len(),
        before,
        "the model was asked"
    );
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie was born in Warsaw in 1867 [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let (code, body, stderr) = ask(&env, "In what year was Marie Curie born?");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(env.fake.chat_requests().len(), before + 1, "{body}");

    // The human output resolves citations to titles and quotes.
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let out = env.relata(&["ask", "Where was Marie Curie born?"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("Marie Curie was born in Warsaw [S1]."),
        "{text}"
    );
    assert!(text.contains("Sources:\n  [S1] "), "{text}");

    // A degraded answer in human output still shows the contradictions waiting for review.
    env.fake.push([Behaviour::completion(
        r#"{"answer": "sufficient", "found": true, "citations": []}"#,
    )]);
    let out = env.relata(&["ask", question]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("No usable answer"), "{text}");
    assert!(
        text.contains("Contradictions between stored claims:\n  S")
            && text.contains("(pending review)"),
        "{text}"
    );

    // Every answer is recorded with its provenance; those abstained before the model
    // have no call.
    let store = env.store().await;
    let rows: Vec<AnswerRow> =
        sqlx::query_as("SELECT status, model, schema_sha256, reasons FROM answers ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let statuses: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "answered",
            "degraded",
            "degraded",
            "abstained",
            "abstained",
            "abstained",
            "answered",
            "answered",
            "degraded"
        ]
    );
    assert_eq!(rows[0].1.as_deref(), Some("fake-model"));
    assert_eq!(
        rows[0].2.as_deref(),
        Some(relata_core::ANSWER_V1.sha256().as_str())
    );
    assert_eq!(rows[1].3, ["degenerate", "uncited_answer"]);
    assert_eq!(rows[4].1, None);
    assert_eq!(rows[5].1, None, "the figure not given");
    assert_eq!(rows[6].1.as_deref(), Some("fake-model"));

    // Words only the second document has find it alone; the first document's claim
    // contradicts it, so its passage comes as a source the question did not find.
    let other_side = "What is said, according to this text?";
    for _ in 0..2 {
        env.fake.push([Behaviour::completion(
            r#"{"answer": "The sources do not answer this question.", "citations": [], "found": false}"#,
        )]);
    }
    let (code, body, stderr) = ask(&env, other_side);
    assert_eq!(code, Some(0), "{stderr}");
    let sources = body["sources"].as_array().unwrap();
    let retrieved: Vec<&Value> = sources.iter().map(|s| &s["retrieved"]).collect();
    assert_eq!(
        retrieved,
        [&Value::Bool(true), &Value::Bool(false)],
        "{body}"
    );
    assert_sources_resolve(&env, &body).await;
    assert_eq!(
        contradictions(&body),
        expected_contradictions(&env, &body).await
    );
    assert!(!contradictions(&body).is_empty(), "{body}");
    let sent = env.fake.chat_requests();
    let last = String::from_utf8_lossy(&sent.last().unwrap().body).into_owned();
    assert!(
        last.contains("[S2]"),
        "the model sees the other side too: {last}"
    );
    let out = env.relata(&["ask", other_side]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[S2] ") && text.contains("not found by the question"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_citation_of_s99_among_six_sources_degrades_with_all_six_intact() {
    let env = Env::new(options(), vec![]).await;
    let mut corpus = None;
    for i in 1..=6 {
        corpus = Some(env.write_doc(
            &format!("laureate-{i}.txt"),
            &format!(
                "Laureate number {i} received the Nobel Prize in Chemistry in {}.",
                1900 + i
            ),
        ));
    }
    let out = env.relata(&["ingest", corpus_path(&corpus.unwrap()), "--source", "wiki"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    env.fake.push([Behaviour::completion(
        r#"{"answer": "A laureate received the Nobel Prize in Chemistry [S99].", "citations": ["S99"], "found": true}"#,
    )]);
    let out = env.relata(&[
        "ask",
        "Who received the Nobel Prize in Chemistry?",
        "--k",
        "6",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(body["sufficient"], false);
    assert_eq!(body["answer"], Value::Null);
    assert_eq!(caveat_reasons(&body), ["unknown_handle"]);
    let sources = body["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 6, "{body}");
    assert_sources_resolve(&env, &body).await;
    // What was sent is what came back: six passages, S1..S6, and the model saw exactly
    // those handles.
    let sent = env.fake.chat_requests();
    assert_eq!(
        answer_requests(&env),
        1,
        "asked exactly once, never re-asked"
    );
    let last = String::from_utf8_lossy(&sent.last().unwrap().body).into_owned();
    for (i, s) in sources.iter().enumerate() {
        assert!(last.contains(&format!("[S{}]", i + 1)), "{last}");
        assert!(
            s["text"].as_str().unwrap().starts_with("Laureate number"),
            "{s}"
        );
    }
    assert!(!last.contains("[S7]"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_exits_69_after_bounded_retries_when_the_model_is_unavailable() {
    let mut env = filled(false).await;
    env.set("RELATA_MODEL_RETRY_MAX_ATTEMPTS", "3");
    let before = answer_requests(&env);
    env.fake
        .push((0..3).map(|_| Behaviour::error(503, "overloaded")));
    let (code, body, stderr) = ask(&env, "Where was Marie Curie born?");
    assert_eq!(code, Some(69), "{stderr}");
    assert_eq!(body, Value::Null, "nothing on stdout");
    assert!(stderr.contains("model is unavailable"), "{stderr}");
    assert_eq!(answer_requests(&env), before + 3, "bounded retries");
    // A bad question is a usage error, before anything is asked.
    let (code, _, stderr) = ask(&env, " ");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("question"), "{stderr}");
    let store = env.store().await;
    assert_eq!(
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM answers")
            .fetch_one(store.pool())
            .await
            .unwrap(),
        0
    );
}

/// A `relata serve` process.
struct Server {
    child: std::process::Child,
    port: u16,
}

impl Server {
    async fn start(env: &Env) -> Server {
        let port = free_port();
        let child = env
            .command(&["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server { child, port };
        for _ in 0..100 {
            if s.request("GET", "/healthz", None).await.is_ok() {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("relata serve did not come up");
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::io::Result<(u16, String)> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        relata_testkit::http::request(method, &url, body).await
    }

    async fn post(&self, body: &str) -> (u16, Value) {
        let (status, text) = self
            .request("POST", "/v1/answers", Some(body.as_bytes()))
            .await
            .unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    fn terminate(mut self) -> Option<i32> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..300 {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("relata serve did not stop on SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_over_http_and_refuses_bad_requests() {
    let mut env = filled(false).await;
    env.set("RELATA_MODEL_RETRY_MAX_ATTEMPTS", "2");
    env.set("RELATA_MODEL_REQUEST_TIMEOUT_MS", "500");
    let server = Server::start(&env).await;
    assert_eq!(server.request("GET", "/readyz", None).await.unwrap().0, 200);

    // Bad bodies: 400 naming the field; over 16 KiB: 413.
    for (body, field) in [
        (r#"{"question": "Where?", "extra": 1}"#, Some("extra")),
        (r#"{"k": 3}"#, Some("question")),
        (r#"{"question": "   "}"#, Some("question")),
        (r#"{"question": "Where?", "k": 0}"#, Some("k")),
        (r#"{"question": "Where?", "k": 21}"#, Some("k")),
        // A value of the wrong type names its field, never the value.
        (r#"{"question": 42}"#, Some("question")),
        (r#"{"question": "Where?", "k": 1e9}"#, Some("k")),
        (r#"{"question": "Where?", "k": "3"}"#, Some("k")),
        ("not json", None),
        ("[1, 2]", None),
    ] {
        let (status, v) = server.post(body).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert!(v["error"].is_string(), "{v}");
        if let Some(f) = field {
            assert_eq!(v["field"], f, "{body}: {v}");
        }
    }
    let long = format!(r#"{{"question": "{}"}}"#, "a".repeat(2_001));
    let (status, v) = server.post(&long).await;
    assert_eq!(
        (status, v["field"].as_str()),
        (400, Some("question")),
        "{v}"
    );
    let huge = format!(r#"{{"question": "{}"}}"#, "a".repeat(17 * 1024));
    assert_eq!(server.post(&huge).await.0, 413);
    assert_eq!(answer_requests(&env), 0, "no bad request reached the model");

    // A fabricated citation: 200 degraded, counted once on the metric, asked once.
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie won the prize in Physics [S99].", "citations": ["S99"], "found": true}"#,
    )]);
    let (status, v) = server
        .post(r#"{"question": "Did Marie Curie win the Nobel Prize in Physics?", "k": 4}"#)
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "degraded");
    assert_eq!(answer_requests(&env), 1);
    assert!(v["sources"].as_array().unwrap().len() <= 4);
    let (_, metrics) = server.request("GET", "/metrics", None).await.unwrap();
    let labels = [("task", "answer"), ("reason", "unknown_handle")];
    assert_eq!(
        sample(&metrics, "relata_model_invalid_output_total", &labels),
        1.0,
        "{metrics}"
    );
    assert_eq!(
        sample(&metrics, "relata_answers_total", &[("status", "degraded")]),
        1.0
    );

    // Concurrent requests are all answered.
    env.fake.push((0..6).map(|_| {
        Behaviour::completion(
            r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
        )
    }));
    let q = r#"{"question": "Where was Marie Curie born?"}"#;
    let results = futures::future::join_all((0..6).map(|_| server.post(q))).await;
    for (status, v) in results {
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["status"], "answered", "{v}");
    }

    // The model times out on every attempt: 504. A 5xx on every attempt: 502.
    env.fake.push([Behaviour::hang(), Behaviour::hang()]);
    let (status, v) = server.post(q).await;
    assert_eq!(status, 504, "{v}");
    env.fake
        .push([Behaviour::error(500, "boom"), Behaviour::error(500, "boom")]);
    let (status, v) = server.post(q).await;
    assert_eq!(status, 502, "{v}");
    assert!(v["error"].as_str().unwrap().contains("unavailable"), "{v}");

    assert_eq!(server.terminate(), Some(0));
}

/// The real model (SmolLM2-135M under llama-cpp-python, from `scripts/real-model.sh`) over
/// a few ingested Wikipedia summaries: whatever it says, the answer is one of the three
/// outcomes — never an error — and every citation resolves to a source whose text is the
/// document's own bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real model server: eval \"$(scripts/real-model.sh)\""]
async fn real_model_answers_are_one_of_three_outcomes_and_citations_resolve() {
    let (env, picked) = Env::real_model("400", 4).await;
    env.ingest_titled(&picked);

    // A question about the first document, in its own words, so retrieval finds sources
    // and the model is really asked.
    let question = format!("What is {}?", picked[0].0);
    let before = env.fake.chat_requests().len();
    let (code, body, stderr) = ask(&env, &question);
    assert_eq!(code, Some(0), "an error instead of an answer: {stderr}");
    assert_eq!(
        env.fake.chat_requests().len(),
        before,
        "the fake was asked instead of the model"
    );
    let status = body["status"].as_str().unwrap();
    assert!(
        ["answered", "abstained", "degraded"].contains(&status),
        "{body}"
    );
    let sources = body["sources"].as_array().unwrap();
    assert!(
        !sources.is_empty(),
        "nothing retrieved for {question:?}: {body}"
    );
    assert_sources_resolve(&env, &body).await;
    let handles: Vec<&str> = sources
        .iter()
        .map(|s| s["handle"].as_str().unwrap())
        .collect();
    for c in body["citations"].as_array().unwrap() {
        assert!(
            handles.contains(&c.as_str().unwrap()),
            "{c} resolves to no source: {body}"
        );
    }
    assert_eq!(body["sufficient"], status == "answered");
    if status == "degraded" {
        assert_eq!(body["answer"], Value::Null);
        assert!(!caveat_reasons(&body).is_empty(), "{body}");
    }
    // Recorded with the real model's provenance.
    let store = env.store().await;
    let (recorded, model, ms): (String, Option<String>, Option<i64>) =
        sqlx::query_as("SELECT status, model, duration_ms FROM answers ORDER BY id DESC LIMIT 1")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(recorded, status);
    let name = std::env::var("RELATA_MODEL_NAME").unwrap();
    assert_eq!(model.as_deref(), Some(name.as_str()));
    eprintln!(
        "real model answer: {status}, model call {} ms, caveats {:?}",
        ms.unwrap_or(-1),
        caveat_reasons(&body)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_the_answer_checks_for_the_disabled_check_alert() {
    let mut env = Env::new(options(), vec![]).await;
    let config = env.dir.join("relata.toml");
    std::fs::write(
        &config,
        "[answer_checks.degenerate]\nenabled = false\nseverity = \"reject\"\n",
    )
    .unwrap();
    env.set("RELATA_CONFIG", corpus_path(&config));
    let server = Server::start(&env).await;
    let (status, metrics) = server.request("GET", "/metrics", None).await.unwrap();
    assert_eq!(status, 200);
    let series: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("relata_validation_check_enabled{"))
        .collect();
    // One series per check: a 0 for a severity a check is not at would fire the alert.
    assert_eq!(series.len(), AnswerCheck::ALL.len(), "{metrics}");
    let shipped = AnswerConfig::default();
    for check in AnswerCheck::ALL {
        let labels = [
            ("check", check.as_str()),
            ("severity", shipped.setting(*check).severity.as_str()),
        ];
        let want = if *check == AnswerCheck::Degenerate {
            0.0
        } else {
            1.0
        };
        assert_eq!(
            sample(&metrics, "relata_validation_check_enabled", &labels),
            want,
            "{check}: {metrics}"
        );
    }
    assert_eq!(server.terminate(), Some(0));
}

/// A document's bytes edited with plain SQL under a promoted claim ("Warsaw" → "Berlin"):
/// the answer shows the bytes as they are now, never the claim beside them, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_source_was_edited_outside_relata_is_not_served() {
    let env = filled(true).await;
    let question = "Where was Marie Curie born?";
    let served = |body: &Value| -> Vec<String> {
        body["sources"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["claims"].as_array().unwrap().clone())
            .map(|c| c["quote"].as_str().unwrap().to_owned())
            .collect()
    };
    env.fake.push([Behaviour::completion(
        r#"{"answer": "In Warsaw [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(served(&body).iter().any(|q| q.contains("Warsaw")), "{body}");
    assert!(!caveat_reasons(&body).contains(&"source_altered".to_owned()));

    let store = env.store().await;
    for edit in [
        "UPDATE document_revisions SET text = replace(text, 'Warsaw', 'Berlin')",
        "UPDATE chunks SET text = replace(text, 'Warsaw', 'Berlin')",
    ] {
        sqlx::query(edit).execute(store.pool()).await.unwrap();
    }
    env.fake.push([Behaviour::completion(
        r#"{"answer": "In Berlin [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        served(&body).iter().all(|q| !q.contains("Warsaw")),
        "a quote its source no longer holds was served: {body}"
    );
    assert!(
        caveat_reasons(&body).contains(&"source_altered".to_owned()),
        "{body}"
    );
    assert!(stderr.contains("relata evidence verify"), "{stderr}");
}

/// Serving beyond loopback, or with nobody able to sign in, is said at start-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_warns_about_plain_http_beyond_loopback_and_no_reviewer() {
    let env = filled(false).await;
    let port = free_port();
    let child = env
        .command(&["serve", "--addr", &format!("0.0.0.0:{port}")])
        .env_remove("RELATA_REVIEWERS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let mut up = false;
    for _ in 0..100 {
        if relata_testkit::http::request("GET", &url, None)
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(up, "relata serve did not come up: {stderr}");
    assert!(
        stderr.contains("plain HTTP beyond this machine"),
        "{stderr}"
    );
    assert!(stderr.contains("nobody can sign in"), "{stderr}");
}

/// `answer-p2` asks for `relata.answer` v2: the reply sent as two closed branches, and
/// the gate reading the reply as v1 reads its root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_p2_sends_two_closed_branches_and_judges_the_reply() {
    let mut env = filled(true).await;
    env.set("RELATA_MODEL_ANSWER_PROMPT", "answer-p2");
    let question = "Where was Marie Curie born?";
    env.fake.push([Behaviour::completion(
        r#"{"reply": {"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}}"#,
    )]);
    let (code, body, stderr) = ask(&env, question);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(body["status"], "answered", "{body}");
    assert_eq!(body["citations"], serde_json::json!(["S1"]));
    let sent = env.fake.chat_requests().last().unwrap().clone();
    let sent = String::from_utf8_lossy(&sent.body).into_owned();
    assert!(
        sent.contains("relata_answer_v2") && sent.contains("anyOf"),
        "{sent}"
    );

    env.fake.push([Behaviour::completion(&format!(
        r#"{{"reply": {{"answer": "{}", "citations": [], "found": false}}}}"#,
        relata_core::contract::ANSWER_ABSTENTION
    ))]);
    let (_, body, _) = ask(&env, question);
    assert_eq!(body["status"], "abstained", "{body}");

    // v1's shape is not v2's: refused, never read as the reply it would have been.
    env.fake.push([Behaviour::completion(
        r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
    )]);
    let (_, body, _) = ask(&env, question);
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(caveat_reasons(&body), ["unknown_field"], "{body}");

    let store = env.store().await;
    let recorded: Vec<(String, i32, String)> = sqlx::query_as(
        "SELECT prompt_version, schema_version, status FROM answers ORDER BY id DESC LIMIT 3",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(
        recorded.iter().all(|(p, v, _)| p == "answer-p2" && *v == 2),
        "{recorded:?}"
    );
}
