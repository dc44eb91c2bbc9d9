//! The page over the real promotion store (`StoreBackend`) on the real PostgreSQL: tokens
//! issued by the store, candidates held by the policy, decisions recorded as evidence
//! under the signed-in name, stale candidates refused with the store's reason, and the
//! chain verified by the store.

use axum::http::StatusCode;
use chrono::Utc;
use relata_core::{
    CandidateId, EXTRACT_V1, Policy, PolicyDecision, PromotionState, Reviewers, RowKind, Rule,
    TaskVersion,
};
use relata_review_web::{ReviewWebConfig, StoreBackend, auth, router};
use relata_store::{ChunkSpan, CommitOutcome, NewModelCall, Store};
use relata_testkit::harness::{Services, TestDatabase};
use relata_validate::{GateConfig, judge_extract};

use crate::http::{decide, get, log_in, send, sign_in};

/// A migrated store on a fresh database; the guard drops the database after the pool.
pub struct Db {
    pub store: Store,
    _guard: TestDatabase,
}

pub async fn db() -> Db {
    let guard = TestDatabase::create(&Services::from_env(), "review_web")
        .await
        .expect("test PostgreSQL reachable (scripts/ensure-services.sh)");
    let store = Store::connect(guard.url()).await.expect("connect");
    store.migrate().await.expect("migrate");
    Db {
        store,
        _guard: guard,
    }
}

pub fn reviewers() -> Reviewers {
    Reviewers::new(["Ada Lovelace", "Grace Hopper"]).unwrap()
}

/// Ingest a one-paragraph document (`source` "wiki") and commit one claim about `subject`
/// whose quote is `quote`; returns the claim's id.
pub async fn claim_in(
    store: &Store,
    doc: &str,
    title: &str,
    text: &str,
    subject: &str,
    quote: &str,
) -> i64 {
    let up = store
        .upsert_document(
            "wiki",
            doc,
            Some(title),
            text,
            &[ChunkSpan {
                start: 0,
                end: text.len(),
            }],
        )
        .await
        .unwrap();
    let chunk = store.load_chunk(up.chunk_ids[0]).await.unwrap();
    let v = TaskVersion::new(&EXTRACT_V1, "extract-p2", "smollm2-135m");
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

/// A policy that holds every claim for a person and allows the rest.
pub async fn hold_claims(store: &Store) {
    let rule = |name: &str, kind, decision| Rule {
        name: name.to_owned(),
        kind: Some(kind),
        warnings: None,
        entity_type: None,
        relation: None,
        source: None,
        decision,
    };
    let policy = Policy::new(vec![
        rule(
            "claims-need-a-person",
            RowKind::Claim,
            PolicyDecision::Review,
        ),
        rule("entities", RowKind::Entity, PolicyDecision::Allow),
        rule("relations", RowKind::Relation, PolicyDecision::Allow),
    ])
    .unwrap();
    store
        .promote_pending(&policy, relata_store::Sweep::batch(1000))
        .await
        .unwrap();
}

pub fn claim(id: i64) -> CandidateId {
    CandidateId {
        kind: RowKind::Claim,
        id,
    }
}

pub async fn state(store: &Store, id: i64) -> PromotionState {
    store
        .review_show(claim(id))
        .await
        .unwrap()
        .unwrap()
        .candidate
        .state
}

pub fn backend(store: &Store) -> StoreBackend {
    StoreBackend::new(store.clone(), reviewers())
}

pub fn token() -> String {
    auth::new_token()
}

#[tokio::test]
async fn over_the_store_decisions_are_evidence_records_under_the_signed_in_name() {
    let db = db().await;
    let s = &db.store;
    let a = claim_in(
        s,
        "ada",
        "Ada <b>Lovelace</b>",
        "Ada Lovelace wrote the notes on the engine. She was a mathematician.",
        "Ada Lovelace",
        "Ada Lovelace wrote the notes on the engine.",
    )
    .await;
    let b = claim_in(
        s,
        "grace",
        "Grace Hopper",
        "Grace Hopper built the first compiler.",
        "Grace Hopper",
        "Grace Hopper built the first compiler.",
    )
    .await;
    let c = claim_in(
        s,
        "babbage",
        "Charles Babbage",
        "Charles Babbage designed the engine.",
        "Charles Babbage",
        "Charles Babbage designed the engine.",
    )
    .await;
    hold_claims(s).await;
    assert_eq!(state(s, a).await, PromotionState::Pending);

    let ada = token();
    s.issue_review_token("Ada Lovelace", &ada).await.unwrap();
    let mallory = token();
    s.issue_review_token("Mallory", &mallory).await.unwrap();
    let app = router(backend(s), ReviewWebConfig::default());
    // A stored token for a name that is not a configured reviewer signs nobody in.
    let res = log_in(&app, "Mallory", &mallory, "198.51.100.7:1").await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    // A token revoked by a newer one neither.
    let old = ada.clone();
    let ada = token();
    s.issue_review_token("Ada Lovelace", &ada).await.unwrap();
    let res = log_in(&app, "Ada Lovelace", &old, "198.51.100.7:1").await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    let (cookie, csrf) = sign_in(&app, "Ada Lovelace", &ada).await;

    let q = send(&app, get("/review", Some(&cookie))).await.body;
    assert!(q.contains(r#"<mark class="quote">Ada Lovelace wrote the notes on the engine.</mark> She was a mathematician."#), "{q}");
    assert!(
        q.contains("Ada &lt;b&gt;Lovelace&lt;/b&gt;"),
        "the title, escaped"
    );
    assert!(q.contains("smollm2-135m") && q.contains("extract-p2"));
    assert!(q.contains("claims-need-a-person"), "why the policy held it");
    for id in [a, b, c] {
        assert!(q.contains(&format!(r#"value="approve claim:{id}""#)));
    }

    // Babbage's document changes: its claim is stale. A selection with it is refused
    // whole, as on the command line, and each refusal says why.
    let text = "Charles Babbage designed a different engine.";
    s.upsert_document(
        "wiki",
        "babbage",
        Some("Charles Babbage"),
        text,
        &[ChunkSpan {
            start: 0,
            end: text.len(),
        }],
    )
    .await
    .unwrap();
    let (ids_a, ids_c) = (format!("claim:{a}"), format!("claim:{c}"));
    let res = decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("ids", &ids_a),
            ("ids", &ids_c),
            ("act", "approve selected"),
        ],
    )
    .await;
    let page = send(&app, get(res.location(), Some(&cookie))).await.body;
    assert!(
        page.contains(&format!(
            "claim:{c} was not decided: stale: its document changed"
        )),
        "{page}"
    );
    assert!(
        page.contains(&format!("claim:{a} was not decided: left undecided")),
        "{page}"
    );
    assert_eq!(state(s, a).await, PromotionState::Pending);

    // One at a time: approved and rejected, by the signed-in name whatever the form says.
    let act = format!("approve claim:{a}");
    decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("act", &act),
            ("reviewer", "Grace Hopper"),
            ("by", "Grace Hopper"),
        ],
    )
    .await;
    let (act, note) = (format!("reject claim:{b}"), format!("note claim:{b}"));
    decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("act", &act),
            (&note, "the compiler came later"),
        ],
    )
    .await;
    assert_eq!(state(s, a).await, PromotionState::Promoted);
    assert_eq!(state(s, b).await, PromotionState::Rejected);
    let decisions = s.reviewer_decisions(0, 10).await.unwrap();
    assert_eq!(decisions.len(), 2);
    assert!(decisions.iter().all(|d| d.actor == "Ada Lovelace"));
    assert_eq!(
        decisions[0].note.as_deref(),
        Some("the compiler came later")
    );

    let h = send(&app, get("/review/history", Some(&cookie))).await.body;
    assert!(h.contains(&format!("claim:{a}")) && h.contains(&format!("claim:{b}")));
    assert!(h.contains("the compiler came later"));
    assert!(
        !h.contains("claims-need-a-person"),
        "the policy's records are not reviewers' decisions"
    );
    let records = s.evidence_verify().await.unwrap().records;
    assert!(
        h.contains(&format!("Evidence chain verified: {records} records")),
        "{h}"
    );
}

/// A burst of wrong tokens from one address, all at once, over the real store (each
/// lookup a database round trip): no more answers than the limit allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrent_burst_of_guesses_gets_no_more_than_the_limit() {
    let db = db().await;
    let s = &db.store;
    s.issue_review_token("Ada Lovelace", &token())
        .await
        .unwrap();
    let app = router(backend(s), ReviewWebConfig::default());
    let guesses: Vec<_> = (0..150)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                log_in(&app, "Ada Lovelace", &token(), "198.51.100.9:1")
                    .await
                    .status
            })
        })
        .collect();
    let (mut refused, mut limited) = (0, 0);
    for g in guesses {
        match g.await.unwrap() {
            StatusCode::UNAUTHORIZED => refused += 1,
            StatusCode::TOO_MANY_REQUESTS => limited += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(refused, auth::SIGN_IN_ATTEMPTS, "{limited} limited");
    assert_eq!(limited, 150 - auth::SIGN_IN_ATTEMPTS);
}

/// The remedy docs/review.md gives for a leaked token is a new one: the old token's
/// sessions end at their next request, on every page, and can decide nothing.
#[tokio::test]
async fn a_reissued_token_ends_the_sessions_the_old_one_opened() {
    let db = db().await;
    let s = &db.store;
    let a = claim_in(
        s,
        "ada",
        "Ada Lovelace",
        "Ada Lovelace wrote the notes on the engine.",
        "Ada Lovelace",
        "Ada Lovelace wrote the notes on the engine.",
    )
    .await;
    hold_claims(s).await;
    let leaked = token();
    s.issue_review_token("Ada Lovelace", &leaked).await.unwrap();
    let app = router(backend(s), ReviewWebConfig::default());
    let (old_cookie, old_csrf) = sign_in(&app, "Ada Lovelace", &leaked).await;
    assert_eq!(
        send(&app, get("/review", Some(&old_cookie))).await.status,
        StatusCode::OK
    );

    let fresh = token();
    s.issue_review_token("Ada Lovelace", &fresh).await.unwrap();
    for path in [
        "/review",
        "/review/history",
        &format!("/review/candidate/claim:{a}"),
    ] {
        let res = send(&app, get(path, Some(&old_cookie))).await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(res.location(), "/login", "{path}");
    }
    let act = format!("approve claim:{a}");
    let res = decide(&app, &old_cookie, &[("csrf", &old_csrf), ("act", &act)]).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(state(s, a).await, PromotionState::Pending);
    assert!(s.reviewer_decisions(0, 10).await.unwrap().is_empty());

    // The new token's session works.
    let (cookie, _) = sign_in(&app, "Ada Lovelace", &fresh).await;
    assert_eq!(
        send(&app, get("/review", Some(&cookie))).await.status,
        StatusCode::OK
    );
    // Revoked without a successor: that session ends too, and the token signs nobody in.
    assert!(s.revoke_review_token("Ada Lovelace").await.unwrap());
    let res = send(&app, get("/review", Some(&cookie))).await;
    assert_eq!(res.location(), "/login");
    let res = log_in(&app, "Ada Lovelace", &fresh, "198.51.100.7:1").await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert!(!s.revoke_review_token("Ada Lovelace").await.unwrap());
}
