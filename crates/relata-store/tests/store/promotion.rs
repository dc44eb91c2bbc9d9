//! The promotion gate on the real PostgreSQL: the policy's decisions, reviewers'
//! decisions, and the evidence chain that catches what was changed behind relata's back.

// Test helpers: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use futures::TryStreamExt;
use relata_core::{
    CandidateId, Decision, EvidenceDecision, Policy, PolicyDecision, PromotionState, RowKind,
};
use relata_store::canonical::{self, Value};
use relata_store::{
    ErrorKind, ExportRecord, RefusalReason, ReviewFilter, Store, StoreError, Sweep, Wait,
};
use sqlx::Connection;

use crate::common::{
    TestDb, ada, call, classify_version, commit_all_contradict, committed, extract_doc,
    extract_doc_judged_by, gate_without_support, ingest, judge, one_claim, via,
};

fn claim(id: i64) -> CandidateId {
    CandidateId {
        kind: RowKind::Claim,
        id,
    }
}

/// A claim kept with the `figure_not_in_quote` warning (the policy reviews it) and its
/// entity; returns the claim id.
async fn warned_claim(s: &Store, doc: &str) -> i64 {
    let (_, _, done) = extract_doc_judged_by(
        &gate_without_support(),
        s,
        doc,
        "Alpha Corp was founded by Jane Roe in Bern.",
        &one_claim(
            "Alpha Corp",
            "Alpha Corp was founded in 1990.",
            "founded by Jane Roe",
        ),
    )
    .await;
    assert_eq!(done.counts.warnings, 1);
    done.claim_ids[0]
}

/// A clean claim (the policy allows it); returns the claim id.
async fn clean_claim(s: &Store, doc: &str, subject: &str) -> (i64, relata_core::JobId) {
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

/// Classify the pair (`a`, `b`) as `contradicts` (the policy reviews it); `b` is the claim
/// of job `origin`. Returns the relation id.
async fn contradicts(s: &Store, a: i64, b: i64, origin: &relata_core::JobId) -> i64 {
    let v = classify_version();
    let jobs = s.plan_classify_jobs(origin, &[b], 5, 10, &v).await.unwrap();
    let job = &jobs[0];
    let pairs = job.input.pairs().unwrap().to_vec();
    assert!(pairs.contains(&(a, b)), "{pairs:?}");
    let done = commit_all_contradict(s, job, &v).await;
    assert_eq!(done.relation_ids.len(), 1, "{done:?}");
    done.relation_ids[0]
}

async fn state_of(s: &Store, id: CandidateId) -> PromotionState {
    s.review_show(id).await.unwrap().unwrap().candidate.state
}

async fn verify_ok(s: &Store) -> i64 {
    let r = s.evidence_verify().await.unwrap();
    assert_eq!(r.problem, None, "{r:?}");
    r.records
}

#[tokio::test]
async fn the_policy_promotes_clean_rows_and_holds_warned_and_contested_ones_for_review() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    let (a, _) = clean_claim(s, "d1", "Beta Inc").await;
    let (b, origin) = clean_claim(s, "d2", "Beta Inc").await;
    // A contradicts relation between the two clean claims.
    let v = classify_version();
    contradicts(s, a, b, &origin).await;

    // Nothing is promoted before the policy runs: export (promoted only) has no rows.
    let before: Vec<ExportRecord> = s.export(false, false).try_collect().await.unwrap();
    assert!(
        before
            .iter()
            .all(|r| matches!(r, ExportRecord::Document(_))),
        "{before:?}"
    );

    let summary = judge(s).await;
    assert!(!summary.busy);
    let count = |k, d| {
        summary
            .decided
            .iter()
            .find(|(kk, dd, _)| *kk == k && *dd == d)
            .map_or(0, |x| x.2)
    };
    assert_eq!(count(RowKind::Claim, PolicyDecision::Allow), 2);
    assert_eq!(count(RowKind::Claim, PolicyDecision::Review), 1);
    assert_eq!(count(RowKind::Entity, PolicyDecision::Allow), 3);
    assert_eq!(count(RowKind::Relation, PolicyDecision::Review), 1);
    assert_eq!(summary.total(), 7);
    // A second run finds nothing new.
    assert_eq!(judge(s).await.total(), 0);

    assert_eq!(state_of(s, claim(warned)).await, PromotionState::Pending);
    assert_eq!(state_of(s, claim(a)).await, PromotionState::Promoted);

    let queue = s.review_list(&ReviewFilter::default()).await.unwrap();
    let ids: Vec<String> = queue.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(queue.len(), 2, "{ids:?}");
    let w = queue.iter().find(|c| c.id == claim(warned)).unwrap();
    assert_eq!(w.rule.as_deref(), Some("warnings"));
    assert_eq!(w.reasons, ["warning: figure_not_in_quote"]);
    assert_eq!(w.row["statement"], "Alpha Corp was founded in 1990.");
    assert!(!w.stale);
    let r = queue.iter().find(|c| c.kind == RowKind::Relation).unwrap();
    assert_eq!(r.reasons, ["relation: contradicts"]);
    let only_relations = s
        .review_list(&ReviewFilter {
            kind: Some(RowKind::Relation),
            ..ReviewFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(only_relations.len(), 1);
    let other_source = s
        .review_list(&ReviewFilter {
            source: Some("elsewhere".into()),
            ..ReviewFilter::default()
        })
        .await
        .unwrap();
    assert!(other_source.is_empty());

    // Export: promoted only by default; --include-pending adds the rest with state.
    let promoted: Vec<ExportRecord> = s.export(false, false).try_collect().await.unwrap();
    let claims_out: Vec<i64> = promoted
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Claim(c) => Some(c.id),
            _ => None,
        })
        .collect();
    assert_eq!(claims_out, [a, b]);
    assert!(
        !promoted
            .iter()
            .any(|r| matches!(r, ExportRecord::Relation(_))),
        "the contradicts relation waits for a person"
    );
    let all: Vec<ExportRecord> = s.export(false, true).try_collect().await.unwrap();
    let warned_out = all
        .iter()
        .find_map(|r| match r {
            ExportRecord::Claim(c) if c.id == warned => Some(c.state),
            _ => None,
        })
        .unwrap();
    assert_eq!(warned_out, PromotionState::Pending);

    // A person approves the relation: now it is exported.
    let rel = r.id;
    let done = s
        .review_decide(
            &[rel],
            Decision::Approve,
            &ada(),
            Some("checked both sources"),
            &via(),
        )
        .await
        .unwrap();
    assert_eq!(done[0].state, PromotionState::Promoted);
    let promoted: Vec<ExportRecord> = s.export(false, false).try_collect().await.unwrap();
    assert!(
        promoted
            .iter()
            .any(|x| matches!(x, ExportRecord::Relation(r) if r.id == rel.id))
    );
    let history = s.evidence_history(Some(rel), 10).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].decision, EvidenceDecision::Review);
    assert_eq!(history[1].decision, EvidenceDecision::Approve);
    assert_eq!(history[1].actor, "Ada Lovelace");
    assert_eq!(history[1].note.as_deref(), Some("checked both sources"));
    assert_eq!(history[1].task_version, v.fingerprint());
    assert_eq!(
        history[1].prev_sha256,
        s.evidence_history(None, 2).await.unwrap()[0].sha256
    );
    assert_eq!(verify_ok(s).await, 8);

    // Status shows candidates by state.
    let st = s.status().await.unwrap();
    let n = |k: RowKind, state: PromotionState| {
        st.candidates
            .iter()
            .find(|c| c.kind == k && c.state == state)
            .map_or(0, |c| c.count)
    };
    assert_eq!(n(RowKind::Claim, PromotionState::Pending), 1);
    assert_eq!(n(RowKind::Claim, PromotionState::Promoted), 2);
    assert_eq!(n(RowKind::Relation, PromotionState::Promoted), 1);
    let pending = s.review_pending_summary().await.unwrap();
    assert_eq!(pending.len(), RowKind::ALL.len(), "one line per kind");
    let claims_pending = pending.iter().find(|p| p.kind == RowKind::Claim).unwrap();
    assert_eq!(claims_pending.count, 1);
    assert!(claims_pending.oldest.is_some());
}

#[tokio::test]
async fn decisions_are_refused_when_already_made_stale_unknown_unjudged_or_noteless() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    let (unjudged_later, _) = clean_claim(s, "d1", "Beta Inc").await;

    // Not yet judged by the policy.
    let err = s
        .review_decide(
            &[claim(unjudged_later)],
            Decision::Approve,
            &ada(),
            None,
            &via(),
        )
        .await
        .unwrap_err();
    assert_refused(&err, &[RefusalReason::NotJudged]);
    // No such candidate.
    let err = s
        .review_decide(&[claim(999_999)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap_err();
    assert_refused(&err, &[RefusalReason::NotFound]);
    // A rejection without a note.
    let err = s
        .review_decide(
            &[claim(warned)],
            Decision::Reject,
            &ada(),
            Some("  "),
            &via(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    // All or nothing: one refused candidate refuses the lot.
    judge(s).await;
    let err = s
        .review_decide(
            &[claim(warned), claim(unjudged_later)],
            Decision::Approve,
            &ada(),
            None,
            &via(),
        )
        .await
        .unwrap_err();
    assert_refused(
        &err,
        &[RefusalReason::AlreadyDecided(PromotionState::Promoted)],
    );
    assert_eq!(state_of(s, claim(warned)).await, PromotionState::Pending);

    // Stale: the document changed since the claim was proposed. It cannot be approved...
    ingest(s, "w", "Alpha Corp was founded by Jane Roe in Basel.").await;
    let err = s
        .review_decide(&[claim(warned)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap_err();
    assert_refused(&err, &[RefusalReason::Stale]);
    assert!(
        s.review_list(&ReviewFilter::default()).await.unwrap()[0].stale,
        "the queue says so"
    );
    // ...but it can be rejected, and then not decided again.
    s.review_decide(
        &[claim(warned)],
        Decision::Reject,
        &ada(),
        Some("the text changed"),
        &via(),
    )
    .await
    .unwrap();
    assert_eq!(state_of(s, claim(warned)).await, PromotionState::Rejected);
    let err = s
        .review_decide(
            &[claim(warned)],
            Decision::Reject,
            &ada(),
            Some("again"),
            &via(),
        )
        .await
        .unwrap_err();
    assert_refused(
        &err,
        &[RefusalReason::AlreadyDecided(PromotionState::Rejected)],
    );
    verify_ok(s).await;
}

fn assert_refused(err: &StoreError, expected: &[RefusalReason]) {
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert!(!err.is_retryable());
    let StoreError::ReviewRefused(r) = err else {
        panic!("{err}");
    };
    let got: Vec<_> = r.iter().map(|r| r.reason.clone()).collect();
    assert_eq!(got, expected, "{err}");
}

/// Provenance or refused: a candidate whose model call record is gone, or names no
/// prompt version, is denied whatever the rules say, for every kind of candidate.
#[tokio::test]
async fn a_candidate_without_its_model_call_record_is_denied() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (gone, _) = clean_claim(s, "d1", "Beta Inc").await;
    let (kept, origin) = clean_claim(s, "d2", "Beta Inc").await;
    let relation = contradicts(s, gone, kept, &origin).await;
    let (unnamed, _) = clean_claim(s, "d3", "Gamma Ltd").await;
    // Behind relata's back, with the foreign keys switched off for this session (a
    // superuser can): the first claim's call record (and its entity's) disappears...
    let mut conn = db.pool().acquire().await.unwrap();
    sqlx::query("SET session_replication_role = replica")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("DELETE FROM model_calls WHERE id = (SELECT call_id FROM claims WHERE id = $1)")
        .bind(gone)
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("SET session_replication_role = DEFAULT")
        .execute(&mut *conn)
        .await
        .unwrap();
    // ...and the relation's call record no longer names its prompt version.
    sqlx::query(
        "UPDATE model_calls SET prompt_version = ''
         WHERE id = (SELECT call_id FROM claim_relations WHERE id = $1)",
    )
    .bind(relation)
    .execute(&mut *conn)
    .await
    .unwrap();
    // ...and the third claim's call record (its entity's too) names no schema.
    sqlx::query(
        "UPDATE model_calls SET schema_sha256 = ''
         WHERE id = (SELECT call_id FROM claims WHERE id = $1)",
    )
    .bind(unnamed)
    .execute(&mut *conn)
    .await
    .unwrap();
    drop(conn);
    let allow_all: Vec<relata_core::Rule> =
        serde_json::from_str(r#"[{"name": "everything", "decision": "allow"}]"#).unwrap();
    let summary = s
        .promote_pending(&Policy::new(allow_all).unwrap(), Sweep::batch(100))
        .await
        .unwrap();
    let mut decided = summary.decided.clone();
    decided.sort_by_key(|(k, d, _)| (k.as_str(), d.as_str()));
    assert_eq!(
        decided,
        [
            (RowKind::Claim, PolicyDecision::Allow, 1),
            (RowKind::Claim, PolicyDecision::Deny, 2),
            (RowKind::Entity, PolicyDecision::Allow, 1),
            (RowKind::Entity, PolicyDecision::Deny, 2),
            (RowKind::Relation, PolicyDecision::Deny, 1),
        ],
        "{summary:?}"
    );
    let shown = s.review_show(claim(gone)).await.unwrap().unwrap();
    assert_eq!(shown.candidate.state, PromotionState::Denied);
    assert_eq!(
        shown.candidate.rule.as_deref(),
        Some(relata_core::promotion::NO_PROVENANCE)
    );
    assert!(shown.call.is_none());
    assert_eq!(shown.evidence[0].call_id, None);
    let rel = CandidateId {
        kind: RowKind::Relation,
        id: relation,
    };
    let shown = s.review_show(rel).await.unwrap().unwrap();
    assert_eq!(shown.candidate.state, PromotionState::Denied);
    assert_eq!(
        shown.candidate.rule.as_deref(),
        Some(relata_core::promotion::NO_PROVENANCE)
    );
    // Denied candidates have no queue row; they are listed from their records.
    let denied = s
        .review_list(&ReviewFilter {
            state: PromotionState::Denied,
            ..ReviewFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(denied.len(), 5, "{denied:?}");
    assert!(denied.iter().any(|c| c.id == rel), "{denied:?}");
    // A call on record but incomplete: denied for provenance, and the evidence still
    // names the call it was.
    let shown = s.review_show(claim(unnamed)).await.unwrap().unwrap();
    assert_eq!(shown.candidate.state, PromotionState::Denied);
    assert_eq!(
        shown.candidate.rule.as_deref(),
        Some(relata_core::promotion::NO_PROVENANCE)
    );
    assert!(shown.evidence[0].call_id.is_some());
    assert_eq!(state_of(s, claim(kept)).await, PromotionState::Promoted);
    let exported: Vec<ExportRecord> = s.export(true, false).try_collect().await.unwrap();
    let claims: Vec<i64> = exported
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Claim(c) => Some(c.id),
            _ => None,
        })
        .collect();
    assert_eq!(claims, [kept]);
    assert!(
        !exported
            .iter()
            .any(|r| matches!(r, ExportRecord::Relation(_)))
    );
}

#[tokio::test]
async fn the_evidence_log_refuses_update_delete_and_truncate() {
    let db = TestDb::new().await;
    let s = &db.store;
    warned_claim(s, "w").await;
    judge(s).await;
    for sql in [
        "UPDATE evidence SET decision = 'allow' WHERE seq = 1",
        "DELETE FROM evidence WHERE seq = 1",
        "TRUNCATE evidence CASCADE",
    ] {
        let err = StoreError::from(sqlx::query(sql).execute(db.pool()).await.unwrap_err());
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    verify_ok(s).await;
}

/// Run `sql` on a connection of a superuser who switched triggers off: what the log's
/// own defences cannot stop, verify must catch.
async fn behind_relatas_back(db: &TestDb, sql: &str) {
    let mut conn = db.pool().acquire().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

async fn three_decisions() -> (TestDb, i64) {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    s.review_decide(
        &[claim(warned)],
        Decision::Approve,
        &ada(),
        Some("ok"),
        &via(),
    )
    .await
    .unwrap();
    // entity, claim (review), claim (approve)
    assert_eq!(verify_ok(s).await, 3);
    (db, warned)
}

#[tokio::test]
async fn verify_names_the_record_of_a_row_edited_with_plain_sql() {
    let (db, warned) = three_decisions().await;
    // No trigger needs switching off: the claim table allows updates.
    sqlx::query("UPDATE claims SET statement = 'Alpha Corp was founded in 1991.' WHERE id = $1")
        .bind(warned)
        .execute(db.pool())
        .await
        .unwrap();
    let p = db.store.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.seq, Some(2), "{p}");
    assert_eq!(p.candidate, Some(claim(warned)));
    assert!(p.what.contains("edited"), "{p}");
}

#[tokio::test]
async fn verify_names_an_altered_evidence_record() {
    let (db, _) = three_decisions().await;
    behind_relatas_back(&db, "UPDATE evidence SET actor = 'Mallory' WHERE seq = 3").await;
    let p = db.store.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.seq, Some(3), "{p}");
    assert!(p.what.contains("altered"), "{p}");
}

#[tokio::test]
async fn verify_names_a_deleted_evidence_record_in_the_middle_and_at_the_end() {
    let (db, _) = three_decisions().await;
    behind_relatas_back(&db, "DELETE FROM evidence WHERE seq = 2").await;
    let p = db.store.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.seq, Some(3), "{p}");
    assert!(p.what.contains("deleted"), "{p}");

    let (db, _) = three_decisions().await;
    // The last record and its promotion pointer, as someone covering their tracks would.
    behind_relatas_back(&db, "DELETE FROM evidence WHERE seq = 3;").await;
    let p = db.store.evidence_verify().await.unwrap().problem.unwrap();
    assert!(p.what.contains("deleted"), "{p}");
}

#[tokio::test]
async fn verify_catches_a_promotion_state_set_with_plain_sql() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    sqlx::query("UPDATE promotions SET state = 'promoted' WHERE candidate_id = $1 AND candidate_kind = 'claim'")
        .bind(warned)
        .execute(db.pool())
        .await
        .unwrap();
    let p = s.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.candidate, Some(claim(warned)), "{p}");
    assert!(p.what.contains("state was edited"), "{p}");
    // And the edit promotes nothing: a candidate's state is its latest evidence record,
    // which still holds it for a person.
    let promoted: bool = sqlx::query_scalar("SELECT relata_promoted('claim', $1)")
        .bind(warned)
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert!(!promoted);
    let exported: Vec<ExportRecord> = s.export(false, false).try_collect().await.unwrap();
    assert!(
        !exported
            .iter()
            .any(|r| matches!(r, ExportRecord::Claim(c) if c.id == warned)),
        "{exported:?}"
    );
}

/// The review queue holds only what the policy sent to a person; a candidate it allowed
/// or denied is decided by its record alone. Verify catches a queue row deleted (the
/// candidate would drop out of every reviewer's sight) or one added for a candidate the
/// policy allowed, and a person cannot decide a held candidate whose row is gone.
#[tokio::test]
async fn verify_catches_a_review_queue_row_deleted_or_added_behind_relatas_back() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    let (clean, _) = clean_claim(s, "d1", "Beta Inc").await;
    judge(s).await;
    let queued: Vec<i64> = sqlx::query_scalar("SELECT candidate_id FROM promotions")
        .fetch_all(db.pool())
        .await
        .unwrap();
    assert_eq!(queued, [warned], "only the held claim has a queue row");
    assert_eq!(state_of(s, claim(clean)).await, PromotionState::Promoted);
    let listed = s
        .review_list(&ReviewFilter {
            state: PromotionState::Promoted,
            ..ReviewFilter::default()
        })
        .await
        .unwrap();
    assert!(listed.iter().any(|c| c.id == claim(clean)), "{listed:?}");
    verify_ok(s).await;

    let row: (String, i64) = sqlx::query_as(
        "DELETE FROM promotions WHERE candidate_kind = 'claim' AND candidate_id = $1
         RETURNING rule, evidence_seq",
    )
    .bind(warned)
    .fetch_one(db.pool())
    .await
    .unwrap();
    let p = s.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.candidate, Some(claim(warned)), "{p}");
    assert!(p.what.contains("was deleted"), "{p}");
    let err = s
        .review_decide(&[claim(warned)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap_err();
    assert_refused(&err, &[RefusalReason::NotQueued]);

    // Put it back, and add a row for the allowed claim pointing at its own record.
    for (id, seq) in [(warned, row.1), (clean, 0)] {
        sqlx::query(
            "INSERT INTO promotions (candidate_kind, candidate_id, state, policy_decision, rule,
                 sources, revision_ids, evidence_seq, proposed_at, decided_at)
             SELECT 'claim', $1, 'pending', 'review', $2, '{test}', ARRAY[c.revision_id],
                    CASE WHEN $3 = 0 THEN (SELECT max(seq) FROM evidence
                                           WHERE candidate_kind = 'claim' AND candidate_id = $1)
                         ELSE $3 END,
                    now(), now()
             FROM claims c WHERE c.id = $1",
        )
        .bind(id)
        .bind(&row.0)
        .bind(seq)
        .execute(db.pool())
        .await
        .unwrap();
    }
    let p = s.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.candidate, Some(claim(clean)), "{p}");
    assert!(p.what.contains("added behind relata's back"), "{p}");
}

/// No foreign key ties a promotion to its evidence record (it cost a look-up per
/// decision); verify is what catches a promotion whose record is missing or about
/// another candidate.
#[tokio::test]
async fn verify_catches_a_promotion_pointing_at_a_missing_or_foreign_record() {
    // Record 99 does not exist; record 1 is the entity's.
    for seq in [99i64, 1] {
        let (db, warned) = three_decisions().await;
        sqlx::query(
            "UPDATE promotions SET evidence_seq = $1
             WHERE candidate_id = $2 AND candidate_kind = 'claim'",
        )
        .bind(seq)
        .bind(warned)
        .execute(db.pool())
        .await
        .unwrap();
        let p = db.store.evidence_verify().await.unwrap().problem.unwrap();
        assert_eq!(p.candidate, Some(claim(warned)), "record {seq}: {p}");
        assert!(p.what.contains("another candidate"), "record {seq}: {p}");
    }
}

/// Migration 20261224000001 turned the log's hex hashes into bytes; a chain written
/// before it (hex text, as relata wrote it then) must still verify after it and go on
/// growing from its old head.
#[tokio::test]
async fn a_chain_written_before_the_hashes_became_bytes_still_verifies() {
    const BYTES: i64 = 20261224000001;
    let db = TestDb::empty().await;
    let s = &db.store;
    let before = relata_store::MIGRATOR
        .iter()
        .map(|m| m.version)
        .filter(|v| *v < BYTES)
        .max()
        .unwrap();
    relata_store::MIGRATOR
        .run_to(before, db.pool())
        .await
        .unwrap();
    let (id, _) = clean_claim(s, "d1", "Gamma AG").await;
    let candidate_sha256: String =
        sqlx::query_scalar("SELECT relata_candidate_sha256('claim', $1)")
            .bind(id)
            .fetch_one(db.pool())
            .await
            .unwrap();
    let mut record = relata_store::EvidenceRecord {
        seq: 1,
        candidate: claim(id),
        candidate_sha256,
        call_id: None,
        task_version: "v-old".into(),
        actor_kind: relata_core::ActorKind::Policy,
        actor: "clean rows".into(),
        decision: EvidenceDecision::Allow,
        reasons: Vec::new(),
        note: None,
        decided_at: chrono::DateTime::parse_from_rfc3339("2026-12-20T10:00:00.123456Z")
            .unwrap()
            .into(),
        prev_sha256: "0".repeat(64),
        sha256: String::new(),
        via: None,
    };
    record.sha256 = record.compute_sha256();
    sqlx::query(
        "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
             task_version, actor_kind, actor, decision, reasons, note, decided_at,
             prev_sha256, sha256)
         VALUES (1, 'claim', $1, $2, NULL, $3, 'policy', $4, 'allow', '{}', NULL, $5, $6, $7)",
    )
    .bind(id)
    .bind(&record.candidate_sha256)
    .bind(&record.task_version)
    .bind(&record.actor)
    .bind(record.decided_at)
    .bind(&record.prev_sha256)
    .bind(&record.sha256)
    .execute(db.pool())
    .await
    .unwrap();
    sqlx::query("UPDATE evidence_head SET seq = 1, sha256 = $1")
        .bind(&record.sha256)
        .execute(db.pool())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO promotions (candidate_kind, candidate_id, state, policy_decision, rule,
             sources, revision_ids, evidence_seq, proposed_at, decided_at)
         VALUES ('claim', $1, 'promoted', 'allow', $2, '{corpus}', '{1}', 1, $3, $3)",
    )
    .bind(id)
    .bind(&record.actor)
    .bind(record.decided_at)
    .execute(db.pool())
    .await
    .unwrap();
    // (This code cannot verify the old layout: it reads the log as bytes.)

    s.migrate().await.unwrap();
    let kind: String = sqlx::query_scalar(
        "SELECT data_type FROM information_schema.columns
         WHERE table_name = 'evidence' AND column_name = 'sha256'",
    )
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(kind, "bytea");
    assert_eq!(verify_ok(s).await, 1);
    assert_eq!(
        s.evidence_history(None, 10).await.unwrap(),
        [record.clone()]
    );

    // The chain goes on from the converted head: the claim's entity is judged next.
    let summary = judge(s).await;
    assert_eq!(summary.total(), 1, "{summary:?}");
    let history = s.evidence_history(None, 10).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].prev_sha256, record.sha256);
    assert_eq!(verify_ok(s).await, 2);
}

#[tokio::test]
async fn a_new_task_versions_rows_are_new_candidates_and_earlier_approvals_do_not_carry_over() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    s.review_decide(&[claim(warned)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap();
    // The same chunk under another prompt version (a backfill): its own job and rows.
    let chunk_id: i64 = sqlx::query_scalar("SELECT chunk_id FROM claims WHERE id = $1")
        .bind(warned)
        .fetch_one(db.pool())
        .await
        .unwrap();
    let chunk = s.load_chunk(chunk_id).await.unwrap();
    let v2 = relata_core::TaskVersion::new(&relata_core::EXTRACT_V1, "extract-p2", "test-model");
    s.ensure_extract_jobs(&v2, &[chunk_id]).await.unwrap();
    let job = relata_store::extract_job_id(&v2, chunk.id, &chunk.sha256);
    let j = relata_validate::judge_extract(
        &gate_without_support(),
        &chunk.text,
        one_claim(
            "Alpha Corp",
            "Alpha Corp was founded in 1990.",
            "founded by Jane Roe",
        )
        .as_bytes(),
    );
    let done = committed(
        s.commit_extract(&job, &call(&v2), &j, &chunk)
            .await
            .unwrap(),
    );
    let again = done.claim_ids[0];
    assert_ne!(again, warned);
    judge(s).await;
    assert_eq!(state_of(s, claim(again)).await, PromotionState::Pending);
    assert_eq!(state_of(s, claim(warned)).await, PromotionState::Promoted);
    let approved = s.evidence_history(Some(claim(warned)), 10).await.unwrap();
    let pending = s.evidence_history(Some(claim(again)), 10).await.unwrap();
    assert_eq!(
        approved[1].task_version,
        crate::common::extract_version().fingerprint()
    );
    assert_eq!(pending[0].task_version, v2.fingerprint());
    verify_ok(s).await;
}

#[tokio::test]
async fn a_busy_chain_is_skipped_not_waited_for_by_the_background_promoter() {
    let db = TestDb::new().await;
    let s = &db.store;
    warned_claim(s, "w").await;
    let mut holder = db.pool().acquire().await.unwrap();
    let mut tx = holder.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM evidence_head FOR UPDATE")
        .execute(&mut *tx)
        .await
        .unwrap();
    let summary = s
        .promote_pending(&Policy::shipped(), Sweep::batch(100).wait(Wait::SkipIfBusy))
        .await
        .unwrap();
    assert!(summary.busy);
    assert_eq!(summary.total(), 0);
    tx.rollback().await.unwrap();
    let summary = s
        .promote_pending(&Policy::shipped(), Sweep::batch(100).wait(Wait::SkipIfBusy))
        .await
        .unwrap();
    assert!(!summary.busy);
    assert_eq!(summary.total(), 2);
}

#[tokio::test]
async fn show_marks_the_quote_in_its_chunk_and_names_the_call() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    // Shown before the policy ran too, as proposed.
    let d = s.review_show(claim(warned)).await.unwrap().unwrap();
    assert_eq!(d.candidate.state, PromotionState::Proposed);
    judge(s).await;
    let d = s.review_show(claim(warned)).await.unwrap().unwrap();
    let chunk = d.chunk.unwrap();
    let (qs, qe) = chunk.quote.unwrap();
    assert_eq!(&chunk.text[qs..qe], "founded by Jane Roe");
    assert_eq!(d.warnings.len(), 1);
    assert_eq!(d.call.unwrap().model, "test-model");
    assert_eq!(d.evidence.len(), 1);
    assert!(s.review_show(claim(424_242)).await.unwrap().is_none());
}

/// The promoter sends its rows by `COPY` in the binary format, each value with its
/// length in bytes and each candidate's sources, revisions and reasons as arrays: a
/// source name or a reviewer's note with multi-byte characters, quotes, backslashes (one
/// before `N` or `.`, which `COPY`'s text format reads as NULL or the end of data),
/// braces, commas, the word NULL, tabs or line breaks comes back as it was, the
/// candidate's time is its claim's to the microsecond, and the chain still verifies.
#[tokio::test]
async fn awkward_source_names_are_recorded_as_they_are() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (c, _) = clean_claim(s, "d1", "Alpha Corp").await;
    let held = warned_claim(s, "d3").await;
    let awkward = "a \"quoted\", back\\slash {source} NULL \\N\t\\.\nnext\r\n\\.\n é 🦀 Ωmega";
    sqlx::query("UPDATE documents SET source = $1")
        .bind(awkward)
        .execute(db.pool())
        .await
        .unwrap();
    judge(s).await;
    // The allowed claim is listed from its record; the held one from its queue row,
    // which went in by COPY.
    let shown = s.review_show(claim(c)).await.unwrap().unwrap();
    assert_eq!(shown.candidate.state, PromotionState::Promoted);
    assert_eq!(shown.candidate.sources, [awkward]);
    let shown = s.review_show(claim(held)).await.unwrap().unwrap();
    assert_eq!(shown.candidate.state, PromotionState::Pending);
    assert_eq!(shown.candidate.sources, [awkward]);
    let revisions: Vec<i64> = sqlx::query_scalar(
        "SELECT revision_ids FROM promotions WHERE candidate_kind = 'claim' AND candidate_id = $1",
    )
    .bind(held)
    .fetch_one(db.pool())
    .await
    .unwrap();
    let current: i64 = sqlx::query_scalar("SELECT revision_id FROM claims WHERE id = $1")
        .bind(held)
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(revisions, [current]);
    let same_time: bool = sqlx::query_scalar(
        "SELECT p.proposed_at = c.created_at FROM promotions p JOIN claims c ON c.id = p.candidate_id
         WHERE p.candidate_kind = 'claim' AND p.candidate_id = $1",
    )
    .bind(held)
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert!(
        same_time,
        "a promotion's proposed_at is its claim's created_at"
    );
    verify_ok(s).await;

    // A reviewer's note goes through the same rows (trimmed, as every note is).
    let warned = warned_claim(s, "d2").await;
    judge(s).await;
    s.review_decide(
        &[claim(warned)],
        Decision::Reject,
        &ada(),
        Some(awkward),
        &via(),
    )
    .await
    .unwrap();
    let history = s.evidence_history(Some(claim(warned)), 10).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].note, None);
    assert_eq!(history[1].note.as_deref(), Some(awkward.trim()));
    verify_ok(s).await;
}

/// A pass goes on from where its last batch got to, so each batch reads only what is
/// new; a candidate below the cursor (a commit that became visible after a higher id was
/// judged) is not judged by that pass, stays `proposed`, and a pass from the start
/// judges it.
#[tokio::test]
async fn a_pass_goes_on_from_its_cursor_and_a_pass_from_the_start_finds_what_it_went_by() {
    let db = TestDb::new().await;
    let s = &db.store;
    let mut claims = Vec::new();
    for (doc, subject) in [("d1", "Beta Inc"), ("d2", "Gamma Ltd"), ("d3", "Delta Co")] {
        claims.push(clean_claim(s, doc, subject).await.0);
    }
    let policy = Policy::shipped();
    let mut cursor = relata_store::PromoteCursor::START;
    let mut batches = Vec::new();
    loop {
        let summary = s
            .promote_pending(&policy, Sweep::batch(1).after(cursor))
            .await
            .unwrap();
        if summary.total() == 0 {
            assert!(
                !summary.more,
                "an empty batch found all judged: {summary:?}"
            );
            break;
        }
        // A batch that filled its limit cannot know whether more wait above it.
        assert!(summary.more, "{summary:?}");
        assert!(summary.reached.get(RowKind::Claim) > cursor.get(RowKind::Claim));
        cursor = summary.reached;
        batches.push(summary.total());
    }
    // One entity and one claim a batch: three batches, every candidate judged once.
    assert_eq!(batches, [2, 2, 2]);
    assert_eq!(cursor.get(RowKind::Claim), claims[2]);
    for &c in &claims {
        assert_eq!(state_of(s, claim(c)).await, PromotionState::Promoted);
    }

    let late = clean_claim(s, "d4", "Epsilon Group").await.0;
    let past = cursor
        .with(RowKind::Claim, late)
        .with(RowKind::Entity, i64::MAX);
    let summary = s
        .promote_pending(&policy, Sweep::batch(100).after(past))
        .await
        .unwrap();
    assert_eq!(summary.total(), 0, "{summary:?}");
    assert_eq!(state_of(s, claim(late)).await, PromotionState::Proposed);
    let summary = s
        .promote_pending(
            &policy,
            Sweep::batch(100).after(relata_store::PromoteCursor::START),
        )
        .await
        .unwrap();
    assert_eq!(summary.total(), 2, "{summary:?}");
    assert!(
        !summary.more,
        "a batch below its limit drained what was there: {summary:?}"
    );
    assert_eq!(state_of(s, claim(late)).await, PromotionState::Promoted);
    verify_ok(s).await;
}

/// What a commit returns of its rows is exactly what a sweep reads back for them, for
/// every kind, with a warning, and with a call that is not complete provenance: the
/// policy decides the same whichever path judges a candidate.
#[tokio::test]
async fn a_commits_candidates_are_what_a_sweep_reads_back() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (_, _, warned) = extract_doc_judged_by(
        &gate_without_support(),
        s,
        "w",
        "Alpha Corp was founded by Jane Roe in Bern.",
        &one_claim(
            "Alpha Corp",
            "Alpha Corp was founded in 1990.",
            "founded by Jane Roe",
        ),
    )
    .await;
    clean_claim(s, "d1", "Beta Inc").await;
    let (b, origin) = clean_claim(s, "d2", "Beta Inc").await;
    let v = classify_version();
    let jobs = s
        .plan_classify_jobs(&origin, &[b], 5, 10, &v)
        .await
        .unwrap();
    let related = commit_all_contradict(s, &jobs[0], &v).await;
    assert_eq!(related.relation_ids.len(), 1, "{related:?}");
    // A call record that names no prompt version: not complete provenance.
    let unnamed = relata_core::TaskVersion::new(&relata_core::EXTRACT_V1, "", "test-model");
    let up = ingest(s, "u", "Gamma Ltd opened the office called u in the city.").await;
    let chunk = s.load_chunk(up.chunk_ids[0]).await.unwrap();
    s.ensure_extract_jobs(&unnamed, &[chunk.id]).await.unwrap();
    let job = relata_store::extract_job_id(&unnamed, chunk.id, &chunk.sha256);
    let response = one_claim(
        "Gamma Ltd",
        "Gamma Ltd opened the office called u.",
        "opened the office called u",
    );
    let j = relata_validate::judge_extract(
        &relata_validate::GateConfig::default(),
        &chunk.text,
        response.as_bytes(),
    );
    let incomplete = committed(
        s.commit_extract(&job, &call(&unnamed), &j, &chunk)
            .await
            .unwrap(),
    );

    // Text the canonical encoding must escape: quotes, a backslash, a tab, non-ASCII.
    let subject = "Zeta \"Z\" Ltd";
    let (_, _, awkward) = extract_doc(
        s,
        "z",
        &format!("{subject} opened the office\tcalled back\\slash-é in the city."),
        &one_claim(
            subject,
            &format!("{subject} opened the office called back\\slash-é."),
            "opened the office\tcalled back\\slash-é",
        ),
    )
    .await;
    assert_eq!(awkward.claim_ids.len(), 1, "{awkward:?}");

    for done in [&warned, &related, &incomplete, &awkward] {
        assert!(!done.candidates.is_empty(), "{done:?}");
        for kind in RowKind::ALL {
            let mut handed: Vec<_> = done
                .candidates
                .iter()
                .filter(|c| c.id().kind == *kind)
                .cloned()
                .collect();
            handed.sort_by_key(|c| c.id());
            let ids: Vec<i64> = handed.iter().map(|c| c.id().id).collect();
            let swept = relata_store::testing::candidates_as_swept(s, *kind, &ids)
                .await
                .unwrap();
            assert_eq!(handed, swept, "{kind}");
        }
    }
    assert_eq!(warned.candidates.len(), 2);
    assert_eq!(incomplete.candidates.len(), 2);

    // Judged from what the commits returned: the warned claim waits for review, the
    // contested relation too, the incomplete call's rows are denied, and the log holds.
    let everything: Vec<_> = [warned, related, incomplete, awkward]
        .into_iter()
        .flat_map(|d| d.candidates)
        .collect();
    let summary = s
        .promote_committed(&Policy::shipped(), everything)
        .await
        .unwrap();
    let mut decided = summary.decided.clone();
    decided.sort_by_key(|(k, d, _)| (k.as_str(), d.as_str()));
    assert_eq!(
        decided,
        [
            (RowKind::Claim, PolicyDecision::Allow, 1),
            (RowKind::Claim, PolicyDecision::Deny, 1),
            (RowKind::Claim, PolicyDecision::Review, 1),
            (RowKind::Entity, PolicyDecision::Allow, 2),
            (RowKind::Entity, PolicyDecision::Deny, 1),
            (RowKind::Relation, PolicyDecision::Review, 1),
        ],
        "{summary:?}"
    );
    verify_ok(s).await;
}

/// A commit hashes its rows in Rust; `evidence verify`, reviewers and sweeps hash them in
/// SQL. The text both hash is `jsonb_build_array(…)::text`, which the Rust writer must
/// produce byte for byte, whatever the text: every ASCII character, escapes, non-ASCII,
/// and the extreme integers.
#[tokio::test]
async fn the_canonical_text_is_postgresqls_jsonb_text_for_any_text() {
    let db = TestDb::new().await;
    let mut texts: Vec<String> = (1u8..0x80).map(|b| format!("a{}z", b as char)).collect();
    texts.extend(
        [
            "",
            "\\u0000",
            "é 漢 🦀 \u{2028}\u{2029}\u{feff}",
            "</script>",
            "line\r\nbreak",
        ]
        .map(str::to_owned),
    );
    texts.push("x\"y\\".repeat(5000));
    for t in &texts {
        for n in [i64::MIN, -1, 0, i64::MAX] {
            let (text, sha): (String, String) = sqlx::query_as(
                "SELECT a::text, encode(sha256(convert_to(a::text, 'UTF8')), 'hex')
                 FROM (SELECT jsonb_build_array('claim', $1::bigint, $2::text, NULL::bigint,
                                                $3::int) AS a) x",
            )
            .bind(n)
            .bind(t)
            .bind(-7i32)
            .fetch_one(db.pool())
            .await
            .unwrap();
            let values = [
                "claim".into(),
                n.into(),
                t.as_str().into(),
                Value::Null,
                (-7i32).into(),
            ];
            assert_eq!(canonical::jsonb_array_text(&values), text, "{t:?}");
            assert_eq!(canonical::sha256_hex(&values), sha, "{t:?}");
        }
    }
}

/// A candidate is judged once whichever path comes first: handed-over candidates that a
/// sweep judged meanwhile are skipped, the rest recorded, and the chain stays whole.
#[tokio::test]
async fn handed_over_candidates_a_sweep_judged_first_are_skipped() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (_, _, first) = extract_doc(
        s,
        "d1",
        "Beta Inc opened the office called d1 in the city.",
        &one_claim(
            "Beta Inc",
            "Beta Inc opened the office called d1.",
            "opened the office called d1",
        ),
    )
    .await;
    judge(s).await;
    let (c, _) = clean_claim(s, "d2", "Gamma Ltd").await;
    let mut handed = first.candidates.clone();
    let (_, _, second) = extract_doc(
        s,
        "d3",
        "Delta Co opened the office called d3 in the city.",
        &one_claim(
            "Delta Co",
            "Delta Co opened the office called d3.",
            "opened the office called d3",
        ),
    )
    .await;
    handed.extend(second.candidates.clone());
    let summary = s
        .promote_committed(&Policy::shipped(), handed.clone())
        .await
        .unwrap();
    assert_eq!(summary.already_judged, 2, "{summary:?}");
    assert_eq!(summary.total(), 2, "{summary:?}");
    // Offered again, all of them are judged already; nothing is recorded twice.
    let again = s
        .promote_committed(&Policy::shipped(), handed)
        .await
        .unwrap();
    assert_eq!((again.already_judged, again.total()), (4, 0));
    // The row nobody handed over waits for a sweep.
    assert_eq!(state_of(s, claim(c)).await, PromotionState::Proposed);
    assert_eq!(judge(s).await.total(), 2);
    assert_eq!(state_of(s, claim(c)).await, PromotionState::Promoted);
    assert_eq!(verify_ok(s).await, 6);
    // Six records, one for each of six candidates: none was decided twice.
    let decided: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT (candidate_kind, candidate_id)) FROM evidence")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!(decided, 6);
}

/// A sweep up to a ceiling leaves the rows committed above it (a worker's sweep leaves
/// the rows its commits are about to hand over); the high water names the last ids.
#[tokio::test]
async fn a_sweep_stops_at_its_ceiling() {
    let db = TestDb::new().await;
    let s = &db.store;
    assert_eq!(
        s.candidate_high_water().await.unwrap(),
        relata_store::PromoteCursor::START
    );
    let (below, _) = clean_claim(s, "d1", "Beta Inc").await;
    let high = s.candidate_high_water().await.unwrap();
    assert_eq!(high.get(RowKind::Claim), below);
    assert_eq!(high.get(RowKind::Relation), 0);
    let (above, _) = clean_claim(s, "d2", "Gamma Ltd").await;
    let summary = s
        .promote_pending(&Policy::shipped(), Sweep::batch(100).upto(high))
        .await
        .unwrap();
    assert_eq!(summary.total(), 2, "{summary:?}");
    assert_eq!(summary.reached, high);
    assert_eq!(state_of(s, claim(below)).await, PromotionState::Promoted);
    assert_eq!(state_of(s, claim(above)).await, PromotionState::Proposed);
    assert_eq!(judge(s).await.total(), 2);
    verify_ok(s).await;
}

/// The issue's case: a document's text edited with plain SQL (its revision, then its
/// hash, then its chunk and the chunk's hash, as someone covering their tracks would),
/// while a promoted claim still quotes what it said. No trigger guards a revision and
/// no evidence record hashes one, so at each step verify must name what no longer
/// matches: the revision, the chunk, and finally the claim, with both texts.
#[tokio::test]
async fn verify_names_a_document_edited_under_a_promoted_claim_at_every_step_of_the_edit() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (id, _) = clean_claim(s, "Warsaw", "Beta Inc").await;
    judge(s).await;
    assert_eq!(state_of(s, claim(id)).await, PromotionState::Promoted);
    verify_ok(s).await;
    let (document, revision, chunk): (i64, i64, i64) =
        sqlx::query_as("SELECT document_id, revision_id, chunk_id FROM claims WHERE id = $1")
            .bind(id)
            .fetch_one(db.pool())
            .await
            .unwrap();
    let problem = || async {
        let r = s.evidence_verify().await.unwrap();
        assert_eq!(r.head, None, "no head is offered for a store that fails");
        r.problem.expect("verify must fail")
    };

    // 1. The revision's text: its sha256 no longer matches.
    sqlx::query("UPDATE document_revisions SET text = replace(text, 'Warsaw', 'Berlin')")
        .execute(db.pool())
        .await
        .unwrap();
    let p = problem().await;
    assert_eq!(
        (p.seq, p.document_id, p.revision_id, p.chunk_id, p.candidate),
        (None, Some(document), Some(revision), None, None),
        "{p}"
    );
    assert!(p.what.contains("sha256"), "{p}");
    assert!(
        p.to_string()
            .starts_with(&format!("document {document} revision {revision}: ")),
        "{p}"
    );
    // What verify is for: the edit promotes nothing new, but the claim stays promoted
    // while its document no longer says what it quotes.
    let promoted: bool = sqlx::query_scalar("SELECT relata_promoted('claim', $1)")
        .bind(id)
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert!(promoted);

    // 2. ...and its hash: the chunk is no longer the revision's bytes at its offsets.
    sqlx::query(
        "UPDATE document_revisions SET sha256 = encode(sha256(convert_to(text, 'UTF8')), 'hex')",
    )
    .execute(db.pool())
    .await
    .unwrap();
    let p = problem().await;
    assert_eq!(
        (p.document_id, p.revision_id, p.chunk_id, p.candidate),
        (Some(document), Some(revision), Some(chunk), None),
        "{p}"
    );
    assert!(p.what.contains("not the chunk's text"), "{p}");

    // 3. ...and the chunk's text: it no longer matches its own hash.
    sqlx::query("UPDATE chunks SET text = replace(text, 'Warsaw', 'Berlin')")
        .execute(db.pool())
        .await
        .unwrap();
    let p = problem().await;
    assert_eq!(p.chunk_id, Some(chunk), "{p}");
    assert!(p.what.contains("chunk was edited"), "{p}");

    // 4. ...and the chunk's hash: every source hash matches again, and the claim's
    // quote is what no longer matches the bytes at its offsets.
    sqlx::query("UPDATE chunks SET sha256 = encode(sha256(convert_to(text, 'UTF8')), 'hex')")
        .execute(db.pool())
        .await
        .unwrap();
    let p = problem().await;
    assert_eq!(
        (p.seq, p.document_id, p.revision_id, p.chunk_id, p.candidate),
        (None, Some(document), Some(revision), None, Some(claim(id))),
        "{p}"
    );
    assert!(
        p.what
            .contains("opened the office called Warsaw\" is not the revision's text")
            && p.what
                .contains("reads \"Beta Inc opened the office called Berlin\""),
        "{p}"
    );
    assert!(
        p.to_string().starts_with(&format!(
            "document {document} revision {revision}, claim:{id}: "
        )),
        "{p}"
    );
}

/// Verify prints the chain's head so that it can be kept elsewhere; held to it later,
/// verify catches a log rewritten with every hash recomputed (which verifies on its own:
/// the chain is unkeyed sha256) and a log cut short, while a log that only grew since
/// still holds the kept head.
#[tokio::test]
async fn a_head_kept_elsewhere_catches_a_rewritten_or_shortened_log() {
    use relata_store::ChainHead;
    let (db, _) = three_decisions().await;
    let s = &db.store;
    let kept = s.evidence_verify().await.unwrap().head.unwrap();
    let history = s.evidence_history(None, 100).await.unwrap();
    assert_eq!(
        kept,
        ChainHead {
            seq: 3,
            sha256: history[2].sha256.clone()
        }
    );
    // Empty log, and the log as it is: both heads hold.
    let start: ChainHead = format!("0:{}", "0".repeat(64)).parse().unwrap();
    for head in [&start, &kept] {
        let r = s.evidence_verify_against(Some(head)).await.unwrap();
        assert_eq!(r.problem, None, "{head}: {r:?}");
    }
    // The log grows: the kept head still holds, and the new head is the last record.
    clean_claim(s, "d1", "Beta Inc").await;
    judge(s).await;
    let r = s.evidence_verify_against(Some(&kept)).await.unwrap();
    assert_eq!(r.problem, None, "{r:?}");
    assert_eq!(r.records, 5);
    assert_eq!(r.head.as_ref().map(|h| h.seq), Some(5));

    // Rewritten: record 2's reasons edited, and every hash from it on recomputed, the
    // head's too, as a database user who read relata's source could.
    let mut records = s.evidence_history(None, 100).await.unwrap();
    let mut conn = db.pool().acquire().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .unwrap();
    let mut prev = records[0].sha256.clone();
    for r in records.iter_mut().skip(1) {
        if r.seq == 2 {
            r.reasons = vec!["warning: none worth a person".into()];
        }
        r.prev_sha256 = prev;
        r.sha256 = r.compute_sha256();
        prev = r.sha256.clone();
        sqlx::query(
            "UPDATE evidence SET reasons = $2, prev_sha256 = decode($3, 'hex'),
                 sha256 = decode($4, 'hex') WHERE seq = $1",
        )
        .bind(r.seq)
        .bind(&r.reasons)
        .bind(&r.prev_sha256)
        .bind(&r.sha256)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    sqlx::query("UPDATE evidence_head SET sha256 = decode($1, 'hex')")
        .bind(&prev)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    drop(conn);
    let alone = s.evidence_verify().await.unwrap();
    assert_eq!(
        alone.problem, None,
        "a rewrite with every hash recomputed verifies on its own"
    );
    let p = s
        .evidence_verify_against(Some(&kept))
        .await
        .unwrap()
        .problem
        .unwrap();
    assert_eq!(p.seq, Some(3), "{p}");
    assert!(p.what.contains("rewritten"), "{p}");
    assert!(p.what.contains(&kept.sha256), "{p}");

    // Shorter than the kept head: a head from further on than the log goes.
    let beyond = ChainHead {
        seq: 9,
        sha256: "ab".repeat(32),
    };
    let p = s
        .evidence_verify_against(Some(&beyond))
        .await
        .unwrap()
        .problem
        .unwrap();
    assert_eq!(p.seq, Some(9), "{p}");
    assert!(p.what.contains("ends at record 5"), "{p}");
    // A start that is not the chain's start was never printed by verify.
    let p = s
        .evidence_verify_against(Some(&format!("0:{}", "ab".repeat(32)).parse().unwrap()))
        .await
        .unwrap()
        .problem
        .unwrap();
    assert_eq!(p.seq, Some(0), "{p}");
}

/// One stray row appended with a plain `INSERT` (the triggers refuse updates and
/// deletes, not inserts) took the `seq` the next decision needed, and every later
/// decision failed with the database's duplicate-key error. Failing closed is right; the
/// refusal must name the record and say what to run — for a reviewer's decision, a
/// sweep and a commit's hand-off alike — while commits go on.
#[tokio::test]
async fn a_stray_evidence_record_refuses_every_decision_with_a_sentence_naming_it() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    assert_eq!(verify_ok(s).await, 2);
    let inserted = sqlx::query(
        "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
             task_version, actor_kind, actor, decision, reasons, note, decided_at,
             prev_sha256, sha256)
         SELECT 3, candidate_kind, candidate_id, candidate_sha256, call_id, task_version,
                'reviewer', 'Mallory', 'approve', '{}', NULL, now(), sha256, sha256
         FROM evidence WHERE seq = 2",
    )
    .execute(db.pool())
    .await
    .unwrap();
    assert_eq!(inserted.rows_affected(), 1);
    let refused = |e: &StoreError| {
        assert_eq!(e.kind(), ErrorKind::ChainBroken, "{e}");
        assert!(!e.is_retryable(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("evidence record 3")
                && text.contains("written behind relata's back")
                && text.contains("run `relata evidence verify`"),
            "{text}"
        );
        assert!(!text.contains("duplicate key"), "{text}");
        if let StoreError::ChainBroken { seq, .. } = e {
            assert_eq!(*seq, 3);
        }
    };

    let e = s
        .review_decide(&[claim(warned)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap_err();
    refused(&e);
    // Nothing of it was recorded.
    assert_eq!(db.count("evidence").await, 3);
    let queued: String = sqlx::query_scalar(
        "SELECT state FROM promotions WHERE candidate_kind = 'claim' AND candidate_id = $1",
    )
    .bind(warned)
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(queued, "pending");

    // Extraction goes on: commits never touch the log...
    let (_, _, done) = extract_doc(
        s,
        "d1",
        "Beta Inc opened the office called d1 in the city.",
        &one_claim(
            "Beta Inc",
            "Beta Inc opened the office called d1.",
            "opened the office called d1",
        ),
    )
    .await;
    assert_eq!(done.claim_ids.len(), 1);
    // ...but neither a commit's hand-off nor a sweep records a decision.
    let e = s
        .promote_committed(&Policy::shipped(), done.candidates.clone())
        .await
        .unwrap_err();
    refused(&e);
    let e = s
        .promote_pending(&Policy::shipped(), Sweep::batch(100).wait(Wait::SkipIfBusy))
        .await
        .unwrap_err();
    refused(&e);
    assert_eq!(db.count("evidence").await, 3);
    // And verify names the same record.
    let p = s.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.seq, Some(3), "{p}");
}

/// The chain's last record altered behind relata's back: the next decision would link
/// to the forgery and so vouch for it. It is refused, naming the record, instead.
#[tokio::test]
async fn an_altered_last_record_refuses_the_next_decision() {
    let db = TestDb::new().await;
    let s = &db.store;
    let warned = warned_claim(s, "w").await;
    judge(s).await;
    behind_relatas_back(&db, "UPDATE evidence SET actor = 'Mallory' WHERE seq = 2").await;
    let e = s
        .review_decide(&[claim(warned)], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ChainBroken, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("evidence record 2") && text.contains("relata evidence verify"),
        "{text}"
    );
    assert_eq!(db.count("evidence").await, 2);
}

/// A person's record says how the decision was made — the review page, or the command
/// line as which operating-system user on which host — inside its hash: an edit of it is
/// an altered record.
#[tokio::test]
async fn a_decision_records_how_it_was_made_inside_its_hash() {
    let db = TestDb::new().await;
    let s = &db.store;
    let a = warned_claim(s, "a").await;
    let b = warned_claim(s, "b").await;
    judge(s).await;
    let shell = relata_store::Via::CommandLine {
        os_user: "ada".into(),
        host: "analytical-engine".into(),
    };
    s.review_decide(&[claim(a)], Decision::Approve, &ada(), None, &shell)
        .await
        .unwrap();
    s.review_decide(
        &[claim(b)],
        Decision::Reject,
        &ada(),
        Some("no"),
        &relata_store::Via::ReviewPage,
    )
    .await
    .unwrap();
    let history = s.evidence_history(None, 100).await.unwrap();
    let policy: Vec<_> = history
        .iter()
        .filter(|r| r.actor_kind == relata_core::ActorKind::Policy)
        .collect();
    assert!(policy.iter().all(|r| r.via.is_none()), "{policy:?}");
    let last = &history[history.len() - 2..];
    assert_eq!(last[0].via, Some(shell));
    assert_eq!(last[1].via, Some(relata_store::Via::ReviewPage));
    let json = serde_json::to_value(&last[0]).unwrap();
    assert_eq!(
        (&json["via"], &json["os_user"], &json["host"]),
        (
            &serde_json::json!("command_line"),
            &serde_json::json!("ada"),
            &serde_json::json!("analytical-engine")
        ),
        "{json}"
    );
    let seq = verify_ok(s).await - 1;
    behind_relatas_back(
        &db,
        &format!("UPDATE evidence SET via_host = 'elsewhere' WHERE seq = {seq}"),
    )
    .await;
    let p = s.evidence_verify().await.unwrap().problem.unwrap();
    assert_eq!(p.seq, Some(seq), "{p}");
    assert!(p.what.contains("altered"), "{p}");
}

/// A log written before records said how a decision was made — a policy record and a
/// reviewer's, hashed as relata hashed them then (thirteen fields, computed here, not by
/// the code under test) — still verifies after the migration that adds `via`, and the
/// chain goes on from it.
#[tokio::test]
async fn a_log_written_before_decisions_recorded_how_they_were_made_still_verifies() {
    use sha2::{Digest, Sha256};
    const VIA: i64 = 20261227000001;
    let db = TestDb::empty().await;
    let s = &db.store;
    let before = relata_store::MIGRATOR
        .iter()
        .map(|m| m.version)
        .filter(|v| *v < VIA)
        .max()
        .unwrap();
    relata_store::MIGRATOR
        .run_to(before, db.pool())
        .await
        .unwrap();
    let warned = warned_claim(s, "w").await;
    let candidate_sha256: String =
        sqlx::query_scalar("SELECT relata_candidate_sha256('claim', $1)")
            .bind(warned)
            .fetch_one(db.pool())
            .await
            .unwrap();
    let at = "2026-12-26T10:00:00.123456Z";
    let mut prev = "0".repeat(64);
    for (seq, actor_kind, actor, decision, note) in [
        (1i64, "policy", "warnings", "review", None),
        (2, "reviewer", "Ada Lovelace", "approve", Some("checked")),
    ] {
        let reasons: Vec<String> = Vec::new();
        let sha256 = hex::encode(Sha256::digest(
            serde_json::json!([
                seq,
                "claim",
                warned,
                candidate_sha256,
                None::<i64>,
                "v-old",
                actor_kind,
                actor,
                decision,
                reasons,
                note,
                at,
                prev,
            ])
            .to_string()
            .as_bytes(),
        ));
        sqlx::query(
            "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
                 task_version, actor_kind, actor, decision, reasons, note, decided_at,
                 prev_sha256, sha256)
             VALUES ($1, 'claim', $2, decode($3, 'hex'), NULL, 'v-old', $4, $5, $6, '{}', $7,
                     $8::timestamptz, decode($9, 'hex'), decode($10, 'hex'))",
        )
        .bind(seq)
        .bind(warned)
        .bind(&candidate_sha256)
        .bind(actor_kind)
        .bind(actor)
        .bind(decision)
        .bind(note)
        .bind(at)
        .bind(&prev)
        .bind(&sha256)
        .execute(db.pool())
        .await
        .unwrap();
        prev = sha256;
    }
    sqlx::query("UPDATE evidence_head SET seq = 2, sha256 = decode($1, 'hex')")
        .bind(&prev)
        .execute(db.pool())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO promotions (candidate_kind, candidate_id, state, policy_decision, rule,
             sources, revision_ids, evidence_seq, proposed_at, decided_at)
         SELECT 'claim', $1, 'promoted', 'review', 'warnings', '{test}', ARRAY[revision_id], 2,
                $2::timestamptz, $2::timestamptz
         FROM claims WHERE id = $1",
    )
    .bind(warned)
    .bind(at)
    .execute(db.pool())
    .await
    .unwrap();

    s.migrate().await.unwrap();
    let r = s.evidence_verify().await.unwrap();
    assert_eq!(r.problem, None, "{r:?}");
    assert_eq!(
        r.head.as_ref().map(|h| h.sha256.as_str()),
        Some(prev.as_str())
    );
    assert!(
        s.evidence_history(None, 10)
            .await
            .unwrap()
            .iter()
            .all(|r| r.via.is_none())
    );
    // The chain goes on from the old head (the claim's entity), and a kept head from
    // before the migration still holds.
    let kept = r.head.unwrap();
    assert_eq!(judge(s).await.total(), 1);
    let r = s.evidence_verify_against(Some(&kept)).await.unwrap();
    assert_eq!(r.problem, None, "{r:?}");
    assert_eq!(r.records, 3);
}
