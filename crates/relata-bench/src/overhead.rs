//! Pipeline overhead: the real broker and store, an instant grounded fake model, one
//! extract worker at concurrency 1, 8, 32; and the floor the machine allows for the same
//! messages and rows.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt;
use relata_core::{JobId, JobMessage, PromotionState, Task, TaskVersion};
use relata_queue::{Broker, OutgoingJob};
use relata_store::Store;

use crate::responder::{Mode, Responder};
use crate::world::{World, clock_ticks, percentile, wait_sampling};

/// A synthetic document: five sentences, each naming an entity unique to the document
/// (so no candidate pairs: this measures the extract path), about 600 bytes.
pub fn synthetic_doc(i: usize) -> String {
    let mut text = String::new();
    for k in 0..5 {
        text.push_str(&format!(
            "Orla{i}x{k} Benton founded the Harbour Society of the northern coast and wrote \
             a long report on its tides, its boats and the people who kept its lights. "
        ));
    }
    text.trim_end().to_owned()
}

pub fn write_synthetic(path: &Path, n: usize) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..n {
        let line = serde_json::json!({"id": format!("doc-{i}"), "title": format!("Doc {i}"), "text": synthetic_doc(i)});
        writeln!(f, "{line}")?;
    }
    f.flush()?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct WorkerRun {
    pub jobs: i64,
    pub rows: i64,
    pub ingest_s: f64,
    /// First model call started → last job completed (the ledger's clock).
    pub span_s: f64,
    pub wall_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub cpu_ms_per_job: f64,
    pub peak_rss_mib: f64,
    pub states: Vec<(String, i64)>,
    /// Candidates (entities, claims) when the worker exited, and how many of them the
    /// policy had judged: all of them with the promoter on, none with it off.
    pub candidates: i64,
    pub judged: i64,
}

impl WorkerRun {
    pub fn chunks_per_s(&self) -> f64 {
        self.jobs as f64 / self.span_s
    }
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.span_s
    }
}

/// Read back what an extract run did from the ledger.
pub async fn ledger_figures(world: &World, task: &str) -> Result<(i64, i64, f64, f64, f64)> {
    let timing = world.store.run_timing(task).await?;
    let rows = world.store.rows_stored().await?;
    let lat = timing.latencies_ms;
    Ok((
        timing.jobs,
        rows,
        timing.span_s.unwrap_or(f64::NAN),
        percentile(&lat, 50.0),
        percentile(&lat, 99.0),
    ))
}

pub async fn run_one(
    relata: &Path,
    chunks: usize,
    concurrency: u16,
    promoter: bool,
    keep: bool,
) -> Result<WorkerRun> {
    let responder = Responder::start(Mode::Grounded {
        rows: 10,
        delay: Duration::ZERO,
    })
    .await?;
    let c = concurrency.to_string();
    let world = World::new(
        relata,
        &responder.base_url(),
        &[
            ("RELATA_MODEL_MAX_CONCURRENCY", &c),
            ("RELATA_PROMOTER", if promoter { "true" } else { "false" }),
        ],
    )
    .await?;
    let corpus = world.dir.join("corpus.jsonl");
    write_synthetic(&corpus, chunks)?;
    let ingest = world.ingest(&corpus)?;
    let child = world.spawn_worker(
        "extract",
        &["--concurrency", &c, "--exit-when-idle", "2"],
        None,
    )?;
    let (status, proc_stats, wall) = wait_sampling(child, Duration::from_secs(900)).await?;
    if !status.success() {
        bail!("worker exited with {status}");
    }
    let (jobs, rows, span, p50, p99) = ledger_figures(&world, "extract").await?;
    let states = world.jobs("extract").await?;
    let counts = world.store.candidate_counts().await?;
    let candidates = counts.iter().map(|c| c.count).sum();
    let judged = counts
        .iter()
        .filter(|c| c.state != PromotionState::Proposed)
        .map(|c| c.count)
        .sum();
    let ticks = clock_ticks() as f64;
    let run = WorkerRun {
        jobs,
        rows,
        ingest_s: ingest.as_secs_f64(),
        span_s: span,
        wall_s: wall.as_secs_f64(),
        p50_ms: p50,
        p99_ms: p99,
        cpu_ms_per_job: proc_stats.cpu_ticks as f64 / ticks * 1000.0 / jobs.max(1) as f64,
        peak_rss_mib: proc_stats.peak_rss_kib as f64 / 1024.0,
        states,
        candidates,
        judged,
    };
    world.teardown(keep).await;
    Ok(run)
}

#[derive(Debug, Clone)]
pub struct Floor {
    pub queue_s: f64,
    pub store_s: f64,
}

/// The floor: N messages published (confirmed), consumed and acked with nothing else; and
/// the same number of rows inserted into a scratch table, one multi-row insert and one
/// transaction per job, `concurrency` at a time.
pub async fn floor(
    relata: &Path,
    jobs: usize,
    rows_per_job: usize,
    concurrency: u16,
) -> Result<Floor> {
    let responder = Responder::start(Mode::Grounded {
        rows: 0,
        delay: Duration::ZERO,
    })
    .await?;
    let world = World::new(relata, &responder.base_url(), &[]).await?;

    // RabbitMQ.
    let broker = Broker::connect(world.broker_config()).await?;
    broker.declare_topology().await?;
    let version = TaskVersion::new(
        &relata_core::Contract::current(Task::Extract),
        "floor",
        "floor",
    );
    let outgoing: Vec<OutgoingJob> = (0..jobs)
        .map(|i| {
            let job_id = JobId::derive(&version, format!("floor-{i}").as_bytes());
            OutgoingJob {
                task: Task::Extract,
                payload: JobMessage::new(Task::Extract, job_id.clone()).encode(),
                job_id,
            }
        })
        .collect();
    let t = Instant::now();
    for batch in outgoing.chunks(500) {
        broker.publish_batch(batch).await?;
    }
    let mut deliveries = broker.consume(Task::Extract, concurrency).await?;
    let mut acked = 0;
    while acked < jobs {
        match tokio::time::timeout(Duration::from_secs(30), deliveries.next()).await {
            Ok(Some(d)) => {
                d.ack().await?;
                acked += 1;
            }
            _ => bail!("floor: only {acked} of {jobs} messages came back"),
        }
    }
    let queue_s = t.elapsed().as_secs_f64();
    deliveries.stop();
    drop(deliveries);
    broker.close().await;

    // PostgreSQL: same pool size as a worker's store.
    let store = Store::connect_with(&world.db_url, &world.store_options).await?;
    let store_s = store
        .floor_inserts(jobs, rows_per_job, usize::from(concurrency))
        .await?
        .as_secs_f64();
    store.close().await;
    world.teardown(false).await;
    Ok(Floor { queue_s, store_s })
}
