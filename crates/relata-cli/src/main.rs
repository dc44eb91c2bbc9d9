//! `relata`: the command-line interface. Errors become exit codes and messages here and
//! only here.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod probe;

/// relata turns a corpus into entities, claims and relations by asking a language model
/// for structured data — and never trusting what the model says.
#[derive(Debug, Parser)]
#[command(name = "relata", version, about, long_about = None)]
struct Cli {
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
        Command::Check(args) => check::run(args),
        Command::Model(ModelCommand::Probe(args)) => probe::run(args),
    }
}
