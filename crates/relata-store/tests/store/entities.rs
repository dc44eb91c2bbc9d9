//! Canonical entities in the store: the rules join what the text says is one thing, a
//! homonym of another type stays apart, pairs follow the canonical entity, a resolve run
//! twice changes nothing, a person's separation moves a mention back without losing a
//! row, and a person's join does what no rule may (until a later separation undoes it).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relata_store::Store;
use relata_store::entities::{CanonicalEntity, Resolution};

use crate::common::{TestDb, ada, call, classify_version, extract_doc, join_version, via};

/// Commit a one-chunk document `doc` with the given entities (name, type) and one claim
/// about the first; returns (entity ids in order, claim id).
async fn doc_with(s: &Store, doc: &str, text: &str, entities: &[(&str, &str)]) -> (Vec<i64>, i64) {
    let subject = entities[0].0;
    let response = serde_json::json!({
        "entities": entities.iter().map(|(n, t)| serde_json::json!({"name": n, "type": t})).collect::<Vec<_>>(),
        "claims": [{
            "statement": format!("{subject} opened the office called {doc}."),
            "quote": format!("opened the office called {doc}"),
            "subject": subject,
        }],
    })
    .to_string();
    let (_, _, done) = extract_doc(s, doc, text, &response).await;
    assert_eq!(done.entity_ids.len(), entities.len(), "{done:?}");
    assert_eq!(done.claim_ids.len(), 1, "{done:?}");
    (done.entity_ids, done.claim_ids[0])
}

async fn count(s: &Store, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(s.pool())
        .await
        .unwrap()
}

/// The fixture: "Alpha Corporation, more commonly known as Alphaco" in one document,
/// "Alphaco" and "Alpha Corporation" alone in two others, and a person called
/// "Alpha Corporation" (a homonym of another type) in a fourth.
struct World {
    a: (Vec<i64>, i64),
    b: (Vec<i64>, i64),
    c: (Vec<i64>, i64),
    p: (Vec<i64>, i64),
}

async fn world(s: &Store) -> World {
    let a = doc_with(
        s,
        "a1",
        "Alpha Corporation, more commonly known as Alphaco, opened the office called a1 in the city.",
        &[("Alpha Corporation", "organization"), ("Alphaco", "organization")],
    )
    .await;
    let b = doc_with(
        s,
        "b1",
        "Alphaco opened the office called b1 in the city.",
        &[("Alphaco", "organization")],
    )
    .await;
    let c = doc_with(
        s,
        "c1",
        "Alpha Corporation opened the office called c1 in the city.",
        &[("Alpha Corporation", "organization")],
    )
    .await;
    let p = doc_with(
        s,
        "p1",
        "Alpha Corporation opened the office called p1 in the city.",
        &[("Alpha Corporation", "person")],
    )
    .await;
    World { a, b, c, p }
}

#[tokio::test]
async fn the_text_joins_aliases_types_keep_homonyms_apart_and_pairs_follow() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let w = world(s).await;

    // Before resolution pairs go by the subject's name only: Alphaco's claim has no
    // partner, the person's claim pairs with the companies'.
    assert!(s.candidate_pairs(&[w.b.1], 8, &v).await.unwrap().is_empty());
    assert_eq!(s.candidate_pairs(&[w.p.1], 8, &v).await.unwrap().len(), 2);

    let summary = s.resolve_entities().await.unwrap();
    assert_eq!(summary.mentions, 5);
    assert_eq!(summary.canonical_entities, 2, "{summary:?}");
    assert_eq!(summary.by_rule.get("alias_in_text"), Some(&1));
    assert_eq!(summary.by_rule.get("same_name"), Some(&2));
    assert_eq!(summary.changed, 5);

    let entities = s.canonical_entities(None).await.unwrap();
    let company = &entities[0];
    assert_eq!(company.id, w.a.0[0], "{entities:#?}");
    assert_eq!(company.names, ["Alpha Corporation", "Alphaco"]);
    assert_eq!(company.documents, 3);
    assert_eq!(company.claims, 3);
    let alias = company
        .mentions
        .iter()
        .find(|m| m.entity_id == w.a.0[1])
        .unwrap();
    assert_eq!(alias.rule, Resolution::AliasInText);
    assert_eq!(alias.joined_to, Some(w.a.0[0]));
    let evidence = alias.evidence.as_ref().expect("the text's own bytes");
    assert_eq!(
        evidence.quote,
        "Alpha Corporation, more commonly known as Alphaco"
    );
    assert_eq!((evidence.start, evidence.end), (0, 49));
    let person = entities.iter().find(|e| e.entity_type == "person").unwrap();
    assert_eq!(person.id, w.p.0[0]);
    assert_eq!(person.mentions.len(), 1);

    // Pairs now follow the entity: Alphaco's claim pairs with both company claims, the
    // person's with none.
    let pairs = s.candidate_pairs(&[w.b.1], 8, &v).await.unwrap();
    let partners: Vec<i64> = pairs.iter().map(|&(x, y)| x + y - w.b.1).collect();
    assert_eq!(partners.len(), 2, "{pairs:?}");
    assert!(partners.contains(&w.a.1) && partners.contains(&w.c.1));
    assert!(s.candidate_pairs(&[w.p.1], 8, &v).await.unwrap().is_empty());

    // Again: nothing changes.
    let again = s.resolve_entities().await.unwrap();
    assert_eq!(again.changed, 0, "{again:?}");
    assert_eq!(again.canonical_entities, 2);
}

#[tokio::test]
async fn a_separation_moves_a_mention_back_without_losing_a_row() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let w = world(s).await;
    s.resolve_entities().await.unwrap();
    let before = [
        count(s, "entities").await,
        count(s, "claims").await,
        count(s, "entity_resolutions").await,
    ];

    // Refused: no reviewer, no reason, itself, an unknown entity.
    let c = w.c.0[0];
    let first = w.a.0[0];
    assert!(s.separate_entities(c, first, " ", "why").await.is_err());
    assert!(s.separate_entities(c, first, "Ada", "").await.is_err());
    assert!(s.separate_entities(c, c, "Ada", "why").await.is_err());
    assert!(s.separate_entities(c, 999_999, "Ada", "why").await.is_err());
    assert_eq!(count(s, "entity_separations").await, 0);

    s.separate_entities(c, first, "Ada", "another company of that name")
        .await
        .unwrap();
    let summary = s.resolve_entities().await.unwrap();
    assert_eq!(summary.canonical_entities, 3, "{summary:?}");
    assert_eq!(summary.kept_apart, 1);
    assert_eq!(summary.changed, 1);
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    let alone = entities.iter().find(|e| e.id == c).expect("its own entity");
    assert_eq!(alone.mentions.len(), 1);
    assert_eq!(alone.mentions[0].rule, Resolution::First);
    let company = entities.iter().find(|e| e.id == first).unwrap();
    assert_eq!(company.mentions.len(), 3);
    assert_eq!(
        [
            count(s, "entities").await,
            count(s, "claims").await,
            count(s, "entity_resolutions").await,
        ],
        before
    );
    // Its claim no longer pairs with the company's, though the names match.
    let pairs = s.candidate_pairs(&[w.c.1], 8, &v).await.unwrap();
    assert!(pairs.is_empty(), "{pairs:?}");
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);
}

#[tokio::test]
async fn a_person_joins_across_types_and_the_later_decision_holds() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let w = world(s).await;
    s.resolve_entities().await.unwrap();
    let (company, person) = (w.a.0[0], w.p.0[0]);
    assert!(
        s.candidate_pairs(&[w.p.1], 8, &v).await.unwrap().is_empty(),
        "a homonym of another type pairs with nothing"
    );

    // Refused: no reviewer, no reason, itself, an unknown entity.
    assert!(s.join_entities(person, company, " ", "why").await.is_err());
    assert!(s.join_entities(person, company, "Ada", " ").await.is_err());
    assert!(s.join_entities(person, person, "Ada", "why").await.is_err());
    assert!(
        s.join_entities(person, 999_999, "Ada", "why")
            .await
            .is_err()
    );
    assert_eq!(count(s, "entity_joins").await, 0);

    s.join_entities(
        person,
        company,
        "Ada",
        "the p1 text is about the company, mistyped",
    )
    .await
    .unwrap();
    let summary = s.resolve_entities().await.unwrap();
    assert_eq!(summary.by_rule.get("person"), Some(&1), "{summary:?}");
    assert_eq!(summary.changed, 1, "{summary:?}");
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    let joined = entities.iter().find(|e| e.id == company).unwrap();
    let m = joined
        .mentions
        .iter()
        .find(|m| m.entity_id == person)
        .expect("the person-typed mention is the company's now");
    assert_eq!(m.rule, Resolution::Person);
    assert_eq!(m.joined_to, Some(company));
    let d = m.decided_by.as_ref().expect("who joined it");
    assert_eq!(
        (d.reviewer.as_str(), d.reason.as_str()),
        ("Ada", "the p1 text is about the company, mistyped")
    );
    assert!(
        joined
            .mentions
            .iter()
            .filter(|m| m.entity_id != person)
            .all(|m| m.decided_by.is_none())
    );
    let pairs = s.candidate_pairs(&[w.p.1], 8, &v).await.unwrap();
    assert!(
        pairs.contains(&(w.a.1.min(w.p.1), w.a.1.max(w.p.1))),
        "its claim pairs with the company's: {pairs:?}"
    );
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);

    // A later separation of the same pair undoes the join, and a join after that redoes
    // it: the later decision holds. No row is lost either way.
    let rows = [count(s, "entities").await, count(s, "claims").await];
    s.separate_entities(company, person, "Ada", "no: two things after all")
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    let alone = entities
        .iter()
        .find(|e| e.id == person)
        .expect("apart again");
    assert_eq!(alone.mentions.len(), 1);
    assert!(s.candidate_pairs(&[w.p.1], 8, &v).await.unwrap().is_empty());
    s.join_entities(person, company, "Ada", "yes: one thing")
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    assert!(entities.iter().all(|e| e.id != person), "joined again");
    assert_eq!([count(s, "entities").await, count(s, "claims").await], rows);
}

#[tokio::test]
async fn a_new_document_pairs_by_its_entity_and_resolves_as_a_full_resolve_would() {
    let db = TestDb::new().await;
    let s = &db.store;
    let w = world(s).await;
    let all: Vec<i64> = [&w.a.0, &w.b.0, &w.c.0, &w.p.0]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    assert_eq!(s.resolve_new_entities(&all).await.unwrap(), 5);
    assert_eq!(s.resolve_new_entities(&all).await.unwrap(), 0);
    let (e, e_claim) = doc_with(
        s,
        "e1",
        "Alphaco opened the office called e1 in the city.",
        &[("Alphaco", "organization")],
    )
    .await;
    // Not resolved yet, its claim already pairs through the entity its name resolves to:
    // the company's three claims, two of them about "Alpha Corporation".
    let pairs = s
        .candidate_pairs(&[e_claim], 8, &classify_version())
        .await
        .unwrap();
    let mut partners: Vec<i64> = pairs.iter().map(|&(x, y)| x + y - e_claim).collect();
    partners.sort_unstable();
    assert_eq!(partners, [w.a.1, w.b.1, w.c.1], "{pairs:?}");
    assert_eq!(s.resolve_new_entities(&e).await.unwrap(), 1);
    let entities = s.canonical_entities(None).await.unwrap();
    let company = entities.iter().find(|x| x.id == w.a.0[0]).unwrap();
    let new = company
        .mentions
        .iter()
        .find(|m| m.entity_id == e[0])
        .expect("joined the company");
    assert_eq!(new.rule, Resolution::SameName);
    assert_eq!(new.joined_to, Some(w.a.0[1]));
    // The step beside the commit placed every mention where the full resolve does.
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);
}

#[tokio::test]
async fn what_no_rule_decides_waits_for_a_person_until_one_decides() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (hero, _) = doc_with(
        s,
        "f1",
        "Faust opened the office called f1 in the legend.",
        &[("Faust", "person")],
    )
    .await;
    let (play, _) = doc_with(
        s,
        "f2",
        "Faust opened the office called f2 on the stage.",
        &[("Faust", "work")],
    )
    .await;
    let (full, _) = doc_with(
        s,
        "c1",
        "Arthur C. Clarke opened the office called c1 in Colombo.",
        &[("Arthur C. Clarke", "person")],
    )
    .await;
    let (short, _) = doc_with(
        s,
        "c2",
        "Clarke opened the office called c2. The story was by Clarke.",
        &[("Clarke", "person")],
    )
    .await;
    // Traps: one place in two documents (the rule joins it: nothing to decide), and a
    // place's name at the end of an event's (no person's surname).
    doc_with(
        s,
        "g1",
        "Georgia opened the office called g1.",
        &[("Georgia", "location")],
    )
    .await;
    doc_with(
        s,
        "g2",
        "Georgia opened the office called g2.",
        &[("Georgia", "location")],
    )
    .await;
    doc_with(
        s,
        "p1",
        "Paris opened the office called p1.",
        &[("Paris", "location")],
    )
    .await;
    doc_with(
        s,
        "p2",
        "Treaty of Paris opened the office called p2.",
        &[("Treaty of Paris", "event")],
    )
    .await;
    // A short name whose first occurrence is inside the longer one: its side shows the
    // sentence that writes it on its own.
    let (acropolis, _) = doc_with(
        s,
        "a3",
        "Acropolis of Athens opened the office called a3. The word Acropolis is Greek.",
        &[("Acropolis of Athens", "location"), ("Acropolis", "other")],
    )
    .await;
    s.resolve_entities().await.unwrap();

    let pairs = s.undecided_pairs(50).await.unwrap();
    let got: Vec<(&str, i64, i64)> = pairs
        .iter()
        .map(|p| (p.why.as_str(), p.a.mention_id, p.b.mention_id))
        .collect();
    assert_eq!(
        got,
        vec![
            ("other_type", hero[0], play[0]),
            ("surname", full[0], short[0]),
            ("partial_name", acropolis[0], acropolis[1]),
        ],
        "{pairs:#?}"
    );
    assert_eq!(
        pairs[2].b.sentence.as_deref(),
        Some("The word Acropolis is Greek.")
    );
    let faust = &pairs[0];
    assert_eq!(
        (faust.a.entity_type.as_str(), faust.b.entity_type.as_str()),
        ("person", "work")
    );
    assert_eq!(
        faust.a.sentence.as_deref(),
        Some("Faust opened the office called f1 in the legend.")
    );
    assert_eq!((faust.a.mentions, faust.a.claims), (1, 1));
    assert_eq!(
        s.undecided_pairs(1).await.unwrap().len(),
        1,
        "the limit holds"
    );

    // A person decides each: the separated pair and the joined one leave the list, and
    // a re-resolve does not bring them back.
    s.separate_entities(
        play[0],
        hero[0],
        "Ada",
        "the hero and the play are two things",
    )
    .await
    .unwrap();
    s.join_entities(short[0], full[0], "Ada", "c2's story is Arthur C. Clarke's")
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    let left = s.undecided_pairs(50).await.unwrap();
    assert_eq!(left, pairs[2..].to_vec(), "only the undecided one is left");
}

#[tokio::test]
async fn one_name_its_documents_describe_as_two_things_stays_two_entities() {
    let db = TestDb::new().await;
    let s = &db.store;
    let georgia = [("Georgia", "location")];
    let country = doc_with(
        s,
        "g1",
        "Georgia is a country in the Caucasus. Georgia opened the office called g1 in the city.",
        &georgia,
    )
    .await;
    let state = doc_with(
        s,
        "g2",
        "The U.S. state of Georgia opened the office called g2 in Atlanta, near Decatur.",
        &georgia,
    )
    .await;
    // Each thing established by a second document that says the same.
    let country_too = doc_with(
        s,
        "g1b",
        "Georgia is a country in the Caucasus. Georgia opened the office called g1b in the city.",
        &georgia,
    )
    .await;
    let state_too = doc_with(
        s,
        "g2b",
        "The state of Georgia opened the office called g2b in the city.",
        &georgia,
    )
    .await;
    // A document that says nothing of which one it is joins neither.
    let listed = doc_with(
        s,
        "g3",
        "Georgia opened the office called g3 in the city.",
        &georgia,
    )
    .await;
    let summary = s.resolve_entities().await.unwrap();
    assert_eq!(summary.canonical_entities, 3, "{summary:?}");
    assert_eq!(summary.described_apart, 3, "{summary:?}");
    let entities = s.canonical_entities(Some("georgia")).await.unwrap();
    let ids = |id: i64| -> Vec<i64> {
        let e = entities.iter().find(|e| e.id == id).unwrap();
        e.mentions.iter().map(|m| m.entity_id).collect()
    };
    assert_eq!(ids(country.0[0]), [country.0[0], country_too.0[0]]);
    assert_eq!(ids(state.0[0]), [state.0[0], state_too.0[0]]);
    assert_eq!(ids(listed.0[0]), [listed.0[0]]);

    // The pairs wait for a person, each side with what its document says.
    let pairs = s.undecided_pairs(50).await.unwrap();
    assert_eq!(pairs.len(), 3, "{pairs:#?}");
    assert!(pairs.iter().all(|p| p.why.as_str() == "described_apart"));
    let two_kinds = pairs
        .iter()
        .find(|p| (p.a.entity_id, p.b.entity_id) == (country.0[0], state.0[0]))
        .unwrap();
    assert_eq!(
        (
            two_kinds.a.described.kind.as_deref(),
            two_kinds.b.described.kind.as_deref()
        ),
        (Some("country"), Some("state"))
    );

    // Beside the commits, a later mention whose document says nothing but shares two
    // names with the state's joins the state, as the full resolve places it.
    let near_atlanta = doc_with(
        s,
        "g5",
        "Georgia opened the office called g5 between Atlanta and Decatur.",
        &georgia,
    )
    .await;
    assert_eq!(s.resolve_new_entities(&near_atlanta.0).await.unwrap(), 1);
    let entities = s.canonical_entities(Some("georgia")).await.unwrap();
    let joined = entities
        .iter()
        .flat_map(|e| &e.mentions)
        .find(|m| m.entity_id == near_atlanta.0[0])
        .unwrap();
    assert_eq!(
        (joined.rule, joined.joined_to),
        (Resolution::SameName, Some(state.0[0]))
    );
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);

    // Beside the commits, a later state joins the state, as the full resolve places it.
    let later = doc_with(
        s,
        "g4",
        "The state of Georgia opened the office called g4 in the city.",
        &georgia,
    )
    .await;
    assert_eq!(s.resolve_new_entities(&later.0).await.unwrap(), 1);
    let entities = s.canonical_entities(Some("georgia")).await.unwrap();
    let joined = entities
        .iter()
        .flat_map(|e| &e.mentions)
        .find(|m| m.entity_id == later.0[0])
        .unwrap();
    assert_eq!(
        (joined.rule, joined.joined_to),
        (Resolution::SameName, Some(state.0[0]))
    );
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);

    // A person who knows better may still join them.
    s.join_entities(state.0[0], country.0[0], "Ada", "one Georgia after all")
        .await
        .unwrap();
    s.join_entities(listed.0[0], country.0[0], "Ada", "g3 means the country")
        .await
        .unwrap();
    assert_eq!(s.resolve_entities().await.unwrap().canonical_entities, 1);
    assert!(s.undecided_pairs(50).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_mention_that_says_nothing_is_placed_beside_the_commits_as_a_full_resolve_places_it() {
    let db = TestDb::new().await;
    let s = &db.store;
    let georgia = [("Georgia", "location")];
    // First of all, a document that says nothing of which Georgia it means but shares
    // Atlanta and Decatur with the state's.
    let near_atlanta = doc_with(
        s,
        "h0",
        "Georgia opened the office called h0 between Atlanta and Decatur.",
        &georgia,
    )
    .await;
    for (doc, text) in [
        (
            "h1",
            "Georgia is a country in the Caucasus. Georgia opened the office called h1 here.",
        ),
        (
            "h1b",
            "Georgia is a country in the Caucasus. Georgia opened the office called h1b here.",
        ),
        (
            "h2",
            "The U.S. state of Georgia opened the office called h2 in Atlanta, near Decatur.",
        ),
        (
            "h2b",
            "The state of Georgia opened the office called h2b in the city.",
        ),
    ] {
        doc_with(s, doc, text, &georgia).await;
    }
    let listed = doc_with(
        s,
        "h3",
        "Georgia opened the office called h3 in the city.",
        &georgia,
    )
    .await;
    s.resolve_entities().await.unwrap();
    let entity_of = |entities: &[CanonicalEntity], id: i64| {
        entities
            .iter()
            .find(|e| e.mentions.iter().any(|m| m.entity_id == id))
            .unwrap()
            .id
    };
    // The state is named by its first mention, the one whose document said nothing.
    let entities = s.canonical_entities(Some("georgia")).await.unwrap();
    assert_eq!(entities.len(), 3, "{entities:#?}");
    let state = entity_of(&entities, near_atlanta.0[0]);
    assert_eq!(state, near_atlanta.0[0]);
    // A later mention that says nothing and shares nothing joins the one listed, not
    // the state through its first mention: beside the commits as in a full resolve.
    let later = doc_with(
        s,
        "h6",
        "Georgia opened the office called h6 in the city.",
        &georgia,
    )
    .await;
    assert_eq!(s.resolve_new_entities(&later.0).await.unwrap(), 1);
    let entities = s.canonical_entities(Some("georgia")).await.unwrap();
    assert_eq!(
        entity_of(&entities, later.0[0]),
        entity_of(&entities, listed.0[0])
    );
    assert_ne!(entity_of(&entities, later.0[0]), state);
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);
}

#[tokio::test]
async fn a_name_with_its_kind_and_two_dated_or_made_works_resolve_beside_the_commits_as_in_full() {
    let db = TestDb::new().await;
    let s = &db.store;
    let amazon = [("Amazon", "location")];
    let mut river = Vec::new();
    for doc in ["s1", "s2"] {
        let text = format!(
            "Swamps lie along major rivers such as the Amazon. Amazon opened the office called \
             {doc} here."
        );
        river.push(doc_with(s, doc, &text, &amazon).await);
    }
    let forest = doc_with(
        s,
        "f1",
        "Seen from above, the Amazon is a moist tropical rainforest. Amazon opened the office \
         called f1 here.",
        &amazon,
    )
    .await;
    let treaty = [("Treaty of Paris", "work")];
    let earlier = doc_with(
        s,
        "t1",
        "It kept the principles of the 1856 Treaty of Paris. Treaty of Paris opened the office \
         called t1 here.",
        &treaty,
    )
    .await;
    let david = [("David", "work")];
    let statue = doc_with(
        s,
        "d1",
        "It is Michelangelo's David. David opened the office called d1 here.",
        &david,
    )
    .await;
    s.resolve_entities().await.unwrap();
    // Committed after the full resolve: placed beside the commits.
    let named = doc_with(
        s,
        "r1",
        "Amazon River opened the office called r1 here.",
        &[("Amazon River", "location")],
    )
    .await;
    let later = doc_with(
        s,
        "t2",
        "It came under the December 1898 Treaty of Paris. Treaty of Paris opened the office \
         called t2 here.",
        &treaty,
    )
    .await;
    let bronze = doc_with(
        s,
        "d2",
        "It is Donatello's David. David opened the office called d2 here.",
        &david,
    )
    .await;
    assert_eq!(
        s.resolve_new_entities(&[named.0[0], later.0[0], bronze.0[0]])
            .await
            .unwrap(),
        3
    );
    let entity_of = |entities: &[CanonicalEntity], id: i64| {
        entities
            .iter()
            .find(|e| e.mentions.iter().any(|m| m.entity_id == id))
            .map(|e| e.id)
    };
    let entities = s.canonical_entities(None).await.unwrap();
    let the_river = entity_of(&entities, river[0].0[0]);
    assert!(the_river.is_some());
    assert_eq!(entity_of(&entities, river[1].0[0]), the_river);
    assert_eq!(entity_of(&entities, named.0[0]), the_river, "{entities:#?}");
    assert_ne!(entity_of(&entities, forest.0[0]), the_river);
    let row = entities
        .iter()
        .flat_map(|e| &e.mentions)
        .find(|m| m.entity_id == named.0[0])
        .unwrap();
    assert_eq!(row.rule, Resolution::KindName);
    assert_ne!(
        entity_of(&entities, earlier.0[0]),
        entity_of(&entities, later.0[0])
    );
    // What each treaty's document dates it by is stored and shown to a person.
    let pairs = s.undecided_pairs(50).await.unwrap();
    let treaties = pairs
        .iter()
        .find(|p| p.a.name == "Treaty of Paris")
        .unwrap();
    let mut years = [
        treaties.a.described.year.clone(),
        treaties.b.described.year.clone(),
    ];
    years.sort();
    assert_eq!(years, [Some("1856".to_owned()), Some("1898".to_owned())]);
    // And who made each statue.
    assert_ne!(
        entity_of(&entities, statue.0[0]),
        entity_of(&entities, bronze.0[0])
    );
    let statues = pairs.iter().find(|p| p.a.name == "David").unwrap();
    let mut makers = [
        statues.a.described.maker.clone(),
        statues.b.described.maker.clone(),
    ];
    makers.sort();
    assert_eq!(
        makers,
        [
            Some("donatello".to_owned()),
            Some("michelangelo".to_owned())
        ]
    );
    assert_eq!(s.resolve_entities().await.unwrap().changed, 0);
}

/// Commit an accepted `one` about `sides`: its proposal id and the candidate it is.
async fn proposed(
    s: &Store,
    sides: [i64; 2],
    answer: &relata_store::JoinAnswer<'_>,
) -> (i64, relata_store::Candidate) {
    let done = s.commit_join(sides, &call(&join_version()), answer).await;
    match done.unwrap() {
        relata_store::JoinCommit::Committed {
            proposal_id: Some(proposal),
            candidate: Some(candidate),
        } => (proposal, candidate),
        other => panic!("a `one` is a candidate: {other:?}"),
    }
}

/// A model's join: each ask is a job with its call; a refused answer is one invalid
/// output and no proposal; a `one` is a candidate the shipped policy holds for a person;
/// nothing joins until a person approves it, and then re-resolution joins it in that
/// person's name with the model's evidence; a rejected one joins nothing.
#[tokio::test]
async fn a_models_join_is_a_proposal_that_joins_only_once_a_person_approves_it() {
    use relata_core::{CandidateId, Decision, JoinVerdict, Reason, RowKind};
    use relata_store::{JoinAnswer, JoinCommit};

    let db = TestDb::new().await;
    let s = &db.store;
    let w = world(s).await;
    s.resolve_entities().await.unwrap();
    let (company, person, alias) = (w.c.0[0], w.p.0[0], w.b.0[0]);
    let sides = s.join_sides(company, person).await.unwrap();
    assert_eq!(sides[1].name, "Alpha Corporation");
    assert_eq!(sides[1].entity_type, relata_core::EntityType::Person);
    let shown = &sides[1].sentences[0];
    assert_eq!(
        shown.text,
        "Alpha Corporation opened the office called p1 in the city."
    );
    assert!(s.join_sides(person, person).await.is_err());

    let version = join_version();
    let jobs_before = db.count("jobs").await;
    // A refused answer: recorded once, no proposal.
    let refused = relata_validate::Rejection {
        kind: None,
        index: None,
        reason: Reason::QuoteNotFound,
        detail: "\"quote\" \"they merged\" is not in S2".to_owned(),
    };
    let r = s
        .commit_join(
            [alias, person],
            &call(&version),
            &JoinAnswer::Rejected {
                rejection: &refused,
                envelope: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        r,
        JoinCommit::Committed {
            proposal_id: None,
            candidate: None
        }
    );
    let (task, reason): (String, String) =
        sqlx::query_as("SELECT task, reason FROM invalid_outputs ORDER BY id DESC LIMIT 1")
            .fetch_one(s.pool())
            .await
            .unwrap();
    assert_eq!(
        (task.as_str(), reason.as_str()),
        ("join", "quote_not_found")
    );

    // An accepted `one`, its evidence the person's sentence.
    let answer = JoinAnswer::Accepted {
        verdict: JoinVerdict::One,
        source_handle: "S2",
        sentence: shown,
        start: 0,
        end: 42,
    };
    let (proposal, candidate) = proposed(s, [company, person], &answer).await;
    assert_eq!(db.count("jobs").await, jobs_before + 2);
    let (state, task): (String, String) = sqlx::query_as(
        "SELECT j.state, m.task FROM entity_join_proposals p
         JOIN jobs j ON j.job_id = p.job_id JOIN model_calls m ON m.id = p.call_id
         WHERE p.id = $1",
    )
    .bind(proposal)
    .fetch_one(s.pool())
    .await
    .unwrap();
    assert_eq!((state.as_str(), task.as_str()), ("accepted", "join"));
    // Asked again under the same version: nothing is written.
    assert_eq!(
        s.commit_join([person, company], &call(&version), &answer)
            .await
            .unwrap(),
        JoinCommit::AlreadyAsked
    );
    // Evidence outside its sentence is refused before anything is written.
    let outside = JoinAnswer::Accepted {
        verdict: JoinVerdict::One,
        source_handle: "S2",
        sentence: shown,
        start: 0,
        end: 4_000,
    };
    assert!(
        s.commit_join([alias, company], &call(&version), &outside)
            .await
            .is_err()
    );

    // The shipped policy holds it; held, it joins nothing.
    let id = CandidateId {
        kind: RowKind::Join,
        id: proposal,
    };
    assert_eq!(candidate.id(), id);
    let judged = s
        .promote_committed(&relata_core::Policy::shipped(), vec![candidate])
        .await
        .unwrap();
    assert_eq!(
        judged.decided,
        [(RowKind::Join, relata_core::PolicyDecision::Review, 1)]
    );
    let listed = s
        .review_list(&relata_store::ReviewFilter {
            kind: Some(RowKind::Join),
            ..relata_store::ReviewFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].row["quote"],
        "Alpha Corporation opened the office called"
    );
    assert_eq!(listed[0].row["type_b"], "person");
    s.resolve_entities().await.unwrap();
    let apart = s.canonical_entities(Some("alpha corp")).await.unwrap();
    assert!(
        apart.iter().any(|e| e.id == person),
        "not joined while held"
    );

    // Approved by a person: joined at the next resolve, in that person's name.
    let rows = [db.count("entities").await, db.count("claims").await];
    s.review_decide(
        &[id],
        Decision::Approve,
        &ada(),
        Some("p1 is the company"),
        &via(),
    )
    .await
    .unwrap();
    let summary = s.resolve_entities().await.unwrap();
    assert_eq!(summary.by_rule.get("person"), Some(&1), "{summary:?}");
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    let joined = entities
        .iter()
        .find(|e| e.mentions.iter().any(|m| m.entity_id == company))
        .unwrap();
    let m = joined
        .mentions
        .iter()
        .find(|m| m.entity_id == person)
        .expect("the person-typed mention joined the company");
    assert_eq!(m.rule, Resolution::Person);
    let d = m.decided_by.as_ref().unwrap();
    assert_eq!(d.reviewer, "Ada Lovelace");
    assert!(
        d.reason
            .contains("Alpha Corporation opened the office called")
            && d.reason.contains("p1 is the company"),
        "{}",
        d.reason
    );
    assert_eq!([db.count("entities").await, db.count("claims").await], rows);
    assert_eq!(s.evidence_verify().await.unwrap().problem, None);

    // A later separation by a person still wins over it, as over a person's join.
    s.separate_entities(company, person, "Ada", "two after all")
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    assert!(entities.iter().any(|e| e.id == person), "apart again");
}

/// A rejected proposal joins nothing, and a proposal whose evidence no longer reads as
/// its revision does fails `relata evidence verify`.
#[tokio::test]
async fn a_rejected_proposal_joins_nothing_and_verify_reads_its_evidence() {
    use relata_core::{CandidateId, Decision, JoinVerdict, RowKind};
    use relata_store::JoinAnswer;

    let db = TestDb::new().await;
    let s = &db.store;
    let w = world(s).await;
    s.resolve_entities().await.unwrap();
    let (company, person) = (w.c.0[0], w.p.0[0]);
    let sides = s.join_sides(company, person).await.unwrap();
    let answer = JoinAnswer::Accepted {
        verdict: JoinVerdict::One,
        source_handle: "S1",
        sentence: &sides[0].sentences[0],
        start: 46,
        end: 57,
    };
    let (proposal, candidate) = proposed(s, [company, person], &answer).await;
    s.promote_committed(&relata_core::Policy::shipped(), vec![candidate])
        .await
        .unwrap();
    let id = CandidateId {
        kind: RowKind::Join,
        id: proposal,
    };
    s.review_decide(&[id], Decision::Reject, &ada(), Some("a namesake"), &via())
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    let entities = s.canonical_entities(Some("alpha corp")).await.unwrap();
    assert!(entities.iter().any(|e| e.id == person), "rejected: apart");
    assert_eq!(s.evidence_verify().await.unwrap().problem, None);

    // The company's document edited under the evidence ("in the city"), every source
    // hash made to match again (the claim's quote is untouched): verify names the
    // proposal.
    for sql in [
        "UPDATE document_revisions SET text = replace(text, 'city', 'town')
          WHERE document_id = (SELECT document_id FROM entities WHERE id = $1)",
        "UPDATE chunks SET text = replace(text, 'city', 'town')
          WHERE document_id = (SELECT document_id FROM entities WHERE id = $1)",
    ] {
        sqlx::query(sql)
            .bind(company)
            .execute(s.pool())
            .await
            .unwrap();
    }
    for sql in [
        "UPDATE document_revisions SET sha256 = encode(sha256(convert_to(text, 'UTF8')), 'hex')",
        "UPDATE chunks SET sha256 = encode(sha256(convert_to(text, 'UTF8')), 'hex')",
    ] {
        sqlx::query(sql).execute(s.pool()).await.unwrap();
    }
    let problem = s
        .evidence_verify()
        .await
        .unwrap()
        .problem
        .expect("verify must fail");
    assert_eq!(problem.candidate, Some(id), "{problem}");
    assert!(problem.what.contains("its evidence"), "{problem}");
}
