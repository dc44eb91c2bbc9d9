//! `relata`: the command-line interface. Errors become exit codes and messages here and
//! only here.
// A function over 100 lines (clippy's default threshold) is split by concern; tests are
// exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod answer;
mod backfill;
mod check;
mod config;
mod entities;
mod ingest;
mod out;
mod pipeline;
mod probe;
mod propose;
mod report;
mod review;
mod signal;

use std::path::PathBuf;

/// relata turns a corpus into entities, claims and relations by asking a language model
/// for structured data — and never trusting what the model says.
#[derive(Debug, Parser)]
#[command(name = "relata", version, about, long_about = None)]
struct Cli {
    /// A TOML configuration file; `RELATA_*` environment variables override it.
    #[arg(long, global = true, env = "RELATA_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Judge one raw model response with the validation gate, row by row (for debugging a
    /// prompt). Exit 0 accepted, 3 partial, 4 rejected, 2 usage error.
    Check(check::CheckArgs),
    /// Model endpoint commands.
    #[command(subcommand)]
    Model(ModelCommand),
    /// Create the database if it is missing and apply the schema migrations.
    Migrate,
    /// Read a corpus (a directory, a JSONL file or JSONL on stdin), store new and changed
    /// documents, and publish one extract job per chunk that has none for the current task
    /// version. Safe to re-run and to schedule: an unchanged corpus publishes nothing, and
    /// one run per source at a time holds a lock. Exit 0 done, 1 some input was bad (it is
    /// named on stderr; the rest is ingested), 2 could not run, 75 another run of the same
    /// source holds the lock (--wait waits instead).
    Ingest(pipeline::IngestArgs),
    /// Work a queue: extract (entities and claims from chunks) or classify (relations
    /// between claim pairs). Serves /metrics, /healthz and /readyz. SIGTERM or Ctrl-C
    /// stops consuming and lets in-flight jobs finish.
    Worker(pipeline::WorkerArgs),
    /// Queue depths, jobs by state, dead letters and the invalid-output rate of the last
    /// 24 hours. Exit 0, 1 when the broker could not be reached (the store's part is still
    /// printed), 2 on errors.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-run a task over stored inputs under the current task version (after a prompt,
    /// schema or model change, or for what failed before), selected by source, ingestion
    /// time, previous state and version; paced, resumable, never publishing a job twice for
    /// the same task version. Exit 0 done, 2 error, 75 another backfill of the task is
    /// running, 130 interrupted (re-run to continue).
    Backfill(backfill::BackfillArgs),
    /// Validation failure rates by day, task, prompt version and model, with the top
    /// rejection reasons. --check-doubling exits 1 when the last 24 hours' rate is more than
    /// twice the baseline's (with enough volume), 0 otherwise.
    Report(report::ReportArgs),
    /// Write documents, entities, claims and relations as JSONL (one record per line, with
    /// a `kind` field) to stdout: the current task version's promoted results, superseding
    /// older ones.
    Export {
        /// Include every row: superseded document revisions and older task versions.
        #[arg(long)]
        all_versions: bool,
        /// Include candidates that are not promoted (pending review, rejected, denied, not
        /// yet judged), each with its `state`.
        #[arg(long)]
        include_pending: bool,
    },
    /// Canonical entities: list them with every mention and why it joined, re-resolve the
    /// store (the backfill after a rule change), or undo a join in a reviewer's name.
    #[command(subcommand)]
    Entities(entities::EntitiesCommand),
    /// The review queue: list, show, approve and reject candidates the policy held for a
    /// person. Exit 1 when a decision was refused (nothing is recorded then).
    #[command(subcommand)]
    Review(review::ReviewCommand),
    /// The evidence log of every promotion decision: verify the hash chain and the sources
    /// it vouches for (exit 1 naming the first mismatch), show history.
    #[command(subcommand)]
    Evidence(review::EvidenceCommand),
    /// Run the promotion policy now over every candidate without a decision (workers do
    /// this in the background). Exit 1 when the evidence log does not end where its head
    /// says (the record is named; nothing more is recorded until `relata evidence verify`
    /// has been looked at).
    Promote {
        #[arg(long)]
        json: bool,
    },
    /// Answer a question from the stored documents, citing them by handle (S1, S2, …).
    /// Prints the answer with its sources resolved, or — when the model's answer fails
    /// validation — no prose, the sources, the contradictions and the reasons. Exit 0 for
    /// every outcome (answered, abstained, degraded), 69 when the model is unavailable,
    /// 2 for a bad question or any other error.
    Ask(answer::AskArgs),
    /// Serve answers over HTTP: POST /v1/answers, GET /healthz, /readyz, /metrics.
    /// SIGTERM or Ctrl-C stops accepting and lets requests in flight finish.
    Serve(answer::ServeArgs),
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Check a model endpoint before a run: reachable, model present, one structured
    /// request round-trips. Exit 0 only when it does.
    Probe(probe::ProbeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => return check::run(args, cli.config.as_deref()),
        Command::Model(ModelCommand::Probe(args)) => return probe::run(args),
        _ => {}
    }
    if let Err(e) = init_tracing() {
        eprintln!("error: {e:#}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let config = config::Config::load(cli.config.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Migrate => pipeline::migrate(&config).await.map(|()| 0),
            Command::Ingest(args) => pipeline::ingest_cmd(&config, args).await,
            Command::Worker(args) => pipeline::worker(&config, args).await,
            Command::Status { json } => pipeline::status(&config, json).await,
            Command::Export {
                all_versions,
                include_pending,
            } => pipeline::export(&config, all_versions, include_pending)
                .await
                .map(|()| 0),
            Command::Entities(cmd) => entities::run(&config, cmd).await,
            Command::Review(cmd) => review::review(&config, cmd).await,
            Command::Evidence(cmd) => review::evidence(&config, cmd).await,
            Command::Promote { json } => review::promote(&config, json).await,
            Command::Backfill(args) => backfill::run(&config, args).await,
            Command::Report(args) => report::run(&config, args).await,
            Command::Ask(args) => answer::ask(&config, args).await,
            Command::Serve(args) => answer::serve(&config, args).await,
            Command::Check(_) | Command::Model(_) => Ok(0),
        }
    })
}

/// Logs go to stderr (stdout is for command output such as `export`). `RELATA_LOG` sets
/// the filter (default `info`); `RELATA_LOG_FORMAT=json` gives one JSON object per line.
/// A filter or format that cannot be read is refused: silently logging at another level
/// is how an operator misses the line they were looking for.
fn init_tracing() -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    // lapin logs its own failures as Rust debug dumps (`method=Close { reply_code: … }`);
    // relata reports each of them once, in words, so lapin is silent unless a filter
    // names it (`RELATA_LOG=info,lapin=debug`).
    let mut log = config::LogSettings::default();
    log.read_env(&|k| std::env::var(k).ok())?;
    let v = log.filter.trim();
    let directives = if v.contains("lapin") {
        v.to_owned()
    } else {
        format!("{v},lapin=off")
    };
    let filter = EnvFilter::try_new(&directives).map_err(|e| {
        anyhow::anyhow!(
            "RELATA_LOG={v:?} is not a log filter ({e}); use a level such as info or debug, or directives such as relata_worker=debug,info"
        )
    })?;
    let json = match log.format.trim() {
        "json" => true,
        "text" => false,
        _ => anyhow::bail!(
            "RELATA_LOG_FORMAT={:?} is not a log format: use text or json",
            log.format
        ),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
    Ok(())
}
