//! `relata check` as a process: stdout JSON, stderr messages, exit codes.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

const SOURCE: &str = "Marie Curie was born in Warsaw in 1867.\n\nShe moved to  Paris in 1891.";

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("check-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn relata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relata"))
        .args(args)
        .output()
        .unwrap()
}

fn check(name: &str, task: &str, input: &[u8], response: &[u8]) -> (i32, Value, String) {
    let d = dir(name);
    let i = d.join("input.json");
    let r = d.join("response");
    std::fs::write(&i, input).unwrap();
    std::fs::write(&r, response).unwrap();
    let mut args = vec![
        "check",
        "--task",
        task,
        "--input",
        i.to_str().unwrap(),
        "--response",
        r.to_str().unwrap(),
    ];
    if task == "extract" {
        // These responses copy quotes: relata.extract v1, extract-p1's contract.
        args.extend(["--prompt", "extract-p1"]);
    }
    let out = relata(&args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "one JSON line: {stdout:?} {stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    (out.status.code().unwrap(), report, stderr)
}

fn extract_input() -> Vec<u8> {
    serde_json::to_vec(&json!({ "text": SOURCE })).unwrap()
}

/// The default prompt's contract (extract-p7, `relata.extract` v3): claims keyed by sentence
/// handle, a `null` statement standing for the sentence as shown.
#[test]
fn a_sentence_keyed_response_is_judged_by_the_default_contract() {
    let d = dir("v3");
    let (i, r) = (d.join("input.json"), d.join("response"));
    // The title is what the sentences were shown with.
    std::fs::write(
        &i,
        serde_json::to_vec(&json!({ "text": SOURCE, "title": "Marie Curie" })).unwrap(),
    )
    .unwrap();
    std::fs::write(
        &r,
        r#"{"entities":[{"name":"Marie Curie","type":"person"}],
            "claims":{"S1":{"subject":"Marie Curie","statement":null},"S9":null}}"#,
    )
    .unwrap();
    let out = relata(&[
        "check",
        "--task",
        "extract",
        "--input",
        i.to_str().unwrap(),
        "--response",
        r.to_str().unwrap(),
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["rows"][1]["quote_start"], json!(0));
}

#[test]
fn accepted_extract_exits_0_with_offsets() {
    let response = "```json\n{\"entities\":[{\"name\":\"Marie Curie\",\"type\":\"person\"}],\
        \"claims\":[{\"statement\":\"Curie moved to Paris in 1891.\",\
        \"quote\":\"She moved to Paris in 1891\",\"subject\":\"Marie Curie\"}]}\n```\n";
    let (code, report, stderr) =
        check("accepted", "extract", &extract_input(), response.as_bytes());
    assert_eq!(code, 0, "{stderr}");
    // "She" is read with the sentence before it, which the stored quote takes in.
    let start = 0;
    assert_eq!(
        report,
        json!({
            "task": "extract", "verdict": "accepted", "reason": null,
            "rows": [
                {"kind": "entity", "index": 0, "status": "accepted", "reason": null, "warnings": []},
                {"kind": "claim", "index": 0, "status": "accepted", "reason": null, "warnings": [],
                 "quote_start": start, "quote_end": SOURCE.len() - 1},
            ]
        })
    );
    assert_eq!(
        &SOURCE[start..SOURCE.len() - 1],
        "Marie Curie was born in Warsaw in 1867.\n\nShe moved to  Paris in 1891"
    );
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn partial_extract_exits_3_and_explains_on_stderr() {
    let response = json!({
        "entities": [{"name": "Marie Curie", "type": "person"}, {"name": "Warsaw", "type": "city"}],
        "claims": [
            {"statement": "Curie was born in Warsaw in 1867.", "quote": "born in Warsaw in 1867",
             "subject": "Marie Curie"},
            {"statement": "Curie moved to London in 1891.", "quote": "She moved to London",
             "subject": "Marie Curie"},
            {"statement": "Curie was born in Warsaw in 1868.", "quote": "born in Warsaw in 1867",
             "subject": "Marie Curie"},
        ]
    });
    let (code, report, stderr) = check(
        "partial",
        "extract",
        &extract_input(),
        &serde_json::to_vec(&response).unwrap(),
    );
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(report["verdict"], "partial");
    assert_eq!(report["reason"], Value::Null);
    let rows = report["rows"].as_array().unwrap();
    let summary: Vec<(&str, u64, &str, Value)> = rows
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["index"].as_u64().unwrap(),
                r["status"].as_str().unwrap(),
                r["reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("entity", 0, "accepted", Value::Null),
            ("entity", 1, "rejected", json!("bad_enum")),
            ("claim", 0, "accepted", Value::Null),
            ("claim", 1, "rejected", json!("quote_not_found")),
            ("claim", 2, "rejected", json!("unsupported")),
        ]
    );
    assert!(rows[2]["quote_start"].is_u64());
    assert!(rows[3].get("quote_start").is_none());
    assert!(
        stderr.contains("claim 1 rejected: quote_not_found"),
        "{stderr}"
    );
    // A figure the quote lacks: the support check names it.
    assert!(
        stderr.contains("claim 2 rejected: unsupported") && stderr.contains("1868"),
        "{stderr}"
    );
}

#[test]
fn rejected_responses_exit_4() {
    // Invalid UTF-8, byte for byte from the file.
    let (code, report, stderr) = check(
        "rejected-utf8",
        "extract",
        &extract_input(),
        b"{\"entities\xff",
    );
    assert_eq!(code, 4);
    assert_eq!(
        report,
        json!({"task": "extract", "verdict": "rejected", "reason": "not_json", "rows": []})
    );
    assert!(stderr.contains("response rejected: not_json"), "{stderr}");

    // Classify: every row rejected is `rejected` with no response reason.
    let input = json!({"claims": {"C1": "a", "C2": "b", "C3": "c"}, "pairs": [["C1", "C2"]]});
    let response = json!({"relations": [
        {"a": "C2", "b": "C1", "relation": "supports"},
        {"a": "C1", "b": "C9", "relation": "supports"},
    ]});
    let (code, report, _) = check(
        "rejected-classify",
        "classify",
        &serde_json::to_vec(&input).unwrap(),
        &serde_json::to_vec(&response).unwrap(),
    );
    assert_eq!(code, 4);
    assert_eq!(report["task"], "classify");
    assert_eq!(report["verdict"], "rejected");
    assert_eq!(report["reason"], Value::Null);
    assert_eq!(report["rows"][0]["reason"], "unrequested_pair");
    assert_eq!(report["rows"][1]["reason"], "unknown_handle");
    assert_eq!(report["rows"][1]["kind"], "relation");
}

#[test]
fn accepted_classify_exits_0() {
    let input = json!({"claims": {"C1": "a", "C2": "b"}, "pairs": [["C1", "C2"]]});
    let response = br#"{"relations":[{"a":"C1","b":"C2","relation":"contradicts"}]}"#;
    let (code, report, _) = check(
        "accepted-classify",
        "classify",
        &serde_json::to_vec(&input).unwrap(),
        response,
    );
    assert_eq!(code, 0);
    assert_eq!(report["verdict"], "accepted");
    assert_eq!(report["rows"][0]["status"], "accepted");
}

fn usage_error(args: &[&str]) -> String {
    let out = relata(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let d = dir("usage");
    let good = d.join("input.json");
    std::fs::write(&good, extract_input()).unwrap();
    let response = d.join("response");
    std::fs::write(&response, b"{}").unwrap();
    let missing = d.join("missing");
    let (good, response, missing) = (
        good.to_str().unwrap(),
        response.to_str().unwrap(),
        missing.to_str().unwrap(),
    );

    let msg = usage_error(&[
        "check",
        "--task",
        "extract",
        "--input",
        good,
        "--response",
        missing,
    ]);
    assert!(msg.contains("cannot read response file"), "{msg}");
    assert!(msg.contains("missing"), "{msg}");

    let msg = usage_error(&[
        "check",
        "--task",
        "extract",
        "--input",
        missing,
        "--response",
        response,
    ]);
    assert!(msg.contains("cannot read input"), "{msg}");

    let bad = d.join("bad.json");
    std::fs::write(&bad, b"{\"text\": ").unwrap();
    let bad = bad.to_str().unwrap();
    let msg = usage_error(&[
        "check",
        "--task",
        "extract",
        "--input",
        bad,
        "--response",
        response,
    ]);
    assert!(msg.contains("is not a valid extract input"), "{msg}");

    // An extract input given to classify.
    let msg = usage_error(&[
        "check",
        "--task",
        "classify",
        "--input",
        good,
        "--response",
        response,
    ]);
    assert!(msg.contains("is not a valid classify input"), "{msg}");

    let pairs = d.join("pairs.json");
    std::fs::write(
        &pairs,
        br#"{"claims": {"C1": "a"}, "pairs": [["C1", "C2"]]}"#,
    )
    .unwrap();
    let pairs = pairs.to_str().unwrap();
    let msg = usage_error(&[
        "check",
        "--task",
        "classify",
        "--input",
        pairs,
        "--response",
        response,
    ]);
    assert!(msg.contains("not among the claims"), "{msg}");

    let msg = usage_error(&[
        "check",
        "--task",
        "summarise",
        "--input",
        good,
        "--response",
        response,
    ]);
    assert!(msg.contains("summarise"), "{msg}");

    let msg = usage_error(&["check", "--task", "extract", "--input", good]);
    assert!(msg.contains("--response"), "{msg}");
}

#[test]
fn check_reads_the_workers_check_settings_from_the_config_file() {
    let d = dir("config-checks");
    let i = d.join("input.json");
    let r = d.join("response");
    std::fs::write(&i, extract_input()).unwrap();
    // "N/A" is degenerate: rejected by default, kept with a warning when demoted.
    std::fs::write(
        &r,
        r#"{"entities":[{"name":"N/A","type":"person"}],"claims":{}}"#,
    )
    .unwrap();
    let args = [
        "check",
        "--task",
        "extract",
        "--input",
        i.to_str().unwrap(),
        "--response",
        r.to_str().unwrap(),
    ];
    let out = relata(&args);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let config = d.join("relata.toml");
    std::fs::write(
        &config,
        // A placeholder is no name of the chunk either: that check is off here.
        "[checks.degenerate]\nenabled = true\nseverity = \"warn\"\n\n[checks.name_found]\nenabled = false\nseverity = \"reject\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_relata"))
        .args(args)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("demoted"), "{stderr}");
}

#[test]
fn check_reads_no_more_of_a_response_than_a_worker_would() {
    // An endless response (`/dev/zero`): judged `too_large` from the first bytes past the
    // bound, where reading it whole would never end.
    let d = dir("huge-response");
    let i = d.join("input.json");
    std::fs::write(&i, extract_input()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_relata"))
        .args([
            "check",
            "--task",
            "extract",
            "--input",
            i.to_str().unwrap(),
            "--response",
            "/dev/zero",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("relata check is still reading an endless response");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("too_large"), "{stdout}");
}

/// Answers are judged on request, against the sources retrieved for them: `check` has no
/// way to know those sources, so it refuses rather than judge an answer without them.
#[test]
fn check_refuses_the_answer_task_with_a_message() {
    let d = dir("answer");
    let input = d.join("input.json");
    std::fs::write(&input, extract_input()).unwrap();
    let response = d.join("response");
    std::fs::write(
        &response,
        br#"{"answer": "Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
    )
    .unwrap();
    let msg = usage_error(&[
        "check",
        "--task",
        "answer",
        "--input",
        input.to_str().unwrap(),
        "--response",
        response.to_str().unwrap(),
    ]);
    assert!(msg.contains("--task answer"), "{msg}");
    assert!(msg.contains("relata ask"), "{msg}");
}
