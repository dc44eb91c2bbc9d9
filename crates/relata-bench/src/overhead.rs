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
use crate::world::{MachineCpu, World, clock_ticks, percentile, wait_watching};

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
    /// CPU over the worker's whole life (start to exit, the promoter's last pass
    /// included), in seconds: the machine's busy time (every process: the worker, the
    /// database, the broker, this bench's fake model), the share of it this run's
    /// database backends used, and the time the machine waited on I/O or was stolen by
    /// the hypervisor (neither is in busy).
    pub machine_busy_s: f64,
    pub database_cpu_s: f64,
    /// Of `database_cpu_s`, the backends that served the worker's promoter (its
    /// `relata-promoter` connections): promotion's database work.
    pub promoter_db_cpu_s: f64,
    pub iowait_s: f64,
    pub steal_s: f64,
}

impl WorkerRun {
    pub fn chunks_per_s(&self) -> f64 {
        self.jobs as f64 / self.span_s
    }
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.span_s
    }
    /// The machine's busy CPU per chunk: what throughput comes to on a machine whose
    /// cores are the limit, and unlike chunks/s not moved by time stolen from it.
    pub fn machine_ms_per_chunk(&self) -> f64 {
        self.machine_busy_s * 1000.0 / self.jobs.max(1) as f64
    }

    /// The promoter's database backends' share of the machine's busy CPU over the run:
    /// measured within one run, so the neighbours move it far less than they move a
    /// comparison of two runs.
    pub fn promoter_db_share(&self) -> f64 {
        self.promoter_db_cpu_s / self.machine_busy_s
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
    let cpu_before = MachineCpu::read().unwrap_or_default();
    let child = world.spawn_worker(
        "extract",
        &["--concurrency", &c, "--exit-when-idle", "2"],
        None,
    )?;
    let watched = wait_watching(
        child,
        Duration::from_secs(900),
        Some((world.database_name(), &world.store)),
    )
    .await?;
    let (status, proc_stats, wall) = (watched.status, watched.stats, watched.wall);
    let cpu = MachineCpu::read().unwrap_or_default().since(cpu_before);
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
        machine_busy_s: cpu.busy as f64 / ticks,
        database_cpu_s: watched.database_ticks as f64 / ticks,
        promoter_db_cpu_s: watched.promoter_ticks as f64 / ticks,
        iowait_s: cpu.iowait as f64 / ticks,
        steal_s: cpu.steal as f64 / ticks,
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

pub fn print_header() {
    println!(
        "{:<3} {:>4} {:>6} {:>7} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9} {:>11} {:>8} {:>8} {:>9} {:>8} {:>7}",
        "pro",
        "conc",
        "chunks",
        "rows",
        "ingest_s",
        "chunks/s",
        "rows/s",
        "p50_ms",
        "p99_ms",
        "cpu_ms/j",
        "machine_ms/c",
        "db_cpu_s",
        "steal_s",
        "rss_MiB",
        "floor/s",
        "ratio"
    );
}

/// One run's line (and its details); `floor` when it was measured.
pub fn print_run(promoter: bool, c: u16, run: &WorkerRun, floor: Option<&Floor>) {
    let floor_rate = floor.map(|f| run.jobs as f64 / (f.queue_s + f.store_s));
    let show = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    println!(
        "{:<3} {:>4} {:>6} {:>7} {:>9.2} {:>10.1} {:>8.0} {:>8.2} {:>9.2} {:>9.3} {:>11.3} {:>8.2} {:>8.2} {:>9.1} {:>8} {:>7}",
        if promoter { "on" } else { "off" },
        c,
        run.jobs,
        run.rows,
        run.ingest_s,
        run.chunks_per_s(),
        run.rows_per_s(),
        run.p50_ms,
        run.p99_ms,
        run.cpu_ms_per_job,
        run.machine_ms_per_chunk(),
        run.database_cpu_s,
        run.steal_s,
        run.peak_rss_mib,
        floor_rate.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}")),
        show(floor_rate.map(|r| run.chunks_per_s() / r)),
    );
    let floor_line = floor.map_or_else(String::new, |f| {
        format!(
            "; floor: queue {:.2} s ({:.0} msg/s), store {:.2} s ({:.0} jobs/s, {:.0} rows/s)",
            f.queue_s,
            run.jobs as f64 / f.queue_s,
            f.store_s,
            run.jobs as f64 / f.store_s,
            run.jobs as f64 * 10.0 / f.store_s,
        )
    });
    println!(
        "     states {:?}; candidates judged by the policy at exit {}/{}; span {:.2} s (worker wall incl. 2 s idle exit {:.2} s); machine busy {:.1} s (the promoter's database backends {:.2} s, {:.1}%), iowait {:.1} s, steal {:.1} s over the worker's life{floor_line}; load {}",
        run.states,
        run.judged,
        run.candidates,
        run.span_s,
        run.wall_s,
        run.machine_busy_s,
        run.promoter_db_cpu_s,
        run.promoter_db_share() * 100.0,
        run.iowait_s,
        run.steal_s,
        crate::world::loadavg()
    );
}

/// Both arms of `overhead --pairs`, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct PairSummary {
    pub off_rate: f64,
    pub on_rate: f64,
    /// on / off − 1 of the medians of chunks/s.
    pub rate_change: f64,
    /// The median over pairs of on / off − 1 (each pair ran minutes apart at most).
    pub pairwise_rate_change: f64,
    pub off_cpu_ms: f64,
    pub on_cpu_ms: f64,
    /// What the medians of the machine's CPU per chunk imply for throughput where the
    /// cores are the limit: off / on − 1.
    pub cpu_bound_change: f64,
}

/// Compare the arms run by run: `off[i]` and `on[i]` ran as a pair.
pub fn summarize(off: &[WorkerRun], on: &[WorkerRun]) -> PairSummary {
    let rates = |r: &[WorkerRun]| median(r.iter().map(WorkerRun::chunks_per_s).collect());
    let cpus = |r: &[WorkerRun]| median(r.iter().map(WorkerRun::machine_ms_per_chunk).collect());
    let (off_rate, on_rate) = (rates(off), rates(on));
    let (off_cpu_ms, on_cpu_ms) = (cpus(off), cpus(on));
    PairSummary {
        off_rate,
        on_rate,
        rate_change: on_rate / off_rate - 1.0,
        pairwise_rate_change: median(
            off.iter()
                .zip(on)
                .map(|(a, b)| b.chunks_per_s() / a.chunks_per_s() - 1.0)
                .collect(),
        ),
        off_cpu_ms,
        on_cpu_ms,
        cpu_bound_change: off_cpu_ms / on_cpu_ms - 1.0,
    }
}

pub fn print_pairs(c: u16, off: &[WorkerRun], on: &[WorkerRun]) {
    let s = summarize(off, on);
    let list = |r: &[WorkerRun], f: fn(&WorkerRun) -> f64, places: usize| {
        r.iter()
            .map(|r| format!("{:.places$}", f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let db_cpu = |r: &[WorkerRun]| median(r.iter().map(|r| r.database_cpu_s).collect());
    let promoter_share = median(on.iter().map(|r| r.promoter_db_share() * 100.0).collect());
    println!(
        "C = {c}, {} pairs: chunks/s off [{}] median {:.1}; on [{}] median {:.1}; change of the medians {:+.1}%, pairwise median {:+.1}%",
        off.len().min(on.len()),
        list(off, WorkerRun::chunks_per_s, 1),
        s.off_rate,
        list(on, WorkerRun::chunks_per_s, 1),
        s.on_rate,
        s.rate_change * 100.0,
        s.pairwise_rate_change * 100.0,
    );
    println!(
        "C = {c}: machine CPU ms per chunk off [{}] median {:.2}; on [{}] median {:.2}; throughput where the cores are the limit {:+.1}%; the run's database backends' CPU, median, off {:.2} s, on {:.2} s",
        list(off, WorkerRun::machine_ms_per_chunk, 2),
        s.off_cpu_ms,
        list(on, WorkerRun::machine_ms_per_chunk, 2),
        s.on_cpu_ms,
        s.cpu_bound_change * 100.0,
        db_cpu(off),
        db_cpu(on),
    );
    println!(
        "C = {c}: the promoter's database backends' share of the machine's busy CPU, on [{}] median {:.1}%",
        list(on, |r| r.promoter_db_share() * 100.0, 1),
        promoter_share,
    );
}

/// The median (the mean of the middle two of an even count); NaN when empty.
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(jobs: i64, span_s: f64, machine_busy_s: f64) -> WorkerRun {
        WorkerRun {
            jobs,
            rows: jobs * 10,
            ingest_s: 0.0,
            span_s,
            wall_s: span_s + 2.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            cpu_ms_per_job: 0.0,
            peak_rss_mib: 0.0,
            states: Vec::new(),
            candidates: 0,
            judged: 0,
            machine_busy_s,
            database_cpu_s: 0.0,
            promoter_db_cpu_s: 0.0,
            iowait_s: 0.0,
            steal_s: 0.0,
        }
    }

    #[test]
    fn pairs_compare_medians_pairwise_ratios_and_cpu_per_chunk() {
        // chunks/s off 100, 200, 400; on 90, 190, 300. CPU ms/chunk off 5, 5, 6; on 5.5 x3.
        let off = [
            run(1000, 10.0, 5.0),
            run(1000, 5.0, 5.0),
            run(1000, 2.5, 6.0),
        ];
        let on = [
            run(1000, 1000.0 / 90.0, 5.5),
            run(1000, 1000.0 / 190.0, 5.5),
            run(1000, 1000.0 / 300.0, 5.5),
        ];
        let s = summarize(&off, &on);
        assert!((s.off_rate - 200.0).abs() < 1e-9);
        assert!((s.on_rate - 190.0).abs() < 1e-9);
        assert!((s.rate_change - (-0.05)).abs() < 1e-9);
        // Pairs: -10%, -5%, -25% → median -10%.
        assert!((s.pairwise_rate_change - (-0.10)).abs() < 1e-9);
        assert!((s.off_cpu_ms - 5.0).abs() < 1e-9);
        assert!((s.on_cpu_ms - 5.5).abs() < 1e-9);
        assert!((s.cpu_bound_change - (5.0 / 5.5 - 1.0)).abs() < 1e-9);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(median(Vec::new()).is_nan());
    }
}
