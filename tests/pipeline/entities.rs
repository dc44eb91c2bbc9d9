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

/// The model asked about the pairs no rule decides (`relata entities propose`): a
/// fabricated handle is refused by the gate and recorded once; a verdict with evidence
/// from a sentence it was shown is a proposal held for a person; a second run asks
/// nothing again; once a person approves it, re-resolution joins the two in that
/// person's name with the model's evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_join_waits_for_a_person_and_a_fabricated_handle_is_refused() {
    let extract = |needle: &str, name: &str, entity_type: &str| {
        route(
            needle,
            &serde_json::json!({
                "entities": [{"name": name, "type": entity_type}],
                "claims": [],
            })
            .to_string(),
        )
    };
    let options = FakeOptions {
        models: vec!["fake-model".into()],
        routes: vec![
            // Join requests show each sentence under a handle, `[S1] …`; extraction
            // requests never do.
            route(
                "] Alpha Corporation",
                r#"{"verdict":"one","source":"S7","quote":"Alpha Corporation"}"#,
            ),
            route(
                "] Beta Group",
                r#"{"verdict":"one","source":"S1","quote":"Beta Group"}"#,
            ),
            extract("in 1990", "Alpha Corporation", "organization"),
            extract("in 1995", "Alpha Corporation", "person"),
            extract("in 1992", "Beta Group", "organization"),
            extract("in 1996", "Beta Group", "person"),
        ],
        ..FakeOptions::default()
    };
    let mut env = Env::new(options, vec![]).await;
    let docs = [
        (
            "a1.txt",
            "Alpha Corporation opened an office in Lyon in 1990.\n",
        ),
        ("a2.txt", "Alpha Corporation sang in Paris in 1995.\n"),
        ("b1.txt", "Beta Group opened an office in Rome in 1992.\n"),
        ("b2.txt", "Beta Group painted in Rome in 1996.\n"),
    ];
    let extract_worker = env.spawn_worker(Task::Extract);
    for (file, text) in docs {
        let path = env.write_doc(file, text);
        let out = env.relata(&["ingest", corpus_path(&path), "--source", "wiki"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    env.wait_for_jobs(Task::Extract, 4, Duration::from_secs(60))
        .await;
    resolved_mentions(&env, 4).await;
    drop(extract_worker);
    let out = env.relata(&["entities", "resolve", "--json"]);
    assert_eq!(out.status.code(), Some(0));

    let out = env.relata(&["entities", "propose", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            &s["asked"],
            &s["one"],
            &s["rejected"],
            &s["held_for_review"],
            &s["allowed"]
        ),
        (&2.into(), &1.into(), &1.into(), &1.into(), &0.into()),
        "{s:#}"
    );
    let pairs = s["pairs"].as_array().unwrap();
    let refused = pairs
        .iter()
        .find(|p| p["name"] == "Alpha Corporation")
        .unwrap();
    assert_eq!(refused["outcome"], "rejected");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .starts_with("unknown_handle: "),
        "{refused}"
    );
    let proposed = pairs.iter().find(|p| p["name"] == "Beta Group").unwrap();
    assert_eq!(proposed["outcome"], "one");
    let candidate = proposed["candidate"].as_str().unwrap().to_owned();
    assert!(candidate.starts_with("join:"), "{proposed}");

    // Recorded once: the refusal is an invalid output of task `join`, its call on record.
    let store = env.store().await;
    let (task, reason, outcome): (String, String, String) = sqlx::query_as(
        "SELECT i.task, i.reason, m.outcome FROM invalid_outputs i
         JOIN model_calls m ON m.id = i.call_id WHERE i.task = 'join'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(
        (task.as_str(), reason.as_str(), outcome.as_str()),
        ("join", "unknown_handle", "rejected")
    );

    // Asked again: nothing is asked twice.
    let out = env.relata(&["entities", "propose", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&again["asked"], &again["already_asked"]),
        (&0.into(), &2.into()),
        "{again}"
    );

    // Held, it joins nothing; `review` lists it with the model's evidence.
    let out = env.relata(&["entities", "list", "--name", "beta", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let out = env.relata(&["review", "list", "--kind", "join"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&candidate)
            && shown.contains("are one thing, says the model (evidence \"Beta Group\")"),
        "{shown}"
    );

    // A person approves it: the next resolve joins the two in that person's name.
    env.set("RELATA_REVIEWERS", "Ada Lovelace");
    let out = env.relata(&["review", "approve", &candidate, "--by", "Ada Lovelace"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = env.relata(&["entities", "resolve", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let out = env.relata(&["entities", "list", "--name", "beta", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let out = env.relata(&["entities", "list", "--name", "beta"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("by Ada Lovelace")
            && shown.contains("approved a model's proposal; its evidence: Beta Group"),
        "{shown}"
    );
    let out = env.relata(&["evidence", "verify"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
