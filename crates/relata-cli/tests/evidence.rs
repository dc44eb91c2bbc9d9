//! `relata evidence verify` and decisions on the command line, as processes against a
//! real PostgreSQL: what verify checks and prints, how a decision is recorded, and what
//! a damaged log does to the next one. The store is seeded through its own API and
//! damaged with plain SQL, as a database user could.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::process::{Command, Output};

use chrono::Utc;
use relata_core::{EXTRACT_V1, Policy, Rule, TaskVersion};
use relata_store::{ChunkSpan, CommitOutcome, NewModelCall, Store};
use relata_testkit::harness::{Services, TestDatabase};
use relata_validate::{GateConfig, judge_extract};

/// A migrated database (by `relata migrate`) and the store on it; the guard drops the
/// database after the pool.
struct Db {
    store: Store,
    guard: TestDatabase,
}

async fn db() -> Db {
    let guard = TestDatabase::create(&Services::from_env(), "cli_evidence")
        .await
        .expect("test PostgreSQL reachable (scripts/ensure-services.sh)");
    let out = relata(guard.url(), &["migrate"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = Store::connect(guard.url()).await.unwrap();
    Db { store, guard }
}

impl Db {
    fn relata(&self, args: &[&str]) -> Output {
        relata(self.guard.url(), args)
    }

    async fn sql(&self, sql: &str) -> u64 {
        relata_store::testing::execute(&self.store, sql)
            .await
            .unwrap()
    }
}

/// `relata` with no `RELATA_*` from the outside world, on this database, with one
/// reviewer.
fn relata(url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_relata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("RELATA_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args)
        .env("RELATA_DATABASE_URL", url)
        .env("RELATA_REVIEWERS", "Ada Lovelace")
        .env("RELATA_LOG", "warn");
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Ingest a one-chunk document (`source` "wiki") and commit one claim whose statement is
/// its quote; returns the claim's id.
async fn claim_in(store: &Store, doc: &str, text: &str, subject: &str, quote: &str) -> i64 {
    let up = store
        .upsert_document(
            "wiki",
            doc,
            Some(doc),
            text,
            &[ChunkSpan {
                start: 0,
                end: text.len(),
            }],
        )
        .await
        .unwrap();
    let chunk = store.load_chunk(up.chunk_ids[0]).await.unwrap();
    let v = TaskVersion::new(&EXTRACT_V1, "extract-p2", "test-model");
    store.ensure_extract_jobs(&v, &[chunk.id]).await.unwrap();
    let job = relata_store::extract_job_id(&v, chunk.id, &chunk.sha256);
    let response = serde_json::json!({
        "entities": [{"name": subject, "type": "person"}],
        "claims": [{"statement": quote, "quote": quote, "subject": subject}],
    })
    .to_string();
    let judged = judge_extract(&GateConfig::default(), &chunk.text, response.as_bytes());
    let now = Utc::now();
    let call = NewModelCall {
        version: v,
        started_at: now,
        finished_at: now,
        attempts: 1,
        prompt_tokens: None,
        completion_tokens: None,
        excerpt: None,
        sent_schema_sha256: None,
    };
    match store
        .commit_extract(&job, &call, &judged, &chunk)
        .await
        .unwrap()
    {
        CommitOutcome::Committed(c) => {
            assert_eq!(c.claim_ids.len(), 1, "the claim is kept: {c:?}");
            c.claim_ids[0]
        }
        other => panic!("expected a commit, got {other:?}"),
    }
}

/// Run a policy: `hold` holds every claim for a person; otherwise every candidate is
/// allowed.
async fn judge(store: &Store, hold: bool) {
    let rules = if hold {
        r#"[{"name": "claims-need-a-person", "kind": "claim", "decision": "review"},
            {"name": "the-rest", "decision": "allow"}]"#
    } else {
        r#"[{"name": "everything", "decision": "allow"}]"#
    };
    let rules: Vec<Rule> = serde_json::from_str(rules).unwrap();
    store
        .promote_pending(
            &Policy::new(rules).unwrap(),
            relata_store::Sweep::batch(1000),
        )
        .await
        .unwrap();
}

/// What a command prints of itself (`id -un`, `uname -n`), trimmed.
fn shell(program: &str, arg: &str) -> String {
    let out = Command::new(program).arg(arg).output().unwrap();
    assert!(out.status.success(), "{program} {arg}: {}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// A decision made with `relata review` records the operating-system user and host
/// beside `--by`. Then one stray record appended with a plain `INSERT`: the next
/// decision, and `relata promote`, are refused (exit 1, as any refused decision) with a
/// sentence naming the record and what to run — not exit 2 with the database's
/// duplicate-key error.
#[tokio::test]
async fn a_decision_names_the_os_user_and_host_and_a_stray_record_refuses_the_next_one() {
    let db = db().await;
    let s = &db.store;
    let a = claim_in(
        s,
        "ada",
        "Ada Lovelace wrote the notes on the engine.",
        "Ada Lovelace",
        "Ada Lovelace wrote the notes on the engine.",
    )
    .await;
    let b = claim_in(
        s,
        "grace",
        "Grace Hopper built the first compiler.",
        "Grace Hopper",
        "Grace Hopper built the first compiler.",
    )
    .await;
    judge(s, true).await;

    let (ida, idb) = (format!("claim:{a}"), format!("claim:{b}"));
    let out = db.relata(&["review", "approve", &ida, "--by", "Ada Lovelace"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = db.relata(&["evidence", "history", "--id", &ida, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let approved = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(approved["actor"], "Ada Lovelace", "{approved}");
    assert_eq!(approved["via"], "command_line", "{approved}");
    assert_eq!(approved["os_user"], shell("id", "-un"), "{approved}");
    assert_eq!(approved["host"], shell("uname", "-n"), "{approved}");
    let text = stdout(&db.relata(&["evidence", "history", "--id", &ida]));
    assert!(
        text.contains(&format!(
            "on the command line as {}@{}",
            shell("id", "-un"),
            shell("uname", "-n")
        )),
        "{text}"
    );

    // The record after the last one, appended behind relata's back.
    let last: i64 = approved["seq"].as_i64().unwrap();
    let stray = last + 1;
    assert_eq!(
        db.sql(&format!(
            "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
                 task_version, actor_kind, actor, decision, reasons, note, decided_at,
                 prev_sha256, sha256)
             SELECT {stray}, candidate_kind, candidate_id, candidate_sha256, call_id,
                    task_version, 'reviewer', 'Mallory', 'approve', '{{}}', NULL, now(),
                    sha256, sha256
             FROM evidence WHERE seq = {last}"
        ))
        .await,
        1
    );
    let refused = |out: &Output| {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("evidence record {stray} is in the log"))
                && err.contains("run `relata evidence verify`"),
            "{err}"
        );
        assert!(
            !err.contains("duplicate key") && !err.contains("error:"),
            "{err}"
        );
    };
    let out = db.relata(&["review", "approve", &idb, "--by", "Ada Lovelace"]);
    refused(&out);
    assert!(stderr(&out).contains("refused: "), "{}", stderr(&out));
    claim_in(
        s,
        "babbage",
        "Charles Babbage designed the engine.",
        "Charles Babbage",
        "Charles Babbage designed the engine.",
    )
    .await;
    refused(&db.relata(&["promote"]));
    let out = db.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("evidence record {stray}")),
        "{}",
        stderr(&out)
    );
}

/// Verify prints the chain's head; `--expect-head` holds the log to one kept earlier
/// (exit 1 when the log no longer reaches it); an edited document is named by id and
/// revision, exit 1; a malformed head is a usage error (exit 2).
#[tokio::test]
async fn verify_prints_the_head_holds_the_log_to_it_and_names_an_edited_document() {
    let db = db().await;
    let s = &db.store;
    let a = claim_in(
        s,
        "warsaw",
        "Marie Curie was born in Warsaw.",
        "Marie Curie",
        "Marie Curie was born in Warsaw.",
    )
    .await;
    judge(s, false).await;

    let out = db.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("evidence verified: 2 records"), "{text}");
    let head = text
        .lines()
        .find_map(|l| l.strip_prefix("head: "))
        .unwrap_or_else(|| panic!("no head in {text}"))
        .to_owned();
    let (seq, sha) = head.split_once(':').unwrap();
    assert_eq!(seq, "2", "{text}");
    assert_eq!(sha.len(), 64, "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&db.relata(&["evidence", "verify", "--json"]).stdout).unwrap();
    assert_eq!(json["head"]["seq"], 2, "{json}");
    assert_eq!(json["head"]["sha256"], sha, "{json}");

    let out = db.relata(&["evidence", "verify", "--expect-head", &head]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("still holds the head kept earlier (record 2)"),
        "{}",
        stdout(&out)
    );
    let out = db.relata(&["evidence", "verify", "--expect-head", &format!("7:{sha}")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("evidence record 7") && stderr(&out).contains("ends at record 2"),
        "{}",
        stderr(&out)
    );
    let out = db.relata(&["evidence", "verify", "--expect-head", "2:nothex"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("SEQ:SHA256"), "{}", stderr(&out));

    // The document's bytes change under the promoted claim's quote.
    let (document, revision): (i64, i64) = {
        let shown = s
            .review_show(relata_core::CandidateId {
                kind: relata_core::RowKind::Claim,
                id: a,
            })
            .await
            .unwrap()
            .unwrap();
        let row = &shown.candidate.row;
        (
            row["document_id"].as_i64().unwrap(),
            row["revision_id"].as_i64().unwrap(),
        )
    };
    db.sql("UPDATE document_revisions SET text = replace(text, 'Warsaw', 'Berlin')")
        .await;
    let out = db.relata(&["evidence", "verify"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "evidence does not verify: document {document} revision {revision}: "
        )),
        "{err}"
    );
    assert!(!stdout(&out).contains("head:"), "{}", stdout(&out));
}

/// `relata entities`: resolve joins one person named in two documents, `list --json`
/// shows why, a separation in a reviewer's name undoes it, and an unknown reviewer is
/// refused with nothing recorded.
#[tokio::test]
async fn entities_resolve_list_and_separate_on_the_command_line() {
    let db = db().await;
    let text = "Grace Hopper wrote the first compiler.";
    claim_in(
        &db.store,
        "g1",
        text,
        "Grace Hopper",
        "Grace Hopper wrote the first compiler.",
    )
    .await;
    let text = "Grace Hopper joined the navy reserve.";
    claim_in(
        &db.store,
        "g2",
        text,
        "Grace Hopper",
        "Grace Hopper joined the navy reserve.",
    )
    .await;

    let out = db.relata(&["entities", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("no resolved entities"),
        "{}",
        stdout(&out)
    );

    let out = db.relata(&["entities", "resolve"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("2 mentions, 1 canonical entities, 2 rows changed"),
        "{}",
        stdout(&out)
    );
    let out = db.relata(&["entities", "list", "--json", "--name", "hopper"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mentions = listed[0]["mentions"].as_array().unwrap();
    assert_eq!(mentions.len(), 2, "{listed}");
    assert_eq!(mentions[1]["rule"], "same_name");
    let (first, second) = (
        mentions[0]["entity_id"].as_i64().unwrap(),
        mentions[1]["entity_id"].as_i64().unwrap(),
    );
    assert_eq!(mentions[1]["joined_to"], first);

    let (a, b) = (second.to_string(), first.to_string());
    let out = db.relata(&[
        "entities", "separate", &a, "--from", &b, "--by", "Nobody", "--note", "x",
    ]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("--by"), "{}", stderr(&out));
    let out = db.relata(&[
        "entities",
        "separate",
        &a,
        "--from",
        &b,
        "--by",
        "Ada Lovelace",
        "--note",
        "two people of that name",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("2 canonical entities, 1 rows changed"),
        "{}",
        stdout(&out)
    );
    let out = db.relata(&["entities", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
}
