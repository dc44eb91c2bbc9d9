//! A misbehaving provider: redirects, filtered output, errors inside a 200, broken
//! envelopes and nonsensical usage. Each case is decided once, in the adapter.

use relata_core::Reason;
use relata_model::{ApiKey, CallEnd, ErrorClass, ModelError};
use relata_testkit::{Behaviour, FakeModelServer};
use serde_json::json;

use crate::failures::invalid_once;
use crate::support::{EMPTY_EXTRACTION, Harness};

const INVALID: &str = "relata_model_invalid_output_total";

#[tokio::test]
async fn a_redirect_is_not_followed_and_its_target_is_never_reached() {
    for status in [301, 302, 303, 307, 308] {
        // The target would answer like a model: following the redirect would "work".
        let target = FakeModelServer::start(vec![]).await.unwrap();
        let location = format!("{}/chat/completions", target.base_url());
        let h = Harness::new(vec![Behaviour::redirect(status, &location)]).await;
        let call = h.client.extract("secret document text", None).await;
        let err = call.result.unwrap_err();
        assert_eq!(err.class(), ErrorClass::Permanent, "{status}: {err}");
        assert_eq!(err.status(), Some(status));
        assert!(err.is_configuration_failure(), "{status}");
        let text = err.to_string();
        assert!(text.contains(&location), "names the target: {text}");
        assert!(
            text.contains("set RELATA_MODEL_URL to the final URL"),
            "{text}"
        );
        assert_eq!(call.record.outcome, CallEnd::Permanent);
        assert_eq!(h.chat_count(), 1, "{status}: not retried");
        assert!(
            target.requests().is_empty(),
            "{status}: the document text went to the redirect target"
        );
    }
}

#[tokio::test]
async fn content_filter_is_a_refusal_and_its_content_is_never_kept() {
    let call = invalid_once(Behaviour::content_filter(EMPTY_EXTRACTION), Reason::Refusal).await;
    assert_eq!(call.record.finish_reason.as_deref(), Some("content_filter"));
    assert_eq!(call.record.excerpt, None, "filtered output is not stored");
    let err = call.result.unwrap_err().to_string();
    assert!(err.contains("content_filter"), "{err}");
}

#[tokio::test]
async fn an_error_in_a_200_is_classified_by_its_code() {
    // Auth: permanent, a configuration failure, never retried, never `empty`.
    let h = Harness::new(vec![Behaviour::error_in_200(
        json!("invalid_api_key"),
        "Incorrect API key provided",
    )])
    .await;
    let call = h.client.extract("text", None).await;
    let err = call.result.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Permanent, "{err}");
    assert_eq!(err.status(), Some(401));
    assert!(err.is_configuration_failure());
    assert!(
        err.to_string().contains("Incorrect API key provided"),
        "{err}"
    );
    assert_eq!(call.record.invalid_reason, None);
    assert_eq!(h.chat_count(), 1);
    assert_eq!(
        h.metric(INVALID, &[("task", "extract"), ("reason", "empty")]),
        0.0
    );

    // A numeric code of a transient status: retried like that status.
    let h = Harness::new(vec![
        Behaviour::error_in_200(json!(503), "overloaded"),
        Behaviour::completion(EMPTY_EXTRACTION),
    ])
    .await;
    let call = h.client.extract("text", None).await;
    assert!(call.result.is_ok(), "{:?}", call.result);
    assert_eq!(call.record.attempts, 2);
    assert_eq!(
        h.metric(
            "relata_model_transport_errors_total",
            &[("task", "extract"), ("kind", "http_503")]
        ),
        1.0
    );

    // A request-level code: permanent for this job only.
    let h = Harness::new(vec![Behaviour::error_in_200(
        json!("context_length_exceeded"),
        "too long",
    )])
    .await;
    let err = h.client.extract("text", None).await.result.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(!err.is_configuration_failure());
}

#[tokio::test]
async fn the_message_of_an_error_in_a_200_is_redacted() {
    let key = "sk-live-SENTINEL-0123456789";
    let h = Harness::with(
        Default::default(),
        vec![Behaviour::error_in_200(
            json!(401),
            &format!("key {key} is revoked"),
        )],
        |c| c.api_key = Some(ApiKey::new(key)),
    )
    .await;
    let err = h.client.extract("text", None).await.result.unwrap_err();
    assert!(!err.to_string().contains("SENTINEL"), "{err}");
}

#[tokio::test]
async fn broken_envelopes_are_provider_errors_naming_what_came_back() {
    for (behaviour, named) in [
        (Behaviour::html_page(), "an HTML page"),
        (
            Behaviour::sse_stream(EMPTY_EXTRACTION),
            "server-sent event stream",
        ),
        (
            Behaviour::duplicate_choices(
                EMPTY_EXTRACTION,
                r#"{"entities":[{"name":"X","type":"person"}],"claims":[]}"#,
            ),
            "duplicate field `choices`",
        ),
    ] {
        let h = Harness::new(vec![behaviour]).await;
        let call = h.client.extract("text", None).await;
        let err = call.result.unwrap_err();
        match &err {
            ModelError::Permanent {
                status: 200,
                message,
            } => {
                assert!(message.contains(named), "{message}")
            }
            other => panic!("{named}: expected a provider error, got {other:?}"),
        }
        assert!(!err.is_configuration_failure());
        assert_eq!(h.chat_count(), 1, "{named}: not retried");
        assert!(
            !h.encoded().contains("relata_model_invalid_output_total{"),
            "{named}: not counted as the model's"
        );
    }
}

#[tokio::test]
async fn content_defects_are_invalid_output_counted_once() {
    let call = invalid_once(
        Behaviour::content_value(json!({"entities": [], "claims": []})),
        Reason::Schema,
    )
    .await;
    let excerpt = call.record.excerpt.expect("the object is kept as evidence");
    assert!(excerpt.contains("entities"), "{excerpt}");

    let call = invalid_once(
        Behaviour::invalid_utf8_content(r#"{"entities":[],"claims":["#, "]}"),
        Reason::NotJson,
    )
    .await;
    let err = call.result.unwrap_err().to_string();
    assert!(err.contains("invalid UTF-8"), "{err}");
}

#[tokio::test]
async fn nonsensical_usage_keeps_the_answer_and_poisons_nothing() {
    for usage in [
        json!({"prompt_tokens": -5, "completion_tokens": 7, "total_tokens": 2}),
        json!({"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX}),
    ] {
        let h = Harness::new(vec![Behaviour::completion_with_usage(
            EMPTY_EXTRACTION,
            usage.clone(),
        )])
        .await;
        let call = h.client.extract("text", None).await;
        assert_eq!(
            call.result.expect("the answer is kept").content,
            EMPTY_EXTRACTION,
            "{usage}"
        );
        assert_eq!(call.record.usage, None, "{usage}: not recorded");
        let tokens = "relata_model_tokens_total";
        assert_eq!(
            h.metric(tokens, &[("task", "extract"), ("kind", "prompt")]),
            0.0
        );
        assert_eq!(
            h.metric(tokens, &[("task", "extract"), ("kind", "completion")]),
            0.0
        );
        assert_eq!(
            h.metric("relata_model_usage_ignored_total", &[("task", "extract")]),
            1.0,
            "{usage}"
        );
    }
}
