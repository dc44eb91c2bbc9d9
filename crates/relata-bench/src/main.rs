//! relata-bench: measured, repeatable figures for BENCHMARKS.md and RELIABILITY.md.
//!
//! Every subcommand creates its own database and queue prefix, talks only to 127.0.0.1,
//! is bounded in count and time, and removes what it created. Workers are the real
//! `relata` binary, run as processes (found next to this binary, or `--relata`).
//!
//! - `overhead`: pipeline overhead at concurrency 1, 8, 32 against the floor.
//! - `corpus`: the real corpus (Wikipedia summaries) with the instant grounded fake.
//! - `real`: the real model over a sample: acceptance by reason, and saturation against
//!   a direct load generator sending the same bodies.
//! - `reliability`: the fault scenarios, one row each (scripts/reliability).
//! - `retrieval`: recall of the labelled question set's gold passages (no model).
//! - `quality`: the labelled question set asked of the real model: answered, abstained and
//!   degraded shares, answers matching the gold answer, citations flagged unsupported.
//! - `ceiling`: what a model that only copies sentences could store under the shipped
//!   gate (no model, no store).
//! - `answer`: the answer path's own cost (retrieval + validation, and the whole
//!   `POST /v1/answers`) with an instant fake model over a few hundred documents.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod answer;
mod ceiling;
mod overhead;
mod quality;
mod real;
mod reliability;
mod responder;
mod retrieval;
mod world;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "relata-bench",
    about = "relata's benchmarks and reliability suite"
)]
struct Cli {
    /// The relata binary to run (default: next to this one).
    #[arg(long, global = true)]
    relata: Option<PathBuf>,
    /// Keep the databases and queues created (for inspection).
    #[arg(long, global = true)]
    keep: bool,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SizeArg {
    Small,
    Large,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Pipeline overhead and the floor.
    Overhead {
        /// Chunks (one per synthetic document) per run.
        #[arg(long, default_value_t = 3000)]
        chunks: usize,
        #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
        concurrency: Vec<u16>,
        /// Run the worker without its promoter (`RELATA_PROMOTER=false`): the pipeline
        /// before promotion, for the before/after of its cost.
        #[arg(long)]
        no_promoter: bool,
        /// Run both arms, promoter off and on, this many times each at every concurrency,
        /// alternated (off, on, then on, off, …) so that a drift of the machine falls on
        /// both; then print their medians. Skips the floor.
        #[arg(long, conflicts_with = "no_promoter")]
        pairs: Option<usize>,
    },
    /// The real corpus with the instant grounded fake model.
    Corpus {
        /// The summaries JSON (RELATA_REAL_MODEL_SUMMARIES).
        #[arg(long, env = "RELATA_REAL_MODEL_SUMMARIES")]
        summaries: PathBuf,
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long, default_value_t = 8)]
        concurrency: u16,
    },
    /// The real model (RELATA_MODEL_URL etc., from scripts/real-model.sh) over a sample.
    Real {
        #[arg(long, env = "RELATA_REAL_MODEL_SUMMARIES")]
        summaries: PathBuf,
        #[arg(long, default_value_t = 20)]
        docs: usize,
        #[arg(long, default_value_t = 2)]
        concurrency: u16,
        /// Skip replaying the requests directly (the saturation figure): halves the run.
        #[arg(long)]
        no_direct: bool,
    },
    /// The answer path's own cost with an instant fake model.
    Answer {
        /// Documents ingested, extracted and promoted before the questions.
        #[arg(long, default_value_t = 300)]
        docs: usize,
        /// Questions asked, one at a time.
        #[arg(long, default_value_t = 200)]
        questions: usize,
    },
    /// Retrieval against the labelled question set: recall of the gold passages, no
    /// model asked.
    Retrieval {
        #[command(flatten)]
        set: QuestionSetArgs,
    },
    /// Answer quality on the labelled question set with the real model the environment
    /// names (RELATA_MODEL_URL etc., from scripts/real-model.sh).
    Quality {
        #[command(flatten)]
        set: QuestionSetArgs,
        /// Ask every N-th answerable question (and every other question).
        #[arg(long, default_value_t = 7,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        every: usize,
    },
    /// What a model that only picks a subject and points at its sentence could store:
    /// every subject the extract schema allows, statement `null`, judged by the shipped
    /// gate. No model, no store.
    Ceiling {
        /// The summaries file (title → {title, extract}).
        #[arg(long, env = "RELATA_REAL_MODEL_SUMMARIES")]
        summaries: PathBuf,
        /// The first N summaries in title order (as `real` takes them).
        #[arg(long, default_value_t = 24)]
        docs: usize,
        /// Print every sentence with its outcome.
        #[arg(long)]
        show: bool,
    },
    /// The reliability scenarios.
    Reliability {
        #[arg(long, value_enum, default_value = "small")]
        size: SizeArg,
        /// Run only this scenario.
        #[arg(long)]
        only: Option<String>,
    },
}

/// The labelled question set, its corpus and the passages asked per question.
#[derive(Debug, clap::Args)]
struct QuestionSetArgs {
    /// The summaries file the set's corpus rule picks from.
    #[arg(long, env = "RELATA_REAL_MODEL_SUMMARIES")]
    summaries: PathBuf,
    #[arg(long, default_value = "tests/data/questions.json")]
    questions: PathBuf,
    /// Passages retrieved per question (the answer path's `k`, 1..=20).
    #[arg(long, default_value_t = 8,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=20))]
    k: usize,
}

/// `overhead --pairs N`: both arms alternated, then their medians.
async fn overhead_pairs(
    relata: &std::path::Path,
    chunks: usize,
    concurrency: &[u16],
    pairs: usize,
    keep: bool,
) -> Result<()> {
    println!("promoter: off and on, {pairs} alternated pairs per concurrency");
    overhead::print_header();
    for &c in concurrency {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for i in 0..pairs {
            let order = if i % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for promoter in order {
                let run = overhead::run_one(relata, chunks, c, promoter, keep).await?;
                overhead::print_run(promoter, c, &run, None);
                if promoter {
                    on.push(run);
                } else {
                    off.push(run);
                }
            }
        }
        overhead::print_pairs(c, &off, &on);
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The one subcommand that runs no relata process.
    if let Cmd::Ceiling {
        summaries,
        docs,
        show,
    } = &cli.command
    {
        println!(
            "machine: {}; load average {}",
            world::machine(),
            world::loadavg()
        );
        return ceiling::run(summaries, *docs, *show);
    }
    let relata = world::relata_binary(cli.relata.as_deref())?;
    println!(
        "machine: {}; load average {}; relata {}",
        world::machine(),
        world::loadavg(),
        relata.display()
    );
    match cli.command {
        Cmd::Overhead {
            chunks,
            concurrency,
            no_promoter,
            pairs,
        } => {
            if let Some(pairs) = pairs {
                overhead_pairs(&relata, chunks, &concurrency, pairs.max(1), cli.keep).await?;
            } else {
                println!(
                    "promoter: {}",
                    if no_promoter {
                        "off (RELATA_PROMOTER=false)"
                    } else {
                        "on"
                    }
                );
                overhead::print_header();
                for c in concurrency {
                    let run = overhead::run_one(&relata, chunks, c, !no_promoter, cli.keep).await?;
                    let floor = overhead::floor(&relata, run.jobs as usize, 10, c).await?;
                    overhead::print_run(!no_promoter, c, &run, Some(&floor));
                }
            }
        }
        Cmd::Corpus {
            summaries,
            limit,
            concurrency,
        } => {
            real::corpus(&relata, &summaries, limit, concurrency, cli.keep).await?;
        }
        Cmd::Real {
            summaries,
            docs,
            concurrency,
            no_direct,
        } => {
            real::real(&relata, &summaries, docs, concurrency, no_direct, cli.keep).await?;
        }
        Cmd::Answer { docs, questions } => {
            let run = answer::run(&relata, docs, questions, cli.keep).await?;
            answer::print(run);
        }
        Cmd::Ceiling { .. } => unreachable!("handled before a relata binary is looked for"),
        Cmd::Retrieval { set } => {
            retrieval::run(&relata, &set.summaries, &set.questions, set.k, cli.keep).await?;
        }
        Cmd::Quality { set, every } => {
            let QuestionSetArgs {
                summaries,
                questions,
                k,
            } = set;
            quality::run(&relata, &summaries, &questions, k, every, cli.keep).await?;
        }
        Cmd::Reliability { size, only } => {
            let size = match size {
                SizeArg::Small => reliability::Size::Small,
                SizeArg::Large => reliability::Size::Large,
            };
            // Ends with its own `N passed, N failed` line, which must stay the last.
            return reliability::run(&relata, size, only.as_deref()).await;
        }
    }
    println!("done; load average {}", world::loadavg());
    Ok(())
}
