//! The labelled question set (`tests/data/questions.json`, written from a reading of the
//! summaries it names) against relata's own half of answering: retrieval and the
//! answerability test that runs before the model. No model is asked. Runs with the
//! real-model pass, which downloads the corpus.
//!
//! The floors below are what was measured when the test was written, less a margin, so
//! that a change to retrieval or to the answerability test that loses ground fails here;
//! BENCHMARKS.md §3e has the figures and the command (`relata-bench retrieval`).

use std::collections::HashMap;
use std::path::Path;

use relata_answer::answerability::unmentioned_in;
use relata_testkit::questions::QuestionSet;

use crate::common::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the corpus: eval \"$(scripts/real-model.sh)\""]
async fn real_model_corpus_questions_find_their_gold_and_unmentioned_names_abstain() {
    let set = QuestionSet::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/questions.json"
    )))
    .unwrap();
    let summaries = std::env::var("RELATA_REAL_MODEL_SUMMARIES")
        .expect("RELATA_REAL_MODEL_SUMMARIES (scripts/real-model.sh)");
    let docs = set.corpus(Path::new(&summaries)).unwrap();
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
        let missing = unmentioned_in(&q.question, &passages);
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
