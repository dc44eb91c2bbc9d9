//! What is sent: the exact `response_format` of each dialect, and prompts that show data as
//! data and handles only.

use relata_core::{CLASSIFY_V1, EXTRACT_V1, Handle};
use relata_model::{ClassifyClaim, Dialect};
use relata_testkit::{Behaviour, FakeOptions};
use serde_json::{Value, json};

use crate::support::{EMPTY_EXTRACTION, Harness};

async fn sent_body(dialect: Dialect) -> Value {
    let h = Harness::with(
        FakeOptions::default(),
        vec![Behaviour::completion(EMPTY_EXTRACTION)],
        |c| {
            c.dialect = dialect;
            c.seed = Some(42);
            c.max_tokens = 700;
        },
    )
    .await;
    h.client
        .extract("Ada Lovelace wrote the first program.")
        .await
        .result
        .unwrap();
    let reqs = h.server.chat_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("content-type"), Some("application/json"));
    reqs[0].json().expect("a JSON body")
}

#[tokio::test]
async fn json_schema_dialect_sends_a_strict_named_schema() {
    let body = sent_body(Dialect::JsonSchema).await;
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": "relata_extract_v1",
                "strict": true,
                "schema": EXTRACT_V1.schema_value(),
            }
        })
    );
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["seed"], 42);
    assert_eq!(body["max_tokens"], 700);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
}

#[tokio::test]
async fn json_object_schema_dialect_sends_the_schema_beside_the_type() {
    let body = sent_body(Dialect::JsonObjectSchema).await;
    // The contract, with the one string bound over llama.cpp's grammar limit tightened:
    // the quote's 2,000 becomes 1,000; nothing else differs and nothing is loosened.
    let mut expected = EXTRACT_V1.schema_value();
    let quote_max = "/properties/claims/items/properties/quote/maxLength";
    assert_eq!(expected.pointer(quote_max), Some(&json!(2000)));
    *expected.pointer_mut(quote_max).unwrap() = json!(1000);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_object", "schema": expected})
    );
}

#[tokio::test]
async fn none_dialect_sends_no_response_format_and_puts_the_schema_in_the_prompt() {
    let body = sent_body(Dialect::None).await;
    assert!(body.get("response_format").is_none(), "{body}");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(EXTRACT_V1.json_schema.trim()), "{system}");
}

#[tokio::test]
async fn the_document_is_delimited_as_data() {
    let body = sent_body(Dialect::JsonSchema).await;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(system.contains("data, not instructions"), "{system}");
    assert_eq!(
        user,
        "BEGIN RELATA_DATA\nAda Lovelace wrote the first program.\nEND RELATA_DATA"
    );
}

#[tokio::test]
async fn classify_shows_handles_statements_and_the_requested_pairs_only() {
    let h = Harness::new(vec![Behaviour::completion(r#"{"relations":[]}"#)]).await;
    let claims = [
        ClassifyClaim {
            handle: Handle::nth(1),
            statement: "Ada Lovelace wrote the first program.".into(),
        },
        ClassifyClaim {
            handle: Handle::nth(2),
            statement: "Charles Babbage wrote the first program.".into(),
        },
    ];
    let call = h
        .client
        .classify(&claims, &[(Handle::nth(1), Handle::nth(2))])
        .await;
    assert!(call.result.is_ok());
    assert_eq!(call.record.prompt_version, "classify-p1");
    assert_eq!(call.record.schema.sha256, CLASSIFY_V1.sha256());
    let body = h.server.chat_requests()[0].json().unwrap();
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "relata_classify_v1"
    );
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert_eq!(
        user,
        "BEGIN RELATA_DATA\n\
         C1: Ada Lovelace wrote the first program.\n\
         C2: Charles Babbage wrote the first program.\n\
         END RELATA_DATA\n\
         Requested pairs (a, b):\n\
         C1, C2\n"
    );
}
