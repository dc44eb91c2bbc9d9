//! Retrieval for answers on the real PostgreSQL: which passages a question finds, in what
//! order, what they hold, and which stored claims and contradictions go with them.

// Test helpers: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use relata_core::{CLASSIFY_V1, CandidateId, Decision, JobId, Policy, RowKind, TaskVersion};
use relata_store::{Passage, Store, Sweep};

use crate::common::{
    TestDb, ada, classify_version, commit_all_contradict, extract_doc, extract_doc_judged_by,
    gate_without_support, ingest, one_claim, via,
};

fn relation(id: i64) -> CandidateId {
    CandidateId {
        kind: RowKind::Relation,
        id,
    }
}

/// The bytes of a document's current revision at `start..end`, read by PostgreSQL.
async fn document_bytes(s: &Store, document_id: i64, start: usize, end: usize) -> Vec<u8> {
    sqlx::query_scalar(
        "SELECT substring(convert_to(r.text, 'UTF8') FROM $2 + 1 FOR $3 - $2)
           FROM documents d JOIN document_revisions r ON r.id = d.current_revision_id
          WHERE d.id = $1",
    )
    .bind(document_id)
    .bind(start as i32)
    .bind(end as i32)
    .fetch_one(s.pool())
    .await
    .unwrap()
}

/// A clean claim in a one-chunk document of its own; the claim id and its extract job.
async fn clean_claim(s: &Store, doc: &str) -> (i64, JobId) {
    let text = format!("Beta Inc opened the office called {doc} in the harbour city.");
    let (_, job, done) = extract_doc(
        s,
        doc,
        &text,
        &one_claim(
            "Beta Inc",
            &format!("Beta Inc opened the office called {doc}."),
            &format!("opened the office called {doc}"),
        ),
    )
    .await;
    assert_eq!(done.claim_ids.len(), 1, "{done:?}");
    (done.claim_ids[0], job)
}

/// Classify `new` (extracted by `origin`) against the claims before it, every planned pair
/// `contradicts`, under `version`.
async fn all_contradict(s: &Store, origin: &JobId, new: i64, version: &TaskVersion) {
    let jobs = s
        .plan_classify_jobs(origin, &[new], 5, 10, version)
        .await
        .unwrap();
    for job in &jobs {
        commit_all_contradict(s, job, version).await;
    }
}

/// The id of the `contradicts` relation between two claims (either order).
async fn relation_between(s: &Store, a: i64, b: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT id FROM claim_relations WHERE relation = 'contradicts'
            AND ((claim_a = $1 AND claim_b = $2) OR (claim_a = $2 AND claim_b = $1))",
    )
    .bind(a)
    .bind(b)
    .fetch_one(s.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn retrieval_returns_the_top_k_by_rank_with_ties_broken_by_id() {
    let db = TestDb::new().await;
    let s = &db.store;
    // Three identical passages (equal rank), ingested in an order unlike their names.
    let mut tied = Vec::new();
    for doc in ["tie-c", "tie-a", "tie-b"] {
        tied.push(
            ingest(s, doc, "A zebra was seen near the river.")
                .await
                .chunk_ids[0],
        );
    }
    let top = ingest(
        s,
        "top",
        "Zebra and giraffe: a zebra drinks while a giraffe waits.",
    )
    .await
    .chunk_ids[0];
    ingest(s, "other", "Nothing relevant is said here at all.").await;

    let found = s.retrieve_passages("zebra giraffe", 3).await.unwrap();
    let ids: Vec<i64> = found.iter().map(|p| p.chunk_id).collect();
    assert_eq!(ids, [top, tied[0], tied[1]], "{found:?}");
    assert!(found[0].rank > found[1].rank, "{found:?}");
    assert_eq!(found[1].rank, found[2].rank);
    // Same question, same answer: retrieval is deterministic.
    assert_eq!(
        s.retrieve_passages("zebra giraffe", 3).await.unwrap(),
        found
    );
    // All matches when k allows; nothing for a question without a matching word.
    assert_eq!(s.retrieve_passages("zebra", 20).await.unwrap().len(), 4);
    assert!(s.retrieve_passages("quasar", 8).await.unwrap().is_empty());
    assert!(
        s.retrieve_passages("the of and", 8)
            .await
            .unwrap()
            .is_empty()
    );
    // k outside 1..=20 is refused, not clamped.
    assert!(s.retrieve_passages("zebra", 0).await.is_err());
    assert!(s.retrieve_passages("zebra", 21).await.is_err());
}

#[tokio::test]
async fn only_current_revisions_are_searched() {
    let db = TestDb::new().await;
    let s = &db.store;
    let old = ingest(s, "doc", "The old lighthouse stood on the harbour wall.").await;
    let new = ingest(s, "doc", "A museum replaced the harbour wall in spring.").await;
    assert_eq!(old.document_id, new.document_id);
    assert_ne!(old.revision_id, new.revision_id);

    assert!(
        s.retrieve_passages("lighthouse", 8)
            .await
            .unwrap()
            .is_empty(),
        "a superseded revision was searched"
    );
    let found = s.retrieve_passages("harbour museum", 8).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].revision_id, new.revision_id);
    assert_eq!(found[0].chunk_id, new.chunk_ids[0]);
}

#[tokio::test]
async fn a_source_text_is_the_document_bytes_at_its_offsets() {
    let db = TestDb::new().await;
    let s = &db.store;
    // Two paragraphs (two chunks); the second is long enough to be narrowed to the
    // sentences holding the question, and holds multi-byte characters before them.
    let filler = "Über Zürich ziehen Wolken, nichts Wichtiges geschieht. ".repeat(40);
    let text = format!(
        "A first paragraph about something else entirely.\n\n{filler}The Curie laboratory opened in Paris in 1909. {filler}"
    );
    let up = ingest(s, "long", &text).await;
    assert_eq!(up.chunk_ids.len(), 2);

    let found = s
        .retrieve_passages("Curie laboratory Paris", 8)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let p = &found[0];
    assert_eq!(p.document_id, up.document_id);
    assert_eq!(p.title.as_deref(), Some("long"));
    assert!(p.end - p.start <= relata_store::PASSAGE_MAX_BYTES, "{p:?}");
    assert!(p.start > 50, "narrowed inside the second chunk: {p:?}");
    assert!(
        p.text
            .contains("The Curie laboratory opened in Paris in 1909.")
    );
    assert_eq!(&text[p.start..p.end], p.text);
    assert_eq!(
        document_bytes(s, p.document_id, p.start, p.end).await,
        p.text.as_bytes()
    );
}

#[tokio::test]
async fn claims_are_attached_only_when_their_quote_lies_inside_the_passage() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (claim, _) = clean_claim(s, "d1").await;
    s.promote_pending(&Policy::shipped(), Sweep::batch(100))
        .await
        .unwrap();
    let found = s.retrieve_passages("Beta office harbour", 8).await.unwrap();
    assert_eq!(found.len(), 1);
    let whole = found[0].clone();
    let attached = s.attach_claims(std::slice::from_ref(&whole)).await.unwrap();
    assert_eq!(attached[0].len(), 1);
    let c = &attached[0][0];
    assert_eq!(c.claim_id, claim);
    // The quote began after its sentence's subject, which the stored quote takes in.
    assert_eq!(c.quote, "Beta Inc opened the office called d1");
    let chunk_text = whole.text.clone();

    // Passages cut at the quote's own offsets, and one byte inside them on either side.
    let cut = |start: usize, end: usize| Passage {
        text: chunk_text[start - whole.start..end - whole.start].to_owned(),
        start,
        end,
        ..whole.clone()
    };
    let (qs, qe) = (c.quote_start, c.quote_end);
    let passages = [
        cut(qs, qe),
        cut(qs + 1, qe),
        cut(qs, qe - 1),
        Passage {
            revision_id: whole.revision_id + 1_000,
            ..whole.clone()
        },
    ];
    let attached = s.attach_claims(&passages).await.unwrap();
    let ids: Vec<Vec<i64>> = attached
        .iter()
        .map(|cs| cs.iter().map(|c| c.claim_id).collect())
        .collect();
    assert_eq!(ids, [vec![claim], vec![], vec![], vec![]]);
}

/// A source edited with plain SQL under a promoted claim: the claim is still linked by
/// its offsets, and its quote is seen not to hold in the bytes now there.
#[tokio::test]
async fn a_claim_whose_source_was_edited_is_seen_not_to_hold() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (claim, _) = clean_claim(s, "d1").await;
    s.promote_pending(&Policy::shipped(), Sweep::batch(100))
        .await
        .unwrap();
    let question = "Beta office harbour";
    let found = s.retrieve_passages(question, 8).await.unwrap();
    let attached = s.attach_claims(&found).await.unwrap();
    assert_eq!(attached[0][0].claim_id, claim);
    assert!(attached[0][0].quote_holds_in(&found[0]));
    // Same length, so every offset still lands: only the words differ.
    relata_store::testing::execute(
        s,
        "UPDATE document_revisions SET text = replace(text, 'office', 'bureau');
         UPDATE chunks SET text = replace(text, 'office', 'bureau');",
    )
    .await
    .unwrap();
    let found = s.retrieve_passages(question, 8).await.unwrap();
    assert_eq!(found.len(), 1, "the chunk is still found");
    assert!(found[0].text.contains("bureau"), "{:?}", found[0].text);
    let attached = s.attach_claims(&found).await.unwrap();
    assert_eq!(attached[0].len(), 1, "still linked by its offsets");
    assert!(
        !attached[0][0].quote_holds_in(&found[0]),
        "but its quote no longer holds"
    );
}

/// The ids of the claims attached to `found`, in source order.
async fn attached_ids(s: &relata_store::Store, found: &[relata_store::Passage]) -> Vec<i64> {
    s.attach_claims(found)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .map(|c| c.claim_id)
        .collect()
}

#[tokio::test]
async fn only_promoted_claims_are_attached() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (clean, _) = clean_claim(s, "d1").await;
    // A claim kept with a warning: the shipped policy holds it for review.
    let (_, _, done) = extract_doc_judged_by(
        &gate_without_support(),
        s,
        "w",
        "Beta Inc was founded by Jane Roe in the harbour city of Bern.",
        &one_claim(
            "Beta Inc",
            "Beta Inc was founded in 1990.",
            "founded by Jane Roe",
        ),
    )
    .await;
    let warned = done.claim_ids[0];
    let question = "Beta Inc harbour city";

    // Before the policy runs nothing is promoted, so nothing is attached.
    let found = s.retrieve_passages(question, 8).await.unwrap();
    assert_eq!(found.len(), 2);
    let attached = s.attach_claims(&found).await.unwrap();
    assert!(attached.iter().all(Vec::is_empty), "{attached:?}");

    s.promote_pending(&Policy::shipped(), Sweep::batch(100))
        .await
        .unwrap();
    let attached = attached_ids(s, &found).await;
    assert_eq!(attached, [clean], "the pending claim {warned} was attached");

    // Approved by a person: now it is attached too.
    s.review_decide(
        &[CandidateId {
            kind: RowKind::Claim,
            id: warned,
        }],
        Decision::Approve,
        &ada(),
        None,
        &via(),
    )
    .await
    .unwrap();
    let mut attached = attached_ids(s, &found).await;
    attached.sort();
    assert_eq!(attached, [clean, warned]);
}

#[tokio::test]
async fn contradictions_are_of_the_current_classify_version_and_pending_ones_are_marked() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let (a, _) = clean_claim(s, "d1").await;
    let (b, origin_b) = clean_claim(s, "d2").await;
    all_contradict(s, &origin_b, b, &v).await;
    let (c, origin_c) = clean_claim(s, "d3").await;
    all_contradict(s, &origin_c, c, &v).await;
    let (ab, ac) = (
        relation_between(s, a, b).await,
        relation_between(s, a, c).await,
    );
    // Claims promoted by the shipped policy; `contradicts` relations wait for a person.
    s.promote_pending(&Policy::shipped(), Sweep::batch(100))
        .await
        .unwrap();
    s.review_decide(&[relation(ab)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap();
    s.review_decide(
        &[relation(ac)],
        Decision::Reject,
        &ada(),
        Some("different offices"),
        &via(),
    )
    .await
    .unwrap();

    let found = s.retrieve_passages("Beta office harbour", 8).await.unwrap();
    assert_eq!(found.len(), 3);
    let source_of = |claim: i64| {
        let doc = match claim {
            x if x == a => "d1",
            x if x == b => "d2",
            _ => "d3",
        };
        found
            .iter()
            .position(|p| p.title.as_deref() == Some(doc))
            .unwrap()
    };
    let listed = s.contradictions(&v.fingerprint(), &found).await.unwrap();
    // The approved one unmarked, the pending one marked, the rejected one left out.
    let got: Vec<(i64, i64, bool)> = listed
        .iter()
        .map(|x| {
            (
                x.claim_a.min(x.claim_b),
                x.claim_a.max(x.claim_b),
                x.pending_review,
            )
        })
        .collect();
    assert_eq!(
        got,
        [(a.min(b), a.max(b), false), (b.min(c), b.max(c), true)]
    );
    for x in &listed {
        assert_eq!(x.passage_a, source_of(x.claim_a));
        assert_eq!(x.passage_b, source_of(x.claim_b));
    }

    // Another classify version's relations are not this version's contradictions.
    let other = TaskVersion::new(&CLASSIFY_V1, "classify-p2", "test-model");
    assert_ne!(other.fingerprint(), v.fingerprint());
    assert!(
        s.contradictions(&other.fingerprint(), &found)
            .await
            .unwrap()
            .is_empty()
    );
    // A contradiction needs both claims in the sources.
    let only_d1: Vec<Passage> = found
        .iter()
        .filter(|p| p.title.as_deref() == Some("d1"))
        .cloned()
        .collect();
    assert!(
        s.contradictions(&v.fingerprint(), &only_d1)
            .await
            .unwrap()
            .is_empty()
    );
}

/// The mention a claim is about.
async fn entity_of(s: &Store, claim: i64) -> i64 {
    sqlx::query_scalar("SELECT entity_id FROM claims WHERE id = $1")
        .bind(claim)
        .fetch_one(s.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_contradiction_brings_its_other_side_while_resolution_keeps_it_one_thing() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let fp = v.fingerprint();
    let (a, _) = clean_claim(s, "d1").await;
    let (b, origin_b) = clean_claim(s, "d2").await;
    all_contradict(s, &origin_b, b, &v).await;
    let (c, origin_c) = clean_claim(s, "d3").await;
    all_contradict(s, &origin_c, c, &v).await;
    s.promote_pending(&Policy::shipped(), Sweep::batch(100))
        .await
        .unwrap();
    // A person rejected d3's contradiction of d1; d2's waits for review.
    s.review_decide(
        &[relation(relation_between(s, a, c).await)],
        Decision::Reject,
        &ada(),
        Some("different offices"),
        &via(),
    )
    .await
    .unwrap();
    s.resolve_entities().await.unwrap();

    // The question's words find d1 only.
    let found = s.retrieve_passages("d1", 8).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(s.contradictions(&fp, &found).await.unwrap().is_empty());
    let other = s.contradicting_passages(&fp, &found, 2).await.unwrap();
    let titles: Vec<_> = other.iter().map(|p| p.title.as_deref()).collect();
    assert_eq!(titles, [Some("d2")], "the rejected relation brings nothing");
    assert_eq!(
        document_bytes(s, other[0].document_id, other[0].start, other[0].end).await,
        other[0].text.as_bytes(),
        "a brought passage is its document's own bytes"
    );
    let both: Vec<Passage> = found.iter().chain(&other).cloned().collect();
    let listed = s.contradictions(&fp, &both).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|x| (x.passage_a.min(x.passage_b), x.passage_a.max(x.passage_b)))
            .collect::<Vec<_>>(),
        [(0, 1)],
        "{listed:?}"
    );
    assert!(listed[0].pending_review, "{listed:?}");
    // Given d2 too, d2's own contradiction (with d3, waiting for review) is the one to
    // bring; nothing is left once every side is shown, or when nothing may be brought.
    let next = s.contradicting_passages(&fp, &both, 2).await.unwrap();
    let titles: Vec<_> = next.iter().map(|p| p.title.as_deref()).collect();
    assert_eq!(titles, [Some("d3")]);
    let all: Vec<Passage> = both.iter().chain(&next).cloned().collect();
    assert!(
        s.contradicting_passages(&fp, &all, 2)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.contradicting_passages(&fp, &found, 0)
            .await
            .unwrap()
            .is_empty()
    );

    // A person undoes the join of the two mentions: their claims are about two things, so
    // the relation made while they were one is no longer a contradiction to serve.
    let (ea, eb) = (entity_of(s, a).await, entity_of(s, b).await);
    s.separate_entities(eb, ea, "Ada Lovelace", "two companies called Beta Inc")
        .await
        .unwrap();
    s.resolve_entities().await.unwrap();
    assert!(
        s.contradicting_passages(&fp, &found, 2)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.contradictions(&fp, &both).await.unwrap().is_empty());
}
