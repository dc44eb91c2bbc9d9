//! One run's world: a fresh database and queue prefix, `relata` processes pointed at them,
//! and what the benchmark reads back (the ledger, /proc).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use relata_core::settings::Millis;
use relata_queue::{BrokerConfig, TopologyConfig};
use relata_store::{Store, StoreOptions};
use relata_testkit::harness::{Harness, Services};

/// The services a benchmark runs against: `RELATA_BENCH_ADMIN_URL` and
/// `RELATA_BENCH_AMQP_URL`, else the local servers.
pub fn services() -> Services {
    Services {
        admin_url: std::env::var("RELATA_BENCH_ADMIN_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned()),
        amqp_url: std::env::var("RELATA_BENCH_AMQP_URL")
            .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned()),
    }
}

const MAX_CONNECTIONS: &str = "RELATA_DATABASE_MAX_CONNECTIONS";
const RETRY_DELAYS: &str = "RELATA_RETRY_DELAYS_MS";

/// The pool settings of the bench's own connections from `RELATA_DATABASE_MAX_CONNECTIONS`
/// as the `relata` processes of a world read it, so the floor's pool is the size of a
/// worker's. A bad value stops the bench naming the key, as it would stop `relata`: a
/// silent default would measure another pool than the one asked for.
fn store_options_from(value: Option<&str>) -> Result<StoreOptions> {
    let mut options = StoreOptions::default();
    if let Some(v) = value.filter(|v| !v.trim().is_empty()) {
        let n: u32 = relata_core::settings::parse(MAX_CONNECTIONS, v)?;
        if !(1..=1000).contains(&n) {
            bail!("{MAX_CONNECTIONS} must be between 1 and 1000, not {n}");
        }
        options.max_connections = n;
    }
    Ok(options)
}

/// The `relata` binary: `--relata`, else next to this executable.
pub fn relata_binary(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_owned());
    }
    let me = std::env::current_exe()?;
    let p = me.with_file_name("relata");
    if !p.exists() {
        bail!(
            "no relata binary at {}; build it (cargo build -p relata-cli) or pass --relata",
            p.display()
        );
    }
    Ok(p)
}

/// A fresh database and queue prefix with the `relata` processes' environment. What it
/// created is removed when it drops (also when a run fails half-way), unless kept.
#[derive(Debug)]
pub struct World {
    pub db_url: String,
    pub prefix: String,
    pub dir: PathBuf,
    pub relata: PathBuf,
    pub env: Vec<(String, String)>,
    pub store: Store,
    /// The pool settings of `store`, for any other pool the bench opens.
    pub store_options: StoreOptions,
    amqp_url: String,
    harness: Harness,
}

impl World {
    /// A fresh database (migrated by `relata migrate`) and queue prefix; `model_url` is
    /// the model every worker of this world talks to.
    pub async fn new(relata: &Path, model_url: &str, env: &[(&str, &str)]) -> Result<World> {
        // What the world's `relata` processes will see: this process's environment (they
        // inherit it) unless the world overrides it. Read before anything is created.
        let max_connections = match env.iter().rev().find(|(k, _)| *k == MAX_CONNECTIONS) {
            Some((_, v)) => Some((*v).to_owned()),
            None => std::env::var(MAX_CONNECTIONS).ok(),
        };
        let store_options = store_options_from(max_connections.as_deref())?;
        // The queues the world deletes at the end are the ones its workers declare: a
        // world that overrides the retry delays (the reliability scenarios) left its
        // retry queues on the broker when the harness assumed the default ones.
        let retry_delays_ms = match env.iter().rev().find(|(k, _)| *k == RETRY_DELAYS) {
            Some((_, v)) => relata_core::settings::parse_list::<Millis>(RETRY_DELAYS, v)?
                .into_iter()
                .map(Millis::ms)
                .collect(),
            None => TopologyConfig::default().retry_delays_ms,
        };
        let services = services();
        let harness = Harness::new(&services, "bench", retry_delays_ms).await?;
        let mut vars: Vec<(String, String)> = vec![
            ("RELATA_MODEL_URL".into(), model_url.into()),
            ("RELATA_MODEL_NAME".into(), "fake-model".into()),
            ("RELATA_MODEL_DIALECT".into(), "json_schema".into()),
            ("RELATA_LOG".into(), "warn".into()),
        ];
        for (k, v) in env {
            vars.retain(|(name, _)| name != k);
            vars.push(((*k).to_owned(), (*v).to_owned()));
        }
        let db_url = harness.db.url().to_owned();
        let world_without_store = |store| World {
            db_url: db_url.clone(),
            prefix: harness.queues.prefix().to_owned(),
            dir: harness.dir.path().to_owned(),
            relata: relata.to_owned(),
            env: vars.clone(),
            store,
            store_options: store_options.clone(),
            amqp_url: services.amqp_url.clone(),
            harness,
        };
        // Connect before migrating so a failed migration still drops the database.
        let world = world_without_store(Store::connect_with(&db_url, &store_options).await?);
        let out = world.command(&["migrate"]).output()?;
        if !out.status.success() {
            bail!("migrate: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(world)
    }

    /// The world's database name (unique to the run).
    pub fn database_name(&self) -> &str {
        self.harness.db.name()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.relata);
        cmd.args(args)
            .env_remove("RELATA_CONFIG")
            .env("RELATA_DATABASE_URL", &self.db_url)
            .env("RELATA_AMQP_URL", &self.amqp_url)
            .env("RELATA_QUEUE_PREFIX", &self.prefix)
            .env("RELATA_METRICS_ADDR", "127.0.0.1:0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// `relata ingest --jsonl FILE`, timed. Exit 1 (some input bad) is reported, not fatal.
    pub fn ingest(&self, jsonl: &Path) -> Result<Duration> {
        let t = Instant::now();
        let file = jsonl.to_str().context("path is not UTF-8")?;
        let out = self
            .command(&[
                "ingest",
                "--jsonl",
                file,
                "--source",
                "bench",
                "--title-field",
                "title",
            ])
            .output()?;
        let took = t.elapsed();
        match out.status.code() {
            Some(0) => {}
            Some(1) => eprintln!(
                "ingest: some input was bad: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            _ => bail!("ingest failed: {}", String::from_utf8_lossy(&out.stderr)),
        }
        Ok(took)
    }

    /// A worker process; stderr to a log file in the world's directory.
    pub fn spawn_worker(
        &self,
        task: &str,
        args: &[&str],
        metrics_port: Option<u16>,
    ) -> Result<Child> {
        let n: u32 = rand::random();
        let log = std::fs::File::create(self.dir.join(format!("worker-{task}-{n}.log")))?;
        let mut all = vec!["worker", task];
        all.extend_from_slice(args);
        let mut cmd = self.command(&all);
        if let Some(p) = metrics_port {
            cmd.env("RELATA_METRICS_ADDR", format!("127.0.0.1:{p}"));
        }
        Ok(cmd.stdout(Stdio::null()).stderr(log).spawn()?)
    }

    pub fn broker_config(&self) -> BrokerConfig {
        self.harness.queues.broker_config()
    }

    /// Close the store, then remove the database, the queues and the directory, or
    /// keep them and say where they are.
    pub async fn teardown(mut self, keep: bool) {
        if keep {
            self.harness.keep();
        }
        self.store.close().await;
    }

    /// Extract (or classify) jobs by state.
    pub async fn jobs(&self, task: &str) -> Result<Vec<(String, i64)>> {
        Ok(self.store.jobs_by_state(task).await?)
    }

    /// (total, queued) jobs of a task.
    pub async fn progress(&self, task: &str) -> Result<(i64, i64)> {
        let jobs = self.jobs(task).await?;
        let total = jobs.iter().map(|(_, n)| n).sum();
        let queued = jobs
            .iter()
            .filter(|(s, _)| s == "queued")
            .map(|(_, n)| *n)
            .sum();
        Ok((total, queued))
    }

    /// Wait until every job of `task` is terminal (at least `min` of them), polling.
    pub async fn wait_done(&self, task: &str, min: i64, within: Duration) -> Result<bool> {
        let deadline = Instant::now() + within;
        loop {
            let (total, queued) = self.progress(task).await.unwrap_or((0, 1));
            if total >= min && queued == 0 {
                return Ok(true);
            }
            if Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// What /proc said about a process while it ran.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcStats {
    pub peak_rss_kib: u64,
    pub cpu_ticks: u64,
}

pub fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

pub fn read_proc(pid: u32) -> Option<ProcStats> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat; `rest` starts at field 3.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(ProcStats {
        peak_rss_kib: peak,
        cpu_ticks: utime + stime,
    })
}

/// Wait for a child to exit (at most `within`, then SIGKILL), sampling /proc every 50 ms.
pub async fn wait_sampling(
    child: Child,
    within: Duration,
) -> Result<(ExitStatus, ProcStats, Duration)> {
    let w = wait_watching(child, within, None).await?;
    Ok((w.status, w.stats, w.wall))
}

/// What [`wait_watching`] saw.
pub struct Watched {
    pub status: ExitStatus,
    pub stats: ProcStats,
    /// CPU ticks of the database's backends while the child ran, and of those among them
    /// that served a worker's promoter.
    pub database_ticks: u64,
    pub promoter_ticks: u64,
    pub wall: Duration,
}

/// [`wait_sampling`], and the CPU ticks the PostgreSQL backends connected to the world's
/// database used while the child ran (each backend's last reading; a backend's CPU after
/// the last sample before it exits, at most 250 ms of it, is missed), telling the
/// promoter's backends (by their `application_name`) from the rest.
pub async fn wait_watching(
    mut child: Child,
    within: Duration,
    database: Option<(&str, &Store)>,
) -> Result<Watched> {
    let pid = child.id();
    let started = Instant::now();
    let mut last = ProcStats::default();
    let mut backends: HashMap<u32, u64> = HashMap::new();
    let mut promoter_pids: std::collections::HashSet<u32> = Default::default();
    let mut next_scan = started;
    let watched = |status,
                   last,
                   backends: &HashMap<u32, u64>,
                   promoter: &std::collections::HashSet<u32>| Watched {
        status,
        stats: last,
        database_ticks: backends.values().copied().sum(),
        promoter_ticks: backends
            .iter()
            .filter(|(pid, _)| promoter.contains(pid))
            .map(|(_, t)| *t)
            .sum(),
        wall: started.elapsed(),
    };
    loop {
        if let Some(s) = read_proc(pid) {
            last = ProcStats {
                peak_rss_kib: last.peak_rss_kib.max(s.peak_rss_kib),
                cpu_ticks: s.cpu_ticks.max(last.cpu_ticks),
            };
        }
        if let Some((db, store)) = database
            && Instant::now() >= next_scan
        {
            for (bpid, ticks) in database_backends(db) {
                let e = backends.entry(bpid).or_default();
                *e = (*e).max(ticks);
            }
            if let Ok(pids) = store.promoter_backend_pids().await {
                promoter_pids.extend(pids.into_iter().filter_map(|p| u32::try_from(p).ok()));
            }
            next_scan = Instant::now() + Duration::from_millis(250);
        }
        if let Some(status) = child.try_wait()? {
            return Ok(watched(status, last, &backends, &promoter_pids));
        }
        if started.elapsed() > within {
            let _ = child.kill();
            let status = child.wait()?;
            eprintln!("worker {pid} did not exit within {within:?}; killed");
            return Ok(watched(status, last, &backends, &promoter_pids));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The PostgreSQL backends connected to `database` and the CPU ticks each has used so
/// far. A backend names its database in its command line (`postgres: USER DATABASE
/// HOST(PORT) STATE`); the world's database name is unique to the run.
fn database_backends(database: &str) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let needle = format!(" {database} ");
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.starts_with("postgres: ")
            && cmdline.contains(&needle)
            && let Some(s) = read_proc(pid)
        {
            out.push((pid, s.cpu_ticks));
        }
    }
    out
}

/// The whole machine's CPU time (`/proc/stat`'s first line), in clock ticks: what every
/// process used, relata's or not; steal is time the hypervisor gave the neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineCpu {
    /// user + nice + system + irq + softirq (guest time is inside user).
    pub busy: u64,
    pub iowait: u64,
    pub steal: u64,
}

impl MachineCpu {
    pub fn read() -> Option<MachineCpu> {
        MachineCpu::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn parse(stat: &str) -> Option<MachineCpu> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice
        Some(MachineCpu {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            iowait: at(4),
            steal: at(7),
        })
    }

    /// What was used between `earlier` and `self`.
    pub fn since(self, earlier: MachineCpu) -> MachineCpu {
        MachineCpu {
            busy: self.busy.saturating_sub(earlier.busy),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// The machine, for the record beside every figure.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!("{cores} cores ({cpu}), {:.1} GiB", mem as f64 / 1048576.0)
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Percentile of a sorted slice (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A minimal HTTP GET (the worker's /metrics).
pub async fn http_get(addr: &str, path: &str) -> std::io::Result<String> {
    let path = path.trim_start_matches('/');
    Ok(relata_testkit::http::get(&format!("http://{addr}/{path}"))
        .await?
        .1)
}

pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_busy_time_leaves_out_idle_iowait_and_steal() {
        let stat = "cpu  100 5 40 9000 70 3 2 11 0 0\ncpu0 50 2 20 4500 35 1 1 5 0 0\n";
        let before = MachineCpu::parse(stat).unwrap();
        assert_eq!(
            before,
            MachineCpu {
                busy: 150,
                iowait: 70,
                steal: 11
            }
        );
        let after = MachineCpu::parse("cpu  160 5 50 9100 75 3 2 31 0 0\n").unwrap();
        assert_eq!(
            after.since(before),
            MachineCpu {
                busy: 70,
                iowait: 5,
                steal: 20
            }
        );
        assert_eq!(MachineCpu::parse("intr 1 2 3\n"), None);
    }

    #[test]
    fn the_pool_size_is_the_setting_and_a_bad_one_names_the_key() {
        let default = StoreOptions::default().max_connections;
        assert_eq!(store_options_from(None).unwrap().max_connections, default);
        assert_eq!(
            store_options_from(Some(" ")).unwrap().max_connections,
            default
        );
        assert_eq!(store_options_from(Some("32")).unwrap().max_connections, 32);
        for bad in ["ten", "0", "1001", "-1"] {
            let e = store_options_from(Some(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with("RELATA_DATABASE_MAX_CONNECTIONS"),
                "{bad}: {e}"
            );
        }
    }
}
