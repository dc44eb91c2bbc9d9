//! The evidence log through the page over the real store: a decision made here says it
//! was made on the review page, and a log that does not end where its head says is
//! named to the reviewer — what happened and what to run — instead of a 500.

use axum::http::StatusCode;
use relata_review_web::{ReviewWebConfig, router};
use relata_store::Via;

use crate::http::{decide, get, send, sign_in};
use crate::store::{backend, claim, claim_in, db, hold_claims, state, token};

#[tokio::test]
async fn a_stray_evidence_record_is_named_on_the_page_and_nothing_is_recorded() {
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
    let b = claim_in(
        s,
        "grace",
        "Grace Hopper",
        "Grace Hopper built the first compiler.",
        "Grace Hopper",
        "Grace Hopper built the first compiler.",
    )
    .await;
    hold_claims(s).await;
    let ada = token();
    s.issue_review_token("Ada Lovelace", &ada).await.unwrap();
    let app = router(backend(s), ReviewWebConfig::default());
    let (cookie, csrf) = sign_in(&app, "Ada Lovelace", &ada).await;

    let act = format!("approve claim:{a}");
    let res = decide(&app, &cookie, &[("csrf", &csrf), ("act", &act)]).await;
    assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
    let decided = s.reviewer_decisions(0, 10).await.unwrap();
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0].via, Some(Via::ReviewPage), "{decided:?}");
    let last = decided[0].seq;

    // One record past the head, appended with a plain INSERT.
    let stray = last + 1;
    relata_store::testing::execute(
        s,
        &format!(
            "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
                 task_version, actor_kind, actor, decision, reasons, note, decided_at,
                 prev_sha256, sha256)
             SELECT {stray}, candidate_kind, candidate_id, candidate_sha256, call_id,
                    task_version, 'reviewer', 'Mallory', 'approve', '{{}}', NULL, now(),
                    sha256, sha256
             FROM evidence WHERE seq = {last}"
        ),
    )
    .await
    .unwrap();
    let act = format!("approve claim:{b}");
    let res = decide(&app, &cookie, &[("csrf", &csrf), ("act", &act)]).await;
    assert_eq!(res.status, StatusCode::CONFLICT, "{}", res.body);
    // maud escapes `&<>"` only: the sentence reads as the store wrote it.
    assert!(
        res.body.contains(&format!(
            "evidence record {stray} is in the log, past the chain's head"
        )),
        "{}",
        res.body
    );
    assert!(
        res.body.contains("run `relata evidence verify`"),
        "{}",
        res.body
    );
    assert!(!res.body.contains("duplicate key"), "{}", res.body);
    assert_eq!(state(s, b).await, relata_core::PromotionState::Pending);
    // Only the policy's record is about it.
    let about_b = s.evidence_history(Some(claim(b)), 10).await.unwrap();
    assert_eq!(about_b.len(), 1, "{about_b:?}");

    // The history page says the chain is broken, at that record.
    let h = send(&app, get("/review/history", Some(&cookie))).await;
    assert_eq!(h.status, StatusCode::OK);
    assert!(
        h.body
            .contains(&format!("does NOT verify at record {stray}")),
        "{}",
        h.body
    );
}
