//! Every row of the failure table: the class, the attempts actually made, the counters.

use std::time::{Duration, Instant};

use relata_core::{Reason, Task};
use relata_model::{CallEnd, ErrorClass, ModelError, TransportKind};
use relata_testkit::Behaviour;
use serde_json::json;

use crate::support::{EMPTY_EXTRACTION, Harness};

const REQUESTS: &str = "relata_model_requests_total";
const TRANSPORT: &str = "relata_model_transport_errors_total";
const INVALID: &str = "relata_model_invalid_output_total";

#[tokio::test]
async fn a_completion_is_returned_with_its_provenance_and_usage() {
    let h = Harness::new(vec![Behaviour::completion(EMPTY_EXTRACTION)]).await;
    let call = h
        .client
        .extract("Ada Lovelace wrote the first program.", None)
        .await;
    let c = call.result.expect("completion");
    assert_eq!(c.content, EMPTY_EXTRACTION);
    let r = &call.record;
    assert_eq!(r.attempts, 1);
    assert_eq!(r.outcome, CallEnd::Completed);
    assert_eq!(r.prompt_version, "extract-p10");
    assert_eq!(r.schema.id, "relata.extract");
    assert_eq!(r.schema.sha256, relata_core::EXTRACT_V3.sha256());
    assert_eq!(r.model, "fake-model");
    assert!(r.finished_at >= r.started_at);
    assert_eq!(r.usage.unwrap().prompt_tokens, 11);
    assert_eq!(
        r.task_version(),
        relata_core::TaskVersion::new(&relata_core::EXTRACT_V3, "extract-p10", "fake-model")
    );
    assert_eq!(h.chat_count(), 1);
    assert_eq!(
        h.metric(REQUESTS, &[("task", "extract"), ("outcome", "ok")]),
        1.0
    );
    let tokens = "relata_model_tokens_total";
    assert_eq!(
        h.metric(tokens, &[("task", "extract"), ("kind", "prompt")]),
        11.0
    );
    assert_eq!(
        h.metric(tokens, &[("task", "extract"), ("kind", "completion")]),
        7.0
    );
    assert_eq!(
        h.metric(
            "relata_model_request_duration_seconds_count",
            &[("task", "extract")]
        ),
        1.0
    );
}

#[tokio::test]
async fn transient_statuses_are_retried_then_succeed() {
    for (status, kind) in [
        (500, "http_500"),
        (502, "http_502"),
        (503, "http_503"),
        (504, "http_504"),
        (408, "http_408"),
        (429, "http_429"),
    ] {
        let h = Harness::new(vec![
            Behaviour::error(status, "try later"),
            Behaviour::completion(EMPTY_EXTRACTION),
        ])
        .await;
        let call = h.client.extract("text", None).await;
        assert!(call.result.is_ok(), "{status}: {:?}", call.result);
        assert_eq!(call.record.attempts, 2, "{status}");
        assert_eq!(h.chat_count(), 2, "{status}");
        assert_eq!(
            h.metric(TRANSPORT, &[("task", "extract"), ("kind", kind)]),
            1.0
        );
        assert_eq!(
            h.metric(REQUESTS, &[("task", "extract"), ("outcome", "transport")]),
            1.0
        );
        assert_eq!(
            h.metric(REQUESTS, &[("task", "extract"), ("outcome", "ok")]),
            1.0
        );
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let h = Harness::new(vec![
        Behaviour::error(429, "rate limited").retry_after(1),
        Behaviour::completion(EMPTY_EXTRACTION),
    ])
    .await;
    let call = h.client.extract("text", None).await;
    assert!(call.result.is_ok());
    assert_eq!(call.record.attempts, 2);
    let reqs = h.server.chat_requests();
    let gap = reqs[1].received_at - reqs[0].received_at;
    // The backoff alone would be ~10-20 ms.
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
}

#[tokio::test]
async fn retry_after_is_capped() {
    let h = Harness::with(
        Default::default(),
        vec![
            Behaviour::error(503, "maintenance").retry_after(3600),
            Behaviour::completion(EMPTY_EXTRACTION),
        ],
        |c| c.retry_after_cap_ms = 100,
    )
    .await;
    let t = Instant::now();
    let call = h.client.extract("text", None).await;
    assert!(call.result.is_ok());
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test]
async fn the_attempt_bound_is_respected() {
    let h = Harness::with(
        relata_testkit::FakeOptions {
            default: Behaviour::error(503, "down"),
            ..Default::default()
        },
        vec![],
        |c| c.retry_max_attempts = 3,
    )
    .await;
    let call = h.client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Transport);
    assert_eq!(err.transport_kind(), Some(TransportKind::Http503));
    assert_eq!(call.record.attempts, 3);
    assert_eq!(call.record.outcome, CallEnd::Transport);
    assert_eq!(call.record.http_status, Some(503));
    assert_eq!(h.chat_count(), 3);
    assert_eq!(
        h.metric(TRANSPORT, &[("task", "extract"), ("kind", "http_503")]),
        3.0
    );
}

#[tokio::test]
async fn the_elapsed_bound_is_respected() {
    let h = Harness::with(
        relata_testkit::FakeOptions {
            default: Behaviour::error(502, "bad gateway"),
            ..Default::default()
        },
        vec![],
        |c| {
            c.retry_max_attempts = 1_000;
            c.retry_base_delay_ms = 50;
            c.retry_max_delay_ms = 50;
            c.retry_max_elapsed_ms = 400;
        },
    )
    .await;
    let t = Instant::now();
    let call = h.client.extract("text", None).await;
    let elapsed = t.elapsed();
    assert_eq!(call.result.unwrap_err().class(), ErrorClass::Transport);
    assert!(elapsed < Duration::from_millis(400 + 3_000), "{elapsed:?}");
    let n = call.record.attempts;
    assert!((2..20).contains(&n), "{n} attempts");
    assert_eq!(h.chat_count(), n as usize);
}

#[tokio::test]
async fn permanent_statuses_are_never_retried() {
    for status in [400u16, 401, 403, 404, 413, 422, 418, 501] {
        let h = Harness::new(vec![
            Behaviour::error(status, "the model `x` does not exist"),
            Behaviour::completion(EMPTY_EXTRACTION),
        ])
        .await;
        let call = h.client.extract("text", None).await;
        let err = call.result.unwrap_err();
        assert_eq!(err.class(), ErrorClass::Permanent, "{status}");
        assert!(!err.is_retryable());
        assert_eq!(err.status(), Some(status));
        match &err {
            ModelError::Permanent { message, .. } => {
                assert_eq!(message, "the model `x` does not exist")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(call.record.attempts, 1, "{status}");
        assert_eq!(h.chat_count(), 1, "{status}: exactly one request");
        assert_eq!(
            h.metric(REQUESTS, &[("task", "extract"), ("outcome", "permanent")]),
            1.0
        );
        assert!(!h.encoded().contains("relata_model_transport_errors_total{"));
    }
}

#[tokio::test]
async fn connection_refused_is_transport() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = relata_model::ModelMetrics::register(&mut registry);
    let mut cfg = crate::support::config(&url);
    cfg.retry_max_attempts = 3;
    let client = relata_model::ModelClient::new(cfg, metrics).unwrap();
    let call = client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(
        err.transport_kind(),
        Some(TransportKind::ConnectRefused),
        "{err}"
    );
    assert_eq!(call.record.attempts, 3);
    assert_eq!(
        crate::support::metric(
            &registry,
            TRANSPORT,
            &[("task", "extract"), ("kind", "connect_refused")]
        ),
        3.0
    );
}

#[tokio::test]
async fn a_body_cut_off_is_transport_and_retried() {
    let h = Harness::new(vec![
        Behaviour::reset_mid_body(EMPTY_EXTRACTION),
        Behaviour::completion(EMPTY_EXTRACTION),
    ])
    .await;
    let call = h.client.extract("text", None).await;
    assert!(call.result.is_ok(), "{:?}", call.result);
    assert_eq!(call.record.attempts, 2);
    assert_eq!(h.chat_count(), 2);
    assert_eq!(
        h.metric(TRANSPORT, &[("task", "extract"), ("kind", "body_cut_off")]),
        1.0
    );

    let h = Harness::with(
        Default::default(),
        vec![Behaviour::reset_mid_body(EMPTY_EXTRACTION)],
        |c| c.retry_max_attempts = 1,
    )
    .await;
    let err = h.client.extract("text", None).await.result.unwrap_err();
    assert_eq!(
        err.transport_kind(),
        Some(TransportKind::BodyCutOff),
        "{err}"
    );
}

#[tokio::test]
async fn a_connection_closed_before_answering_is_transport() {
    let h = Harness::with(
        Default::default(),
        vec![Behaviour::close_immediately()],
        |c| c.retry_max_attempts = 1,
    )
    .await;
    let call = h.client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Transport, "{err}");
    assert_eq!(err.transport_kind(), Some(TransportKind::Reset), "{err}");
    assert_eq!(h.chat_count(), 1);
}

#[tokio::test]
async fn a_hang_times_out_and_is_retried_within_bounds() {
    let h = Harness::with(
        relata_testkit::FakeOptions {
            default: Behaviour::hang(),
            ..Default::default()
        },
        vec![],
        |c| {
            c.request_timeout_ms = 300;
            c.retry_max_attempts = 2;
        },
    )
    .await;
    let t = Instant::now();
    let call = h.client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(err.transport_kind(), Some(TransportKind::Timeout), "{err}");
    assert_eq!(call.record.attempts, 2);
    assert_eq!(h.chat_count(), 2);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(
        h.metric(TRANSPORT, &[("task", "extract"), ("kind", "timeout")]),
        2.0
    );
}

pub(crate) async fn invalid_once(behaviour: Behaviour, reason: Reason) -> relata_model::ModelCall {
    // The default after the script is a valid completion: a retry would succeed, so a
    // second request would show.
    let h = Harness::new(vec![behaviour]).await;
    let call = h.client.extract("text", None).await;
    let err = call.result.clone().unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidOutput, "{err}");
    assert_eq!(err.invalid_reason(), Some(reason));
    assert!(!err.is_retryable());
    assert_eq!(call.record.attempts, 1);
    assert_eq!(call.record.outcome, CallEnd::InvalidOutput);
    assert_eq!(call.record.invalid_reason, Some(reason));
    assert_eq!(h.chat_count(), 1, "{reason}: exactly one request, ever");
    assert_eq!(
        h.metric(INVALID, &[("task", "extract"), ("reason", reason.as_str())]),
        1.0
    );
    assert_eq!(
        h.metric(
            REQUESTS,
            &[("task", "extract"), ("outcome", "invalid_output")]
        ),
        1.0
    );
    call
}

#[tokio::test]
async fn finish_reason_length_is_truncated_and_never_retried() {
    let call = invalid_once(
        Behaviour::completion_with(json!(r#"{"entities":[{"name":"Ada"#), "length"),
        Reason::Truncated,
    )
    .await;
    let excerpt = call.record.excerpt.expect("an excerpt of what was cut off");
    assert!(excerpt.contains("Ada"), "{excerpt}");
    assert_eq!(call.record.finish_reason.as_deref(), Some("length"));
    // Usage is kept even for invalid output.
    assert!(call.record.usage.is_some());
}

#[tokio::test]
async fn a_refusal_is_invalid_output() {
    invalid_once(
        Behaviour::refusal("I can't help with that."),
        Reason::Refusal,
    )
    .await;
}

#[tokio::test]
async fn no_content_is_empty() {
    invalid_once(
        Behaviour::completion_with(json!(null), "stop"),
        Reason::Empty,
    )
    .await;
    invalid_once(Behaviour::completion("   "), Reason::Empty).await;
    invalid_once(
        Behaviour::json(200, &json!({"object": "chat.completion", "choices": []})),
        Reason::Empty,
    )
    .await;
}

#[tokio::test]
async fn an_oversized_body_is_too_large_and_never_retried() {
    let big = "x".repeat(400 * 1024);
    invalid_once(Behaviour::completion(&big), Reason::TooLarge).await;
}

#[tokio::test]
async fn a_200_that_is_not_a_chat_completion_is_permanent() {
    let h = Harness::new(vec![Behaviour::Respond {
        status: 200,
        headers: vec![],
        body: "<html>proxy login</html>".into(),
        delay_ms: 0,
    }])
    .await;
    let call = h.client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Permanent, "{err}");
    assert_eq!(h.chat_count(), 1);
}

#[tokio::test]
async fn the_adapter_never_counts_a_completion_as_invalid() {
    // Content the gate will reject is still a completion here: counting it is the gate's
    // (through the worker's record_invalid_output), exactly once.
    let h = Harness::new(vec![Behaviour::completion("not json at all")]).await;
    let call = h.client.extract("text", None).await;
    assert_eq!(call.result.unwrap().content, "not json at all");
    assert!(!h.encoded().contains("relata_model_invalid_output_total{"));
    relata_model::record_invalid_output(
        h.client.metrics(),
        Task::Extract,
        Reason::NotJson,
        "expected value at line 1 column 1",
    );
    assert_eq!(
        h.metric(INVALID, &[("task", "extract"), ("reason", "not_json")]),
        1.0
    );
}
