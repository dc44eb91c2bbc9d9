use std::collections::BTreeMap;

use relata_core::{Handle, JobId};
use relata_store::{CommitOutcome, JobState, Store};
use relata_validate::{ClassifyInput, GateConfig, Verdict, judge_classify};

use crate::common::{TestDb, call, classify_version, committed, extract_doc, ingest, one_claim};

/// A one-claim document about `subject`; returns the claim id and the extract job.
async fn claim_about(s: &Store, doc: &str, subject: &str) -> (i64, JobId) {
    let text = format!("{subject} opened the office called {doc} in the city.");
    let (_, job, done) = extract_doc(
        s,
        doc,
        &text,
        &one_claim(
            subject,
            &format!("{subject} opened the office called {doc}."),
            &format!("opened the office called {doc}"),
        ),
    )
    .await;
    assert_eq!(done.claim_ids.len(), 1, "{done:?}");
    (done.claim_ids[0], job)
}

#[tokio::test]
async fn candidates_are_bounded_newest_first_other_documents_only_never_repeated() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();

    // A claim of superseded text is not a candidate.
    claim_about(s, "d0", "Alpha Corp").await;
    ingest(s, "d0", "Alpha Corp closed every office.").await;
    let mut older = Vec::new();
    for d in ["d1", "d2", "d3", "d4", "d5"] {
        older.push(claim_about(s, d, "Alpha Corp").await.0);
    }
    claim_about(s, "b1", "Beta Inc").await;

    // A new document with two claims about the same entity (spelled differently).
    let text = "ALPHA corp opened the office called n1 in the city. It hired twelve people.";
    let response = serde_json::json!({
        "entities": [{"name": "ALPHA  corp", "type": "organization"}],
        "claims": [
            {"statement": "Alpha Corp opened the office called n1.", "quote": "opened the office called n1", "subject": "ALPHA  corp"},
            {"statement": "Alpha Corp hired twelve people.", "quote": "hired twelve people", "subject": "ALPHA  corp"},
        ],
    })
    .to_string();
    let (_, origin, done) = extract_doc(s, "n", text, &response).await;
    let new = done.claim_ids.clone();
    assert_eq!(new.len(), 2);

    let pairs = s.candidate_pairs(&new, 3, &v).await.unwrap();
    let pair = |a: i64, b: i64| (a.min(b), a.max(b));
    let expected: Vec<(i64, i64)> = new
        .iter()
        .flat_map(|&n| [older[4], older[3], older[2]].map(|o| pair(n, o)))
        .collect();
    assert_eq!(
        pairs, expected,
        "K=3 newest other-document claims per new claim"
    );

    let jobs = s.plan_classify_jobs(&origin, &new, 3, 4, &v).await.unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].input.pairs().unwrap().len(), 4);
    assert_eq!(jobs[1].input.pairs().unwrap().len(), 2);
    let mut planned: Vec<(i64, i64)> = jobs
        .iter()
        .flat_map(|j| j.input.pairs().unwrap().to_vec())
        .collect();
    planned.sort_unstable();
    let mut want = expected.clone();
    want.sort_unstable();
    assert_eq!(planned, want);
    assert_eq!(db.count("classified_pairs").await, 6);

    // Planned again (a redelivered extract job): nothing new, the unpublished jobs again.
    let mut again = s.plan_classify_jobs(&origin, &new, 3, 4, &v).await.unwrap();
    let mut first = jobs.clone();
    again.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    first.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    assert_eq!(again, first);
    let ids: Vec<JobId> = jobs.iter().map(|j| j.job_id.clone()).collect();
    s.mark_published(&ids).await.unwrap();
    assert!(
        s.plan_classify_jobs(&origin, &new, 3, 4, &v)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.candidate_pairs(&new, 3, &v).await.unwrap().is_empty());
    assert_eq!(db.count("classified_pairs").await, 6);
    assert_eq!(
        db.count("jobs").await,
        8 + 2,
        "8 extract jobs, 2 classify jobs"
    );

    // Reserved pairs are dropped from explicit batches too.
    let dup = s
        .ensure_classify_jobs(
            &v,
            None,
            &[vec![expected[0], (expected[1].1, expected[1].0)]],
        )
        .await
        .unwrap();
    assert!(dup.is_empty());

    // Another classify version classifies the same pairs again.
    let mut v2 = v.clone();
    v2.prompt_version = "classify-p2".into();
    assert_eq!(s.candidate_pairs(&new, 3, &v2).await.unwrap(), expected);

    // A later claim pairs with the newest, now including the two new ones.
    let (m, _) = claim_about(s, "m", "Alpha Corp").await;
    let later = s.candidate_pairs(&[m], 3, &v).await.unwrap();
    assert_eq!(later, [pair(m, new[1]), pair(m, new[0]), pair(m, older[4])]);
}

#[tokio::test]
async fn commit_classify_resolves_handles_and_is_idempotent() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = classify_version();
    let (a, _) = claim_about(s, "d1", "Alpha Corp").await;
    let (b, _) = claim_about(s, "d2", "Alpha Corp").await;
    let (c, origin) = claim_about(s, "d3", "Alpha Corp").await;
    let jobs = s
        .plan_classify_jobs(&origin, &[c], 5, 10, &v)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    let pairs = job.input.pairs().unwrap().to_vec();
    assert_eq!(pairs, [(a, c), (b, c)], "pairs are stored (lo, hi), sorted");

    // The worker's side: handles for the claims, never their ids.
    let claims = s.load_claims_for_pairs(&pairs).await.unwrap();
    assert_eq!(claims.iter().map(|c| c.id).collect::<Vec<_>>(), [a, b, c]);
    let mut handle_of = BTreeMap::new();
    let mut handle_map = BTreeMap::new();
    for (i, cl) in claims.iter().enumerate() {
        let h = Handle::nth(i as u32 + 1);
        handle_of.insert(cl.id, h);
        handle_map.insert(h, cl.id);
    }
    let input = ClassifyInput {
        handles: handle_map.keys().copied().collect(),
        pairs: pairs
            .iter()
            .map(|(x, y)| (handle_of[x], handle_of[y]))
            .collect(),
    };
    let mut relations: Vec<serde_json::Value> = input
        .pairs
        .iter()
        .map(|(x, y)| serde_json::json!({"a": x.to_string(), "b": y.to_string(), "relation": "supports"}))
        .collect();
    relations.push(serde_json::json!({"a": "C1", "b": "C99", "relation": "contradicts"}));
    let raw = serde_json::json!({ "relations": relations }).to_string();
    let j = judge_classify(&GateConfig::default(), &input, raw.as_bytes());
    assert_eq!(j.verdict(), Verdict::Partial, "{j:?}");

    let done = committed(
        s.commit_classify(&job.job_id, &call(&v), &j, &handle_map)
            .await
            .unwrap(),
    );
    assert_eq!(done.state, JobState::Partial);
    assert_eq!(done.counts.relations, 2);
    assert_eq!(done.counts.rejections, 1);
    let stored: Vec<(i64, i64, String, String)> = sqlx::query_as(
        "SELECT claim_a, claim_b, relation, task_version_fingerprint FROM claim_relations ORDER BY claim_a",
    )
    .fetch_all(db.pool())
    .await
    .unwrap();
    assert_eq!(
        stored,
        [
            (a, c, "supports".to_owned(), v.fingerprint()),
            (b, c, "supports".to_owned(), v.fingerprint()),
        ]
    );
    let reason: String =
        sqlx::query_scalar("SELECT reason FROM invalid_outputs WHERE task = 'classify'")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!(reason, "unknown_handle");

    let again = s
        .commit_classify(&job.job_id, &call(&v), &j, &handle_map)
        .await
        .unwrap();
    assert_eq!(
        again,
        CommitOutcome::AlreadyCommitted {
            state: JobState::Partial
        }
    );
    assert_eq!(db.count("claim_relations").await, 2);
    assert_eq!(db.count("invalid_outputs").await, 1);
}
