//! The pipeline commands: migrate, ingest, worker, status, export.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::ingest::{IngestOptions, ingest};
use anyhow::{Context, Result, bail};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use prometheus_client::registry::Registry;
use relata_core::Task;
use relata_model::{ModelClient, ModelMetrics};
use relata_producer::corpus::{CorpusReader, DirOptions, JsonlOptions};
use relata_queue::{Broker, redact_url};
use relata_store::Store;
use relata_worker::{ChecksConfigured, JobMetrics, Readiness, Worker};

use crate::config::Config;
use crate::out::outln;

async fn connect_store(config: &Config) -> Result<Store> {
    connect_pool(config, &config.store_options()).await
}

/// A pool on the configured database; its size comes from [`Config::store_options`] or
/// [`Config::promoter_store_options`], never from here.
async fn connect_pool(config: &Config, options: &relata_store::StoreOptions) -> Result<Store> {
    Store::connect_with(&config.database_url, options)
        .await
        .with_context(|| {
            format!(
                "cannot connect to PostgreSQL at {}",
                redact_url(&config.database_url)
            )
        })
}

/// The store, for every command but `migrate`: connected, and migrated to this relata's
/// schema (otherwise the first query would fail with a bare "relation does not exist").
pub async fn store(config: &Config) -> Result<Store> {
    let store = connect_store(config).await?;
    store.check_migrated().await.with_context(|| {
        format!(
            "PostgreSQL at {} is not ready for relata",
            redact_url(&config.database_url)
        )
    })?;
    Ok(store)
}

async fn broker(config: &Config) -> Result<Broker> {
    Broker::connect(config.broker()).await.with_context(|| {
        format!(
            "cannot connect to RabbitMQ at {}",
            redact_url(&config.amqp_url)
        )
    })
}

/// `relata migrate`.
pub async fn migrate(config: &Config) -> Result<()> {
    if Store::create_database_if_missing(&config.database_url)
        .await
        .with_context(|| {
            format!(
                "cannot reach PostgreSQL at {}",
                redact_url(&config.database_url)
            )
        })?
    {
        eprintln!("created database {}", redact_url(&config.database_url));
    }
    let store = connect_store(config).await?;
    store.migrate().await.context("applying migrations")?;
    eprintln!("migrations applied");
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// A directory of .txt / .md files (recursively).
    #[arg(conflicts_with_all = ["jsonl", "stdin"])]
    pub dir: Option<PathBuf>,
    /// A JSONL file, one document per line.
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Read JSONL from standard input.
    #[arg(long, conflicts_with = "jsonl")]
    pub stdin: bool,
    /// The corpus name; documents are keyed by (source, id).
    #[arg(long)]
    pub source: String,
    /// JSONL: the field holding the document id.
    #[arg(long, default_value = "id")]
    pub id_field: String,
    /// JSONL: the field holding the text.
    #[arg(long, default_value = "text")]
    pub text_field: String,
    /// JSONL: the field holding the title (optional).
    #[arg(long)]
    pub title_field: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// When another ingestion of the same source holds the lock, wait for it instead of
    /// exiting 75.
    #[arg(long)]
    pub wait: bool,
}

/// Exit code of `relata ingest` when another run of the same source holds the lock.
pub const EXIT_INGEST_LOCKED: u8 = crate::backfill::EXIT_LOCKED;

/// `relata ingest`. Exit code 0 when every item was ingested, 1 when some input was bad
/// (the rest was ingested), an error when the run could not proceed.
pub async fn ingest_cmd(config: &Config, args: IngestArgs) -> Result<u8> {
    let reader = if let Some(dir) = &args.dir {
        CorpusReader::dir(dir, DirOptions::default())?
    } else if let Some(path) = &args.jsonl {
        CorpusReader::jsonl_file(path, jsonl_options(&args))?
    } else if args.stdin {
        CorpusReader::stdin(jsonl_options(&args))
    } else {
        bail!("give a directory, --jsonl FILE or --stdin");
    };
    let version = config.task_version(Task::Extract)?;
    let store = store(config).await?;
    // One run per source at a time: a PostgreSQL advisory lock held for the whole run and
    // released with the session, also when the process dies.
    let lock_name = format!("ingest:{}", args.source);
    let lock = match store.try_run_lock(&lock_name).await? {
        Some(lock) => lock,
        None if args.wait => {
            eprintln!(
                "another `relata ingest --source {}` is running; waiting for it (--wait)",
                args.source
            );
            store.run_lock_wait(&lock_name).await?
        }
        None => {
            let holder = store.run_lock_holder(&lock_name).await.ok().flatten();
            eprintln!(
                "another `relata ingest --source {}` is running against this database{}; not starting (exit {EXIT_INGEST_LOCKED}; --wait waits instead)",
                args.source,
                holder
                    .map(|h| format!(" (PostgreSQL backend pid {})", h.pid))
                    .unwrap_or_default()
            );
            return Ok(EXIT_INGEST_LOCKED);
        }
    };
    let broker = broker(config).await?;
    let progress = if std::io::stderr().is_terminal() {
        let p = ProgressBar::new_spinner();
        p.set_style(
            ProgressStyle::with_template("{spinner} {pos} documents ({per_sec}); {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        p.enable_steady_tick(Duration::from_millis(200));
        p
    } else {
        ProgressBar::hidden()
    };
    let label = args.jsonl.as_ref().map(|p| p.display().to_string());
    let options = IngestOptions {
        source: args.source.clone(),
        max_chunk_bytes: config.ingest.max_chunk_bytes,
        version,
    };
    let summary = ingest(&store, &broker, reader, &options, &progress, |e| {
        let at = label
            .as_deref()
            .map(|l| format!("{l}: "))
            .unwrap_or_default();
        progress.suspend(|| eprintln!("bad input: {at}{e}"));
    })
    .await?;
    progress.finish_and_clear();
    broker.close().await;
    let _ = lock.release().await;
    if args.json {
        outln!("{}", serde_json::to_string(&summary)?)?;
    } else {
        eprintln!(
            "ingested: {} new, {} changed, {} unchanged, {} bad input, {} skipped files; {} chunks; {} jobs published",
            summary.new,
            summary.changed,
            summary.unchanged,
            summary.bad_input,
            summary.skipped,
            summary.chunks,
            summary.jobs_published
        );
    }
    Ok(if summary.bad_input > 0 { 1 } else { 0 })
}

fn jsonl_options(args: &IngestArgs) -> JsonlOptions {
    let mut o = JsonlOptions::new(args.id_field.clone(), args.text_field.clone());
    if let Some(t) = &args.title_field {
        o = o.with_title_field(t.clone());
    }
    o
}

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Which queue to work: extract or classify.
    pub task: Task,
    /// Jobs in flight at once (also the broker prefetch); 1 to 1024.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: Option<u16>,
    /// Exit 0 once no job has arrived for this many seconds (for batch runs); 0 to 604800
    /// (a week).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=604_800))]
    pub exit_when_idle: Option<u64>,
}

/// Exit code of a worker that stopped because the provider refuses the deployment
/// (`RELATA_WORKER_ON_PROVIDER_REFUSAL=exit`); its jobs are still queued.
pub const EXIT_PROVIDER_REFUSED: u8 = 3;

/// `relata worker`.
pub async fn worker(config: &Config, args: WorkerArgs) -> Result<u8> {
    let mut settings = config.worker(args.task)?;
    if let Some(c) = args.concurrency {
        settings.concurrency = c;
    }
    settings.exit_when_idle = args.exit_when_idle.map(Duration::from_secs);
    let model_config = config.model()?;
    let gate = config.gate()?;
    let addr = config.metrics_addr;

    let policy = config.policy()?;
    let mut registry = Registry::default();
    let model_metrics = ModelMetrics::register(&mut registry);
    let job_metrics = JobMetrics::register(&mut registry);
    let promotion_metrics = relata_worker::PromotionMetrics::register(&mut registry);
    ChecksConfigured(&gate).emit(&job_metrics);
    let model = ModelClient::new(model_config, model_metrics).context("model client")?;
    let readiness = Readiness::default();
    // The store first: a database that is missing or not migrated must stop the worker
    // before it serves /healthz as if it could work.
    let store = store(config).await?;
    let (bound, server) = relata_worker::serve(addr, Arc::new(registry), readiness.clone())
        .await
        .with_context(|| format!("cannot listen on {addr} for /metrics"))?;
    tracing::info!(%bound, "serving /metrics, /healthz, /readyz");

    // The promoter has its own small pool: its transactions never take a connection a
    // commit is waiting for, and its failures never reach the job loop.
    let promoter = if config.review.promoter {
        let promoter_store = connect_pool(config, &config.promoter_store_options()).await?;
        let promoter = relata_worker::Promoter::new(
            promoter_store,
            policy,
            relata_worker::PromoterSettings {
                interval: config.review.promote_interval_ms.duration(),
                batch: i64::from(config.review.promote_batch),
                stale_after: config.review.stale_after_hours.duration(),
            },
            promotion_metrics,
        );
        let proposals = promoter.proposals();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(promoter.run(
            async move {
                let _ = stopped.await;
            },
            Duration::from_secs(10),
        ));
        Some((stop, task, proposals))
    } else {
        tracing::info!(
            "no promoter in this worker ([review] promoter = false): its candidates wait for another worker's promoter or `relata promote`"
        );
        None
    };

    let broker = broker(config).await?;
    let mut worker = Worker::new(settings, store, broker, model, gate, job_metrics, readiness);
    if let Some((_, _, proposals)) = &promoter {
        worker = worker.with_proposals(proposals.clone());
    }
    let worker = Arc::new(worker);
    let run = worker.run(crate::signal::shutdown()).await;
    if let Some((stop, task, _)) = promoter {
        let _ = stop.send(());
        let _ = task.await;
    }
    server.abort();
    match run {
        Ok(summary) => {
            let outcomes: Vec<String> = summary
                .outcomes
                .iter()
                .map(|(outcome, n)| format!("{n} {outcome}"))
                .collect();
            tracing::info!(
                "worker stopped: {}; {} abandoned at the shutdown deadline",
                if outcomes.is_empty() {
                    "no jobs".to_owned()
                } else {
                    outcomes.join(", ")
                },
                summary.abandoned
            );
            Ok(0)
        }
        Err(e @ relata_worker::WorkerError::ProviderRefused(_)) => {
            tracing::error!(error = %e, exit = EXIT_PROVIDER_REFUSED, "worker stopped");
            eprintln!("error: {e}");
            Ok(EXIT_PROVIDER_REFUSED)
        }
        Err(e) => Err(e.into()),
    }
}

/// Exit code of `relata status` when the broker could not be asked for queue depths (the
/// store's part is still printed).
pub const EXIT_STATUS_NO_BROKER: u8 = 1;

/// `relata status`.
pub async fn status(config: &Config, json: bool) -> Result<u8> {
    let store = store(config).await?;
    let status = store.status().await?;
    // A status is a glance: a few seconds to reach the broker, not a worker's patience.
    let broker_config = relata_queue::BrokerConfig {
        connect_retry_max_ms: 3_000,
        ..config.broker()
    };
    let depths = match Broker::connect(broker_config).await {
        Ok(b) => {
            let d = b.queue_depths().await;
            b.close().await;
            d.map_err(|e| format!("{e}"))
        }
        Err(e) => Err(format!(
            "cannot reach RabbitMQ at {}: {e}",
            redact_url(&config.amqp_url)
        )),
    };
    if let Err(e) = &depths {
        eprintln!("warning: queue depths unavailable: {e}");
    }
    let code = if depths.is_ok() {
        0
    } else {
        EXIT_STATUS_NO_BROKER
    };
    let depths = depths.ok();
    if json {
        let queues: Vec<_> = depths
            .iter()
            .flatten()
            .map(|q| serde_json::json!({"queue": q.name, "messages": q.messages, "consumers": q.consumers}))
            .collect();
        let out = serde_json::json!({"store": status, "queues": queues});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(code);
    }
    outln!("queues:")?;
    match &depths {
        Some(d) => {
            for q in d {
                let n = q.messages.map_or("missing".to_string(), |m| m.to_string());
                let c = q
                    .consumers
                    .map_or(String::new(), |c| format!(" ({c} consumers)"));
                outln!("  {:<40} {n}{c}", q.name)?;
            }
        }
        None => outln!("  (broker unavailable)")?,
    }
    outln!("jobs:")?;
    for j in &status.jobs {
        outln!("  {:<9} {:<8} {}", j.task, j.state, j.count)?;
    }
    if !status.dead_letters.is_empty() {
        outln!("dead letters:")?;
        for d in &status.dead_letters {
            outln!("  {:<9} {:<20} {}", d.task, d.reason, d.count)?;
        }
    }
    outln!("unpublished jobs: {}", status.unpublished)?;
    outln!("candidates:")?;
    if status.candidates.is_empty() {
        outln!("  (none)")?;
    }
    for c in &status.candidates {
        outln!("  {:<9} {:<9} {}", c.kind, c.state, c.count)?;
    }
    outln!(
        "waiting for review: {} (`relata review list`)",
        status.review_pending
    )?;
    let r = &status.invalid_last_24h;
    let pct = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), |x| format!("{:.1}%", x * 100.0));
    outln!(
        "invalid output, last {} h: {} of {} responses had a rejection ({}); {} of {} rows rejected ({})",
        r.window_hours,
        r.responses_with_rejection,
        r.responses,
        pct(r.response_rate),
        r.rejections,
        r.rejections + r.accepted_rows,
        pct(r.row_rate)
    )?;
    Ok(code)
}

/// `relata export`: JSONL on stdout.
pub async fn export(config: &Config, all_versions: bool, include_pending: bool) -> Result<()> {
    let store = store(config).await?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // The configured model's task versions supersede older results; without a model name
    // the newest completed result of each chunk and pair wins.
    let current = match (
        config.task_version(Task::Extract),
        config.task_version(Task::Classify),
    ) {
        (Ok(extract), Ok(classify)) => relata_store::CurrentVersions {
            extract: Some(extract.fingerprint()),
            classify: Some(classify.fingerprint()),
        },
        _ => relata_store::CurrentVersions::default(),
    };
    let mut records = std::pin::pin!(store.export_versions(all_versions, include_pending, current));
    while let Some(record) = records.next().await {
        serde_json::to_writer(&mut out, &record?)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(crate::out::stdout_error)?;
    }
    out.flush().map_err(crate::out::stdout_error)?;
    Ok(())
}
