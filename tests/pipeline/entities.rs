//! Pairs follow the canonical entity through the workers: a document that says "Alpha
//! Corporation, more commonly known as Alphaco" lets a claim about "Alphaco" in a later
//! document meet a claim about "Alpha Corporation", which the subject's name alone would
//! never pair. The worker's promoter resolves the mentions beside the commits.

use std::time::Duration;

use relata_core::Task;
use relata_testkit::FakeOptions;

use crate::common::{Env, corpus_path, route};

const ALIAS: &str =
    "Alpha Corporation, more commonly known as Alphaco, opened an office in Lyon in 1990.\n";
const SHORT: &str = "Alphaco opened an office in Lyon in 1991.\n";

fn options() -> FakeOptions {
    FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            route(
                "Requested pairs",
                r#"{"relations":[{"a":"C1","b":"C2","relation":"contradicts"}]}"#,
            ),
            route(
                "more commonly known as",
                r#"{"entities":[{"name":"Alpha Corporation","type":"organization"},{"name":"Alphaco","type":"organization"}],
                    "claims":[{"statement":"Alpha Corporation opened an office in Lyon in 1990.","quote":"Alpha Corporation, more commonly known as Alphaco, opened an office in Lyon in 1990.","subject":"Alpha Corporation"}]}"#,
            ),
            route(
                "in 1991",
                r#"{"entities":[{"name":"Alphaco","type":"organization"}],
                    "claims":[{"statement":"Alphaco opened an office in Lyon in 1991.","quote":"Alphaco opened an office in Lyon in 1991.","subject":"Alphaco"}]}"#,
            ),
        ],
        ..FakeOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alias_the_text_gives_pairs_claims_across_documents() {
    let mut env = Env::new(options(), vec![]).await;
    let first = env.write_doc("alpha.txt", ALIAS);
    // One document at a time, so the second is resolved against the first.
    let extract = env.spawn_worker(Task::Extract);
    let out = env.relata(&["ingest", corpus_path(&first), "--source", "wiki"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let states = env
        .wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("accepted"), Some(&1), "{states:?}");
    // The worker's promoter places the mentions beside the commits.
    resolved_mentions(&env, 2).await;
    let second = env.write_doc("alphaco.txt", SHORT);
    let out = env.relata(&["ingest", corpus_path(&second), "--source", "wiki"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let states = env
        .wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("accepted"), Some(&2), "{states:?}");

    // The promoter placed every mention: one entity, three mentions.
    let listed = resolved_mentions(&env, 3).await;
    let entities = listed.as_array().unwrap();
    assert_eq!(entities.len(), 1, "{listed}");
    assert_eq!(
        entities[0]["names"],
        serde_json::json!(["Alpha Corporation", "Alphaco"])
    );
    assert_eq!(
        entities[0]["mentions"].as_array().unwrap().len(),
        3,
        "{listed}"
    );

    // And the two claims were paired for classification through it.
    let classify = env.spawn_worker(Task::Classify);
    let states = env
        .wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
        .await;
    assert_eq!(states.values().sum::<i64>(), 1, "{states:?}");
    let export = env.export();
    let relations: Vec<_> = export.iter().filter(|r| r["kind"] == "relation").collect();
    assert_eq!(relations.len(), 1, "{export:#?}");
    assert_eq!(relations[0]["relation"], "contradicts");
    let claims: Vec<_> = export.iter().filter(|r| r["kind"] == "claim").collect();
    assert_eq!(claims.len(), 2);
    // The alias carries what its document says it is short for; the other mentions say
    // nothing and carry nothing.
    let described: Vec<(&str, &serde_json::Value)> = export
        .iter()
        .filter(|r| r["kind"] == "entity")
        .map(|r| (r["name"].as_str().unwrap(), &r["resolution"]["described"]))
        .collect();
    assert_eq!(
        described,
        [
            ("Alpha Corporation", &serde_json::Value::Null),
            (
                "Alphaco",
                &serde_json::json!({"longer": "alpha corporation"})
            ),
            ("Alphaco", &serde_json::Value::Null),
        ],
        "{export:#?}"
    );
    assert_eq!(
        claims[0]["canonical_id"], claims[1]["canonical_id"],
        "{claims:#?}"
    );
    // Nothing more to resolve: the full resolve agrees with what the promoter did.
    let out = env.relata(&["entities", "resolve", "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["changed"], 0, "{summary}");
    drop((extract, classify));

    // A person undoes the join of the later "Alphaco", then makes it again: each decision
    // in a reviewer's name, the later one holding, and `list` says who and why.
    let mentions = entities[0]["mentions"].as_array().unwrap();
    let id = |k: usize| mentions[k]["entity_id"].as_i64().unwrap().to_string();
    let (first, later) = (id(0), id(2));
    let refused = env.relata(&[
        "entities",
        "join",
        &later,
        "--to",
        &first,
        "--by",
        "Ada Lovelace",
        "--note",
        "one",
    ]);
    assert_eq!(refused.status.code(), Some(2), "no reviewer is configured");
    env.set("RELATA_REVIEWERS", "Ada Lovelace");
    for (what, flag, note, apart) in [
        ("separate", "--from", "another company", true),
        ("join", "--to", "the same company, renamed", false),
    ] {
        let out = env.relata(&[
            "entities",
            what,
            &later,
            flag,
            &first,
            "--by",
            "Ada Lovelace",
            "--note",
            note,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = env.relata(&["entities", "list", "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            listed.as_array().unwrap().len(),
            if apart { 2 } else { 1 },
            "{listed}"
        );
    }
    // The one pair the names put in doubt was decided by a person: nothing waits.
    let out = env.relata(&["entities", "undecided", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let waiting: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(waiting, serde_json::json!([]));
    let out = env.relata(&["entities", "undecided"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing waits for a person"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = env.relata(&["entities", "list", "--name", "alphaco"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("by Ada Lovelace: \"the same company, renamed\""),
        "{shown}"
    );
}

/// `relata entities list --json` once `n` mentions are resolved (within a minute).
async fn resolved_mentions(env: &Env, n: usize) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let out = env.relata(&["entities", "list", "--json"]);
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let resolved: usize = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["mentions"].as_array().unwrap().len())
            .sum();
        if resolved >= n {
            return listed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{resolved} of {n} mentions resolved: {listed}\n{}",
            env.worker_logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
