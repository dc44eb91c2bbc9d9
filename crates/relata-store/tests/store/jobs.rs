use relata_core::{JobId, JobInput};
use relata_store::{CommitOutcome, DeadReason, JobState, extract_job_id};

use crate::common::{TestDb, call, extract_job, extract_version, ingest};

#[tokio::test]
async fn ensure_extract_jobs_is_idempotent_and_publishes_once() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = extract_version();
    let up = ingest(s, "a", "First paragraph here.\n\nSecond paragraph here.").await;

    let jobs = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap();
    assert_eq!(jobs.len(), 2);
    for (job, chunk_id) in jobs.iter().zip(&up.chunk_ids) {
        assert_eq!(job.input.chunk_id(), Some(*chunk_id));
        let chunk = s.load_chunk(*chunk_id).await.unwrap();
        assert_eq!(job.job_id, extract_job_id(&v, chunk.id, &chunk.sha256));
    }
    // Not yet published: a second call (a producer that crashed) returns them again.
    let again = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap();
    assert_eq!(again, jobs);
    assert_eq!(db.count("jobs").await, 2);

    let ids: Vec<JobId> = jobs.iter().map(|j| j.job_id.clone()).collect();
    assert_eq!(s.mark_published(&ids).await.unwrap(), 2);
    assert!(
        s.ensure_extract_jobs(&v, &up.chunk_ids)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(db.count("jobs").await, 2);

    // A new task version (prompt change) makes new jobs for the same chunks.
    let mut v2 = v.clone();
    v2.prompt_version = "extract-p2".into();
    let backfill = s.ensure_extract_jobs(&v2, &up.chunk_ids).await.unwrap();
    assert_eq!(backfill.len(), 2);
    assert!(backfill.iter().all(|j| !ids.contains(&j.job_id)));

    let row = s.job(&ids[0]).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Queued);
    assert!(row.published_at.is_some());
    assert_eq!(row.version, v);
    assert_eq!(row.task_version_fingerprint, v.fingerprint());
}

#[tokio::test]
async fn record_attempt_then_mark_dead_is_terminal() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = extract_version();
    let up = ingest(s, "a", "Only paragraph here.").await;
    let job = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap()[0]
        .job_id
        .clone();

    assert_eq!(s.record_attempt(&job, Some(&call(&v))).await.unwrap(), 1);
    assert_eq!(s.record_attempt(&job, None).await.unwrap(), 2);
    let dead = s
        .mark_dead(
            &job,
            DeadReason::TransportExhausted,
            "503 five times",
            Some(&call(&v)),
        )
        .await
        .unwrap();
    assert!(matches!(dead, CommitOutcome::Committed(ref c) if c.state == JobState::Dead));
    let row = s.job(&job).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.dead_reason, Some(DeadReason::TransportExhausted));
    assert_eq!(row.attempts, 3);
    assert!(row.completed_at.is_some());

    let outcomes: Vec<String> =
        sqlx::query_scalar("SELECT outcome FROM model_calls WHERE job_id = $1 ORDER BY id")
            .bind(job.as_str())
            .fetch_all(db.pool())
            .await
            .unwrap();
    assert_eq!(outcomes, ["transport_error", "transport_error"]);

    // Terminal: a second dead letter, an attempt, or an envelope commit change nothing.
    let again = s
        .mark_dead(&job, DeadReason::Poison, "again", None)
        .await
        .unwrap();
    assert_eq!(
        again,
        CommitOutcome::AlreadyCommitted {
            state: JobState::Dead
        }
    );
    assert_eq!(s.record_attempt(&job, Some(&call(&v))).await.unwrap(), 3);
    let env = s
        .commit_invalid_envelope(&job, &call(&v), relata_core::Reason::Truncated, "cut")
        .await
        .unwrap();
    assert_eq!(
        env,
        CommitOutcome::AlreadyCommitted {
            state: JobState::Dead
        }
    );
    assert_eq!(db.count("model_calls").await, 2);
    assert_eq!(db.count("invalid_outputs").await, 0);
}

#[tokio::test]
async fn mark_dead_without_a_call_for_missing_input() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = extract_version();
    let up = ingest(s, "a", "Only paragraph here.").await;
    let job = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap()[0]
        .job_id
        .clone();
    s.mark_dead(&job, DeadReason::MissingInput, "chunk gone", None)
        .await
        .unwrap();
    let st = s.status().await.unwrap();
    assert_eq!(st.dead_letters.len(), 1);
    assert_eq!(st.dead_letters[0].reason, "missing_input");
    assert_eq!(db.count("model_calls").await, 0);
}

#[tokio::test]
async fn unknown_job_is_not_found() {
    let db = TestDb::new().await;
    let id = JobId::parse("0123456789abcdef0123456789abcdef").unwrap();
    assert!(db.store.job(&id).await.unwrap().is_none());
    let err = db
        .store
        .mark_dead(&id, DeadReason::Poison, "x", None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), relata_store::ErrorKind::NotFound);
}

#[tokio::test]
async fn envelope_invalid_is_recorded_once() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = extract_version();
    let up = ingest(s, "a", "Only paragraph here.").await;
    let job = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap()[0]
        .job_id
        .clone();
    let mut c = call(&v);
    c.excerpt = Some("x".repeat(5000));
    let out = s
        .commit_invalid_envelope(
            &job,
            &c,
            relata_core::Reason::Truncated,
            "finish_reason=length",
        )
        .await
        .unwrap();
    let CommitOutcome::Committed(done) = out else {
        panic!("{out:?}")
    };
    assert_eq!(done.state, JobState::Invalid);
    assert_eq!(done.counts.rejections, 1);
    let (reason, kind, index): (String, Option<String>, Option<i32>) =
        sqlx::query_as("SELECT reason, row_kind, row_index FROM invalid_outputs WHERE job_id = $1")
            .bind(job.as_str())
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!((reason.as_str(), kind, index), ("truncated", None, None));
    let (outcome, excerpt_len): (String, i32) =
        sqlx::query_as("SELECT outcome, char_length(excerpt) FROM model_calls")
            .fetch_one(db.pool())
            .await
            .unwrap();
    assert_eq!(outcome, "invalid_envelope");
    assert_eq!(excerpt_len as usize, relata_store::EXCERPT_MAX_CHARS);
    assert_eq!(s.job(&job).await.unwrap().unwrap().state, JobState::Invalid);

    let again = s
        .commit_invalid_envelope(&job, &call(&v), relata_core::Reason::Truncated, "again")
        .await
        .unwrap();
    assert_eq!(
        again,
        CommitOutcome::AlreadyCommitted {
            state: JobState::Invalid
        }
    );
    assert_eq!(db.count("invalid_outputs").await, 1);
}

#[tokio::test]
async fn a_call_from_another_task_version_is_refused() {
    let db = TestDb::new().await;
    let s = &db.store;
    let v = extract_version();
    let up = ingest(s, "a", "Only paragraph here.").await;
    let job = s.ensure_extract_jobs(&v, &up.chunk_ids).await.unwrap()[0]
        .job_id
        .clone();
    let mut other = v.clone();
    other.model = "another-model".into();
    let err = s
        .commit_invalid_envelope(&job, &call(&other), relata_core::Reason::Empty, "")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), relata_store::ErrorKind::InvalidInput, "{err}");
    assert_eq!(s.job(&job).await.unwrap().unwrap().state, JobState::Queued);
    assert_eq!(db.count("model_calls").await, 0);
}

#[tokio::test]
async fn an_extract_job_comes_with_its_chunk() {
    let db = TestDb::new().await;
    let s = &db.store;
    let up = ingest(s, "a", "First paragraph here.\n\nSecond paragraph here.").await;
    let second = up.chunk_ids[1];
    let id = extract_job(s, second).await;

    let (job, chunk) = s.job_with_chunk(&id).await.unwrap().expect("the job");
    assert_eq!(job.job_id, id);
    assert_eq!(job.input, JobInput::Extract { chunk_id: second });
    assert_eq!(chunk, s.load_chunk(second).await.unwrap());

    let unknown = JobId::parse("0123456789abcdef0123456789abcdef").unwrap();
    assert!(s.job_with_chunk(&unknown).await.unwrap().is_none());
}
