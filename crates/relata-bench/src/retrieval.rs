//! Retrieval against the labelled question set (`tests/data/questions.json`): the corpus
//! subset the set names is ingested into a fresh store, every question is searched as the
//! answer path searches it (`Store::retrieve_passages`), and the passages are compared
//! with the gold documents and sentences the set records. No model is asked: this is the
//! half of answer quality that is relata's own.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use relata_testkit::questions::{Question, QuestionSet};

use crate::world::World;

/// Where a question's gold stands among its passages.
#[derive(Debug, Default, Clone, Copy)]
struct Hit {
    /// 1-based rank of the first passage from a gold document.
    document: Option<usize>,
    /// 1-based rank of the first passage that holds the whole gold sentence.
    sentence: Option<usize>,
}

/// A question, how many passages it found, where its gold stands, what it names that no
/// passage mentions, and the kind of figure it asks for that no passage gives.
type Row<'a> = (
    &'a Question,
    usize,
    Vec<Hit>,
    Vec<String>,
    Option<relata_answer::figure_asked::FigureKind>,
);

/// Ingest the set's corpus subset, ask every question's passages at `k`, print recall.
pub async fn run(
    relata: &Path,
    summaries: &Path,
    questions: &Path,
    k: usize,
    keep: bool,
) -> Result<()> {
    let set = QuestionSet::load(questions)?;
    let docs = set.corpus(summaries)?;
    // A model address nothing listens on: retrieval never calls the model.
    let world = World::new(relata, "http://127.0.0.1:9/v1", &[]).await?;
    let took = ingest_documents(&world, &docs)?;
    println!(
        "retrieval: {} documents ingested in {:.1} s; {} questions; k = {k}",
        docs.len(),
        took.as_secs_f64(),
        set.questions.len()
    );

    // Every question's passages, one JSON line each, for reading by hand.
    let mut dump = match std::env::var_os("RELATA_BENCH_DUMP_PASSAGES") {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p)?)),
        None => None,
    };
    let mut rows: Vec<Row> = Vec::new();
    for q in &set.questions {
        let passages = world.store.retrieve_passages(&q.question, k).await?;
        let hits = q
            .gold
            .iter()
            .map(|g| {
                let from_gold = |p: &relata_store::Passage| p.title.as_deref() == Some(&g.title);
                Hit {
                    document: passages.iter().position(from_gold).map(|r| r + 1),
                    sentence: passages
                        .iter()
                        .position(|p| from_gold(p) && p.text.contains(g.sentence.trim()))
                        .map(|r| r + 1),
                }
            })
            .collect();
        if let Some(out) = &mut dump {
            let texts: Vec<_> = passages
                .iter()
                .map(|p| serde_json::json!({"title": p.title, "text": p.text}))
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::json!({"id": q.id, "kind": q.kind, "question": q.question, "passages": texts})
            )?;
        }
        let unmentioned = relata_answer::answerability::unmentioned_in(&q.question, &passages);
        let ungiven = relata_answer::figure_asked::ungiven_in(&q.question, &passages);
        rows.push((q, passages.len(), hits, unmentioned, ungiven));
    }
    print_report(&rows, k);
    world.teardown(keep).await;
    Ok(())
}

/// Ingest `(title, text)` documents into the world's store, titled and identified by
/// their titles; how long `relata ingest` took.
pub(crate) fn ingest_documents(
    world: &World,
    docs: &[(String, String)],
) -> Result<std::time::Duration> {
    let corpus = world.dir.join("questions-corpus.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&corpus)?);
    for (title, text) in docs {
        writeln!(
            f,
            "{}",
            serde_json::json!({"id": title, "title": title, "text": text})
        )?;
    }
    f.flush()?;
    drop(f);
    world.ingest(&corpus)
}

/// `n` of `of` as a count and a percentage ("3/29 (10%)").
pub(crate) fn share(n: usize, of: usize) -> String {
    if of == 0 {
        return "–".to_owned();
    }
    format!("{n}/{of} ({:.0}%)", 100.0 * n as f64 / of as f64)
}

fn print_report(rows: &[Row], k: usize) {
    let answerable: Vec<_> = rows.iter().filter(|r| r.0.kind == "answerable").collect();
    let within = |at: usize, f: &dyn Fn(&Hit) -> Option<usize>| {
        answerable
            .iter()
            .filter(|r| r.2.first().and_then(f).is_some_and(|rank| rank <= at))
            .count()
    };
    let n = answerable.len();
    println!("answerable questions: {n}");
    for at in [1, 3, k] {
        println!(
            "  recall@{at}: gold document {}, gold sentence inside a passage {}",
            share(within(at, &|h| h.document), n),
            share(within(at, &|h| h.sentence), n)
        );
    }
    let unanswerable: Vec<_> = rows.iter().filter(|r| r.0.kind == "unanswerable").collect();
    let empty = unanswerable.iter().filter(|r| r.1 == 0).count();
    println!(
        "unanswerable questions: {}; retrieved nothing (abstained without a model call): {}",
        unanswerable.len(),
        share(empty, unanswerable.len())
    );
    let disagreement: Vec<_> = rows.iter().filter(|r| r.0.kind == "disagreement").collect();
    let both = disagreement
        .iter()
        .filter(|r| r.2.iter().all(|h| h.document.is_some_and(|d| d <= k)))
        .count();
    println!(
        "disagreement questions: {}; both gold documents within {k}: {}",
        disagreement.len(),
        share(both, disagreement.len())
    );
    // relata's own answerability tests (crate relata_answer): a question naming what no
    // passage mentions, or asking for a kind of figure no passage gives about what it
    // names, is abstained without a model call.
    for (kind, rows) in [
        ("answerable", &answerable),
        ("unanswerable", &unanswerable),
        ("disagreement", &disagreement),
    ] {
        let unmentioned = rows.iter().filter(|r| !r.3.is_empty()).count();
        let figure: Vec<_> = rows
            .iter()
            .filter(|r| r.3.is_empty() && r.4.is_some())
            .collect();
        println!(
            "{kind}: abstained before the model: {} (names or figures no passage mentions {}, then a kind of figure no passage gives {})",
            share(unmentioned + figure.len(), rows.len()),
            unmentioned,
            figure.len()
        );
        for r in rows
            .iter()
            .filter(|r| !r.3.is_empty() && kind != "unanswerable")
        {
            println!(
                "  {}: {} (missing: {})",
                r.0.id,
                r.0.question,
                r.3.join(", ")
            );
        }
        for r in figure {
            let noun = r.4.map_or("", |f| f.noun());
            println!("  {}: {} (no passage gives {noun})", r.0.id, r.0.question);
        }
    }
    let missed: Vec<&str> = answerable
        .iter()
        .filter(|r| r.2.first().and_then(|h| h.document).is_none())
        .map(|r| r.0.id.as_str())
        .collect();
    println!(
        "answerable, gold document not retrieved: {}",
        missed.join(" ")
    );
    for r in answerable
        .iter()
        .filter(|r| r.2.first().and_then(|h| h.document).is_none())
        .take(12)
    {
        println!("  {}: {}", r.0.id, r.0.question);
    }
}
