//! The default configuration (`extract-p10`, `relata.extract` v3) through the whole
//! pipeline: claims keyed by sentence handle, a sentence that reads alone as shown taken
//! with a `null` statement, references resolved from the sentence before, entities stored and linked, a statement that keeps its pronoun refused, and
//! pairs only between claims about one entity, held for a person.

use std::time::Duration;

use relata_core::Task;
use relata_testkit::FakeOptions;

use crate::common::{Env, route, sample};

const BRIDGE_A: &str = "The Harbor Bridge is a suspension bridge in Norland. It was designed by the engineer Maria Lindqvist. It opened in 1932.\n";
const BRIDGE_B: &str =
    "The Harbor Bridge crosses the Norland Strait. The bridge was closed in 2001 for repairs.\n";

fn options() -> FakeOptions {
    FakeOptions {
        routes: vec![
            route(
                "Requested pairs",
                r#"{"relations":[{"a":"C1","b":"C2","relation":"supports"}]}"#,
            ),
            // Needles the prompt's own example does not hold (it is about a Harbor Bridge
            // too).
            // extract-p10 shows "It opened" as "Harbor Bridge opened" (its example has
            // "S3: This bridge opened in 1932.").
            route(
                "S3: Harbor Bridge opened in 1932",
                r#"{"entities":[{"name":"Harbor Bridge","type":"work"},{"name":"Norland","type":"location"}],
                    "claims":{"S1":{"subject":"Harbor Bridge","statement":null},
                              "S2":{"subject":"Maria Lindqvist","statement":"Maria Lindqvist designed the Harbor Bridge."},
                              "S3":{"subject":"Harbor Bridge","statement":"It opened in 1932."}}}"#,
            ),
            route(
                "Norland Strait",
                r#"{"entities":[{"name":"Harbor Bridge","type":"work"},{"name":"Norland Strait","type":"location"}],
                    "claims":{"S1":null,
                              "S2":{"subject":"Harbor Bridge","statement":"The Harbor Bridge was closed in 2001 for repairs."}}}"#,
            ),
        ],
        ..FakeOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_prompt_stores_standalone_claims_about_stored_entities() {
    let mut env = Env::new(options(), vec![]).await;
    env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p10");
    let extract = env.spawn_worker(Task::Extract);
    let classify = env.spawn_worker(Task::Classify);
    env.ingest_titled(&[("Harbor Bridge".into(), BRIDGE_A.into())]);
    env.wait_for_jobs(Task::Extract, 1, Duration::from_secs(60))
        .await;
    env.ingest_titled(&[("Norland Strait".into(), BRIDGE_B.into())]);
    let states = env
        .wait_for_jobs(Task::Extract, 2, Duration::from_secs(60))
        .await;
    assert_eq!(states.get("partial"), Some(&1), "{states:?}");
    assert_eq!(states.get("accepted"), Some(&1), "{states:?}");
    env.wait_for_jobs(Task::Classify, 1, Duration::from_secs(60))
        .await;

    // The model saw numbered sentences, each opening "It" shown with the name it stands
    // for, and the schema keyed by their handles.
    let first = env
        .chat_bodies()
        .into_iter()
        .find(|b| b.contains("S3: Harbor Bridge opened in 1932"))
        .unwrap();
    assert!(
        first.contains("S2: Harbor Bridge was designed by the engineer Maria Lindqvist."),
        "{first}"
    );
    assert!(
        first.contains("S3: Harbor Bridge opened in 1932."),
        "{first}"
    );
    assert!(first.contains("relata_extract_v3"), "{first}");

    let m = extract.metrics().await;
    assert_eq!(
        sample(
            &m,
            "relata_model_invalid_output_total",
            &[("task", "extract"), ("reason", "not_standalone")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(extract.terminate(), Some(0));
    assert_eq!(classify.terminate(), Some(0));

    // Every candidate judged by the shipped policy.
    let out = env.relata(&["promote"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = env.export();
    let entities: Vec<_> = records.iter().filter(|r| r["kind"] == "entity").collect();
    let names: Vec<&str> = entities
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // Maria Lindqvist was not listed by the model: a name of the chunk, her claim's
    // subject, she is an entity of her own.
    for n in [
        "Harbor Bridge",
        "Norland",
        "Maria Lindqvist",
        "Norland Strait",
    ] {
        assert!(names.contains(&n), "{n}: {names:?}");
    }
    let claims: Vec<_> = records.iter().filter(|r| r["kind"] == "claim").collect();
    assert_eq!(claims.len(), 3, "{claims:#?}");
    for c in &claims {
        assert!(
            !c["entity_id"].is_null(),
            "every claim links to an entity: {c}"
        );
    }
    // S1's `null` statement is its sentence as shown, stored as the statement.
    let shown = claims
        .iter()
        .find(|c| c["statement"] == "The Harbor Bridge is a suspension bridge in Norland.")
        .unwrap_or_else(|| panic!("{claims:#?}"));
    assert_eq!(shown["quote"], shown["statement"]);
    // "It was designed by …" was read with the sentence before: the stored quote holds both.
    let designed = claims
        .iter()
        .find(|c| c["statement"] == "Maria Lindqvist designed the Harbor Bridge.")
        .unwrap();
    assert_eq!(
        designed["quote"],
        "The Harbor Bridge is a suspension bridge in Norland. It was designed by the engineer Maria Lindqvist."
    );
    // "The bridge was closed …" likewise, from the other document.
    let closed = claims
        .iter()
        .find(|c| c["statement"] == "The Harbor Bridge was closed in 2001 for repairs.")
        .unwrap();
    assert!(
        closed["quote"]
            .as_str()
            .unwrap()
            .starts_with("The Harbor Bridge crosses")
    );

    // One pair: the two claims about the Harbor Bridge from different documents; Maria
    // Lindqvist's claim is about her, and pairs with nothing.
    let relations: Vec<_> = records.iter().filter(|r| r["kind"] == "relation").collect();
    assert_eq!(relations.len(), 1, "{relations:#?}");
    // A relation is the model's inference: held for a person, not promoted.
    assert_eq!(relations[0]["state"], "pending", "{}", relations[0]);
}
