//! `relata report` and `relata report --check-doubling` against a store seeded with a week
//! of history through the store's own commit path (one extract job per response).

use chrono::{DateTime, Duration, Utc};
use relata_core::{ANSWER_V1, AnswerStatus, EXTRACT_V1, Reason, SourceHandle, TaskVersion};
use relata_store::{AnswerCall, ChunkSpan, NewAnswer, NewModelCall, Store};
use relata_testkit::FakeOptions;
use relata_testkit::harness::seeding_moment;
use relata_validate::{GateConfig, judge_extract};

use crate::common::Env;

const VALID: &str = r#"{"entities":[{"name":"Seed Corp","type":"organization"}],"claims":[]}"#;

/// Per day (0 = the 24 hours before `at`, 1..=7 the baseline): `n` responses, of which
/// `fail` rejected whole (`not_json`) and the rest accepted with one entity.
async fn seed(store: &Store, at: DateTime<Utc>, days: &[(i64, i64)]) {
    let total: i64 = days.iter().map(|d| d.0).sum();
    let mut text = String::new();
    let mut spans = Vec::new();
    for i in 0..total {
        let start = text.len();
        text.push_str(&format!(
            "Seed Corp paragraph number {i} of the seeded history."
        ));
        spans.push(ChunkSpan {
            start,
            end: text.len(),
        });
        text.push_str("\n\n");
    }
    let up = store
        .upsert_document("seed", "history", None, &text, &spans)
        .await
        .unwrap();
    let version = TaskVersion::new(&EXTRACT_V1, "seed-prompt", "fake-model");
    let jobs = store
        .ensure_extract_jobs(&version, &up.chunk_ids)
        .await
        .unwrap();
    let mut jobs = jobs.into_iter();
    for (day, &(n, fail)) in days.iter().enumerate() {
        for i in 0..n {
            let job = jobs.next().unwrap();
            let chunk = store
                .load_chunk(job.input.chunk_id().unwrap())
                .await
                .unwrap();
            let t = at - Duration::days(day as i64) - Duration::minutes(5 + i);
            let call = NewModelCall {
                version: version.clone(),
                started_at: t,
                finished_at: t,
                attempts: 1,
                prompt_tokens: None,
                completion_tokens: None,
                excerpt: None,
                sent_schema_sha256: None,
            };
            if i < fail {
                store
                    .commit_invalid_envelope(&job.job_id, &call, Reason::NotJson, "seeded")
                    .await
                    .unwrap();
            } else {
                let j = judge_extract(&GateConfig::default(), &chunk.text, VALID.as_bytes());
                store
                    .commit_extract(&job.job_id, &call, &j, &chunk)
                    .await
                    .unwrap();
            }
        }
    }
}

fn week(latest: (i64, i64), baseline: (i64, i64)) -> Vec<(i64, i64)> {
    let mut days = vec![latest];
    days.extend(std::iter::repeat_n(baseline, 7));
    days
}

async fn check(env: &Env, at: DateTime<Utc>, min_volume: &str) -> (Option<i32>, String) {
    let at = at.to_rfc3339();
    let out = env.relata(&[
        "report",
        "--check-doubling",
        "--baseline-days",
        "7",
        "--min-volume",
        min_volume,
        "--at",
        &at,
    ]);
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_doubling_is_silent_on_a_steady_week() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let at = seeding_moment(Duration::hours(1));
    seed(&env.store().await, at, &week((40, 4), (40, 4))).await;
    let (code, out) = check(&env, at, "30").await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ok extract: not doubled"), "{out}");

    // The daily report shows every day, with the reason.
    let report = env.relata(&["report", "--days", "10", "--json"]);
    assert!(report.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 8, "{rows:?}");
    assert_eq!(rows[0]["prompt_version"], "seed-prompt");
    assert_eq!(rows[0]["top_reasons"][0]["reason"], "not_json");
    let text = env.relata(&["report"]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("seed-prompt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_doubling_fires_on_a_doubled_day() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let at = seeding_moment(Duration::hours(1));
    seed(&env.store().await, at, &week((40, 10), (40, 4))).await;
    let (code, out) = check(&env, at, "30").await;
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("DOUBLED extract"), "{out}");
    assert!(out.contains("response"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_doubling_is_silent_under_the_minimum_volume() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let at = seeding_moment(Duration::hours(1));
    seed(&env.store().await, at, &week((20, 10), (40, 4))).await;
    let (code, out) = check(&env, at, "30").await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("fewer than 30 responses in the last 24 h"),
        "{out}"
    );
}

/// Per day, as [`seed`], but answers recorded through the store's own answer record:
/// `fail` of each day's `n` degraded by a fabricated citation, the rest answered. Plus,
/// each day, one answer that retrieved nothing and asked no model: not a response.
async fn seed_answers(store: &Store, at: DateTime<Utc>, days: &[(i64, i64)]) {
    let sha = ANSWER_V1.sha256();
    let cited = [SourceHandle::nth(1)];
    for (day, &(n, fail)) in days.iter().enumerate() {
        for i in 0..=n {
            let t = at - Duration::days(day as i64) - Duration::minutes(5 + i);
            let call = AnswerCall {
                model: "fake-model",
                prompt_version: "answer-p1",
                schema_id: ANSWER_V1.schema_id,
                schema_version: ANSWER_V1.version,
                schema_sha256: &sha,
                sent_schema_sha256: None,
                started_at: t,
                finished_at: t,
                duration_ms: 3,
                attempts: 1,
                prompt_tokens: None,
                completion_tokens: None,
                excerpt: None,
            };
            let (status, answer, citations, reasons, call): (_, _, &[SourceHandle], &[Reason], _) =
                if i == n {
                    (
                        AnswerStatus::Abstained,
                        Some("The sources do not answer this question."),
                        &[],
                        &[],
                        None,
                    )
                } else if i < fail {
                    (
                        AnswerStatus::Degraded,
                        None,
                        &[],
                        &[Reason::UnknownHandle],
                        Some(call),
                    )
                } else {
                    (
                        AnswerStatus::Answered,
                        Some("Seed Corp was founded in Bern [S1]."),
                        &cited,
                        &[],
                        Some(call),
                    )
                };
            store
                .record_answer(&NewAnswer {
                    question: "Where was Seed Corp founded?",
                    k: 8,
                    status,
                    answer,
                    citations,
                    sources: &[],
                    reasons,
                    caveats: serde_json::json!([]),
                    call,
                })
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_and_check_doubling_cover_answers() {
    let env = Env::new(FakeOptions::default(), vec![]).await;
    let at = seeding_moment(Duration::hours(1));
    // Steady extraction beside answers whose failure rate doubled: only answers fire.
    seed(&env.store().await, at, &week((40, 4), (40, 4))).await;
    seed_answers(&env.store().await, at, &week((40, 10), (40, 4))).await;

    // The invalid answers are in the report, with their reason.
    let report = env.relata(&["report", "--days", "10", "--json"]);
    assert!(report.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let answer_rows: Vec<&serde_json::Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["task"] == "answer")
        .collect();
    let responses: i64 = answer_rows
        .iter()
        .map(|r| r["responses"].as_i64().unwrap())
        .sum();
    let failing: i64 = answer_rows
        .iter()
        .map(|r| r["responses_with_rejection"].as_i64().unwrap())
        .sum();
    let rejections: i64 = answer_rows
        .iter()
        .map(|r| r["rejections"].as_i64().unwrap())
        .sum();
    let accepted: i64 = answer_rows
        .iter()
        .map(|r| r["accepted_rows"].as_i64().unwrap())
        .sum();
    assert_eq!(
        (responses, failing, rejections, accepted),
        (320, 38, 38, 282),
        "the no-source abstentions asked no model and are not responses: {rows}"
    );
    assert!(
        answer_rows
            .iter()
            .all(|r| r["prompt_version"] == "answer-p1")
    );
    assert!(
        answer_rows
            .iter()
            .all(|r| r["top_reasons"][0]["reason"] == "unknown_handle"),
        "{rows}"
    );
    let text = String::from_utf8(env.relata(&["report", "--days", "10"]).stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains(" answer ") && l.contains("unknown_handle")),
        "{text}"
    );

    // The doubled answer failure rate is flagged; extraction stays quiet.
    let (code, out) = check(&env, at, "30").await;
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("DOUBLED answer"), "{out}");
    assert!(out.contains("ok extract: not doubled"), "{out}");
}
