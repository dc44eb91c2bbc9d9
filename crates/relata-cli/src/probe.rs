//! `relata model probe`.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {}

pub fn run(_args: ProbeArgs) -> ExitCode {
    eprintln!("relata model probe: not implemented yet");
    ExitCode::from(2)
}
