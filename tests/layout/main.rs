//! The workspace's dependency rules as a test (the way rust-analyzer's tidy tests hold
//! its architecture): read `cargo metadata` and fail, naming the crate and the rule, when
//! a crate depends on one it must not. ARCHITECTURE.md states the same rules in prose.
//!
//! Every workspace member must have an entry in [`WORKSPACE_RULES`]: a new crate is a
//! new boundary, and whoever adds it says what it may use.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// For each workspace crate, the workspace crates it may use as normal (non-dev)
/// dependencies.
const WORKSPACE_RULES: &[(&str, &[&str])] = &[
    // The vocabulary: depends on nothing of relata.
    ("relata-core", &[]),
    // The gate: pure, knows only the vocabulary.
    ("relata-validate", &["relata-core"]),
    // Only the model crate knows the OpenAI wire format; it knows nothing of the gate,
    // the broker or the store.
    ("relata-model", &["relata-core"]),
    ("relata-queue", &["relata-core"]),
    ("relata-store", &["relata-core", "relata-validate"]),
    // Publishing ledger jobs: the store's ledger and the broker, nothing above them.
    (
        "relata-dispatch",
        &["relata-core", "relata-queue", "relata-store"],
    ),
    // The operational endpoints (/metrics, /healthz, /readyz) shared by every server:
    // HTTP and the metrics registry only; a server says what "ready" means.
    ("relata-ops", &[]),
    // Readers and chunking: no database, no broker.
    ("relata-producer", &["relata-core"]),
    // The job runtime; never the producer or the binary.
    (
        "relata-worker",
        &[
            "relata-core",
            "relata-validate",
            "relata-model",
            "relata-queue",
            "relata-store",
            "relata-dispatch",
            "relata-ops",
        ],
    ),
    // The answer path: the gate, the model and the store; never the broker.
    (
        "relata-answer",
        &[
            "relata-core",
            "relata-validate",
            "relata-model",
            "relata-store",
            "relata-ops",
        ],
    ),
    (
        "relata-cli",
        &[
            "relata-answer",
            "relata-core",
            "relata-validate",
            "relata-model",
            "relata-queue",
            "relata-store",
            "relata-dispatch",
            "relata-producer",
            "relata-worker",
            "relata-review-web",
        ],
    ),
    // The review page: reaches the promotion store only through the store crate's calls;
    // never the model, the broker or the gate.
    ("relata-review-web", &["relata-core", "relata-store"]),
    (
        "relata-testkit",
        &["relata-core", "relata-queue", "relata-store"],
    ),
    // Benchmarks; the gate only to time the answer gate in process (`relata-bench answer`)
    // and to judge what a copying model could store (`relata-bench ceiling`, with the
    // schema the model crate sends and the producer's chunks), the answer crate only to
    // measure its answerability test (`relata-bench retrieval`).
    (
        "relata-bench",
        &[
            "relata-answer",
            "relata-core",
            "relata-model",
            "relata-producer",
            "relata-queue",
            "relata-store",
            "relata-testkit",
            "relata-validate",
        ],
    ),
    ("relata-tests", &[]),
];

/// Third-party crates only some workspace crates may use as normal dependencies.
const EXTERNAL_RULES: &[(&str, &[&str], &str)] = &[
    (
        "anyhow",
        &["relata-cli", "relata-bench", "relata-testkit"],
        "library errors are thiserror enums that say whether they are retryable",
    ),
    ("lapin", &["relata-queue"], "only relata-queue knows lapin"),
    ("sqlx", &["relata-store"], "only relata-store knows SQL"),
    (
        "reqwest",
        &["relata-model", "relata-bench"],
        "only relata-model talks HTTP to a model server",
    ),
];

/// Crates that do no IO must not use these (no network, no files, no async runtime).
const IO_CRATES: &[&str] = &[
    "tokio", "futures", "sqlx", "lapin", "reqwest", "axum", "hyper",
];
const PURE: &[&str] = &["relata-core", "relata-validate"];

struct Dep {
    name: String,
    /// `None` for normal dependencies, `Some("dev")`, `Some("build")`.
    kind: Option<String>,
}

fn metadata() -> BTreeMap<String, Vec<Dep>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: BTreeSet<&str> = v["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["id"].as_str().unwrap()))
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| Dep {
                    name: d["name"].as_str().unwrap().to_owned(),
                    kind: d["kind"].as_str().map(str::to_owned),
                })
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

fn normal(deps: &[Dep]) -> impl Iterator<Item = &str> {
    deps.iter()
        .filter(|d| d.kind.is_none())
        .map(|d| d.name.as_str())
}

/// Every broken rule, one sentence each, so one run shows them all.
fn violations(crates: &BTreeMap<String, Vec<Dep>>) -> Vec<String> {
    let rules: BTreeMap<&str, &[&str]> = WORKSPACE_RULES.iter().copied().collect();
    let mut found = Vec::new();
    for (name, deps) in crates {
        let Some(allowed) = rules.get(name.as_str()) else {
            found.push(format!(
                "{name} has no entry in WORKSPACE_RULES (tests/layout/main.rs): say which \
                 workspace crates it may use"
            ));
            continue;
        };
        for dep in normal(deps) {
            if crates.contains_key(dep) && !allowed.contains(&dep) {
                found.push(format!("{name} must not depend on {dep}"));
            }
            if dep == "relata-testkit" && name != "relata-bench" {
                found.push(format!(
                    "{name} depends on relata-testkit outside [dev-dependencies]"
                ));
            }
        }
        for (external, users, why) in EXTERNAL_RULES {
            if normal(deps).any(|d| d == *external) && !users.contains(&name.as_str()) {
                found.push(format!("{name} must not depend on {external}: {why}"));
            }
        }
        if PURE.contains(&name.as_str()) {
            for dep in normal(deps) {
                if IO_CRATES.contains(&dep) {
                    found.push(format!("{name} does no IO, so it must not depend on {dep}"));
                }
            }
        }
    }
    found
}

#[test]
fn workspace_crates_depend_only_on_what_their_rules_allow() {
    let crates = metadata();
    assert!(
        crates.contains_key("relata-core") && crates.contains_key("relata-cli"),
        "cargo metadata did not list the workspace: {:?}",
        crates.keys().collect::<Vec<_>>()
    );
    let found = violations(&crates);
    assert!(
        found.is_empty(),
        "dependency rules broken:\n  {}",
        found.join("\n  ")
    );
}

/// The rules are live: a workspace that breaks each kind of rule is caught.
#[test]
fn each_kind_of_rule_catches_its_breach() {
    let dep = |name: &str| Dep {
        name: name.to_owned(),
        kind: None,
    };
    let mut crates = BTreeMap::new();
    crates.insert("relata-core".to_owned(), vec![dep("tokio")]);
    crates.insert("relata-worker".to_owned(), vec![dep("relata-producer")]);
    crates.insert("relata-producer".to_owned(), vec![dep("relata-store")]);
    crates.insert("relata-validate".to_owned(), vec![dep("sqlx")]);
    crates.insert("relata-model".to_owned(), vec![dep("anyhow")]);
    crates.insert("relata-store".to_owned(), vec![dep("relata-testkit")]);
    crates.insert("relata-testkit".to_owned(), vec![]);
    crates.insert("relata-newcomer".to_owned(), vec![]);
    // Dev-dependencies are free.
    crates.insert(
        "relata-queue".to_owned(),
        vec![Dep {
            name: "relata-testkit".to_owned(),
            kind: Some("dev".to_owned()),
        }],
    );
    let found = violations(&crates);
    let expect = [
        "relata-core does no IO, so it must not depend on tokio",
        "relata-worker must not depend on relata-producer",
        "relata-producer must not depend on relata-store",
        "relata-validate must not depend on sqlx",
        "relata-validate does no IO, so it must not depend on sqlx",
        "relata-model must not depend on anyhow",
        "relata-store must not depend on relata-testkit",
        "relata-store depends on relata-testkit outside [dev-dependencies]",
        "relata-newcomer has no entry in WORKSPACE_RULES",
    ];
    for e in expect {
        assert!(
            found.iter().any(|f| f.starts_with(e)),
            "expected {e:?} in {found:#?}"
        );
    }
    assert_eq!(found.len(), expect.len(), "{found:#?}");
}
