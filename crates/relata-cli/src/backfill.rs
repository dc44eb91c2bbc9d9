//! `relata backfill`: re-run a task over stored inputs under the current task version —
//! after a prompt, schema or model change, or to retry what failed under an older one.
//!
//! Exactly-once publishing per task version comes from the ledger, not from this command:
//! job ids are derived from the task version and the input, an input's job of the current
//! version is created once, and a job is published and then marked published in confirmed
//! batches. An interrupted backfill (Ctrl-C, SIGTERM, a crash) leaves each job either
//! published and marked, or created and unpublished — which the next run publishes as
//! `resume` — so re-running never publishes a job twice. (The one exception is a crash
//! in the instant between the broker's confirm and the ledger update: that batch is
//! published once more on the next run, and a worker acknowledges a job whose outcome is
//! committed without calling the model.) Two backfills of the same task never overlap: the
//! second exits with [`EXIT_LOCKED`].

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, NaiveDate, Utc};
use indicatif::{ProgressBar, ProgressStyle};
use relata_core::{Task, TaskVersion};
use relata_dispatch::publish_jobs;
use relata_queue::{Broker, redact_url};
use relata_store::{
    BackfillAction, BackfillCount, BackfillSelector, JobToPublish, PriorState, Store,
};
use tokio::sync::watch;

use crate::config::Config;
use crate::out::outln;

/// Another run holds the lock (EX_TEMPFAIL: try again later).
pub const EXIT_LOCKED: u8 = 75;
/// Stopped by SIGINT/SIGTERM before the end; re-run to continue.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug, clap::Args)]
pub struct BackfillArgs {
    /// The task to re-run: extract (chunks) or classify (claim pairs classified before).
    #[arg(long)]
    pub task: Task,
    /// Only documents of this source (classify: a pair with either claim in it).
    #[arg(long)]
    pub source: Option<String>,
    /// Only inputs ingested at or after this time (RFC 3339, or a UTC date YYYY-MM-DD).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<DateTime<Utc>>,
    /// Only inputs ingested before this time (RFC 3339, or a UTC date YYYY-MM-DD).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<DateTime<Utc>>,
    /// Only inputs whose previous result (under another task version) was one of these:
    /// never, queued, accepted, partial, invalid, dead (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub status: Vec<PriorState>,
    /// Only inputs with a result of another task version and none of the current one
    /// (after a prompt, schema or model change).
    #[arg(long)]
    pub not_version: bool,
    /// Publish at most this many jobs in this run (a later run continues).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Publish at most this many jobs per second; 0.001 to 100000 (fractions allowed:
    /// 0.5 is one job every two seconds).
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Count what would be published, by previous state and action; publish nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn parse_time(s: &str) -> std::result::Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("{s:?} is neither RFC 3339 nor YYYY-MM-DD"))
}

/// What a run did (or, with `--dry-run`, would do).
#[derive(Debug, Default, serde::Serialize)]
struct Summary {
    task: String,
    task_version: String,
    dry_run: bool,
    /// Selected inputs (chunks or pairs) by previous state and action.
    selected: Vec<BackfillCount>,
    /// Inputs that need a job published (publish + resume).
    to_publish: i64,
    /// Jobs published by this run.
    jobs_published: u64,
    /// Jobs published, by the previous state of their input (classify: of the first pair).
    published_by_prior: BTreeMap<String, u64>,
    interrupted: bool,
    elapsed_ms: u128,
}

pub async fn run(config: &Config, args: BackfillArgs) -> Result<u8> {
    check_args(&args)?;
    let version = config.task_version(args.task)?;
    let selector = BackfillSelector {
        source: args.source.clone(),
        since: args.since,
        until: args.until,
        statuses: args.status.clone(),
        not_version: args.not_version,
    };
    let store = crate::pipeline::store(config).await?;
    let started = Instant::now();
    let mut summary = plan(&store, &version, &selector, &args).await?;
    if args.dry_run {
        report(&summary, &args)?;
        return Ok(0);
    }

    let lock_name = format!("backfill:{}", args.task);
    let Some(lock) = store.try_run_lock(&lock_name).await? else {
        let holder = store.run_lock_holder(&lock_name).await.ok().flatten();
        eprintln!(
            "another `relata backfill --task {}` is running against this database{}; not starting (exit {EXIT_LOCKED})",
            args.task,
            holder
                .map(|h| format!(" (PostgreSQL backend pid {})", h.pid))
                .unwrap_or_default()
        );
        return Ok(EXIT_LOCKED);
    };
    let published = publish(config, &store, &version, &selector, &args, &mut summary).await;
    let _ = lock.release().await;
    published?;
    summary.elapsed_ms = started.elapsed().as_millis();
    report(&summary, &args)?;
    Ok(if summary.interrupted {
        EXIT_INTERRUPTED
    } else {
        0
    })
}

/// Refuse what no selection can mean, before the store is opened.
fn check_args(args: &BackfillArgs) -> Result<()> {
    if !Task::QUEUED.contains(&args.task) {
        bail!(
            "--task {}: only queued tasks are backfilled (extract, classify); answers are asked on request",
            args.task
        );
    }
    if args.since.zip(args.until).is_some_and(|(a, b)| a >= b) {
        bail!("--since must be before --until");
    }
    Ok(())
}

/// What the selection holds and what a run would publish: all a dry run reports.
async fn plan(
    store: &Store,
    version: &TaskVersion,
    selector: &BackfillSelector,
    args: &BackfillArgs,
) -> Result<Summary> {
    let mut summary = Summary {
        task: args.task.to_string(),
        task_version: format!(
            "{} prompt {} schema {} v{} model {}",
            version.task,
            version.prompt_version,
            version.schema_id,
            version.schema_version,
            version.model
        ),
        dry_run: args.dry_run,
        ..Summary::default()
    };
    summary.selected = match args.task {
        Task::Extract => store.backfill_extract_counts(version, selector).await?,
        Task::Classify => store.backfill_classify_counts(version, selector).await?,
        Task::Answer | Task::Join => bail!("{} is not a queued task", args.task),
    };
    summary.to_publish = summary
        .selected
        .iter()
        .filter(|c| c.action != BackfillAction::AlreadyCurrent)
        .map(|c| c.count)
        .sum();
    Ok(summary)
}

/// Create and publish the selection's jobs, paced, until done, `--limit` or a signal.
async fn publish(
    config: &Config,
    store: &Store,
    version: &TaskVersion,
    selector: &BackfillSelector,
    args: &BackfillArgs,
    summary: &mut Summary,
) -> Result<()> {
    let broker = Broker::connect(config.broker()).await.with_context(|| {
        format!(
            "cannot connect to RabbitMQ at {}",
            redact_url(&config.amqp_url)
        )
    })?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        crate::signal::shutdown().await;
        let _ = stop_tx.send(true);
    });

    let to_publish = u64::try_from(summary.to_publish).unwrap_or(0);
    let progress = progress_bar(args.limit.map_or(to_publish, |l| l.min(to_publish)), "jobs");
    let mut run = Run {
        store,
        broker: &broker,
        pacer: Pacer::new(args.rate),
        stop: stop_rx,
        progress: &progress,
        remaining: args.limit.unwrap_or(u64::MAX),
        summary,
    };
    let outcome = match args.task {
        Task::Extract => run.extract(version, selector).await,
        Task::Classify => {
            run.classify(version, selector, config.worker.classify_batch)
                .await
        }
        Task::Answer | Task::Join => Err(anyhow::anyhow!("{} is not a queued task", args.task)),
    };
    progress.finish_and_clear();
    signals.abort();
    broker.close().await;
    outcome
}

/// A bar of `total` `unit`s (jobs, pairs) on a terminal; nothing otherwise.
pub(crate) fn progress_bar(total: u64, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let p = ProgressBar::new(total);
    p.set_style(
        ProgressStyle::with_template(&format!(
            "{{bar:40}} {{pos}}/{{len}} {unit} ({{per_sec}}, eta {{eta}}) {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    p
}

fn report(summary: &Summary, args: &BackfillArgs) -> Result<()> {
    if args.json {
        outln!("{}", serde_json::to_string(summary)?)?;
        return Ok(());
    }
    eprintln!(
        "backfill {} ({}){}",
        summary.task,
        summary.task_version,
        if summary.dry_run { ", dry run" } else { "" }
    );
    let unit = if summary.task == "classify" {
        "pairs"
    } else {
        "chunks"
    };
    if summary.selected.is_empty() {
        eprintln!("  nothing selected");
    }
    for c in &summary.selected {
        eprintln!(
            "  {:>8} {unit} previously {:<9} -> {}",
            c.count, c.prior, c.action
        );
    }
    if summary.dry_run {
        eprintln!(
            "would publish: {} {unit} need a job of the current version{}",
            summary.to_publish,
            args.limit
                .map(|l| format!(" (this run would stop after {l} jobs)"))
                .unwrap_or_default()
        );
    } else {
        eprintln!(
            "published {} jobs in {:.1} s{}",
            summary.jobs_published,
            summary.elapsed_ms as f64 / 1000.0,
            if summary.interrupted {
                "; interrupted — run the same command again to continue"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Paces publishing: job number k (from 0) is not published before start + k / rate.
#[derive(Debug)]
struct Pacer {
    rate: Option<f64>,
    start: Instant,
    sent: u64,
}

/// The bounds of `--rate`: below one job in about 17 minutes a backfill is better run
/// with `--limit` from cron; above 100000 jobs a second the broker is the limit.
const RATE_MIN: f64 = 0.001;
const RATE_MAX: f64 = 100_000.0;

fn parse_rate(s: &str) -> Result<f64, String> {
    let r: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of jobs per second"))?;
    if !(RATE_MIN..=RATE_MAX).contains(&r) {
        return Err(format!(
            "{s} is outside {RATE_MIN} to {RATE_MAX} jobs per second"
        ));
    }
    Ok(r)
}

impl Pacer {
    fn new(rate: Option<f64>) -> Pacer {
        Pacer {
            rate,
            start: Instant::now(),
            sent: 0,
        }
    }

    /// Jobs per confirmed batch: about four batches a second under a rate.
    fn batch(&self) -> usize {
        match self.rate {
            Some(r) => ((r / 4.0).floor() as usize).clamp(1, relata_dispatch::PUBLISH_BATCH),
            None => relata_dispatch::PUBLISH_BATCH,
        }
    }

    /// When a batch of `n` may be published.
    fn ready_at(&self, n: usize) -> Instant {
        match self.rate {
            Some(r) => {
                let last = (self.sent + n as u64).saturating_sub(1) as f64;
                self.start + Duration::from_secs_f64(last / r)
            }
            None => Instant::now(),
        }
    }
}

struct Run<'a> {
    store: &'a Store,
    broker: &'a Broker,
    pacer: Pacer,
    stop: watch::Receiver<bool>,
    progress: &'a ProgressBar,
    remaining: u64,
    summary: &'a mut Summary,
}

impl Run<'_> {
    /// Publish `jobs` in paced batches. Returns false when stopped by a signal.
    async fn publish(
        &mut self,
        jobs: &[JobToPublish],
        prior_of: impl Fn(&JobToPublish) -> PriorState,
    ) -> Result<bool> {
        let size = self.pacer.batch();
        for batch in jobs.chunks(size) {
            if *self.stop.borrow() {
                return Ok(false);
            }
            let at = self.pacer.ready_at(batch.len());
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = self.stop.changed() => return Ok(false),
            }
            let n = publish_jobs(self.store, self.broker, batch).await? as u64;
            self.pacer.sent += n;
            self.summary.jobs_published += n;
            self.remaining = self.remaining.saturating_sub(n);
            for job in batch {
                *self
                    .summary
                    .published_by_prior
                    .entry(prior_of(job).to_string())
                    .or_insert(0) += 1;
            }
            self.progress.inc(n);
        }
        Ok(true)
    }

    fn stopped(&mut self) -> bool {
        if *self.stop.borrow() {
            self.summary.interrupted = true;
        }
        self.summary.interrupted
    }

    async fn extract(&mut self, version: &TaskVersion, selector: &BackfillSelector) -> Result<()> {
        let mut after = 0_i64;
        while self.remaining > 0 && !self.stopped() {
            let page = i64::try_from(self.remaining.min(500)).unwrap_or(500);
            let candidates = self
                .store
                .backfill_extract_page(version, selector, after, page)
                .await?;
            let Some(last) = candidates.last() else { break };
            after = last.chunk_id;
            let priors: BTreeMap<i64, PriorState> =
                candidates.iter().map(|c| (c.chunk_id, c.prior)).collect();
            let chunk_ids: Vec<i64> = candidates.iter().map(|c| c.chunk_id).collect();
            let mut jobs = self.store.ensure_extract_jobs(version, &chunk_ids).await?;
            jobs.truncate(usize::try_from(self.remaining).unwrap_or(usize::MAX));
            let prior_of = |j: &JobToPublish| {
                j.input
                    .chunk_id()
                    .and_then(|c| priors.get(&c).copied())
                    .unwrap_or(PriorState::Never)
            };
            if !self.publish(&jobs, prior_of).await? {
                self.summary.interrupted = true;
            }
        }
        Ok(())
    }

    async fn classify(
        &mut self,
        version: &TaskVersion,
        selector: &BackfillSelector,
        batch_pairs: usize,
    ) -> Result<()> {
        let batch_pairs = batch_pairs.max(1);
        // First what an interrupted run created and did not publish.
        let limit = i64::try_from(self.remaining).unwrap_or(i64::MAX);
        let leftover = self
            .store
            .unpublished_backfill_classify_jobs(version, limit)
            .await?;
        if !self.publish(&leftover, |_| PriorState::Queued).await? {
            self.summary.interrupted = true;
            return Ok(());
        }
        let mut after = (0_i64, 0_i64);
        while self.remaining > 0 && !self.stopped() {
            let jobs_wanted = self.remaining.min(100);
            let page = i64::try_from(jobs_wanted * batch_pairs as u64).unwrap_or(1000);
            let candidates = self
                .store
                .backfill_classify_page(version, selector, after, page)
                .await?;
            let Some(last) = candidates.last() else { break };
            after = last.pair;
            let priors: BTreeMap<(i64, i64), PriorState> =
                candidates.iter().map(|c| (c.pair, c.prior)).collect();
            let batches: Vec<Vec<(i64, i64)>> = candidates
                .chunks(batch_pairs)
                .map(|b| b.iter().map(|c| c.pair).collect())
                .collect();
            let jobs = self
                .store
                .ensure_classify_jobs(version, None, &batches)
                .await?;
            let prior_of = |j: &JobToPublish| {
                j.input
                    .pairs()
                    .and_then(|p| p.first())
                    .and_then(|p| priors.get(p).copied())
                    .unwrap_or(PriorState::Never)
            };
            if !self.publish(&jobs, prior_of).await? {
                self.summary.interrupted = true;
            }
        }
        Ok(())
    }
}
