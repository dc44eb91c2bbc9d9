//! Operations queries: the doubling check over a seeded week, run locks, backfill
//! selection.

use chrono::{DateTime, Utc};
use relata_store::{BackfillAction, BackfillSelector, DoublingVerdict, PriorState, RateLevel};
use relata_testkit::harness::seeding_moment;

use crate::common::{TestDb, extract_job, extract_version, ingest};

/// Seed responses: `latest` = (count, failing per 100) in the 24 h before `at`, and the
/// same per day for each of the 7 days before.
async fn seed_week(db: &TestDb, at: DateTime<Utc>, latest: (i64, i64), baseline: (i64, i64)) {
    let up = ingest(&db.store, "seed", "Seed paragraph for the evidence record.").await;
    let job = extract_job(&db.store, up.chunk_ids[0]).await;
    for day in 0..8_i64 {
        let (n, fail) = if day == 0 { latest } else { baseline };
        sqlx::query(
            "INSERT INTO model_calls (job_id, task, model, prompt_version, schema_id, schema_version,
                                      schema_sha256, started_at, finished_at, duration_ms, attempts,
                                      outcome)
             SELECT $1, 'extract', 'm', CASE WHEN $2 = 0 THEN 'p2' ELSE 'p1' END, 's', 1, 'x',
                    $5 - make_interval(days => $2::int) - make_interval(secs => 60 + i * 10),
                    $5 - make_interval(days => $2::int) - make_interval(secs => 60 + i * 10),
                    0, 1, CASE WHEN i % 100 < $4 THEN 'rejected' ELSE 'accepted' END
             FROM generate_series(0, $3 - 1) AS i",
        )
        .bind(job.as_str())
        .bind(day)
        .bind(n)
        .bind(fail)
        .bind(at)
        .execute(db.pool())
        .await
        .expect("seed calls");
    }
    sqlx::query(
        "INSERT INTO invalid_outputs (call_id, job_id, task, reason, detail)
         SELECT id, job_id, 'extract', 'not_json', 'seeded' FROM model_calls WHERE outcome = 'rejected'",
    )
    .execute(db.pool())
    .await
    .expect("seed rejections");
}

#[tokio::test]
async fn doubling_check_is_silent_on_a_steady_week() {
    let db = TestDb::new().await;
    let at = seeding_moment(chrono::Duration::hours(1));
    seed_week(&db, at, (300, 10), (300, 10)).await;
    let checks = db.store.check_doubling(at, 7, 200).await.unwrap();
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0].verdict, DoublingVerdict::Steady, "{checks:?}");
    assert_eq!(checks[0].latest.responses, 300);
    assert_eq!(checks[0].baseline.responses, 2100);
}

#[tokio::test]
async fn doubling_check_fires_on_a_doubled_day() {
    let db = TestDb::new().await;
    let at = seeding_moment(chrono::Duration::hours(1));
    seed_week(&db, at, (300, 25), (300, 10)).await;
    let checks = db.store.check_doubling(at, 7, 200).await.unwrap();
    assert_eq!(checks[0].verdict, DoublingVerdict::Doubled, "{checks:?}");
    assert_eq!(checks[0].doubled, vec![RateLevel::Response]);
    // The report shows the new prompt version on the latest day.
    let rows = db
        .store
        .drift_report(at - chrono::Duration::days(9), at, 3)
        .await
        .unwrap();
    let latest = rows
        .iter()
        .find(|r| r.prompt_version == "p2")
        .expect("p2 row");
    assert_eq!(latest.counts.responses, 300);
    assert_eq!(latest.top_reasons[0].reason, "not_json");
    assert_eq!(latest.top_reasons[0].count, 75);
}

#[tokio::test]
async fn doubling_check_is_silent_under_the_minimum_volume() {
    let db = TestDb::new().await;
    let at = seeding_moment(chrono::Duration::hours(1));
    seed_week(&db, at, (150, 50), (300, 10)).await;
    let checks = db.store.check_doubling(at, 7, 200).await.unwrap();
    assert_eq!(checks[0].verdict, DoublingVerdict::LowVolume, "{checks:?}");
    // The same data with a lower minimum fires.
    let checks = db.store.check_doubling(at, 7, 100).await.unwrap();
    assert_eq!(checks[0].verdict, DoublingVerdict::Doubled, "{checks:?}");
}

#[tokio::test]
async fn a_run_lock_is_exclusive_and_released_with_its_session() {
    let db = TestDb::new().await;
    let a = db
        .store
        .try_run_lock("ingest:wiki")
        .await
        .unwrap()
        .expect("first");
    assert!(
        db.store
            .try_run_lock("ingest:wiki")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        db.store
            .run_lock_holder("ingest:wiki")
            .await
            .unwrap()
            .is_some()
    );
    // Another name is another lock.
    let b = db
        .store
        .try_run_lock("ingest:other")
        .await
        .unwrap()
        .expect("other");
    a.release().await.unwrap();
    // A graceful release is over when it returns: taking the lock straight after never
    // finds it still held (closing the session alone frees it only some time later).
    for _ in 0..20 {
        let again = db
            .store
            .try_run_lock("ingest:wiki")
            .await
            .unwrap()
            .expect("free at once after a release");
        again.release().await.unwrap();
    }
    let c = db
        .store
        .try_run_lock("ingest:wiki")
        .await
        .unwrap()
        .expect("after release");
    drop(c); // dropping closes the session: released as if the process died
    let mut tries = 0;
    loop {
        if let Some(d) = db.store.try_run_lock("ingest:wiki").await.unwrap() {
            d.release().await.unwrap();
            break;
        }
        tries += 1;
        assert!(tries < 50, "lock not released after drop");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    b.release().await.unwrap();
}

#[tokio::test]
async fn backfill_selection_sorts_chunks_by_prior_state_and_action() {
    let db = TestDb::new().await;
    let up = ingest(
        &db.store,
        "a",
        "First paragraph here.\n\nSecond paragraph here.\n\nThird one.",
    )
    .await;
    let old = extract_version();
    // Chunk 0 has an old-version job (queued, never run); chunk 1 and 2 have none.
    db.store
        .ensure_extract_jobs(&old, &up.chunk_ids[..1])
        .await
        .unwrap();
    let mut new = old.clone();
    new.prompt_version = "extract-p2".into();
    let all = BackfillSelector::default();
    let counts = db.store.backfill_extract_counts(&new, &all).await.unwrap();
    let count = |p: PriorState, a: BackfillAction| {
        counts
            .iter()
            .find(|c| c.prior == p && c.action == a)
            .map_or(0, |c| c.count)
    };
    assert_eq!(count(PriorState::Queued, BackfillAction::Publish), 1);
    assert_eq!(count(PriorState::Never, BackfillAction::Publish), 2);
    let not_version = BackfillSelector {
        not_version: true,
        ..BackfillSelector::default()
    };
    let page = db
        .store
        .backfill_extract_page(&new, &not_version, 0, 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].chunk_id, up.chunk_ids[0]);
    // Created but unpublished under the new version: resume; published: already current.
    db.store
        .ensure_extract_jobs(&new, &up.chunk_ids[..2])
        .await
        .unwrap();
    let page = db
        .store
        .backfill_extract_page(&new, &all, 0, 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 3);
    assert_eq!(page[0].action, BackfillAction::Resume);
    let jobs = db.store.unpublished_jobs(&new, 10).await.unwrap();
    let ids: Vec<_> = jobs.iter().map(|j| j.job_id.clone()).collect();
    db.store.mark_published(&ids).await.unwrap();
    let page = db
        .store
        .backfill_extract_page(&new, &all, 0, 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 1, "{page:?}");
    assert_eq!(page[0].chunk_id, up.chunk_ids[2]);
    let sourced = BackfillSelector {
        source: Some("elsewhere".into()),
        ..BackfillSelector::default()
    };
    assert!(
        db.store
            .backfill_extract_counts(&new, &sourced)
            .await
            .unwrap()
            .is_empty()
    );
    let future = BackfillSelector {
        since: Some(Utc::now() + chrono::Duration::hours(1)),
        ..BackfillSelector::default()
    };
    assert!(
        db.store
            .backfill_extract_counts(&new, &future)
            .await
            .unwrap()
            .is_empty()
    );
    // Classify selection runs (nothing classified yet).
    let c = crate::common::classify_version();
    assert!(
        db.store
            .backfill_classify_counts(&c, &all)
            .await
            .unwrap()
            .is_empty()
    );
}
