//! The whole pipeline in its default configuration (`extract-p10`) against real model
//! servers on a few real Wikipedia summaries: llama-cpp-python (SmolLM2-135M, or
//! Qwen2.5-0.5B with `RELATA_REAL_MODEL=qwen`, prepared by `scripts/real-model.sh`) in
//! the `json_object_schema` dialect, and llama.cpp's own `llama-server` (built from the
//! same llama.cpp source by `scripts/engines/`) in the `json_schema` dialect — the one
//! OpenAI, vLLM and Ollama take too, compiled there by the converter Ollama uses.
//! Ignored by default (slow; needs the servers); `scripts/test` runs them. Classify and
//! join are asked directly, in the configured dialect.
//!
//! They assert that every outcome is classified, not that rows are accepted: a 135M model
//! is expected to fail the gate most of the time. Every stored claim is judged again on
//! its own by every check.

use std::time::Duration;

use relata_core::{Handle, SourceHandle, Task};
use relata_model::{ClassifyClaim, Dialect, JoinSide, ModelClient, ModelConfig, ModelMetrics};
use relata_validate::{
    ClassifyInput, GateConfig, JoinInput, JoinSource, judge_classify, judge_join,
};

use crate::common::Env;

const DOCS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real model server: eval \"$(scripts/real-model.sh)\""]
async fn real_model_pipeline_classifies_every_outcome() {
    let (env, docs) = Env::real_model("700", DOCS).await;
    default_configuration(env, docs, Dialect::JsonObjectSchema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server: eval \"$(scripts/engines/llama-server.sh)\""]
async fn real_model_llama_server_default_configuration() {
    let (mut env, docs) = Env::real_model("700", DOCS).await;
    let url = std::env::var("RELATA_LLAMA_SERVER_URL")
        .expect("RELATA_LLAMA_SERVER_URL (scripts/engines/llama-server.sh)");
    env.set("RELATA_MODEL_URL", &url);
    env.set("RELATA_MODEL_NAME", "smollm2-135m");
    env.set("RELATA_MODEL_DIALECT", "json_schema");
    default_configuration(env, docs, Dialect::JsonSchema).await;
}

/// Ingest, extract, classify and answer through the configured server, asserting that
/// every outcome is one the design names and every stored claim passes every check.
async fn default_configuration(mut env: Env, docs: Vec<(String, String)>, dialect: Dialect) {
    env.set("RELATA_MODEL_MAX_CONCURRENCY", "1");

    let worker = env.spawn_worker(Task::Extract);
    env.ingest_titled(&docs);

    let states = env
        .wait_for_jobs(Task::Extract, DOCS as i64, Duration::from_secs(600))
        .await;
    // Every job reached an outcome of the gate, none died of transport or provider errors.
    assert_eq!(
        states.get("dead"),
        None,
        "{states:?}\n{}",
        worker.log_text()
    );
    let m = worker.metrics().await;
    let invalid: f64 = crate::common::sample(
        &m,
        "relata_model_invalid_output_total",
        &[("task", "extract")],
    );
    let rows = crate::common::sample(&m, "relata_rows_committed_total", &[("task", "extract")]);
    println!(
        "real model through the pipeline: jobs {states:?}, rows committed {rows}, rejections {invalid}"
    );
    assert_eq!(worker.terminate(), Some(0));

    // Every stored claim is anchored: its quote is the document's text at its offsets.
    let records = env.export();
    let docs: Vec<_> = records.iter().filter(|r| r["kind"] == "document").collect();
    assert_eq!(docs.len(), DOCS);
    for c in records.iter().filter(|r| r["kind"] == "claim") {
        let doc = docs.iter().find(|d| d["id"] == c["document_id"]).unwrap();
        let text = doc["text"].as_str().unwrap().as_bytes();
        let (s, e) = (
            c["quote_start"].as_u64().unwrap() as usize,
            c["quote_end"].as_u64().unwrap() as usize,
        );
        assert_eq!(&text[s..e], c["quote"].as_str().unwrap().as_bytes(), "{c}");
        // And supported: judged again on its own by the default gate, it is kept.
        let alone = serde_json::json!({
            "entities": [{"name": c["subject"], "type": "other"}],
            "claims": [{"statement": c["statement"], "quote": c["quote"], "subject": c["subject"]}],
        });
        let j = relata_validate::judge_extract(
            &relata_validate::GateConfig::default(),
            doc["text"].as_str().unwrap(),
            alone.to_string().as_bytes(),
        );
        assert_eq!(j.accepted().claims().len(), 1, "{c}: {:?}", j.rejections());
    }
    // Every rejection counted was also stored (with its reason, from the closed set the
    // schema's CHECK enforces), and every accepted row counted was stored.
    let store = env.store().await;
    let rate = store.status().await.unwrap().invalid_last_24h;
    println!(
        "invalid rate, last 24 h: {}",
        serde_json::to_string(&rate).unwrap()
    );
    assert_eq!(
        rate.rejections as f64, invalid,
        "stored rejections vs counted"
    );
    assert_eq!(
        rate.accepted_rows as f64, rows,
        "stored accepted rows vs counted"
    );

    // Classify through the same server: two claims, one requested pair. The pipeline
    // pairs claims about one entity across documents, which a small model rarely yields
    // in three summaries, so the call is made directly, in the configured dialect.
    let mut config = ModelConfig::default()
        .with_env(|k| env.var(k))
        .expect("the test's model settings");
    config.dialect = dialect;
    let client = ModelClient::new(config, ModelMetrics::default()).unwrap();
    let claims = [
        "Marie Curie was born in Warsaw in 1867.",
        "Marie Curie was born in Paris in 1867.",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| ClassifyClaim {
        handle: Handle::nth(i as u32 + 1),
        statement: (*s).to_owned(),
    })
    .collect::<Vec<_>>();
    let pair = (Handle::nth(1), Handle::nth(2));
    let call = client.classify(&claims, &[pair]).await;
    match &call.result {
        Ok(c) => {
            let input = ClassifyInput {
                handles: [pair.0, pair.1].into(),
                pairs: [pair].into(),
            };
            let j = judge_classify(&GateConfig::default(), &input, c.content.as_bytes());
            println!(
                "classify through the server: {:?}, {:?}",
                j.verdict(),
                j.rejections()
            );
        }
        // Invalid output is an outcome; a refused schema or a broken server is not.
        Err(e) => assert_eq!(
            e.class(),
            relata_model::ErrorClass::InvalidOutput,
            "classify: {e}"
        ),
    }

    // Join: the server compiles the sent schema and the answer is an outcome of the join
    // gate; an accepted verdict's evidence is the bytes of the sentence it cites.
    let texts = [
        "The Philippine Revolution ended with the Treaty of Paris of December 1898.",
        "The Treaty of Paris of 1783 ended the American Revolutionary War.",
    ];
    let sides = [
        ("Philippine Revolution", 0),
        ("American Revolutionary War", 1),
    ]
    .map(|(title, i)| JoinSide {
        name: "Treaty of Paris".to_owned(),
        entity_type: relata_core::EntityType::Event,
        title: Some(title.to_owned()),
        sentences: vec![(SourceHandle::nth(i + 1), texts[i as usize].to_owned())],
    });
    let call = client.join(&sides).await;
    match &call.result {
        Ok(c) => {
            let sources = [1, 2].map(|n| JoinSource {
                handle: SourceHandle::nth(n),
                text: texts[n as usize - 1],
            });
            let input = JoinInput {
                sources: &sources,
                names: ["Treaty of Paris", "Treaty of Paris"],
            };
            match judge_join(&input, c.content.as_bytes()) {
                Ok(a) => {
                    let text = sources.iter().find(|s| s.handle == a.source).unwrap().text;
                    assert_eq!(&text[a.start..a.end], a.quote);
                    println!("join through the server: {} ({:?})", a.verdict, a.quote);
                }
                Err(r) => println!(
                    "join through the server: refused, {}: {} (the response: {})",
                    r.reason,
                    r.detail,
                    relata_core::text::cut(&c.content, 400)
                ),
            }
        }
        Err(e) => assert_eq!(
            e.class(),
            relata_model::ErrorClass::InvalidOutput,
            "join: {e}"
        ),
    }

    // Answer: an outcome of the answer gate, never a failure.
    let out = env.relata(&["ask", "What is the subject of these articles?", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        ["answered", "abstained", "degraded"].contains(&answer["status"].as_str().unwrap()),
        "{answer}"
    );
    println!("answer through the server: {}", answer["status"]);
}
