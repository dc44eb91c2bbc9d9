use relata_store::MIGRATOR;

use crate::common::TestDb;

#[tokio::test]
async fn migrations_apply_twice_idempotently() {
    let db = TestDb::empty().await;
    db.store.migrate().await.expect("first run");
    db.store.migrate().await.expect("second run");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(applied as usize, MIGRATOR.iter().count());
    for table in [
        "documents",
        "document_revisions",
        "chunks",
        "model_calls",
        "jobs",
        "entities",
        "claims",
        "claim_relations",
        "classified_pairs",
        "invalid_outputs",
        "warnings",
        "answers",
    ] {
        assert_eq!(db.count(table).await, 0, "{table}");
    }
}

#[tokio::test]
async fn closed_enums_are_enforced_by_the_schema() {
    let db = TestDb::new().await;
    let err = sqlx::query(
        "INSERT INTO jobs (job_id, task, task_version_fingerprint, prompt_version, schema_id,
                           schema_version, schema_sha256, model, pairs, state)
         VALUES (repeat('a', 32), 'classify', 'f', 'p', 's', 1, 'h', 'm', '[]', 'exploded')",
    )
    .execute(db.pool())
    .await
    .unwrap_err();
    let err = relata_store::StoreError::from(err);
    assert_eq!(err.sqlstate().as_deref(), Some("23514"), "{err}");
    assert!(!err.is_retryable());
}

/// The CHECK constraints list every value of relata-core's closed enums (and the store's
/// own), so a value added in Rust without a migration fails here, not in production.
#[tokio::test]
async fn check_constraints_list_every_enum_value() {
    use relata_core::{DeadReason, EntityType, Reason, RelationKind, RowKind, Task, Warning};
    use relata_store::{CallOutcome, JobState};

    let db = TestDb::new().await;
    async fn checks(db: &TestDb, table: &str) -> String {
        let defs: Vec<String> = sqlx::query_scalar(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint
             WHERE conrelid = $1::regclass AND contype = 'c'",
        )
        .bind(table)
        .fetch_all(db.pool())
        .await
        .unwrap();
        defs.join("\n")
    }
    let has = |defs: &str, values: Vec<&str>, what: &str| {
        for v in values {
            assert!(defs.contains(&format!("'{v}'")), "{what}: {v} missing");
        }
    };
    let io = checks(&db, "invalid_outputs").await;
    has(
        &io,
        Reason::ALL.iter().map(|r| r.as_str()).collect(),
        "reason",
    );
    has(
        &io,
        RowKind::ALL.iter().map(|r| r.as_str()).collect(),
        "row kind",
    );
    // Answers are not jobs: their rejections are stored on the answer (`answers.reasons`).
    // A join ask is a job without a queue.
    has(
        &io,
        Task::QUEUED
            .iter()
            .chain([&Task::Join])
            .map(|r| r.as_str())
            .collect(),
        "task",
    );
    let answers = checks(&db, "answers").await;
    has(
        &answers,
        relata_core::AnswerStatus::ALL
            .iter()
            .map(|r| r.as_str())
            .collect(),
        "answer status",
    );
    has(
        &answers,
        Reason::ALL.iter().map(|r| r.as_str()).collect(),
        "answer reason",
    );
    let jobs = checks(&db, "jobs").await;
    has(
        &jobs,
        DeadReason::ALL.iter().map(|r| r.as_str()).collect(),
        "dead reason",
    );
    has(
        &jobs,
        JobState::ALL.iter().map(|r| r.as_str()).collect(),
        "job state",
    );
    let calls = checks(&db, "model_calls").await;
    has(
        &calls,
        CallOutcome::ALL.iter().map(|r| r.as_str()).collect(),
        "call outcome",
    );
    let ents = checks(&db, "entities").await;
    has(
        &ents,
        EntityType::ALL.iter().map(|r| r.as_str()).collect(),
        "entity type",
    );
    let rels = checks(&db, "claim_relations").await;
    has(
        &rels,
        RelationKind::ALL.iter().map(|r| r.as_str()).collect(),
        "relation",
    );
    let warns = checks(&db, "warnings").await;
    has(
        &warns,
        Warning::ALL.iter().map(|r| r.as_str()).collect(),
        "warning",
    );
    use relata_core::{ActorKind, EvidenceDecision, PolicyDecision, PromotionState};
    let evidence = checks(&db, "evidence").await;
    has(
        &evidence,
        EvidenceDecision::ALL.iter().map(|r| r.as_str()).collect(),
        "evidence decision",
    );
    has(
        &evidence,
        ActorKind::ALL.iter().map(|r| r.as_str()).collect(),
        "actor kind",
    );
    has(
        &evidence,
        RowKind::ALL.iter().map(|r| r.as_str()).collect(),
        "candidate kind",
    );
    has(&evidence, relata_store::Via::LABELS.to_vec(), "decided via");
    let promotions = checks(&db, "promotions").await;
    has(
        &promotions,
        PromotionState::ALL
            .iter()
            .filter(|s| **s != PromotionState::Proposed)
            .map(|r| r.as_str())
            .collect(),
        "promotion state",
    );
    has(
        &promotions,
        PolicyDecision::ALL.iter().map(|r| r.as_str()).collect(),
        "policy decision",
    );
}
