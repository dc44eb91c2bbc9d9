//! `relata check`: the validation gate from the command line, for people debugging a
//! prompt.
//!
//! stdout: one JSON object, the gate's [`Report`](relata_validate::Report). stderr: one
//! human line per rejection or warning, with its detail. Exit 0 accepted, 3 partial,
//! 4 rejected, 2 usage error (unreadable file, bad input JSON).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use relata_core::{Handle, Task};
use relata_validate::{
    ClassifyInput, ExtractShape, GateConfig, Report, RowDecision, Verdict, judge_classify,
    judge_extract_as,
};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Which contract the response answers: extract or classify.
    #[arg(long)]
    task: Task,
    /// What the model was shown. extract: {"text": "...", "title": "..."} (the title is
    /// optional: extract-p7 shows sentences with it); classify:
    /// {"claims": {"C1": "statement", ...}, "pairs": [["C1", "C2"], ...]}.
    #[arg(long, value_name = "INPUT.json")]
    input: PathBuf,
    /// The raw model content, byte for byte (may be anything, including invalid UTF-8).
    #[arg(long, value_name = "RESPONSE_FILE")]
    response: PathBuf,
    /// The extraction prompt the response answers (its contract decides the shape:
    /// extract-p1 to extract-p3 copy quotes, extract-p4, extract-p5 and extract-p7 key claims by
    /// sentence handle).
    /// Default: the configured one (RELATA_MODEL_EXTRACT_PROMPT), as a worker would judge.
    #[arg(long, value_name = "PROMPT")]
    prompt: Option<relata_model::ExtractPrompt>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtractInput {
    text: String,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyFile {
    claims: BTreeMap<String, String>,
    pairs: Vec<(String, String)>,
}

pub fn run(args: CheckArgs, config: Option<&Path>) -> ExitCode {
    match check(&args, config) {
        Ok(report) => {
            let code = match report.verdict {
                Verdict::Accepted => 0,
                Verdict::Partial => 3,
                Verdict::Rejected => 4,
            };
            ExitCode::from(code)
        }
        Err(e) => {
            eprintln!("relata check: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// At most `max + 1` bytes of `path`: never the whole of a file of any size, and one byte
/// more than `max` is enough for the caller to tell that it is over.
fn read(path: &Path, what: &str, max: usize) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read {what} {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} {}", path.display()))?;
    Ok(bytes)
}

fn classify_input(file: ClassifyFile) -> anyhow::Result<ClassifyInput> {
    let mut input = ClassifyInput::default();
    for h in file.claims.keys() {
        input.handles.insert(Handle::parse(h)?);
    }
    for (a, b) in &file.pairs {
        let pair = (Handle::parse(a)?, Handle::parse(b)?);
        for h in [pair.0, pair.1] {
            if !input.handles.contains(&h) {
                bail!("pair ({a}, {b}) names {h}, which is not among the claims");
            }
        }
        input.pairs.insert(pair);
    }
    Ok(input)
}

fn check(args: &CheckArgs, config_file: Option<&Path>) -> anyhow::Result<Report> {
    // The workers' `[checks]` settings: a response must be judged here as in production.
    let settings = crate::config::Config::load(config_file)?;
    let config: GateConfig = settings.gate()?;
    let max_input = 16 * relata_producer::corpus::DEFAULT_MAX_TEXT_BYTES;
    let input = read(&args.input, "input", max_input)?;
    if input.len() > max_input {
        bail!(
            "input {} is larger than {max_input} bytes",
            args.input.display()
        );
    }
    // Like a worker, read no more than the gate's bound (and one byte to know it is over):
    // the gate then rejects it `too_large`, as it would in production.
    let raw = read(
        &args.response,
        "response file",
        relata_core::contract::bounds::MAX_RESPONSE_BYTES,
    )?;
    let bad_input = || {
        format!(
            "input {} is not a valid {} input",
            args.input.display(),
            args.task
        )
    };
    let (report, details) = match args.task {
        Task::Extract => {
            let input: ExtractInput = serde_json::from_slice(&input).with_context(bad_input)?;
            let prompt = match args.prompt {
                Some(p) => p,
                None => settings.extract_prompt()?,
            };
            let shape = ExtractShape::of(&prompt.contract()).unwrap_or(ExtractShape::Quotes);
            let j = judge_extract_as(
                &config,
                shape,
                &input.text,
                input.title.as_deref(),
                &raw,
                None,
            );
            (j.report(), details(j.rows(), j.response_rejection()))
        }
        Task::Classify => {
            let file: ClassifyFile = serde_json::from_slice(&input).with_context(bad_input)?;
            let input = classify_input(file).with_context(bad_input)?;
            let j = judge_classify(&config, &input, &raw);
            (j.report(), details(j.rows(), j.response_rejection()))
        }
        Task::Answer => bail!(
            "--task answer: answers are judged on request by `relata ask`; check judges extract and classify responses"
        ),
        Task::Join => bail!(
            "--task join: joins are judged on request by `relata entities propose`; check judges extract and classify responses"
        ),
    };
    let json = serde_json::to_string(&report).context("cannot serialise the report")?;
    crate::out::line(format_args!("{json}"))?;
    let mut err = std::io::stderr().lock();
    for line in details {
        // Best effort: a closed stderr must not change the verdict.
        let _ = writeln!(err, "{line}");
    }
    Ok(report)
}

/// One human line per rejection and per warning.
fn details(
    rows: &[relata_validate::RowOutcome],
    whole: Option<&relata_validate::Rejection>,
) -> Vec<String> {
    if let Some(r) = whole {
        return vec![format!("response rejected: {}: {}", r.reason, r.detail)];
    }
    let mut lines = Vec::new();
    for row in rows {
        if let RowDecision::Rejected { reason, detail } = &row.decision {
            lines.push(format!(
                "{} {} rejected: {reason}: {detail}",
                row.kind, row.index
            ));
        }
        for w in row.warnings() {
            let reason = w.reason.map(|r| format!(" ({r})")).unwrap_or_default();
            lines.push(format!(
                "{} {} warning: {}{reason}: {}",
                row.kind, row.index, w.warning, w.detail
            ));
        }
    }
    lines
}
