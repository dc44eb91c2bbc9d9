//! What a model that only copies could store: for each sentence of each chunk, every
//! subject the `extract-p10` schema lets a model choose, with the statement `null` (the
//! sentence as shown), judged by the shipped gate. A sentence counts when any such choice
//! is accepted. No model and no store: the figure bounds what a copying model (one that
//! picks a subject and points at its sentence, as Qwen2.5-0.5B and SmolLM2-135M do) can
//! reach under the gate; anything above it needs statements the model writes itself.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use relata_core::{Reason, RowKind};
use relata_model::Dialect;
use relata_validate::{ExtractShape, GateConfig, judge_extract_as};

/// One sentence's outcome under the best choice the schema allows.
enum Outcome {
    /// The schema holds the sentence to `null`: it contains no name to be about.
    NoName,
    /// Some subject, with the sentence as shown, is accepted: the subject and the
    /// statement stored.
    Accepted(String, String),
    /// Every subject is rejected; the reason for the first one offered, its detail.
    Rejected(Reason, String),
}

/// Read the first `docs` summaries (title order, as `relata-bench real` takes them),
/// chunk them as `relata ingest` does, and print the ceiling.
pub fn run(summaries: &Path, docs: usize, show: bool) -> Result<()> {
    let docs = crate::real::summaries(summaries, Some(docs))?;
    let gate = GateConfig::default();
    let (mut sentences, mut accepted, mut no_name) = (0usize, 0usize, 0usize);
    let mut rejected: BTreeMap<&'static str, usize> = BTreeMap::new();
    for doc in &docs {
        let (title, body) = (doc.title.as_str(), doc.text.as_str());
        for span in
            relata_producer::chunk::chunk(body, relata_producer::chunk::DEFAULT_MAX_CHUNK_BYTES)
        {
            let Some(source) = span.text(body) else {
                continue;
            };
            for (k, ((s, e), outcome)) in chunk_outcomes(&gate, source, title).iter().enumerate() {
                sentences += 1;
                match outcome {
                    Outcome::NoName => no_name += 1,
                    Outcome::Accepted(..) => accepted += 1,
                    Outcome::Rejected(r, _) => *rejected.entry(r.as_str()).or_default() += 1,
                }
                if show {
                    let label = match outcome {
                        Outcome::NoName => "no name".to_owned(),
                        Outcome::Accepted(subject, statement) => {
                            format!("accepted ({subject}): {statement} <=")
                        }
                        Outcome::Rejected(r, detail) => format!("{r} ({detail})"),
                    };
                    println!("{title} S{}: {label}: {}", k + 1, &source[*s..*e]);
                }
            }
        }
    }
    let n = docs.len();
    let pct = |x: usize| 100.0 * x as f64 / sentences.max(1) as f64;
    println!(
        "ceiling: {n} documents, {sentences} sentences; a copying model's best under the shipped gate (extract-p10's schema, statements null):"
    );
    println!(
        "  accepted {accepted} ({:.0}% coverage, {:.2} claims per document); no name offered {no_name} ({:.0}%)",
        pct(accepted),
        accepted as f64 / n.max(1) as f64,
        pct(no_name)
    );
    let reasons: Vec<String> = rejected.iter().map(|(r, c)| format!("{r} {c}")).collect();
    let by_reason = if reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", reasons.join(", "))
    };
    println!(
        "  rejected whatever the subject: {}{by_reason}",
        rejected.values().sum::<usize>()
    );
    Ok(())
}

/// Each sentence of one chunk, its span and the best outcome among the subjects its
/// schema allows.
fn chunk_outcomes(gate: &GateConfig, source: &str, title: &str) -> Vec<((usize, usize), Outcome)> {
    let schema = relata_model::extract_schema_sent_p10(source, Some(title), Dialect::JsonSchema);
    let slots = &schema["properties"]["claims"]["properties"];
    let spans = relata_model::p4_sentences(source);
    let handles: Vec<String> = (1..=spans.len()).map(|k| format!("S{k}")).collect();
    let outcomes = handles.iter().map(|handle| {
        let subjects: Vec<&str> = slots[handle]["anyOf"][0]["properties"]["subject"]["enum"]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str()).collect())
            .unwrap_or_default();
        let mut first = None;
        for subject in &subjects {
            let mut claims = serde_json::Map::new();
            for h in &handles {
                claims.insert(h.clone(), serde_json::Value::Null);
            }
            claims.insert(
                handle.clone(),
                serde_json::json!({"subject": subject, "statement": null}),
            );
            let raw = serde_json::json!({
                "entities": [{"name": subject, "type": "other"}],
                "claims": claims,
            })
            .to_string();
            let judged = judge_extract_as(
                gate,
                ExtractShape::Shown,
                source,
                Some(title),
                raw.as_bytes(),
                None,
            );
            if let [claim] = judged.accepted().claims() {
                return Outcome::Accepted(claim.subject().to_owned(), claim.statement().to_owned());
            }
            first = first.or_else(|| {
                judged
                    .rows()
                    .iter()
                    .filter(|r| r.kind == RowKind::Claim)
                    .find_map(|r| r.rejection())
                    .or_else(|| judged.response_rejection().cloned())
                    .map(|r| (r.reason, format!("{subject}: {}", r.detail)))
            });
        }
        match first {
            None if subjects.is_empty() => Outcome::NoName,
            None => Outcome::Rejected(Reason::Unsupported, "no claim row".to_owned()),
            Some((r, detail)) => Outcome::Rejected(r, detail),
        }
    });
    spans.into_iter().zip(outcomes).collect()
}
