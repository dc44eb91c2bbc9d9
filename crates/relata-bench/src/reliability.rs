//! The reliability suite: scenarios that break things mid-run, and what the ledger says
//! afterwards. One row per scenario; every row must show 0 duplicates and 0 lost.

use std::collections::BTreeMap;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rand::Rng;
use relata_core::{JobId, JobMessage, Task, TaskVersion};
use relata_queue::{Broker, QueueRole};

use crate::overhead::write_synthetic;
use crate::responder::{Mode, Responder};
use crate::world::{World, free_port, http_get};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    Small,
    Large,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disrupt {
    None,
    Kill9,
    RestartRabbit,
    RestartPostgres,
    Poison,
}

struct Scenario {
    name: &'static str,
    mode: Mode,
    disrupt: Disrupt,
}

#[derive(Debug, Default)]
struct Row {
    name: &'static str,
    jobs_in: i64,
    committed: i64,
    dead: Vec<(String, i64)>,
    duplicates: i64,
    lost: i64,
    requests_per_job: f64,
    calls_per_job: f64,
    dead_queue: u32,
    dead_metric: Vec<String>,
    events: String,
    secs: f64,
    ok: bool,
    why: Vec<String>,
}

const CLAIMS_PER_DOC: i64 = 5;

pub async fn run(relata: &std::path::Path, size: Size, only: Option<&str>) -> Result<()> {
    let (docs, kills) = match size {
        Size::Small => (150, 5),
        Size::Large => (1500, 25),
    };
    let within = match size {
        Size::Small => Duration::from_secs(120),
        Size::Large => Duration::from_secs(900),
    };
    print_header();
    let mut failed = 0;
    let mut passed = 0;
    for s in scenarios() {
        if only.is_some_and(|o| o != s.name) {
            continue;
        }
        let row = match scenario(relata, &s, docs, kills, within).await {
            Ok(r) => r,
            Err(e) => Row {
                name: s.name,
                why: vec![format!("error: {e:#}")],
                ..Row::default()
            },
        };
        if row.ok {
            passed += 1;
        } else {
            failed += 1;
        }
        print_row(&row);
    }
    println!("done; load average {}", crate::world::loadavg());
    // The plain closing line CI runners recognise.
    println!("reliability: {passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} scenario(s) failed");
    }
    Ok(())
}

/// Every scenario, in the order they run.
fn scenarios() -> [Scenario; 6] {
    let slow = |ms| Mode::Grounded {
        rows: 10,
        delay: Duration::from_millis(ms),
    };
    [
        Scenario {
            name: "sigkill_workers",
            mode: slow(250),
            disrupt: Disrupt::Kill9,
        },
        Scenario {
            name: "rabbitmq_restart",
            mode: slow(120),
            disrupt: Disrupt::RestartRabbit,
        },
        Scenario {
            name: "postgresql_restart",
            mode: slow(120),
            disrupt: Disrupt::RestartPostgres,
        },
        Scenario {
            name: "transport_faults_30pct",
            mode: Mode::Faults {
                rate: 0.3,
                hang: Duration::from_millis(1500),
            },
            disrupt: Disrupt::None,
        },
        Scenario {
            name: "poison_messages",
            mode: slow(0),
            disrupt: Disrupt::Poison,
        },
        Scenario {
            name: "invalid_output_flood",
            mode: Mode::Invalid,
            disrupt: Disrupt::None,
        },
    ]
}

fn print_header() {
    println!(
        "{:<24} {:>7} {:>7} {:>9} {:>5} {:>5} {:>8} {:>8} {:>7}  {:<6} dead letters / events",
        "scenario",
        "jobs_in",
        "commit",
        "dead_jobs",
        "dups",
        "lost",
        "req/job",
        "calls/j",
        "secs",
        "result"
    );
}

fn print_row(row: &Row) {
    let dead = row
        .dead
        .iter()
        .map(|(r, n)| format!("{r}={n}"))
        .collect::<Vec<_>>()
        .join(",");
    println!(
        "{:<24} {:>7} {:>7} {:>9} {:>5} {:>5} {:>8.2} {:>8.2} {:>7.1}  {:<6} dead queue {} (ledger: [{}]; worker metric: [{}]); {}{}",
        row.name,
        row.jobs_in,
        row.committed,
        row.dead.iter().map(|(_, n)| n).sum::<i64>(),
        row.duplicates,
        row.lost,
        row.requests_per_job,
        row.calls_per_job,
        row.secs,
        if row.ok { "PASS" } else { "FAIL" },
        row.dead_queue,
        dead,
        row.dead_metric.join(","),
        row.events,
        if row.why.is_empty() {
            String::new()
        } else {
            format!(" FAILED: {}", row.why.join("; "))
        }
    );
}

fn spawn(world: &World) -> Result<(Child, u16)> {
    let port = free_port()?;
    Ok((
        world.spawn_worker("extract", &["--concurrency", "4"], Some(port))?,
        port,
    ))
}

fn sh(cmd: &str, args: &[&str]) -> Result<()> {
    let status = Command::new(cmd).args(args).status()?;
    if !status.success() {
        bail!("{cmd} {args:?}: {status}");
    }
    Ok(())
}

fn restart(d: Disrupt) -> Result<()> {
    match d {
        Disrupt::RestartRabbit => {
            sh("rabbitmqctl", &["-q", "stop_app"])?;
            std::thread::sleep(Duration::from_secs(1));
            sh("rabbitmqctl", &["-q", "start_app"])
        }
        Disrupt::RestartPostgres => {
            let version = std::fs::read_dir("/etc/postgresql")?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .max()
                .ok_or_else(|| anyhow::anyhow!("no PostgreSQL cluster under /etc/postgresql"))?;
            sh(
                "pg_ctlcluster",
                &["--skip-systemctl-redirect", &version, "main", "stop"],
            )?;
            std::thread::sleep(Duration::from_secs(4));
            sh(
                "pg_ctlcluster",
                &["--skip-systemctl-redirect", &version, "main", "start"],
            )
        }
        _ => Ok(()),
    }
}

async fn scenario(
    relata: &std::path::Path,
    s: &Scenario,
    docs: usize,
    kills: usize,
    within: Duration,
) -> Result<Row> {
    let responder = Responder::start(s.mode.clone()).await?;
    let world = World::new(
        relata,
        &responder.base_url(),
        &[
            ("RELATA_RETRY_DELAYS_MS", "300,600"),
            ("RELATA_MODEL_RETRY_BASE_DELAY_MS", "20"),
            ("RELATA_MODEL_RETRY_MAX_DELAY_MS", "100"),
            ("RELATA_MODEL_REQUEST_TIMEOUT_MS", "1000"),
            ("RELATA_LOG", "info"),
        ],
    )
    .await?;
    let result = drive(&world, &responder, s, docs, kills, within).await;
    let keep =
        matches!(&result, Ok(r) if !r.ok) && std::env::var_os("RELATA_BENCH_KEEP_FAILED").is_some();
    world.teardown(keep).await;
    result
}

async fn drive(
    world: &World,
    responder: &Responder,
    s: &Scenario,
    docs: usize,
    kills: usize,
    within: Duration,
) -> Result<Row> {
    let started = Instant::now();
    let corpus = world.dir.join("corpus.jsonl");
    write_synthetic(&corpus, docs)?;
    world.ingest(&corpus)?;
    let expected_dead_letters = if s.disrupt == Disrupt::Poison {
        publish_poison(world).await?
    } else {
        0
    };
    let mut workers = vec![spawn(world)?, spawn(world)?];
    let mut events = Vec::new();
    let done = disrupt_until_done(
        world,
        responder,
        s,
        DisruptLimits {
            docs,
            kills,
            deadline: started + within,
        },
        &mut workers,
        &mut events,
    )
    .await?;
    // Let dead letters settle, then read the worker metrics and stop the workers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dead_metric = dead_letter_metric(&workers).await;
    stop_workers(workers, &mut events).await?;
    if let Some(f) = Some(responder.faults()).filter(|f| !f.is_empty()) {
        events.push(format!(
            "faults injected: {}",
            f.iter()
                .map(|(k, n)| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }

    let dead_queue = dead_queue_depth(world).await?;
    let ledger = Ledger::read(world, docs).await?;
    let jobs_in = ledger.jobs_in;
    let requests_per_job = responder.chat_requests() as f64 / jobs_in.max(1) as f64;

    let mut why = ledger.problems(done, within);
    if dead_queue < expected_dead_letters {
        why.push(format!(
            "expected {expected_dead_letters} dead letters, the dead queue holds {dead_queue}"
        ));
    }
    check_mode(world, responder, &s.mode, &ledger, &mut why, &mut events).await?;
    Ok(Row {
        name: s.name,
        jobs_in,
        committed: ledger.committed,
        dead: ledger.dead,
        duplicates: ledger.duplicates,
        lost: ledger.lost,
        requests_per_job,
        calls_per_job: ledger.calls as f64 / jobs_in.max(1) as f64,
        dead_queue,
        dead_metric: dead_metric
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        events: events.join("; "),
        secs: started.elapsed().as_secs_f64(),
        ok: why.is_empty(),
        why,
    })
}

/// How many messages the dead-letter queues hold.
async fn dead_queue_depth(world: &World) -> Result<u32> {
    let broker = Broker::connect(world.broker_config()).await?;
    let dead_queue = broker
        .queue_depths()
        .await?
        .into_iter()
        .filter(|q| q.role == QueueRole::Dead)
        .filter_map(|q| q.messages)
        .sum::<u32>();
    broker.close().await;
    Ok(dead_queue)
}

/// What the ledger says after a scenario of `docs` documents.
struct Ledger {
    /// Extract jobs by state.
    jobs: Vec<(String, i64)>,
    jobs_in: i64,
    /// Jobs committed accepted, partial or invalid.
    committed: i64,
    accepted: i64,
    dead: Vec<(String, i64)>,
    duplicates: i64,
    lost: i64,
    /// Model calls recorded.
    calls: i64,
}

impl Ledger {
    async fn read(world: &World, docs: usize) -> Result<Ledger> {
        let jobs = world.jobs("extract").await?;
        let get = |s: &str| {
            jobs.iter()
                .filter(|(k, _)| k == s)
                .map(|(_, n)| *n)
                .sum::<i64>()
        };
        let jobs_in: i64 = jobs.iter().map(|(_, n)| n).sum();
        let committed = get("accepted") + get("partial") + get("invalid");
        let dead = world.store.dead_by_reason().await?;
        let dup = world.store.duplicates().await?;
        let (dup_claims, dup_entities, dup_outcomes, dup_rejections) = (
            dup.claims,
            dup.entities,
            dup.model_calls,
            dup.invalid_outputs,
        );
        let counts = world.store.table_counts().await?;
        let (claims, calls) = (counts.claims, counts.model_calls);
        let accepted = get("accepted");
        // Lost: a document without a job, a job never finished, or an accepted job whose
        // claims are not all there.
        let missing_claims = (accepted * CLAIMS_PER_DOC - claims).max(0);
        let lost = (docs as i64 - jobs_in).max(0) + get("queued") + missing_claims;
        let duplicates = dup_claims
            + dup_entities
            + dup_outcomes
            + dup_rejections
            + (claims - accepted * CLAIMS_PER_DOC).max(0);
        Ok(Ledger {
            jobs,
            jobs_in,
            committed,
            accepted,
            dead,
            duplicates,
            lost,
            calls,
        })
    }

    /// What every scenario must show: finished (`done`) within `within`, no duplicates,
    /// nothing lost.
    fn problems(&self, done: bool, within: Duration) -> Vec<String> {
        let mut why = Vec::new();
        if !done {
            why.push(format!("not finished within {within:?}: {:?}", self.jobs));
        }
        if self.duplicates != 0 {
            why.push(format!("{} duplicates", self.duplicates));
        }
        if self.lost != 0 {
            why.push(format!("{} lost", self.lost));
        }
        why
    }
}

/// What the responder's mode requires of the ledger, into `why`; what it is worth noting,
/// into `events`.
async fn check_mode(
    world: &World,
    responder: &Responder,
    mode: &Mode,
    ledger: &Ledger,
    why: &mut Vec<String>,
    events: &mut Vec<String>,
) -> Result<()> {
    let (jobs, jobs_in, accepted) = (&ledger.jobs, ledger.jobs_in, ledger.accepted);
    match mode {
        Mode::Invalid => {
            // Every response holds something invalid: each job is committed once as
            // invalid (or partial, when one entity of the response was fine), never retried.
            if responder.chat_requests() as i64 != jobs_in
                || ledger.committed != jobs_in
                || accepted != 0
            {
                why.push(format!(
                    "invalid output must be recorded once and never retried: {} requests for {jobs_in} jobs, {jobs:?}",
                    responder.chat_requests(),
                ));
            }
            let reasons = world.store.rejections_by_reason().await?;
            let reasons = reasons
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect::<Vec<_>>()
                .join(",");
            events.push(format!(
                "jobs {jobs:?}; invalid_outputs by reason: {reasons}"
            ));
        }
        Mode::Grounded { .. } if accepted != jobs_in => {
            why.push(format!("every job should be accepted: {jobs:?}"));
        }
        _ => {}
    }
    Ok(())
}

/// Two messages that are not jobs: bytes that do not decode, and a job id the ledger does
/// not hold. Returns how many dead letters they must become.
async fn publish_poison(world: &World) -> Result<u32> {
    let broker = Broker::connect(world.broker_config()).await?;
    let version = TaskVersion::new(
        &relata_core::Contract::current(Task::Extract),
        "poison",
        "poison",
    );
    let a = JobId::derive(&version, b"undecodable");
    broker
        .publish(Task::Extract, &a, b"\x00this is not a job message")
        .await?;
    let b = JobId::derive(&version, b"not in the ledger");
    broker
        .publish(
            Task::Extract,
            &b,
            &JobMessage::new(Task::Extract, b.clone()).encode(),
        )
        .await?;
    broker.close().await;
    Ok(2)
}

/// `relata_jobs_dead_lettered_total` by reason, summed over the workers still running.
async fn dead_letter_metric(workers: &[(Child, u16)]) -> BTreeMap<String, f64> {
    let mut dead_metric = BTreeMap::new();
    for (_, port) in workers {
        if let Ok(body) = http_get(&format!("127.0.0.1:{port}"), "/metrics").await {
            for line in body
                .lines()
                .filter(|l| l.starts_with("relata_jobs_dead_lettered_total{"))
            {
                let reason = line
                    .split("reason=\"")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .unwrap_or("?");
                let n: f64 = line
                    .rsplit(' ')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0);
                if n > 0.0 {
                    *dead_metric.entry(reason.to_owned()).or_insert(0.0) += n;
                }
            }
        }
    }
    dead_metric
}

/// SIGTERM every worker and wait for each (SIGKILL after 40 s, noted in `events`).
async fn stop_workers(mut workers: Vec<(Child, u16)>, events: &mut Vec<String>) -> Result<()> {
    for (child, _) in &mut workers {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
    }
    for (mut child, _) in workers {
        let t = Instant::now();
        while child.try_wait()?.is_none() {
            if t.elapsed() > Duration::from_secs(40) {
                let _ = child.kill();
                let _ = child.wait();
                events.push("a worker ignored SIGTERM for 40 s".into());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// How long a scenario may run, and how much it may break.
struct DisruptLimits {
    docs: usize,
    kills: usize,
    deadline: Instant,
}

/// Run the scenario's disruption while the workers drain the queue; true when every
/// document's job finished before the deadline.
async fn disrupt_until_done(
    world: &World,
    responder: &Responder,
    s: &Scenario,
    limits: DisruptLimits,
    workers: &mut Vec<(Child, u16)>,
    events: &mut Vec<String>,
) -> Result<bool> {
    let mut killed = 0;
    let mut disrupted = false;
    let mut next_kill = Instant::now() + Duration::from_millis(rand::rng().random_range(300..1000));
    let DisruptLimits {
        docs,
        kills,
        deadline,
    } = limits;
    let done = loop {
        let (total, queued) = world.progress("extract").await.unwrap_or((0, 1));
        if total >= docs as i64 && queued == 0 {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        let progressed = responder.chat_requests() as usize >= docs / 5;
        match s.disrupt {
            Disrupt::Kill9 if killed < kills && Instant::now() >= next_kill => {
                let i = rand::rng().random_range(0..workers.len());
                let (mut child, _) = workers.swap_remove(i);
                let _ = child.kill(); // SIGKILL
                let _ = child.wait();
                killed += 1;
                workers.push(spawn(world)?);
                next_kill =
                    Instant::now() + Duration::from_millis(rand::rng().random_range(300..900));
            }
            Disrupt::RestartRabbit | Disrupt::RestartPostgres if !disrupted && progressed => {
                let d = s.disrupt;
                let t = Instant::now();
                tokio::task::spawn_blocking(move || restart(d)).await??;
                events.push(format!(
                    "restarted after {} requests, down {:.1} s",
                    responder.chat_requests(),
                    t.elapsed().as_secs_f64()
                ));
                disrupted = true;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if s.disrupt == Disrupt::Kill9 {
        events.push(format!("{killed} workers SIGKILLed"));
    }
    Ok(done)
}
