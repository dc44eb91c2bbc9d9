//! The whole pipeline against the real model server (SmolLM2-135M, or Qwen2.5-0.5B with
//! `RELATA_REAL_MODEL=qwen`, under llama-cpp-python, prepared by `scripts/real-model.sh`)
//! on a few real Wikipedia summaries, with the configured extraction prompt (`extract-p3`
//! by default). Ignored by default (slow; needs the server); `scripts/test` runs it.
//!
//! It asserts that every outcome is classified, not that rows are accepted: a 135M model
//! is expected to fail the gate most of the time.

use std::time::Duration;

use relata_core::Task;

use crate::common::Env;

const DOCS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real model server: eval \"$(scripts/real-model.sh)\""]
async fn real_model_pipeline_classifies_every_outcome() {
    let (mut env, docs) = Env::real_model("700", DOCS).await;
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
}
