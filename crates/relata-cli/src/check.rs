//! `relata check`.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> ExitCode {
    eprintln!("relata check: not implemented yet");
    ExitCode::from(2)
}
