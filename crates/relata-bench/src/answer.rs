//! The answer path's own cost: retrieval (full-text search, promoted claims attached,
//! contradictions) and validation (the answer gate), with an instant fake model, over a
//! store of a few hundred extracted and promoted documents; and the whole
//! `POST /v1/answers` through a `relata serve` process beside them.
//!
//! Retrieval and validation are timed in this process on the same store and the same
//! model response the server sees, so the figures are the answer path's and not the
//! model's: the model's own cost is the `real` benchmark's.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use relata_core::{CLASSIFY_V1, PromotionState, RowKind, TaskVersion};
use relata_validate::{AnswerConfig, SourceText, judge_answer};
use serde_json::Value;

use crate::responder::{ANSWER, Mode, Responder};
use crate::world::{World, free_port, http_get, loadavg, percentile, wait_sampling};

/// Topic words; every document mentions ten of them, every question two, so a question
/// matches a good share of the store (the search ranks many chunks, not a handful).
const TOPICS: [&str; 24] = [
    "lighthouse",
    "harbour",
    "tides",
    "glacier",
    "orchard",
    "vineyard",
    "railway",
    "bridge",
    "canal",
    "observatory",
    "library",
    "foundry",
    "mill",
    "quarry",
    "monastery",
    "market",
    "theatre",
    "museum",
    "fortress",
    "reservoir",
    "brewery",
    "shipyard",
    "cathedral",
    "university",
];

/// A document of five sentences (about 600 bytes), each naming an entity unique to it.
fn doc(i: usize) -> String {
    let mut text = String::new();
    for k in 0..5 {
        let a = TOPICS[(i + k) % TOPICS.len()];
        let b = TOPICS[(i * 7 + k * 3 + 1) % TOPICS.len()];
        text.push_str(&format!(
            "Orla{i}x{k} Benton described the {a} beside the old {b} and counted {} visitors in {} during the long summer season. ",
            100 + (i * 13 + k) % 900,
            1900 + (i + k * 11) % 120
        ));
    }
    text.trim_end().to_owned()
}

fn question(q: usize) -> String {
    let a = TOPICS[q % TOPICS.len()];
    let b = TOPICS[(q * 5 + 3) % TOPICS.len()];
    format!("How many visitors did the {a} beside the old {b} have?")
}

/// What one run measured, in milliseconds per question.
#[derive(Debug)]
pub struct AnswerRun {
    pub docs: usize,
    pub claims: i64,
    pub questions: usize,
    pub retrieval: Vec<f64>,
    pub validation: Vec<f64>,
    pub both: Vec<f64>,
    pub http: Vec<f64>,
    pub sources: f64,
    pub outcomes: Vec<(String, usize)>,
}

/// A `relata serve` process, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_post(addr: &str, path: &str, body: &str) -> Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").context("no HTTP head")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no HTTP status")?;
    Ok((status, rest.to_owned()))
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

pub async fn run(relata: &Path, docs: usize, questions: usize, keep: bool) -> Result<AnswerRun> {
    let responder = Responder::start(Mode::Grounded {
        rows: 10,
        delay: Duration::ZERO,
    })
    .await?;
    // The instant model answers in v1's shape (`ANSWER`); which contract does not change
    // what the path costs.
    let world = World::new(
        relata,
        &responder.base_url(),
        &[("RELATA_MODEL_ANSWER_PROMPT", "answer-p1")],
    )
    .await?;
    let claims = promoted_corpus(&world, docs).await?;
    let (serve, addr) = serve(&world).await?;

    // Contradictions are read for a classify version; which one does not change the
    // query's cost.
    let classify = TaskVersion::new(&CLASSIFY_V1, "classify-p1", "fake-model").fingerprint();
    let probe = Probe {
        world: &world,
        addr: &addr,
        classify,
        gate: AnswerConfig::default(),
        k: relata_store::DEFAULT_K,
    };
    let mut run = AnswerRun {
        docs,
        claims,
        questions,
        retrieval: Vec::with_capacity(questions),
        validation: Vec::with_capacity(questions),
        both: Vec::with_capacity(questions),
        http: Vec::with_capacity(questions),
        sources: 0.0,
        outcomes: Vec::new(),
    };
    let mut total_sources = 0usize;
    for q in 0..questions {
        total_sources += probe.ask(&question(q), &mut run).await?;
    }
    run.sources = total_sources as f64 / questions.max(1) as f64;
    drop(serve);
    world.teardown(keep).await;
    Ok(run)
}

/// Ingest `docs` documents, extract them with the instant model and promote the result;
/// how many claims were promoted.
async fn promoted_corpus(world: &World, docs: usize) -> Result<i64> {
    let corpus = world.dir.join("answers.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&corpus)?);
        for i in 0..docs {
            let line = serde_json::json!({"id": format!("doc-{i}"), "title": format!("Visitors {i}"), "text": doc(i)});
            writeln!(f, "{line}")?;
        }
    }
    world.ingest(&corpus)?;
    let worker = world.spawn_worker("extract", &["--exit-when-idle", "2"], None)?;
    let (status, _, _) = wait_sampling(worker, Duration::from_secs(900)).await?;
    if !status.success() {
        bail!("extract worker exited with {status}");
    }
    let out = world.command(&["promote"]).output()?;
    if !out.status.success() {
        bail!("promote: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(world
        .store
        .candidate_counts()
        .await?
        .iter()
        .filter(|c| c.kind == RowKind::Claim && c.state == PromotionState::Promoted)
        .map(|c| c.count)
        .sum())
}

/// Start `relata serve` on a free port and wait until it is ready; the process and its
/// address.
async fn serve(world: &World) -> Result<(Serve, String)> {
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let serve = Serve(
        world
            .command(&["serve", "--addr", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let mut up = false;
    for _ in 0..200 {
        if http_get(&addr, "/readyz").await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !up {
        bail!("relata serve did not come up on {addr}");
    }
    Ok((serve, addr))
}

/// What each question is timed against: the store, the gate and the server.
struct Probe<'w> {
    world: &'w World,
    addr: &'w str,
    /// The classify version contradictions are read for.
    classify: String,
    gate: AnswerConfig,
    k: usize,
}

impl Probe<'_> {
    /// Time one question's retrieval, validation and HTTP round trip into `run`; how many
    /// sources it retrieved.
    async fn ask(&self, question: &str, run: &mut AnswerRun) -> Result<usize> {
        let store = &self.world.store;
        let t = Instant::now();
        let passages = store.retrieve_passages(question, self.k).await?;
        let attached = store.attach_claims(&passages).await?;
        let contradictions = store.contradictions(&self.classify, &passages).await?;
        let retrieval = t.elapsed();
        std::hint::black_box((&attached, &contradictions));

        let texts: Vec<SourceText<'_>> = passages
            .iter()
            .map(|p| SourceText {
                title: p.title.as_deref(),
                text: &p.text,
            })
            .collect();
        let t = Instant::now();
        let judged = judge_answer(
            &self.gate,
            &relata_core::ANSWER_V1,
            question,
            &texts,
            ANSWER.as_bytes(),
        );
        let validation = t.elapsed();
        if !judged.rejections.is_empty() {
            bail!("the instant model's answer was rejected: {judged:?}");
        }

        let body = serde_json::json!({"question": question, "k": self.k}).to_string();
        let t = Instant::now();
        let (status, text) = http_post(self.addr, "/v1/answers", &body).await?;
        let http = t.elapsed();
        if status != 200 {
            bail!("POST /v1/answers: {status} {text}");
        }
        let v: Value = serde_json::from_str(&text)?;
        let outcome = v["status"].as_str().unwrap_or("?").to_owned();
        match run.outcomes.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, n)) => *n += 1,
            None => run.outcomes.push((outcome, 1)),
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        run.retrieval.push(ms(retrieval));
        run.validation.push(ms(validation));
        run.both.push(ms(retrieval + validation));
        run.http.push(ms(http));
        Ok(passages.len())
    }
}

pub fn print(run: AnswerRun) {
    println!(
        "answer path: {} documents, {} promoted claims, {} questions (k = {}, {:.1} sources each on average), instant fake model; load {}",
        run.docs,
        run.claims,
        run.questions,
        relata_store::DEFAULT_K,
        run.sources,
        loadavg()
    );
    println!(
        "{:<58} {:>9} {:>9}",
        "stage (per question)", "p50 ms", "p99 ms"
    );
    for (name, v) in [
        (
            "retrieval (search, promoted claims, contradictions)",
            run.retrieval,
        ),
        ("validation (answer gate)", run.validation),
        ("retrieval + validation", run.both),
        (
            "POST /v1/answers via relata serve (+ model, record, HTTP)",
            run.http,
        ),
    ] {
        let v = sorted(v);
        println!(
            "{:<58} {:>9.3} {:>9.3}",
            name,
            percentile(&v, 50.0),
            percentile(&v, 99.0)
        );
    }
    let outcomes: Vec<String> = run
        .outcomes
        .iter()
        .map(|(o, n)| format!("{o} {n}"))
        .collect();
    println!("outcomes: {}", outcomes.join(", "));
}
