use relata_core::{Check, Severity};
use relata_store::{CommitOutcome, ErrorKind, JobState};
use relata_validate::{CheckSetting, GateConfig, Verdict, judge_extract};

use crate::common::{
    TestDb, call, committed, extract_job, extract_version, gate_without_support, ingest,
};

const TEXT: &str = "Alpha Corp was founded in 1990 by Jane Roe.\n\n\
                    Alpha Corp makes widgets in Zürich, Switzerland. Its widgets are blue.";

fn partial_response() -> String {
    serde_json::json!({
        "entities": [
            {"name": "Alpha Corp", "type": "organization"},
            {"name": "Widget", "type": "gadget"},
            {"name": "Zürich", "type": "location"},
        ],
        "claims": [
            {"statement": "Alpha Corp makes widgets in Zürich.",
             "quote": "makes widgets in Zürich", "subject": "Alpha Corp"},
            {"statement": "Alpha Corp is located on the Moon.",
             "quote": "located on the Moon", "subject": "Alpha Corp"},
            {"statement": "Alpha Corp makes 500 blue widgets.",
             "quote": "Its widgets are blue", "subject": "alpha  corp"},
        ],
    })
    .to_string()
}

/// The document `TEXT` ingested, chunk `index`'s extract job, and the partial response
/// judged against that chunk.
async fn partial_job(
    s: &relata_store::Store,
    index: usize,
) -> (
    relata_store::ChunkRow,
    relata_core::JobId,
    relata_validate::Judgement<relata_validate::ExtractRows>,
) {
    let up = ingest(s, "alpha", TEXT).await;
    let chunk = s.load_chunk(up.chunk_ids[index]).await.expect("chunk");
    let job = extract_job(s, chunk.id).await;
    let j = judge_extract(
        &gate_without_support(),
        &chunk.text,
        partial_response().as_bytes(),
    );
    (chunk, job, j)
}

/// Every table's row count, for "nothing was added".
async fn snapshot(db: &TestDb) -> Vec<i64> {
    let mut out = Vec::new();
    for t in [
        "model_calls",
        "entities",
        "claims",
        "claim_relations",
        "invalid_outputs",
        "warnings",
    ] {
        out.push(db.count(t).await);
    }
    out
}

#[tokio::test]
async fn commit_extract_writes_exactly_the_accepted_rows() {
    let db = TestDb::new().await;
    let s = &db.store;
    let up = ingest(s, "alpha", TEXT).await;
    // The second chunk: offsets within it are not offsets within the document.
    let chunk = s.load_chunk(up.chunk_ids[1]).await.unwrap();
    assert!(chunk.start_byte > 0);
    let job = extract_job(s, chunk.id).await;

    let judgement = judge_extract(
        &gate_without_support(),
        &chunk.text,
        partial_response().as_bytes(),
    );
    assert_eq!(judgement.verdict(), Verdict::Partial, "{judgement:?}");
    let rejections = judgement.rejections();
    assert_eq!(rejections.len(), 2, "{rejections:?}");
    let warnings: usize = judgement
        .accepted()
        .claims()
        .iter()
        .map(|c| c.warnings().len())
        .sum();
    assert_eq!(warnings, 1, "the 500 is not in its quote");

    let done = committed(
        s.commit_extract(&job, &call(&extract_version()), &judgement, &chunk)
            .await
            .unwrap(),
    );
    assert_eq!(done.state, JobState::Partial);
    assert_eq!(done.counts.entities, 2);
    assert_eq!(done.counts.claims, 2);
    assert_eq!(done.counts.rejections, 2);
    assert_eq!(done.counts.warnings, 1);
    assert_eq!(db.count("entities").await, 2);
    assert_eq!(db.count("claims").await, 2);
    assert_eq!(db.count("invalid_outputs").await, 2);
    assert_eq!(db.count("warnings").await, 1);
    let sent: Option<String> = sqlx::query_scalar("SELECT sent_schema_sha256 FROM model_calls")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(
        sent,
        Some("5e".repeat(32)),
        "the sent schema's sha256 is recorded"
    );

    // Rejections: one per rejected row, with kind and index.
    let rows: Vec<(String, Option<String>, Option<i32>)> = sqlx::query_as(
        "SELECT reason, row_kind, row_index FROM invalid_outputs ORDER BY row_kind, row_index",
    )
    .fetch_all(db.pool())
    .await
    .unwrap();
    assert_eq!(
        rows,
        [
            (
                "quote_not_found".to_owned(),
                Some("claim".to_owned()),
                Some(1)
            ),
            ("bad_enum".to_owned(), Some("entity".to_owned()), Some(1)),
        ]
    );

    // Offsets index the revision text, byte for byte, checked by PostgreSQL.
    let bad_offsets: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM claims c JOIN document_revisions r ON r.id = c.revision_id
         WHERE substring(convert_to(r.text, 'UTF8') FROM c.quote_start + 1 FOR c.quote_end - c.quote_start)
               <> convert_to(c.quote, 'UTF8')",
    )
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(bad_offsets, 0);
    let claims: Vec<(String, i32, i32, String, Option<i64>)> = sqlx::query_as(
        "SELECT quote, quote_start, quote_end, subject_normalized, entity_id FROM claims ORDER BY row_index",
    )
    .fetch_all(db.pool())
    .await
    .unwrap();
    for (quote, start, end, subject, entity) in &claims {
        assert_eq!(&TEXT[*start as usize..*end as usize], quote);
        assert!(*start as usize >= chunk.start_byte);
        assert_eq!(subject, "alpha corp");
        assert_eq!(
            *entity,
            Some(done.entity_ids[0]),
            "subject links to Alpha Corp"
        );
    }
    assert_eq!(claims[0].0, "makes widgets in Zürich");

    // Provenance: every row of model origin points at this job's one call.
    let call_id = done.call_id.unwrap();
    let orphans: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM entities WHERE call_id <> $1 OR job_id <> $2)
              + (SELECT count(*) FROM claims WHERE call_id <> $1 OR job_id <> $2)
              + (SELECT count(*) FROM warnings WHERE call_id <> $1 OR job_id <> $2)
              + (SELECT count(*) FROM invalid_outputs WHERE call_id IS DISTINCT FROM $1 OR job_id <> $2)",
    )
    .bind(call_id)
    .bind(job.as_str())
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(orphans, 0);
    let (model, prompt, schema, sha, outcome, ms, tokens): (String, String, String, String, String, i64, Option<i64>) =
        sqlx::query_as(
            "SELECT model, prompt_version, schema_id, schema_sha256, outcome, duration_ms, prompt_tokens
             FROM model_calls WHERE id = $1",
        )
        .bind(call_id)
        .fetch_one(db.pool())
        .await
        .unwrap();
    let v = extract_version();
    assert_eq!(
        (model, prompt, schema, sha, outcome.as_str(), ms, tokens),
        (
            v.model,
            v.prompt_version,
            v.schema_id,
            v.schema_sha256,
            "partial",
            1500,
            Some(120)
        )
    );
    let row = s.job(&job).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Partial);
    assert_eq!(row.attempts, 1);
    assert!(row.completed_at.is_some());
}

#[tokio::test]
async fn a_second_commit_of_the_same_job_adds_nothing() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (chunk, job, j) = partial_job(s, 1).await;
    committed(
        s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .unwrap(),
    );
    let before = snapshot(&db).await;

    let again = s
        .commit_extract(&job, &call(&extract_version()), &j, &chunk)
        .await
        .unwrap();
    assert_eq!(
        again,
        CommitOutcome::AlreadyCommitted {
            state: JobState::Partial
        }
    );
    assert_eq!(snapshot(&db).await, before);
    // Published jobs that completed are never handed out again.
    let v = extract_version();
    assert!(
        s.ensure_extract_jobs(&v, &[chunk.id])
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_of_one_job_exactly_one_wins() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (chunk, job, j) = partial_job(s, 1).await;

    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (s, job, j, chunk) = (s.clone(), job.clone(), j.clone(), chunk.clone());
        tasks.push(tokio::spawn(async move {
            s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
                .await
                .unwrap()
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            CommitOutcome::Committed(_) => won += 1,
            CommitOutcome::AlreadyCommitted { state } => assert_eq!(state, JobState::Partial),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(snapshot(&db).await, [1, 2, 2, 0, 2, 1]);
}

#[tokio::test]
async fn a_rejected_response_is_recorded_once_and_the_job_is_invalid() {
    let db = TestDb::new().await;
    let s = &db.store;
    let up = ingest(s, "alpha", TEXT).await;
    let chunk = s.load_chunk(up.chunk_ids[0]).await.unwrap();
    let job = extract_job(s, chunk.id).await;
    let j = judge_extract(
        &GateConfig::default(),
        &chunk.text,
        b"Sure! Here is the JSON: {",
    );
    assert_eq!(j.verdict(), Verdict::Rejected);
    let done = committed(
        s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .unwrap(),
    );
    assert_eq!(done.state, JobState::Invalid);
    assert_eq!(done.counts.rejections, 1);
    let (outcome, reason): (String, Option<String>) =
        sqlx::query_as("SELECT outcome, reason FROM model_calls")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!(outcome, "rejected");
    assert_eq!(reason.as_deref(), Some("not_json"));
    let (kind, index): (Option<String>, Option<i32>) =
        sqlx::query_as("SELECT row_kind, row_index FROM invalid_outputs")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!((kind, index), (None, None));
    assert_eq!(snapshot(&db).await, [1, 0, 0, 0, 1, 0]);
}

#[tokio::test]
async fn a_judgement_for_another_chunk_is_refused() {
    let db = TestDb::new().await;
    let s = &db.store;
    let up = ingest(s, "alpha", TEXT).await;
    let first = s.load_chunk(up.chunk_ids[0]).await.unwrap();
    let second = s.load_chunk(up.chunk_ids[1]).await.unwrap();
    let job = extract_job(s, first.id).await;
    let j = judge_extract(
        &GateConfig::default(),
        &second.text,
        partial_response().as_bytes(),
    );
    let err = s
        .commit_extract(&job, &call(&extract_version()), &j, &second)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(snapshot(&db).await, [0, 0, 0, 0, 0, 0]);
    assert_eq!(s.job(&job).await.unwrap().unwrap().state, JobState::Queued);
}

#[tokio::test]
async fn a_commit_for_an_unknown_job_or_another_task_version_writes_nothing() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (chunk, job, j) = partial_job(s, 0).await;
    let mut other = extract_version();
    other.prompt_version = "another-prompt".into();
    let err = s
        .commit_extract(&job, &call(&other), &j, &chunk)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("task version"), "{err}");
    let unknown = relata_core::JobId::derive(&extract_version(), b"no such job");
    let err = s
        .commit_extract(&unknown, &call(&extract_version()), &j, &chunk)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(snapshot(&db).await, [0, 0, 0, 0, 0, 0]);
    assert_eq!(s.job(&job).await.unwrap().unwrap().state, JobState::Queued);
    // The job is still committable by the right call.
    let done = s
        .commit_extract(&job, &call(&extract_version()), &j, &chunk)
        .await
        .unwrap();
    assert!(matches!(done, CommitOutcome::Committed(_)), "{done:?}");
}

#[tokio::test]
async fn the_database_refuses_a_quote_that_is_not_the_text_at_its_offsets() {
    let db = TestDb::new().await;
    let s = &db.store;
    let (chunk, job, j) = partial_job(s, 1).await;
    committed(
        s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .unwrap(),
    );
    // Shift a stored quote by one byte, as a bug would.
    let err = sqlx::query("UPDATE claims SET quote_start = quote_start + 1")
        .execute(db.pool())
        .await
        .unwrap_err();
    let err = relata_store::StoreError::from(err);
    assert_eq!(err.sqlstate().as_deref(), Some("23514"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Invariant);
    // Offsets counted in characters instead of bytes are caught too ("ü" is two bytes).
    let err = sqlx::query(
        "UPDATE claims SET quote_start = quote_start - 1, quote_end = quote_end - 1
         WHERE quote = 'Its widgets are blue'",
    )
    .execute(db.pool())
    .await
    .unwrap_err();
    assert_eq!(
        relata_store::StoreError::from(err).sqlstate().as_deref(),
        Some("23514")
    );
}

#[tokio::test]
async fn entity_warnings_and_claims_linked_by_name_point_at_the_rows_just_written() {
    let db = TestDb::new().await;
    let s = &db.store;
    let up = ingest(s, "alpha", TEXT).await;
    let chunk = s.load_chunk(up.chunk_ids[1]).await.unwrap();
    let job = extract_job(s, chunk.id).await;
    // A duplicate entity is kept with a warning, and claims find their entity by name.
    let mut config = GateConfig::default();
    let on = |severity| CheckSetting {
        enabled: true,
        severity,
    };
    config.set(Check::NoDuplicate, on(Severity::Warn)).unwrap();
    // What is judged here is the store's linking: the checks that would refuse the
    // respelled name and the unnamed subject are off.
    for check in [
        Check::SubjectKnown,
        Check::NameFound,
        Check::Standalone,
        Check::SubjectTopic,
    ] {
        config
            .set(
                check,
                CheckSetting {
                    enabled: false,
                    severity: Severity::Reject,
                },
            )
            .unwrap();
    }
    let response = serde_json::json!({
        "entities": [
            {"name": "Alpha Corp", "type": "organization"},
            {"name": "alpha  corp", "type": "organization"},
        ],
        "claims": [
            {"statement": "Alpha Corp makes widgets in Zürich.",
             "quote": "makes widgets in Zürich", "subject": "ALPHA CORP"},
            {"statement": "The widgets are blue.",
             "quote": "Its widgets are blue", "subject": "The widgets"},
        ],
    })
    .to_string();
    let j = judge_extract(&config, &chunk.text, response.as_bytes());
    assert_eq!(j.verdict(), Verdict::Accepted, "{:?}", j.rejections());
    let done = committed(
        s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .unwrap(),
    );
    assert_eq!(done.counts.entities, 2);
    assert_eq!(done.counts.claims, 2);
    assert_eq!(done.counts.warnings, 1);
    let (first, second) = (done.entity_ids[0], done.entity_ids[1]);
    assert!(
        first < second,
        "ids follow row order: {:?}",
        done.entity_ids
    );
    let warned: (String, i32, Option<i64>, Option<i64>, String) =
        sqlx::query_as("SELECT row_kind, row_index, entity_id, claim_id, reason FROM warnings")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!(
        warned,
        ("entity".into(), 1, Some(second), None, "duplicate".into())
    );
    let links: Vec<(i64, Option<i64>)> =
        sqlx::query_as("SELECT id, entity_id FROM claims ORDER BY row_index")
            .fetch_all(db.pool())
            .await
            .unwrap();
    assert_eq!(
        links,
        [(done.claim_ids[0], Some(first)), (done.claim_ids[1], None)]
    );
}
