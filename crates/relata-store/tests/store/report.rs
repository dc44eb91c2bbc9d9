use futures::TryStreamExt;
use relata_core::{AnswerStatus, CandidateId, Decision, PromotionState, Reason, RowKind};
use relata_store::{ExportRecord, JobState, NewAnswer, ReviewFilter};
use relata_validate::{GateConfig, judge_extract};

use crate::common::{
    TestDb, ada, call, committed, extract_doc, extract_doc_judged_by, extract_job, extract_version,
    gate_without_support, ingest, judge, one_claim, via,
};

#[tokio::test]
async fn status_counts_jobs_dead_letters_and_the_invalid_rate() {
    let db = TestDb::new().await;
    let s = &db.store;
    let empty = s.status().await.unwrap();
    assert!(empty.jobs.is_empty());
    assert_eq!(
        empty.invalid_last_24h.response_rate, None,
        "no traffic is not 0%"
    );

    extract_doc(
        s,
        "a",
        "Alpha Corp opened an office in Bern.",
        &one_claim(
            "Alpha Corp",
            "Alpha Corp opened an office.",
            "opened an office in Bern",
        ),
    )
    .await;
    let up = ingest(s, "b", "Beta Inc sells shoes.").await;
    let chunk = s.load_chunk(up.chunk_ids[0]).await.unwrap();
    let job = extract_job(s, chunk.id).await;
    let j = judge_extract(&GateConfig::default(), &chunk.text, b"not json");
    committed(
        s.commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .unwrap(),
    );
    ingest(s, "c", "Gamma is queued.").await;
    let up = ingest(s, "c", "Gamma is queued.").await;
    extract_job(s, up.chunk_ids[0]).await;

    let st = s.status().await.unwrap();
    let count = |state: JobState| {
        st.jobs
            .iter()
            .find(|j| j.task == "extract" && j.state == state.as_str())
            .map_or(0, |j| j.count)
    };
    assert_eq!(count(JobState::Accepted), 1);
    assert_eq!(count(JobState::Invalid), 1);
    assert_eq!(count(JobState::Queued), 1);
    assert_eq!(st.unpublished, 1);
    let r = &st.invalid_last_24h;
    assert_eq!(
        (
            r.responses,
            r.responses_with_rejection,
            r.rejections,
            r.accepted_rows
        ),
        (2, 1, 1, 2)
    );
    assert_eq!(r.response_rate, Some(0.5));
    assert_eq!(r.row_rate, Some(1.0 / 3.0));
    // Serialisable for `relata status --json`.
    serde_json::to_string(&st).unwrap();
}

fn answer_call(now: chrono::DateTime<chrono::Utc>) -> relata_store::AnswerCall<'static> {
    relata_store::AnswerCall {
        model: "m",
        prompt_version: "answer-p1",
        schema_id: "answer",
        schema_version: 1,
        schema_sha256: "x",
        sent_schema_sha256: None,
        started_at: now,
        finished_at: now,
        duration_ms: 0,
        attempts: 1,
        prompt_tokens: None,
        completion_tokens: None,
        excerpt: None,
    }
}

#[tokio::test]
async fn status_counts_a_degraded_answer_as_an_invalid_response() {
    let db = TestDb::new().await;
    let s = &db.store;
    let now = chrono::Utc::now();
    let answer = |status, reasons: &'static [Reason], call| NewAnswer {
        question: "Where did Alpha Corp open an office?",
        k: 8,
        status,
        answer: (status != AnswerStatus::Degraded).then_some("Alpha Corp opened it in Bern."),
        citations: &[],
        sources: &[],
        reasons,
        caveats: serde_json::json!([]),
        call,
    };
    s.record_answer(&answer(
        AnswerStatus::Degraded,
        &[Reason::NotJson],
        Some(answer_call(now)),
    ))
    .await
    .unwrap();
    s.record_answer(&answer(AnswerStatus::Answered, &[], Some(answer_call(now))))
        .await
        .unwrap();
    // Nothing retrieved, no model asked: not a response.
    s.record_answer(&answer(AnswerStatus::Abstained, &[], None))
        .await
        .unwrap();

    let r = s.status().await.unwrap().invalid_last_24h;
    assert_eq!(
        (
            r.responses,
            r.responses_with_rejection,
            r.rejections,
            r.accepted_rows
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(r.response_rate, Some(0.5));
}

#[tokio::test]
async fn export_round_trip() {
    let db = TestDb::new().await;
    let s = &db.store;
    let text = "Größe matters. Alpha Corp opened an office in Zürich.";
    extract_doc(
        s,
        "a",
        text,
        &one_claim(
            "Alpha Corp",
            "Alpha Corp opened an office.",
            "opened an office in Zürich",
        ),
    )
    .await;
    // A changed document: its old claims are exported only with all_versions.
    extract_doc(
        s,
        "b",
        "Beta Inc opened a shop in Köln.",
        &one_claim(
            "Beta Inc",
            "Beta Inc opened a shop.",
            "opened a shop in Köln",
        ),
    )
    .await;
    ingest(s, "b", "Beta Inc closed its shop.").await;

    let lines: Vec<String> = s
        .export(false, true)
        .map_ok(|r| serde_json::to_string(&r).unwrap())
        .try_collect()
        .await
        .unwrap();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = values.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["document", "document", "entity", "claim"]);

    let doc = &values[0];
    assert_eq!(doc["text"], text);
    assert_eq!(doc["source"], "test");
    assert_eq!(doc["external_id"], "a");
    let claim = &values[3];
    assert_eq!(claim["document_id"], doc["id"]);
    assert_eq!(claim["revision_id"], doc["revision_id"]);
    let (start, end) = (
        claim["quote_start"].as_u64().unwrap() as usize,
        claim["quote_end"].as_u64().unwrap() as usize,
    );
    assert_eq!(
        &text.as_bytes()[start..end],
        claim["quote"].as_str().unwrap().as_bytes()
    );
    let v = extract_version();
    let p = &claim["provenance"];
    assert_eq!(p["model"], v.model.as_str());
    assert_eq!(p["prompt_version"], v.prompt_version.as_str());
    assert_eq!(p["schema_id"], v.schema_id.as_str());
    assert_eq!(p["schema_version"], v.schema_version);
    assert_eq!(p["schema_sha256"], v.schema_sha256.as_str());
    assert!(p["called_at"].is_string());
    assert_eq!(values[2]["type"], "organization");

    let all: Vec<ExportRecord> = s.export(true, true).try_collect().await.unwrap();
    let docs = all
        .iter()
        .filter(|r| matches!(r, ExportRecord::Document(_)))
        .count();
    let claims = all
        .iter()
        .filter(|r| matches!(r, ExportRecord::Claim(_)))
        .count();
    assert_eq!((docs, claims), (3, 2));
}

/// There is one review queue, promotion's: a row kept with a warning waits in it as a
/// pending candidate, its warning the reason, until a named reviewer decides.
#[tokio::test]
async fn warned_rows_wait_in_the_one_review_queue() {
    let db = TestDb::new().await;
    let s = &db.store;
    // 1990 is in the statement, not in the quote: kept, with a warning (the support
    // check, which would reject it, is off).
    let (_, _, done) = extract_doc_judged_by(
        &gate_without_support(),
        s,
        "a",
        "Alpha Corp was founded by Jane Roe in Bern.",
        &one_claim(
            "Alpha Corp",
            "Alpha Corp was founded in 1990.",
            "founded by Jane Roe",
        ),
    )
    .await;
    assert_eq!(done.counts.warnings, 1);
    // Not judged yet: not in the queue, and not counted as waiting for a person.
    assert_eq!(s.status().await.unwrap().review_pending, 0);
    judge(s).await;
    let queue = s.review_list(&ReviewFilter::default()).await.unwrap();
    assert_eq!(queue.len(), 1, "{queue:?}");
    let item = &queue[0];
    let id = CandidateId {
        kind: RowKind::Claim,
        id: done.claim_ids[0],
    };
    assert_eq!(item.id, id);
    assert_eq!(item.state, PromotionState::Pending);
    assert_eq!(item.reasons, ["warning: figure_not_in_quote"], "{item:?}");
    assert_eq!(s.status().await.unwrap().review_pending, 1);
    s.review_decide(&[id], Decision::Approve, &ada(), None, &via())
        .await
        .unwrap();
    assert!(
        s.review_list(&ReviewFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.status().await.unwrap().review_pending, 0);
    // The warnings table keeps no review marks of its own.
    let marks: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.columns
         WHERE table_name = 'warnings' AND column_name IN ('reviewed_at', 'reviewed_by')",
    )
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(marks, 0);
}
