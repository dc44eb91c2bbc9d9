//! The real corpus with the instant fake, and the real model over a sample.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;

use crate::overhead::ledger_figures;
use crate::responder::{Mode, Responder};
use crate::world::{World, clock_ticks, wait_sampling};

/// One summary of the summaries file: its key, title and text.
pub struct Summary {
    pub id: String,
    pub title: String,
    pub text: String,
}

/// The summaries file (a JSON object: title → {title, extract, ...}), the first `limit`
/// documents in its order (all when `None`).
pub fn summaries(summaries: &Path, limit: Option<usize>) -> Result<Vec<Summary>> {
    let text = std::fs::read_to_string(summaries)
        .with_context(|| format!("reading {}", summaries.display()))?;
    let data: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text)
        .with_context(|| {
            format!(
                "{} is not a summaries file (a JSON object: title → {{title, extract}})",
                summaries.display()
            )
        })?;
    Ok(data
        .iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|(key, v)| Summary {
            id: key.clone(),
            title: v
                .get("title")
                .and_then(|t| t.as_str())
                .unwrap_or(key)
                .to_owned(),
            text: v
                .get("extract")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_owned(),
        })
        .collect())
}

/// The summaries file as JSONL, the first `limit` documents (all when `None`). Returns
/// how many were written.
pub fn summaries_to_jsonl(
    summaries_file: &Path,
    out: &Path,
    limit: Option<usize>,
) -> Result<usize> {
    let docs = summaries(summaries_file, limit)?;
    let mut f = std::io::BufWriter::new(std::fs::File::create(out)?);
    for doc in &docs {
        let line = serde_json::json!({"id": doc.id, "title": doc.title, "text": doc.text});
        writeln!(f, "{line}")?;
    }
    f.flush()?;
    Ok(docs.len())
}

async fn print_store(world: &World) -> Result<()> {
    let store = &world.store;
    let c = store.table_counts().await?;
    for (label, n) in [
        ("documents", c.documents),
        ("chunks", c.chunks),
        ("entities", c.entities),
        ("claims", c.claims),
        ("relations", c.relations),
        ("warnings", c.warnings),
        ("invalid_outputs", c.invalid_outputs),
        ("model_calls", c.model_calls),
    ] {
        println!("  {label:<16} {n}");
    }
    for task in ["extract", "classify"] {
        println!("  jobs {task:<11} {:?}", world.jobs(task).await?);
    }
    let calls = store.calls_by_outcome().await?;
    println!("  model_calls by outcome: {calls:?}");
    let reasons = store.rejections_by_kind().await?;
    println!("  invalid_outputs by (task, reason, row kind; none = whole response):");
    for (t, r, k, n) in reasons {
        println!("    {t} {r} {} {n}", k.unwrap_or_else(|| "none".into()));
    }
    let warns = store.warnings_by_kind().await?;
    println!("  warnings: {warns:?}");
    Ok(())
}

/// Entity resolution over the store a run left: the mentions the promoters placed beside
/// the commits, then a full resolve timed (the backfill a rule change needs) and timed
/// again (nothing to change), and the claim pairs that share a subject name against those
/// that share a canonical entity.
async fn print_resolution(world: &World) -> Result<()> {
    let store = &world.store;
    let beside = store.resolved_mentions().await?;
    let t = Instant::now();
    let full = store.resolve_entities().await?;
    let first = t.elapsed();
    let t = Instant::now();
    let again = store.resolve_entities().await?;
    let second = t.elapsed();
    println!(
        "entity resolution: {} mentions, {beside} placed beside the commits; {} canonical entities",
        full.mentions, full.canonical_entities
    );
    println!(
        "  mentions by rule: {}",
        full.by_rule
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  full resolve {:.0} ms ({:.3} ms per mention; {} rows changed), again {:.0} ms ({} changed)",
        first.as_secs_f64() * 1000.0,
        first.as_secs_f64() * 1000.0 / full.mentions.max(1) as f64,
        full.changed,
        second.as_secs_f64() * 1000.0,
        again.changed
    );
    let p = store.claim_pairs_by().await?;
    println!(
        "  claim pairs across documents: same subject name {}, same canonical entity {}, both {}",
        p.subject_name, p.canonical_entity, p.both
    );
    Ok(())
}

/// The extract figures of one real-model run, for the p1-vs-p2 table in BENCHMARKS.md:
/// responses, truncated, claims proposed / accepted / rejected by reason, accepted (hence
/// supported: the support check is on) claims per document, completion tokens per
/// accepted claim, seconds per document.
async fn print_acceptance(world: &World, docs: usize, seconds: f64) -> Result<()> {
    let a = world.store.extract_acceptance().await?;
    let Some((model, prompt)) = a.model_and_prompt.clone() else {
        bail!("no extract call was recorded");
    };
    let (responses, truncated, whole, accepted) = (
        a.responses,
        a.truncated,
        a.rejected_whole,
        a.accepted_claims,
    );
    let rejected = a.rejected_claims;
    let rejected_n: i64 = rejected.iter().map(|(_, n)| n).sum();
    let tokens = a.completion_tokens;
    println!("acceptance: model {model}, prompt {prompt}, {docs} documents");
    println!(
        "  responses {responses}; truncated {truncated}; rejected whole {whole} (truncated included)"
    );
    println!(
        "  claims proposed {} (in responses judged row by row); accepted {accepted}; rejected {rejected_n}: {}",
        accepted + rejected_n,
        rejected
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let per = |n: i64| -> String {
        if accepted > 0 {
            format!("{:.0}", n as f64 / accepted as f64)
        } else {
            format!("- ({n} tokens, no claim)")
        }
    };
    // Coverage: the share of the chunks' sentences (as extract-p4 and after number them) that
    // yielded an accepted claim; a claim's own sentence is the last its quote covers.
    let chunks = world.store.chunk_claims().await?;
    let (mut sentences, mut covered) = (0usize, 0usize);
    for c in &chunks {
        let spans = relata_core::sentences::handled(&c.text);
        sentences += spans.len();
        covered += spans
            .iter()
            .filter(|&&(s, e)| c.quotes.iter().any(|&(_, qe)| qe > s && qe <= e))
            .count();
    }
    // Source tokens estimated at four bytes a token (English prose, these tokenizers).
    let source_tokens = a.source_bytes as f64 / 4.0;
    println!(
        "  per document: entities {:.2}, accepted claims {:.2}; coverage {covered} of {sentences} sentences ({:.0}%)",
        a.entities as f64 / docs.max(1) as f64,
        accepted as f64 / docs.max(1) as f64,
        100.0 * covered as f64 / sentences.max(1) as f64
    );
    println!(
        "  per accepted claim: output tokens {}, total tokens {}; model tokens per 1,000 source tokens {:.0}; seconds per document {:.1}",
        per(tokens),
        per(tokens + a.prompt_tokens),
        1000.0 * (tokens + a.prompt_tokens) as f64 / source_tokens.max(1.0),
        seconds / docs.max(1) as f64
    );
    for (name, ty, statements) in world.store.entities_with_claims(8).await? {
        println!("  entity {name} ({ty}):");
        for st in statements.iter().take(4) {
            println!("      {st}");
        }
    }
    for (statement, quote) in world.store.claim_sample(40).await? {
        println!("  claim: {statement:?} <- {quote:?}");
    }
    Ok(())
}

/// All summaries, instant grounded fake: ingest (with publish), extract, classify.
pub async fn corpus(
    relata: &Path,
    summaries: &Path,
    limit: Option<usize>,
    concurrency: u16,
    keep: bool,
) -> Result<()> {
    let responder = Responder::start(Mode::Grounded {
        rows: 10,
        delay: Duration::ZERO,
    })
    .await?;
    let c = concurrency.to_string();
    let world = World::new(
        relata,
        &responder.base_url(),
        &[("RELATA_MODEL_MAX_CONCURRENCY", &c)],
    )
    .await?;
    let jsonl = world.dir.join("summaries.jsonl");
    let t = Instant::now();
    let docs = summaries_to_jsonl(summaries, &jsonl, limit)?;
    println!(
        "convert to JSONL: {docs} documents in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let ingest = world.ingest(&jsonl)?;
    println!("ingest + publish: {:.1} s", ingest.as_secs_f64());
    let ticks = clock_ticks() as f64;
    for task in ["extract", "classify"] {
        let child =
            world.spawn_worker(task, &["--concurrency", &c, "--exit-when-idle", "3"], None)?;
        let (status, stats, wall) = wait_sampling(child, Duration::from_secs(1800)).await?;
        let (jobs, _, span, p50, p99) = ledger_figures(&world, task).await?;
        println!(
            "{task}: worker exit {status}; {jobs} jobs in {span:.1} s ({:.0} jobs/s; wall incl. 3 s idle exit {:.1} s); \
             p50 {p50:.1} ms p99 {p99:.1} ms; cpu {:.2} ms/job; peak RSS {:.1} MiB",
            jobs as f64 / span,
            wall.as_secs_f64(),
            stats.cpu_ticks as f64 / ticks * 1000.0 / jobs.max(1) as f64,
            stats.peak_rss_kib as f64 / 1024.0
        );
    }
    println!(
        "model requests answered by the fake: {}",
        responder.chat_requests()
    );
    print_store(&world).await?;
    print_resolution(&world).await?;
    world.teardown(keep).await;
    Ok(())
}

/// The real model over a sample through relata (acceptance by reason), then the same
/// extract request bodies sent directly at the same concurrency (saturation).
pub async fn real(
    relata: &Path,
    summaries: &Path,
    docs: usize,
    concurrency: u16,
    no_direct: bool,
    keep: bool,
) -> Result<()> {
    let upstream = std::env::var("RELATA_MODEL_URL")
        .context("RELATA_MODEL_URL (eval scripts/real-model.sh)")?;
    let proxy = Responder::start(Mode::Proxy {
        upstream: upstream.clone(),
    })
    .await?;
    let c = concurrency.to_string();
    let env = model_env(&c);
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let world = World::new(relata, &proxy.base_url(), &env_ref).await?;
    let jsonl = world.dir.join("sample.jsonl");
    let n = summaries_to_jsonl(summaries, &jsonl, Some(docs))?;
    world.ingest(&jsonl)?;
    let (jobs, _) = world.progress("extract").await?;
    println!("sample: {n} documents, {jobs} extract jobs; concurrency {concurrency}");

    let (relata_s, bodies) = extract_through_proxy(&world, &proxy, jobs, &c).await?;
    classify_all(&world, &c).await?;
    println!("store after the real-model run:");
    print_store(&world).await?;
    print_acceptance(&world, n, relata_s).await?;
    print_resolution(&world).await?;
    if no_direct {
        world.teardown(keep).await;
        return Ok(());
    }

    let (sent, direct_s) = send_direct(&upstream, &bodies, concurrency).await?;
    println!(
        "saturation: relata {:.4} jobs/s vs direct {:.4} req/s = {:.3} (target >= 0.95)",
        jobs as f64 / relata_s,
        sent as f64 / direct_s,
        (jobs as f64 / relata_s) / (sent as f64 / direct_s)
    );
    world.teardown(keep).await;
    Ok(())
}

/// The environment of relata's processes: the concurrency under test, and the model
/// settings passed through from this process's environment.
pub(crate) fn model_env(concurrency: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![(
        "RELATA_MODEL_MAX_CONCURRENCY".into(),
        concurrency.to_owned(),
    )];
    for k in [
        "RELATA_MODEL_NAME",
        "RELATA_MODEL_DIALECT",
        "RELATA_MODEL_MAX_TOKENS",
        "RELATA_MODEL_REQUEST_TIMEOUT_MS",
        "RELATA_MODEL_EXTRACT_PROMPT",
        "RELATA_MODEL_ANSWER_PROMPT",
    ] {
        if let Ok(v) = std::env::var(k) {
            env.push((k.into(), v));
        }
    }
    env
}

/// Run the extract worker over all `jobs` through the recording proxy: the seconds it
/// took and the request bodies the proxy saw.
async fn extract_through_proxy(
    world: &World,
    proxy: &Responder,
    jobs: i64,
    concurrency: &str,
) -> Result<(f64, Vec<crate::responder::Recorded>)> {
    let t = Instant::now();
    let child = world.spawn_worker(
        "extract",
        &["--concurrency", concurrency, "--exit-when-idle", "5"],
        None,
    )?;
    let done = world
        .wait_done("extract", jobs, Duration::from_secs(3600))
        .await?;
    let relata_s = t.elapsed().as_secs_f64();
    let (status, stats, _) = wait_sampling(child, Duration::from_secs(120)).await?;
    let bodies: Vec<crate::responder::Recorded> =
        proxy.recorded.lock().map(|l| l.clone()).unwrap_or_default();
    println!(
        "relata extract: all terminal = {done}; {jobs} jobs in {relata_s:.1} s ({:.4} jobs/s); {} model requests; worker exit {status}, peak RSS {:.1} MiB",
        jobs as f64 / relata_s,
        bodies.len(),
        stats.peak_rss_kib as f64 / 1024.0
    );
    if let (Some(first), Some(last)) = (
        bodies.iter().map(|r| r.received).min(),
        bodies.iter().map(|r| r.answered).max(),
    ) {
        println!(
            "  model busy span seen by the proxy: {:.1} s",
            (last - first).as_secs_f64()
        );
    }
    Ok((relata_s, bodies))
}

/// Run the classify worker over whatever classify jobs the extraction queued.
async fn classify_all(world: &World, concurrency: &str) -> Result<()> {
    let (cjobs, _) = world.progress("classify").await?;
    if cjobs > 0 {
        let child = world.spawn_worker(
            "classify",
            &["--concurrency", concurrency, "--exit-when-idle", "5"],
            None,
        )?;
        world
            .wait_done("classify", cjobs, Duration::from_secs(1800))
            .await?;
        let _ = wait_sampling(child, Duration::from_secs(120)).await?;
    }
    Ok(())
}

/// The direct load generator: the same extract bodies, same concurrency, no relata. How
/// many requests it sent and in how many seconds.
async fn send_direct(
    upstream: &str,
    bodies: &[crate::responder::Recorded],
    concurrency: u16,
) -> Result<(usize, f64)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()?;
    let url = format!("{}/chat/completions", upstream.trim_end_matches('/'));
    let t = Instant::now();
    let codes: Vec<u16> = futures::stream::iter(bodies.iter().map(|r| r.body.clone()))
        .map(|body| {
            let client = client.clone();
            let url = url.clone();
            async move {
                match client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                {
                    Ok(r) => {
                        let s = r.status().as_u16();
                        let _ = r.bytes().await;
                        s
                    }
                    Err(_) => 0,
                }
            }
        })
        .buffer_unordered(usize::from(concurrency))
        .collect()
        .await;
    let direct_s = t.elapsed().as_secs_f64();
    let ok = codes.iter().filter(|c| **c == 200).count();
    println!(
        "direct: {} requests ({ok} HTTP 200) in {direct_s:.1} s ({:.4} req/s)",
        codes.len(),
        codes.len() as f64 / direct_s
    );
    Ok((codes.len(), direct_s))
}
