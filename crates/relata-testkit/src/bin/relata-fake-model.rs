//! `relata-fake-model`: the fault-injecting fake OpenAI-compatible server as a process,
//! for manual tests of `relata model probe` and the workers.
//!
//! ```text
//! relata-fake-model [--port N] [--script FILE] [--model NAME] [--reject-json-schema]
//! ```
//!
//! The script is JSON: `{"models": [...], "reject_json_schema_dialect": false,
//! "default": BEHAVIOUR, "queue": [BEHAVIOUR, ...]}` where a behaviour is one of
//! `{"kind":"respond","status":200,"body":"...","headers":[["Retry-After","1"]],"delay_ms":0}`,
//! `{"kind":"hang"}`, `{"kind":"reset_mid_body","status":200,"body":"...","after_bytes":10}`,
//! `{"kind":"close_immediately"}`. The base URL is printed on standard output.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use anyhow::{Context, bail};
use relata_testkit::{FakeModelServer, Script};

const USAGE: &str =
    "usage: relata-fake-model [--port N] [--script FILE] [--model NAME] [--reject-json-schema]";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut port = 0u16;
    let mut script = Script::default();
    let mut models = Vec::new();
    let mut reject = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                port = args
                    .next()
                    .context(USAGE)?
                    .parse()
                    .context("--port wants a number")?
            }
            "--script" => {
                let path = args.next().context(USAGE)?;
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading script {path}"))?;
                script = serde_json::from_str(&text)
                    .with_context(|| format!("script {path} is not a valid fake-model script"))?;
            }
            "--model" => models.push(args.next().context(USAGE)?),
            "--reject-json-schema" => reject = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if !models.is_empty() {
        script.options.models = models;
    }
    script.options.reject_json_schema_dialect |= reject;
    let server = FakeModelServer::start_with(script.options, script.queue, port).await?;
    println!("{}", server.base_url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
