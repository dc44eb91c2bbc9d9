//! The promotion gate through the `relata` binary: the policy, the review queue, named
//! reviewers, export of promoted rows, and `evidence verify` catching a tampered row.

use std::time::Duration;

use relata_core::Task;

use relata_testkit::FakeOptions;

use crate::common::{CURIE_A, CURIE_B, Env, corpus_path, route, sample};
use crate::flow::TOWER;

/// The flow's model, with every classified pair contradicting: which pairs a classify job
/// asks for depends on the order extractions finish, and every one of them must then wait
/// for a person.
fn options() -> FakeOptions {
    let mut o = crate::flow::options();
    o.routes[0] = route(
        "Requested pairs",
        r#"{"relations":[{"a":"C1","b":"C2","relation":"contradicts"},{"a":"C1","b":"C3","relation":"contradicts"},{"a":"C2","b":"C3","relation":"contradicts"}]}"#,
    );
    o
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Ingest the flow corpus and let both workers finish it.
async fn worked(env: &Env) {
    env.write_doc("curie-a.txt", CURIE_A);
    env.write_doc("curie-b.md", CURIE_B);
    let corpus = env.write_doc("tower.txt", TOWER);
    let extract = env.spawn_worker(Task::Extract);
    let classify = env.spawn_worker(Task::Classify);
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.wait_for_jobs(Task::Extract, 3, Duration::from_secs(60))
        .await;
    env.wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
        .await;
    assert_eq!(extract.terminate(), Some(0));
    assert_eq!(classify.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_flow_end_to_end() {
    let mut env = Env::new(options(), vec![]).await;
    env.set("RELATA_REVIEWERS", "Ada Lovelace, Grace Hopper");
    // Workers without their promoters: `relata promote` alone judges this run.
    env.set("RELATA_PROMOTER", "false");
    worked(&env).await;

    // The workers' candidates, whatever their state.
    let all = env.export();
    let rows = |records: &[serde_json::Value], kind: &str| {
        records
            .iter()
            .filter(|r| r["kind"] == kind)
            .cloned()
            .collect::<Vec<_>>()
    };
    let claims = rows(&all, "claim");
    let relations = rows(&all, "relation");
    assert_eq!(claims.len(), 3, "{all:?}");
    assert!(relations.len() >= 2, "{all:?}");

    // Nothing was judged while the workers ran; `relata promote` judges it all, and then
    // there is nothing left to judge.
    assert!(
        all.iter()
            .filter(|r| r["kind"] != "document")
            .all(|r| r["state"] == "proposed"),
        "{all:?}"
    );
    let first_pass = json(&env.relata(&["promote", "--json"]));
    assert_ne!(first_pass["decided"], serde_json::json!([]), "{first_pass}");
    let again = json(&env.relata(&["promote", "--json"]));
    assert_eq!(again["decided"], serde_json::json!([]), "{again}");

    // Default export: promoted only. The two contradicts relations wait for a person.
    let exported = env.export_with(&[]);
    assert_eq!(rows(&exported, "claim").len(), 3);
    assert!(
        rows(&exported, "claim")
            .iter()
            .all(|c| c["state"] == "promoted")
    );
    assert!(rows(&exported, "relation").is_empty(), "{exported:?}");
    let everything = env.export();
    let pending: Vec<_> = rows(&everything, "relation")
        .into_iter()
        .filter(|r| r["state"] == "pending")
        .collect();
    assert_eq!(pending.len(), relations.len(), "{everything:?}");

    // The review queue as JSON: id, kind, state, reasons and the row itself.
    let queue = json(&env.relata(&["review", "list", "--json"]));
    let queue = queue.as_array().unwrap();
    assert_eq!(queue.len(), relations.len(), "{queue:?}");
    for item in queue {
        assert_eq!(item["kind"], "relation");
        assert_eq!(item["state"], "pending");
        assert_eq!(
            item["reasons"],
            serde_json::json!(["relation: contradicts"])
        );
        assert_eq!(item["row"]["relation"], "contradicts");
        assert!(item["row"]["statement_a"].is_string(), "{item}");
        let id = item["id"].as_str().unwrap();
        assert!(id.starts_with("relation:"), "{id}");
        assert_eq!(id, format!("relation:{}", item["row"]["id"]));
    }
    let first = queue[0]["id"].as_str().unwrap().to_owned();
    let second = queue[1]["id"].as_str().unwrap().to_owned();
    let by_kind = json(&env.relata(&["review", "list", "--kind", "claim", "--json"]));
    assert_eq!(by_kind, serde_json::json!([]));
    let by_source = json(&env.relata(&["review", "list", "--source", "wiki", "--json"]));
    assert_eq!(by_source.as_array().unwrap().len(), relations.len());
    let text = env.relata(&["review", "list"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&first));
    let shown = env.relata(&["review", "show", &first]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("policy rule: relations"), "{shown}");
    assert!(shown.contains("model call"), "{shown}");

    // Nobody outside the list, and nobody unnamed, decides.
    for by in ["Mallory", "", "  "] {
        let out = env.relata(&["review", "approve", &first, "--by", by]);
        assert_eq!(out.status.code(), Some(2), "{by:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--by")
                && (err.contains("not a configured reviewer") || err.contains("must be named")),
            "{err}"
        );
    }
    // A rejection must say why.
    let out = env.relata(&["review", "reject", &first, "--by", "Ada Lovelace"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = env.relata(&[
        "review",
        "reject",
        &first,
        "--by",
        "Ada Lovelace",
        "--note",
        " ",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--note"), "{}", stderr(&out));
    // A bad id is named.
    let out = env.relata(&["review", "approve", "relation-1", "--by", "Ada Lovelace"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("KIND:ID"), "{}", stderr(&out));

    // Approve one, reject the other.
    let out = env.relata(&[
        "review",
        "approve",
        &first,
        "--by",
        "Ada Lovelace",
        "--note",
        "both sources checked",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("promoted by Ada Lovelace"));
    let out = env.relata(&[
        "review",
        "reject",
        &second,
        "--by",
        "Grace Hopper",
        "--note",
        "misread",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Decided once: a second decision is refused, exit 1, nothing recorded.
    let out = env.relata(&["review", "approve", &second, "--by", "Ada Lovelace"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already decided: rejected"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        json(&env.relata(&["review", "list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        relations.len() - 2
    );

    let exported = env.export_with(&[]);
    let rels = rows(&exported, "relation");
    assert_eq!(rels.len(), 1, "{exported:?}");
    assert_eq!(format!("relation:{}", rels[0]["id"]), first);

    let history = json(&env.relata(&["evidence", "history", "--id", &first, "--json"]));
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["actor"], "Ada Lovelace");
    assert_eq!(history[1]["decision"], "approve");
    assert_eq!(history[1]["note"], "both sources checked");

    let status = env.relata(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("candidates:"), "{status}");
    assert!(
        status.contains(&format!("waiting for review: {}", relations.len() - 2)),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.contains("relation") && l.contains("rejected") && l.trim().ends_with(" 1")),
        "{status}"
    );

    let out = env.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("verified"));

    // A claim edited with plain SQL is caught, by record.
    let store = env.store().await;
    let claim_id = claims[0]["id"].as_i64().unwrap();
    sqlx::query("UPDATE claims SET statement = statement || ' (edited)' WHERE id = $1")
        .bind(claim_id)
        .execute(store.pool())
        .await
        .unwrap();
    let out = env.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("evidence record") && err.contains(&format!("claim:{claim_id}")),
        "{err}"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_cannot_be_loaded_stops_relata_naming_the_problem() {
    let env = Env::new(options(), vec![]).await;
    let config = env.dir.join("relata.toml");
    for (text, needle) in [
        (
            "[policy]\nrules = [{ name = \"all\", decision = \"allow-everything\" }]\n",
            "line 2",
        ),
        (
            "[policy]\nrules = [{ name = \"x\", relation = \"contradicts\", entity_type = \"person\", decision = \"allow\" }]\n",
            "can never both hold",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        for args in [&["promote"][..], &["worker", "extract"][..]] {
            let out = env
                .command(args)
                .env("RELATA_CONFIG", &config)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        }
    }
}

/// Wait until the worker's metrics satisfy `ok`.
async fn metrics_until(worker: &crate::common::Worker, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let m = worker.metrics().await;
        if ok(&m) {
            return m;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "metrics never got there: {m}\nlog:\n{}",
            worker.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_promote_in_the_background_and_a_review_store_that_cannot_decide_blocks_nothing() {
    let mut env = Env::new(options(), vec![]).await;
    env.set("RELATA_PROMOTE_INTERVAL_MS", "100");
    env.set("RELATA_REVIEW_STALE_AFTER_HOURS", "2");
    env.write_doc("curie-a.txt", CURIE_A);
    env.write_doc("curie-b.md", CURIE_B);
    let corpus = env.write_doc("tower.txt", TOWER);

    // The promotion tables are locked against writes for the whole run (reads still
    // work): no decision can be recorded.
    let store = env.store().await;
    let mut conn = store.pool().acquire().await.unwrap();
    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    sqlx::query("LOCK TABLE promotions, evidence, evidence_head IN EXCLUSIVE MODE")
        .execute(&mut *conn)
        .await
        .unwrap();

    let extract = env.spawn_worker(Task::Extract);
    let classify = env.spawn_worker(Task::Classify);
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Extraction and classification complete regardless.
    env.wait_for_jobs(Task::Extract, 3, Duration::from_secs(60))
        .await;
    env.wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
        .await;
    let m = extract.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_promotion_decisions_total",
            &[("kind", "claim"), ("decision", "allow")]
        ),
        0.0,
        "nothing can be promoted while decisions cannot be recorded: {m}"
    );
    let states: Vec<String> = sqlx::query_scalar("SELECT DISTINCT state FROM candidate_states")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert_eq!(states, ["proposed"]);
    assert!(
        env.export_with(&[]).iter().all(|r| r["kind"] == "document"),
        "export shows nothing unpromoted"
    );

    // The store can record decisions again: the promoters catch up on their own.
    sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();
    drop(conn);
    let m = metrics_until(&extract, |m| {
        sample(m, "relata_review_pending", &[("kind", "relation")]) >= 2.0
    })
    .await;
    assert_eq!(
        sample(&m, "relata_review_stale_after_seconds", &[]),
        7200.0,
        "{m}"
    );
    let decided = |m: &str, kind: &str, decision: &str| {
        sample(
            m,
            "relata_promotion_decisions_total",
            &[("kind", kind), ("decision", decision)],
        )
    };
    let m2 = classify.metrics().await;
    // Both promoters share the work; neither decides a candidate twice.
    assert_eq!(
        decided(&m, "claim", "allow") + decided(&m2, "claim", "allow"),
        3.0,
        "{m}\n{m2}"
    );
    assert_eq!(
        decided(&m, "relation", "review") + decided(&m2, "relation", "review"),
        sample(&m, "relata_review_pending", &[("kind", "relation")]),
        "{m}\n{m2}"
    );
    assert_eq!(
        sample(&m, "relata_review_pending", &[("kind", "claim")]),
        0.0
    );
    assert!(
        sample(
            &m,
            "relata_review_oldest_pending_age_seconds",
            &[("kind", "relation")]
        ) >= 0.0
    );
    assert_eq!(extract.terminate(), Some(0));
    assert_eq!(classify.terminate(), Some(0));
    let exported = env.export_with(&[]);
    assert_eq!(exported.iter().filter(|r| r["kind"] == "claim").count(), 3);
    let out = env.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    store.close().await;
}

/// A worker's promoter judges what its jobs commit from what the commits returned, not by
/// reading it back: with a single extract worker and nothing else sweeping, its claims
/// are decided `from="commit"`, no hand-off is dropped, and the log verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_judges_the_rows_it_commits_from_what_the_commit_returned() {
    let mut env = Env::new(options(), vec![]).await;
    env.set("RELATA_PROMOTE_INTERVAL_MS", "100");
    let corpus = env.write_doc("curie-a.txt", CURIE_A);
    let extract = env.spawn_worker(Task::Extract);
    let out = env.relata(&["ingest", corpus_path(&corpus), "--source", "wiki"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    let m = metrics_until(&extract, |m| {
        sample(
            m,
            "relata_promotion_decisions_total",
            &[("kind", "claim"), ("decision", "allow")],
        ) >= 1.0
    })
    .await;
    assert_eq!(
        sample(&m, "relata_promotion_handoffs_dropped_total", &[]),
        0.0,
        "{m}"
    );
    let log = extract.log_text();
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("promotion decisions recorded"))
        .collect();
    assert!(
        decided
            .iter()
            .any(|l| l.contains(r#"kind="claim""#) && l.contains(r#"from="commit""#)),
        "{log}"
    );
    assert_eq!(extract.terminate(), Some(0));
    let states: Vec<serde_json::Value> = env
        .export()
        .into_iter()
        .filter(|r| r["kind"] == "claim" || r["kind"] == "entity")
        .collect();
    assert!(!states.is_empty());
    assert!(
        states.iter().all(|r| r["state"] == "promoted"),
        "{states:?}"
    );
    let out = env.relata(&["evidence", "verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
