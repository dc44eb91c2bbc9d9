//! Every schema relata sends, compiled and enforced by the real structured-output engines.
//!
//! Users run relata against OpenAI, vLLM (xgrammar or llguidance underneath), Ollama and
//! llama.cpp's `llama-server` (llama.cpp's C++ converter), and llama-cpp-python (its own
//! converter). This test builds every schema relata sends under settings a user can pick
//! — every extract prompt a dialect takes, for a sample of real chunks (the longest
//! summaries among them) and a chunk with a sentence as long as the contract allows;
//! classify; answer; join; the probe — and asks each engine two questions: does it compile the
//! schema, and does the grammar it compiles accept a conforming instance and refuse each
//! violating one (a string one character over its `maxLength`, an unknown or missing
//! property, one array item too many, a value outside an enum)? OpenAI cannot be run
//! here: its documented strict subset is checked by `relata_model::portable`.
//!
//! `extract-p3` is the control: its tuple schema is refused by llama.cpp and by OpenAI's
//! subset, and xgrammar compiles it but drops the `maxLength` beside each `pattern` —
//! each seen here, so a check that could not fail would show.
//!
//! Ignored by default; `scripts/test` runs it with the engines from
//! `scripts/engines/setup.sh` (`RELATA_LLAMA_SCHEMA_CHECK`, `RELATA_ENGINES_PYTHON`,
//! `RELATA_LLAMA_PYTHON`) and the corpus from `scripts/real-model.sh`
//! (`RELATA_REAL_MODEL_SUMMARIES`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod instances;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use relata_core::{Handle, SourceHandle, Task};
use relata_model::{
    AnswerPrompt, AnswerSource, ClassifyClaim, Dialect, ExtractPrompt, JOIN_PROMPT_VERSION,
    JoinSide, PROBE_DOCUMENT, answer_messages, classify_messages, extract_messages, join_messages,
    portable, schema_sent, schema_sha256,
};
use serde_json::Value;

/// One schema as sent, with the instances the engines are asked about.
#[derive(Debug, Clone)]
struct Case {
    id: String,
    /// What sends it: `extract-p4/json_schema`, `classify/json_object_schema`, …
    family: String,
    schema: Value,
    accept: Vec<String>,
    reject: Vec<String>,
}

/// What one engine said about one case.
#[derive(Debug, Clone, serde::Deserialize)]
struct Verdict {
    id: String,
    compiled: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    accepted: Vec<Option<bool>>,
    #[serde(default)]
    refused: Vec<Option<bool>>,
}

impl Verdict {
    /// Compiled, matched every conforming instance and refused every violating one (an
    /// engine that cannot match strings, `None`, answers for compiling only).
    fn enforces(&self) -> bool {
        self.compiled
            && self.accepted.iter().all(|a| a.unwrap_or(true))
            && self.refused.iter().all(|r| r.unwrap_or(true))
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run `eval \"$(scripts/engines/setup.sh)\"` (and scripts/real-model.sh)")
    })
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The chunks of the sample: 12 summaries in file order, the 12 longest, 6 with quotes,
/// brackets or non-Latin text, and one with a sentence at the contract's quote bound.
fn chunks() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(env("RELATA_REAL_MODEL_SUMMARIES")).unwrap();
    let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let docs: Vec<(String, String)> = all
        .iter()
        .filter_map(|(t, v)| Some((t.clone(), v["extract"].as_str()?.to_owned())))
        .filter(|(_, x)| !x.trim().is_empty())
        .collect();
    let mut out: Vec<(String, String)> = docs.iter().take(12).cloned().collect();
    let mut longest = docs.clone();
    longest.sort_by_key(|(_, x)| std::cmp::Reverse(x.len()));
    out.extend(longest.into_iter().take(12));
    out.extend(
        docs.iter()
            .filter(|(_, x)| x.contains(['"', '[', '(']) && !x.is_ascii())
            .take(6)
            .cloned(),
    );
    let long_sentence = format!(
        "The Long Sentence Society was founded in Lisbon, {} and it met every year.",
        "with members from many countries and traditions, ".repeat(38)
    );
    out.push(("The Long Sentence Society".into(), long_sentence));
    out
}

/// Every sent schema, deduplicated by its sha256 (the families that send it listed).
fn sent_schemas() -> BTreeMap<String, (BTreeSet<String>, Value)> {
    let mut out: BTreeMap<String, (BTreeSet<String>, Value)> = BTreeMap::new();
    let mut add = |family: String, schema: Option<Value>| {
        let schema = schema.expect("a dialect that sends a schema");
        let entry = out
            .entry(schema_sha256(&schema))
            .or_insert_with(|| (BTreeSet::new(), schema));
        entry.0.insert(family);
    };
    let dialects = [Dialect::JsonSchema, Dialect::JsonObjectSchema];
    for (title, text) in chunks() {
        for prompt in ExtractPrompt::ALL {
            for dialect in dialects {
                // extract-p3 is refused with json_schema; with json_object_schema it
                // reaches llama-cpp-python only, and is this test's control.
                if prompt.refusal(dialect).is_some() || *prompt == ExtractPrompt::P3 {
                    continue;
                }
                let m = extract_messages(*prompt, dialect, &text, Some(&title));
                add(
                    format!("{prompt}/{dialect}"),
                    schema_sent(dialect, &prompt.contract(), &m),
                );
            }
        }
    }
    let claims = [1, 2, 3].map(|n| ClassifyClaim {
        handle: Handle::nth(n),
        statement: format!("Claim number {n} says something about Paris."),
    });
    let pairs = [
        (Handle::nth(1), Handle::nth(2)),
        (Handle::nth(2), Handle::nth(3)),
    ];
    let sources = [1, 2].map(|n| AnswerSource {
        handle: SourceHandle::nth(n),
        title: Some(format!("Source {n}")),
        text: "Marie Curie was born in Warsaw in 1867.".into(),
    });
    for dialect in dialects {
        let m = classify_messages(dialect, &claims, &pairs);
        add(
            format!("classify/{dialect}"),
            schema_sent(dialect, &relata_core::Contract::current(Task::Classify), &m),
        );
        for prompt in AnswerPrompt::ALL {
            let m = answer_messages(*prompt, dialect, "Where was Marie Curie born?", &sources);
            add(
                format!("{prompt}/{dialect}"),
                schema_sent(dialect, &prompt.contract(), &m),
            );
        }
        let sides = [
            ("Treaty of Paris", "Philippine Revolution", 1),
            ("Treaty of Paris", "Benjamin Franklin", 2),
        ]
        .map(|(name, title, n)| JoinSide {
            name: name.into(),
            entity_type: relata_core::EntityType::Event,
            title: Some(title.into()),
            sentences: vec![(
                SourceHandle::nth(n),
                format!("The {title} article names the {name}."),
            )],
        });
        add(
            format!("{JOIN_PROMPT_VERSION}/{dialect}"),
            schema_sent(
                dialect,
                &relata_core::Contract::current(Task::Join),
                &join_messages(dialect, &sides),
            ),
        );
        let m = extract_messages(ExtractPrompt::default(), dialect, PROBE_DOCUMENT, None);
        add(
            format!("probe/{dialect}"),
            schema_sent(dialect, &ExtractPrompt::default().contract(), &m),
        );
    }
    out
}

/// `extract-p3`'s schema for a few chunks, as llama-cpp-python is sent it: the control.
fn p3_schemas() -> Vec<Value> {
    chunks()
        .into_iter()
        .take(3)
        .map(|(title, text)| {
            let d = Dialect::JsonObjectSchema;
            let m = extract_messages(ExtractPrompt::P3, d, &text, Some(&title));
            schema_sent(d, &ExtractPrompt::P3.contract(), &m).unwrap()
        })
        .collect()
}

fn case(id: String, family: String, schema: Value) -> Case {
    let valid = instances::valid(&schema);
    let accept: Vec<String> = valid.iter().map(Value::to_string).collect();
    let reject: Vec<String> = valid
        .map(|v| instances::violations(&schema, &v))
        .unwrap_or_default()
        .iter()
        .map(Value::to_string)
        .collect();
    Case {
        id,
        family,
        schema,
        accept,
        reject,
    }
}

/// Run one engine (a command reading cases as JSON lines) over `cases`.
fn run(engine: &str, mut cmd: Command, cases: &[Case]) -> BTreeMap<String, Verdict> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{engine}: cannot start: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input: String = cases
        .iter()
        .map(|c| {
            serde_json::json!({"id": c.id, "schema": c.schema, "accept": c.accept, "reject": c.reject})
                .to_string()
                + "\n"
        })
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{engine} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: BTreeMap<String, Verdict> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Verdict =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{engine}: {e}: {l}"));
            (v.id.clone(), v)
        })
        .collect();
    assert_eq!(verdicts.len(), cases.len(), "{engine} answered every case");
    verdicts
}

fn python(var: &str, engine: &str) -> Command {
    let mut c = Command::new(env(var));
    c.arg(repo().join("scripts/engines/check-schemas.py"))
        .arg(engine);
    c
}

/// The engines, each as the command that asks it.
fn engines() -> Vec<(&'static str, Command)> {
    vec![
        ("llama.cpp", Command::new(env("RELATA_LLAMA_SCHEMA_CHECK"))),
        ("xgrammar", python("RELATA_ENGINES_PYTHON", "xgrammar")),
        ("llguidance", python("RELATA_ENGINES_PYTHON", "llguidance")),
        (
            "llama-cpp-python",
            python("RELATA_LLAMA_PYTHON", "llama-cpp-python"),
        ),
    ]
}

#[test]
#[ignore = "needs the engines of scripts/engines/setup.sh and the corpus"]
fn engines_compile_and_enforce_every_sent_schema() {
    let mut cases: Vec<Case> = sent_schemas()
        .into_iter()
        .map(|(sha, (families, schema))| {
            let family = families.into_iter().collect::<Vec<_>>().join(",");
            case(format!("sent-{}", &sha[..12]), family, schema)
        })
        .collect();
    let controls: Vec<Case> = p3_schemas()
        .into_iter()
        .enumerate()
        .map(|(i, s)| case(format!("p3-{i}"), "extract-p3 (control)".into(), s))
        .collect();
    let sent = cases.len();
    cases.extend(controls.iter().cloned());
    for c in &cases {
        assert!(
            !c.accept.is_empty() || c.family.contains("p3"),
            "{} ({}): no conforming instance could be made",
            c.id,
            c.family
        );
    }
    let instances: usize = cases.iter().map(|c| c.accept.len() + c.reject.len()).sum();
    eprintln!(
        "{sent} sent schemas and {} controls, {instances} instances",
        controls.len()
    );

    let mut failures = Vec::new();
    for c in cases.iter().filter(|c| !c.id.starts_with("p3-")) {
        for p in portable::openai_strict_problems(&c.schema) {
            failures.push(format!("OpenAI subset: {} ({}): {p}", c.id, c.family));
        }
    }
    for c in &controls {
        assert!(
            portable::openai_strict_problems(&c.schema)
                .iter()
                .any(|p| p.contains("prefixItems")),
            "OpenAI's subset refuses extract-p3's tuple"
        );
    }
    for (engine, cmd) in engines() {
        let verdicts = run(engine, cmd, &cases);
        let mut ok = 0;
        for c in cases.iter().filter(|c| !c.id.starts_with("p3-")) {
            let v = &verdicts[&c.id];
            if v.enforces() {
                ok += 1;
                continue;
            }
            failures.push(format!(
                "{engine}: {} ({}): compiled {}, error {:?}, conforming matched {:?}, violations refused {:?}",
                c.id, c.family, v.compiled, v.error, v.accepted, v.refused
            ));
        }
        let controls_refused = controls
            .iter()
            .filter(|c| !verdicts[&c.id].enforces())
            .count();
        eprintln!(
            "{engine}: {ok} of {sent} sent schemas compiled and enforced; extract-p3 refused or not enforced: {controls_refused} of {}",
            controls.len()
        );
        for c in &controls {
            eprintln!("    {engine} on {}: {:?}", c.id, verdicts[&c.id]);
        }
        match engine {
            "llama.cpp" => assert!(
                controls.iter().all(|c| !verdicts[&c.id].compiled),
                "llama.cpp's converter refuses extract-p3's items: false"
            ),
            // Where a statement can run past its maxLength and still match its pattern,
            // xgrammar lets it (it drops the bound beside a pattern).
            "xgrammar" => assert!(
                controls.iter().all(|c| verdicts[&c.id].compiled)
                    && controls.iter().any(|c| !verdicts[&c.id].enforces()),
                "xgrammar compiles extract-p3 but does not enforce its statements' maxLength"
            ),
            // The one server family that takes it, and why extract-p3 stays selectable
            // with json_object_schema.
            "llama-cpp-python" => assert!(
                controls.iter().all(|c| verdicts[&c.id].compiled),
                "llama-cpp-python compiles extract-p3"
            ),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
