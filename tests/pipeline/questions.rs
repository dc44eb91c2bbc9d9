//! The labelled question set (`tests/data/questions.json`, written from a reading of the
//! summaries it names) against relata's own half of answering: retrieval and the
//! answerability test that runs before the model. No model is asked. Runs with the
//! real-model pass, which downloads the corpus.
//!
//! The floors below are what was measured when the test was written, less a margin, so
//! that a change to retrieval or to the answerability test that loses ground fails here;
//! BENCHMARKS.md §3e has the figures and the command (`relata-bench retrieval`).

use std::collections::HashMap;

use relata_answer::answerability::unmentioned;
use serde::Deserialize;

use crate::common::Env;

#[derive(Debug, Deserialize)]
struct QuestionSet {
    corpus: CorpusRule,
    questions: Vec<Question>,
}

#[derive(Debug, Deserialize)]
struct CorpusRule {
    every: usize,
    offset: usize,
}

#[derive(Debug, Deserialize)]
struct Question {
    id: String,
    kind: String,
    question: String,
    gold: Vec<Gold>,
}

#[derive(Debug, Deserialize)]
struct Gold {
    title: String,
    sentence: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the corpus: eval \"$(scripts/real-model.sh)\""]
async fn real_model_corpus_questions_find_their_gold_and_unmentioned_names_abstain() {
    let set: QuestionSet = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/questions.json"))
            .unwrap(),
    )
    .unwrap();
    let summaries = std::env::var("RELATA_REAL_MODEL_SUMMARIES")
        .expect("RELATA_REAL_MODEL_SUMMARIES (scripts/real-model.sh)");
    let data: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(summaries).unwrap()).unwrap();
    let docs: Vec<(String, String)> = data
        .values()
        .enumerate()
        .filter(|(i, _)| i % set.corpus.every == set.corpus.offset)
        .map(|(_, v)| {
            (
                v["title"].as_str().unwrap().to_owned(),
                v["extract"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(docs.len(), 402, "the set's corpus rule picks 402 summaries");
    let titles: HashMap<&str, &str> = docs.iter().map(|(t, x)| (t.as_str(), x.as_str())).collect();
    // The set itself: every gold sentence is its document's own text.
    for q in &set.questions {
        for g in &q.gold {
            let text = titles
                .get(g.title.as_str())
                .unwrap_or_else(|| panic!("{}: no {}", q.id, g.title));
            assert!(
                text.contains(g.sentence.trim()),
                "{}: gold sentence not in {}",
                q.id,
                g.title
            );
        }
    }

    let env = Env::new(relata_testkit::FakeOptions::default(), vec![]).await;
    env.ingest_titled(&docs);
    let store = env.store().await;
    let (mut answerable, mut found_at_8, mut kept) = (0, 0, 0);
    let (mut unanswerable, mut abstained) = (0, 0);
    for q in &set.questions {
        let passages = store.retrieve_passages(&q.question, 8).await.unwrap();
        let texts: Vec<String> = passages
            .iter()
            .map(|p| format!("{}\n{}", p.title.as_deref().unwrap_or(""), p.text))
            .collect();
        let missing = unmentioned(&q.question, &texts);
        match q.kind.as_str() {
            "answerable" => {
                answerable += 1;
                let gold = &q.gold[0];
                if passages.iter().any(|p| {
                    p.title.as_deref() == Some(gold.title.as_str())
                        && p.text.contains(gold.sentence.trim())
                }) {
                    found_at_8 += 1;
                }
                if missing.is_empty() {
                    kept += 1;
                }
            }
            "unanswerable" => {
                unanswerable += 1;
                if !missing.is_empty() {
                    abstained += 1;
                }
            }
            _ => {}
        }
    }
    let share = |n: usize, of: usize| n as f64 / of as f64;
    eprintln!(
        "answerable {answerable}: gold sentence within 8 passages {found_at_8}, sent to the model {kept}; \
         unanswerable {unanswerable}: abstained before the model {abstained}"
    );
    assert!(answerable >= 80 && unanswerable >= 25, "the set's size");
    // Measured 198/199, 198/199 and 14/38.
    assert!(
        share(found_at_8, answerable) >= 0.95,
        "recall@8 {found_at_8}/{answerable}"
    );
    assert!(
        share(kept, answerable) >= 0.97,
        "answerable abstained: {kept}/{answerable}"
    );
    assert!(
        share(abstained, unanswerable) >= 0.30,
        "unanswerable abstained {abstained}/{unanswerable}"
    );
}
