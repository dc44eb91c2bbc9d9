//! Rules written twice, once in SQL and once in Rust, held together: relata-core's Rust
//! is the source of truth, and each test asks the database's twin about every input of
//! the closed enums and fails on the first answer that differs.

#![allow(clippy::unwrap_used)]

use relata_core::{ActorKind, EvidenceDecision, PolicyDecision, PromotionState, RowKind};

use crate::common::TestDb;

fn labels<T: Copy>(all: &[T], label: impl Fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|x| label(*x).to_owned()).collect()
}

/// `relata_state_after(decision)` (which `relata_candidate_state`, `decided_states` and so
/// `candidate_states`, export and answers read) against `PromotionState::after`, for
/// every decision and every state: the SQL says a decision leads to a state exactly when
/// the Rust does.
#[tokio::test]
async fn the_state_a_decision_leaves_is_the_same_in_sql_and_in_rust() {
    let db = TestDb::new().await;
    let decisions = labels(EvidenceDecision::ALL, EvidenceDecision::as_str);
    let states = labels(PromotionState::ALL, PromotionState::as_str);
    let rows: Vec<(String, String, Option<bool>)> = sqlx::query_as(
        "SELECT d, s, relata_state_after(d) = s
         FROM unnest($1::text[]) d CROSS JOIN unnest($2::text[]) s",
    )
    .bind(&decisions)
    .bind(&states)
    .fetch_all(db.pool())
    .await
    .unwrap();
    assert_eq!(rows.len(), decisions.len() * states.len());
    for (d, s, sql) in rows {
        let decision: EvidenceDecision = d.parse().unwrap();
        let state: PromotionState = s.parse().unwrap();
        let rust = PromotionState::after(decision) == state;
        assert_eq!(sql, Some(rust), "decision {d}, state {s}");
    }
    // No decision is `proposed`: the SQL says nothing, and its callers fall back.
    let none: Option<String> = sqlx::query_scalar("SELECT relata_state_after(NULL)")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(none, None);
}

/// A candidate's state as the database reads it from the log (its latest record) is the
/// Rust rule applied to that record, for every decision as the latest one.
#[tokio::test]
async fn a_candidates_state_from_the_log_follows_the_rust_rule_for_every_decision() {
    let db = TestDb::new().await;
    for (i, decision) in EvidenceDecision::ALL.iter().enumerate() {
        let cid = i64::try_from(i).unwrap() + 1;
        // A log of one record per candidate; its hashes are not what is tested here.
        sqlx::query(
            "INSERT INTO evidence (seq, candidate_kind, candidate_id, candidate_sha256,
                 task_version, actor_kind, actor, decision, reasons, decided_at,
                 prev_sha256, sha256)
             VALUES ($1, 'claim', $1, decode(repeat('ab', 32), 'hex'), 'v', $2, 'x', $3,
                     '{}', now(), decode(repeat('00', 32), 'hex'),
                     decode(repeat('cd', 32), 'hex'))",
        )
        .bind(cid)
        .bind(match decision {
            EvidenceDecision::Approve | EvidenceDecision::Reject => "reviewer",
            _ => "policy",
        })
        .bind(decision.as_str())
        .execute(db.pool())
        .await
        .unwrap();
        let sql: String = sqlx::query_scalar("SELECT relata_candidate_state('claim', $1)")
            .bind(cid)
            .fetch_one(db.pool())
            .await
            .unwrap();
        assert_eq!(sql, PromotionState::after(*decision).as_str(), "{decision}");
    }
    let none: String = sqlx::query_scalar("SELECT relata_candidate_state('claim', 0)")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(none, PromotionState::Proposed.as_str());
}

/// A commit hashes the rows it writes in Rust (`relata_store::canonical`); a sweep, a
/// reviewer's decision and `evidence verify` hash them in SQL (`relata_entity_sha256`,
/// `relata_claim_sha256`). Over real-looking rows whose text is awkward — scripts outside
/// Latin, emoji and joiners, combining marks, line and paragraph separators, quotes and
/// backslashes — the candidates a commit hands over equal the ones a sweep reads back,
/// hash included.
#[tokio::test]
async fn a_commits_rust_hash_is_the_databases_hash_for_awkward_text() {
    let db = TestDb::new().await;
    let s = &db.store;
    let subjects = [
        "Société Générale",
        "株式会社ソニー",
        "Ünïcödé \"Quoted\" \\Back\\slash Ltd",
        "Café\u{301} Combining",
        "شركة أرامكو",
        "Family 👨\u{200d}👩\u{200d}👧 Trust",
        "Line\u{2028}Separated\u{2029}Works",
    ];
    for (i, subject) in subjects.iter().enumerate() {
        let text = format!("{subject} opened a new office in the harbour district.");
        let response = crate::common::one_claim(
            subject,
            &format!("{subject} opened a new office."),
            "opened a new office in the harbour district",
        );
        let (_, _, done) =
            crate::common::extract_doc(s, &format!("twin-{i}"), &text, &response).await;
        assert!(
            done.candidates
                .iter()
                .any(|c| c.id().kind == relata_core::RowKind::Claim),
            "{subject:?}: the gate kept no claim: {done:?}"
        );
        for kind in relata_core::RowKind::ALL {
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
            assert_eq!(handed, swept, "{subject:?} {kind}");
        }
    }
}

/// The quoted labels of a `CHECK (x = ANY (ARRAY['a'::text, …]))` constraint, sorted.
async fn check_labels(db: &TestDb, table: &str, constraint: &str) -> Vec<String> {
    let def: String = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = $1::regclass AND conname = $2",
    )
    .bind(table)
    .bind(constraint)
    .fetch_one(db.pool())
    .await
    .unwrap();
    let mut labels: Vec<String> = def
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    labels.sort();
    labels
}

fn sorted(labels: impl IntoIterator<Item = &'static str>) -> Vec<String> {
    let mut v: Vec<String> = labels.into_iter().map(str::to_owned).collect();
    v.sort();
    v
}

/// The closed sets the promotion tables accept are relata-core's, every value and no
/// other: a label added in Rust without a migration (or the reverse) fails here before
/// it fails a write.
#[tokio::test]
async fn the_promotion_tables_accept_exactly_the_closed_sets() {
    let db = TestDb::new().await;
    let kinds = sorted(RowKind::ALL.iter().map(|k| k.as_str()));
    let cases = [
        ("evidence", "evidence_candidate_kind_check", kinds.clone()),
        ("promotions", "promotions_candidate_kind_check", kinds),
        (
            "evidence",
            "evidence_decision_check",
            sorted(EvidenceDecision::ALL.iter().map(|d| d.as_str())),
        ),
        (
            "evidence",
            "evidence_actor_kind_check",
            sorted(ActorKind::ALL.iter().map(|a| a.as_str())),
        ),
        (
            "evidence",
            "evidence_via_check",
            sorted(relata_store::Via::LABELS),
        ),
        (
            "promotions",
            "promotions_policy_decision_check",
            sorted(PolicyDecision::ALL.iter().map(|d| d.as_str())),
        ),
        // A queued candidate has been judged: every state but `proposed`.
        (
            "promotions",
            "promotions_state_check",
            sorted(
                PromotionState::ALL
                    .iter()
                    .filter(|s| **s != PromotionState::Proposed)
                    .map(|s| s.as_str()),
            ),
        ),
    ];
    for (table, constraint, rust) in cases {
        assert_eq!(
            check_labels(&db, table, constraint).await,
            rust,
            "{constraint}"
        );
    }
}
