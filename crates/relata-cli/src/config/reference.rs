//! `docs/configuration.md` held to the declarations: its table must list every declared
//! setting once, name no other variable, and state each one's key, default and range as
//! declared. The meaning column is prose and is not compared.

use std::collections::BTreeMap;

use relata_core::settings::{Bounds, Setting};
use relata_model::ModelConfig;

use super::{
    Config, IngestConfig, LogSettings, QueueConfig, ReviewConfig, SupportConfig, WorkerConfig,
};

/// Every declared setting with its default.
fn reference() -> Vec<(&'static Setting, String)> {
    [
        Config::defaults(),
        QueueConfig::defaults(),
        WorkerConfig::defaults(),
        IngestConfig::defaults(),
        SupportConfig::defaults(),
        ReviewConfig::defaults(),
        ModelConfig::defaults(),
        LogSettings::defaults(),
    ]
    .concat()
}

/// One row of the reference as the document writes it.
#[derive(Debug, PartialEq)]
struct Row {
    key: String,
    default: String,
    range: String,
}

/// A cell without its code quotes; `—` (nothing, perhaps with a word on why) as empty.
fn cell(text: &str) -> String {
    let t = text.trim().replace('`', "");
    if t.starts_with('—') {
        String::new()
    } else {
        t
    }
}

/// The rows of the table headed `| variable | key in the file | default | range |`,
/// by variable; a variable listed twice is an error.
fn document_rows(doc: &str) -> Result<BTreeMap<String, Row>, String> {
    let mut rows = BTreeMap::new();
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with("| variable | key in the file | default | range |"));
    lines
        .next()
        .ok_or("no table headed `| variable | key in the file | …`")?;
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').collect();
        let [_, var, key, default, range, ..] = cells[..] else {
            return Err(format!("a row with too few cells: {line}"));
        };
        let row = Row {
            key: cell(key),
            default: cell(default),
            range: cell(range),
        };
        if rows.insert(cell(var), row).is_some() {
            return Err(format!("{} is listed twice", cell(var)));
        }
    }
    Ok(rows)
}

/// Every difference between the document and the declarations.
fn differences(doc: &str) -> Vec<String> {
    let mut rows = match document_rows(doc) {
        Ok(rows) => rows,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    for (setting, default) in reference() {
        let Some(row) = rows.remove(setting.var) else {
            problems.push(format!("{} is declared but not in the table", setting.var));
            continue;
        };
        let key = setting.file_key().unwrap_or_default();
        if row.key != key {
            problems.push(format!(
                "{}: key {:?}, declared {key:?}",
                setting.var, row.key
            ));
        }
        if row.default != default {
            problems.push(format!(
                "{}: default {:?}, declared {default:?}",
                setting.var, row.default
            ));
        }
        // A setting without declared bounds is described in words (`a postgres:// URL`).
        let range = setting.bounds.describe();
        if setting.bounds != Bounds::Any && row.range != range {
            problems.push(format!(
                "{}: range {:?}, declared {range:?}",
                setting.var, row.range
            ));
        }
    }
    for var in rows.keys() {
        problems.push(format!("{var} is in the table but declared nowhere"));
    }
    problems
}

#[test]
fn the_configuration_reference_states_every_declared_setting_as_declared() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
    let doc = std::fs::read_to_string(path).expect("docs/configuration.md");
    let problems = differences(&doc);
    assert!(
        problems.is_empty(),
        "docs/configuration.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn each_kind_of_drift_is_caught() {
    let head =
        "| variable | key in the file | default | range | meaning |\n|---|---|---|---|---|\n";
    let doc = format!(
        "{head}| `RELATA_CANDIDATE_K` | `[worker] candidate_k` | `6` | 1–1000 | x |\n\
         | `RELATA_DELIVERY_LIMIT` | `[queue] delivery_limit` | `5` | 1–100 | x |\n\
         | `RELATA_NOT_A_SETTING` | — | — | | x |\n"
    );
    let problems = differences(&doc).join("\n");
    for needle in [
        "RELATA_CANDIDATE_K: default \"6\", declared \"5\"",
        "RELATA_DELIVERY_LIMIT: range \"1–100\", declared \"1–1000\"",
        "RELATA_NOT_A_SETTING is in the table but declared nowhere",
        "RELATA_WORKER_CONCURRENCY is declared but not in the table",
    ] {
        assert!(
            problems.contains(needle),
            "{needle} missing from:\n{problems}"
        );
    }
}

/// The declared rows, printed for whoever edits the document: `cargo test -p relata-cli
/// print_the_declared_rows -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_the_declared_rows() {
    for (s, default) in reference() {
        let quote = |t: String| {
            if t.is_empty() {
                "—".to_owned()
            } else {
                format!("`{t}`")
            }
        };
        println!(
            "| `{}` | {} | {} | {} | {} |",
            s.var,
            quote(s.file_key().unwrap_or_default()),
            quote(default),
            s.bounds.describe(),
            s.help
        );
    }
}
