//! Answer quality on the labelled question set (`tests/data/questions.json`) with the real
//! model the environment names (`scripts/real-model.sh`): the set's corpus subset is
//! ingested into a fresh store, a sample of its questions is asked with `relata ask
//! --json` exactly as a user asks, and the outcomes are counted against the set's labels.
//!
//! "Matches the gold answer" is a string test (every content word of the set's answer is
//! in the model's answer, or one of its figures is): a proxy for reading, which the
//! dump (`RELATA_BENCH_DUMP_ANSWERS`) is for. "Every citation supports its sentence" is
//! the answer gate's own `citation_supported` check having raised no `citation_unsupported` caveat.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use relata_testkit::questions::{Question, QuestionSet};

use crate::retrieval::share;
use crate::world::World;

/// One question asked: its label, what came back, and how long it took.
struct Asked<'a> {
    question: &'a Question,
    status: String,
    answer: Option<String>,
    citations: usize,
    caveats: Vec<String>,
    seconds: f64,
}

impl Asked<'_> {
    fn has_caveat(&self, reason: &str) -> bool {
        self.caveats.iter().any(|c| c == reason)
    }

    /// Whether the answer holds the set's answer (see the module docs).
    fn matches_gold(&self) -> bool {
        let (Some(answer), Some(gold)) = (&self.answer, &self.question.answer) else {
            return false;
        };
        let words = |t: &str| -> Vec<String> {
            t.split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() >= 3 || w.chars().any(|c| c.is_ascii_digit()))
                .map(str::to_lowercase)
                .filter(|w| !matches!(w.as_str(), "the" | "and" | "for" | "was" | "are"))
                .collect()
        };
        let said = words(answer);
        let gold = words(gold);
        let figures: Vec<&String> = gold
            .iter()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .collect();
        !gold.is_empty()
            && (gold.iter().all(|w| said.contains(w))
                || (!figures.is_empty() && figures.iter().all(|f| said.contains(f))))
    }
}

/// Ingest the set's corpus, ask every `every`-th answerable question and every other
/// question, print the outcomes.
pub async fn run(
    relata: &Path,
    summaries: &Path,
    questions: &Path,
    k: usize,
    every: usize,
    keep: bool,
) -> Result<()> {
    let Ok(model_url) = std::env::var("RELATA_MODEL_URL") else {
        bail!(
            "RELATA_MODEL_URL is not set: start a model first (eval \"$(scripts/real-model.sh)\")"
        );
    };
    let set = QuestionSet::load(questions)?;
    let docs = set.corpus(summaries)?;
    let env = crate::real::model_env("1");
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let world = World::new(relata, &model_url, &env_ref).await?;
    let took = crate::retrieval::ingest_documents(&world, &docs)?;
    let mut answerable = 0usize;
    let sample: Vec<&Question> = set
        .questions
        .iter()
        .filter(|q| {
            if q.kind != "answerable" {
                return true;
            }
            answerable += 1;
            (answerable - 1).is_multiple_of(every)
        })
        .collect();
    println!(
        "quality: {} documents ingested in {:.1} s; {} of {} questions asked (every {every}th answerable, all others); k = {k}",
        docs.len(),
        took.as_secs_f64(),
        sample.len(),
        set.questions.len()
    );
    let mut dump = match std::env::var_os("RELATA_BENCH_DUMP_ANSWERS") {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p)?)),
        None => None,
    };
    let bar = indicatif::ProgressBar::new(sample.len() as u64);
    let mut asked = Vec::with_capacity(sample.len());
    for q in sample {
        let a = ask(&world, q, k)?;
        if let Some(out) = &mut dump {
            writeln!(
                out,
                "{}",
                serde_json::json!({"id": q.id, "kind": q.kind, "question": q.question,
                    "gold": q.answer, "status": a.status, "answer": a.answer,
                    "caveats": a.caveats, "matches_gold": a.matches_gold()})
            )?;
        }
        asked.push(a);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let usage = world.store.answer_usage().await?;
    print_report(&asked, usage);
    world.teardown(keep).await;
    Ok(())
}

/// `relata ask --json QUESTION`, read back.
fn ask<'a>(world: &World, q: &'a Question, k: usize) -> Result<Asked<'a>> {
    let t = Instant::now();
    let k = k.to_string();
    let out = world
        .command(&["ask", "--json", "--k", &k, &q.question])
        .output()?;
    let seconds = t.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "relata ask {:?}: {}",
            q.question,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("relata ask --json {:?} printed no JSON", q.question))?;
    Ok(Asked {
        question: q,
        status: v["status"].as_str().unwrap_or("?").to_owned(),
        answer: v["answer"].as_str().map(str::to_owned),
        citations: v["citations"].as_array().map_or(0, Vec::len),
        caveats: v["caveats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["reason"].as_str().map(str::to_owned))
            .collect(),
        seconds,
    })
}

fn print_report(asked: &[Asked], usage: relata_store::measure::AnswerUsage) {
    for kind in ["answerable", "unanswerable", "disagreement"] {
        let rows: Vec<&Asked> = asked.iter().filter(|a| a.question.kind == kind).collect();
        if rows.is_empty() {
            continue;
        }
        let n = rows.len();
        let status = |s: &str| rows.iter().filter(|a| a.status == s).count();
        let before_model = rows
            .iter()
            .filter(|a| {
                [
                    relata_answer::NO_SOURCES,
                    relata_answer::NOT_IN_SOURCES,
                    relata_answer::FIGURE_NOT_GIVEN,
                ]
                .iter()
                .any(|r| a.has_caveat(r))
            })
            .count();
        let mut degraded: std::collections::BTreeMap<&str, usize> = Default::default();
        for a in rows.iter().filter(|a| a.status == "degraded") {
            if let Some(r) = a.caveats.first() {
                *degraded.entry(r.as_str()).or_default() += 1;
            }
        }
        let degraded: Vec<String> = degraded.iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!(
            "{kind} ({n}): answered {}, abstained {} ({} before the model), degraded {} ({})",
            share(status("answered"), n),
            share(status("abstained"), n),
            before_model,
            share(status("degraded"), n),
            degraded.join(", ")
        );
        if kind == "answerable" {
            let answered: Vec<&&Asked> = rows.iter().filter(|a| a.status == "answered").collect();
            let right = answered.iter().filter(|a| a.matches_gold()).count();
            let supported = answered
                .iter()
                .filter(|a| a.matches_gold() && a.citations > 0)
                .filter(|a| !a.has_caveat("citation_unsupported"))
                .count();
            println!(
                "  answered and matching the gold answer: {}; of those, no citation flagged unsupported: {}",
                share(right, n),
                share(supported, n)
            );
        }
        let figures = rows
            .iter()
            .filter(|a| a.has_caveat("figure_not_in_sources"))
            .count();
        let unsupported = rows
            .iter()
            .filter(|a| a.has_caveat("citation_unsupported"))
            .count();
        println!(
            "  answers with a figure in no source: {figures}; with a citation flagged unsupported: {unsupported}"
        );
    }
    let seconds: Vec<f64> = asked.iter().map(|a| a.seconds).collect();
    let mean = seconds.iter().sum::<f64>() / seconds.len().max(1) as f64;
    let calls = usage.calls.max(1);
    println!(
        "model calls: {}; per call: {:.0} prompt tokens, {:.0} completion tokens, {:.1} s; per question (the CLI, wall): {mean:.1} s",
        usage.calls,
        usage.prompt_tokens as f64 / calls as f64,
        usage.completion_tokens as f64 / calls as f64,
        usage.duration_ms as f64 / 1000.0 / calls as f64,
    );
}
