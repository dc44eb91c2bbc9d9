//! Against a real model server (llama-cpp-python + SmolLM2-135M, prepared by
//! `scripts/real-model.sh`). Ignored by default: it needs that server and takes minutes.
//!
//! Run: `eval "$(scripts/real-model.sh)" && cargo test -p relata-model --test model -- --ignored real_model`

use relata_model::{ErrorClass, ModelClient, ModelConfig, ModelMetrics};
use relata_validate::{ExtractShape, GateConfig, RowStatus, judge_extract_as};
use serde_json::Value;

const DOCS: usize = 5;

#[tokio::test]
#[ignore = "needs the real model server from scripts/real-model.sh"]
async fn real_model_extraction_outcomes_are_all_classified() {
    let summaries = std::env::var("RELATA_REAL_MODEL_SUMMARIES")
        .expect("RELATA_REAL_MODEL_SUMMARIES (printed by scripts/real-model.sh)");
    let mut config = ModelConfig::from_env().expect("RELATA_MODEL_* from scripts/real-model.sh");
    config.max_tokens = 700;
    config.max_concurrency = 1;
    config.request_timeout_ms = config.request_timeout_ms.max(180_000);
    let client = ModelClient::new(config, ModelMetrics::default()).unwrap();

    let text = std::fs::read_to_string(&summaries).unwrap();
    let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    // A fixed, reproducible pick: the first titles in sorted order with a short extract.
    let mut titles: Vec<&String> = all.keys().collect();
    titles.sort();
    let docs: Vec<(String, String)> = titles
        .into_iter()
        .filter_map(|t| {
            let extract = all[t.as_str()]["extract"].as_str()?;
            (200..=900)
                .contains(&extract.len())
                .then(|| (t.clone(), extract.to_owned()))
        })
        .take(DOCS)
        .collect();
    assert_eq!(docs.len(), DOCS);

    let gate = GateConfig::default();
    let (mut rows, mut accepted, mut envelope_invalid, mut response_rejected) = (0, 0, 0, 0);
    for (title, source) in &docs {
        let call = client.extract(source, Some(title)).await;
        let r = &call.record;
        eprintln!(
            "{title}: {:?} in {:.1}s, attempts {}, usage {:?}",
            r.outcome,
            r.duration.as_secs_f64(),
            r.attempts,
            r.usage
        );
        let completion = match call.result {
            Ok(c) => c,
            Err(e) => {
                // Only invalid output is acceptable here: a transport or permanent failure
                // means the setup is broken, not the model.
                assert_eq!(e.class(), ErrorClass::InvalidOutput, "{title}: {e}");
                assert!(e.invalid_reason().is_some());
                assert_eq!(r.attempts, 1, "invalid output is never retried");
                envelope_invalid += 1;
                continue;
            }
        };
        let shape = ExtractShape::of(&client.config().contract(relata_core::Task::Extract))
            .expect("an extract contract");
        let judgement = judge_extract_as(
            &gate,
            shape,
            source,
            Some(title),
            completion.content.as_bytes(),
            None,
        );
        if let Some(rej) = judgement.response_rejection() {
            eprintln!("  rejected whole: {} ({})", rej.reason, rej.detail);
            response_rejected += 1;
            continue;
        }
        for row in judgement.rows() {
            rows += 1;
            match row.status() {
                RowStatus::Accepted => accepted += 1,
                RowStatus::Rejected => {
                    assert!(
                        row.reason().is_some(),
                        "{title}: a rejected row without a reason"
                    );
                }
            }
        }
        for claim in judgement.accepted().claims() {
            let (start, end) = claim.quote_span();
            assert_eq!(&source[start..end], claim.quote(), "{title}: quote offsets");
            eprintln!(
                "  accepted claim: {:?} / quote {:?}",
                claim.statement(),
                claim.quote()
            );
        }
        for rej in judgement.rejections() {
            eprintln!("  rejected {:?}#{:?}: {}", rej.kind, rej.index, rej.reason);
        }
    }
    let rate = if rows == 0 {
        0.0
    } else {
        accepted as f64 / rows as f64
    };
    eprintln!(
        "real model: {DOCS} documents, {envelope_invalid} invalid at envelope level, \
         {response_rejected} rejected whole by the gate, {accepted}/{rows} rows accepted \
         (acceptance rate {:.0}%)",
        rate * 100.0
    );
}
