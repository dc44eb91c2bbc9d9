//! `relata model probe` as a process against the fake server.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::process::Command;

use relata_testkit::{Behaviour, FakeModelServer, FakeOptions};

/// Run the probe with a clean model environment plus `env`, off the async runtime.
async fn probe(env: Vec<(&'static str, String)>, args: Vec<&'static str>) -> (i32, String) {
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_relata"));
        cmd.args(["model", "probe"]).args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("RELATA_MODEL_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(env);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        (out.status.code().unwrap(), format!("{stdout}{stderr}"))
    })
    .await
    .unwrap()
}

async fn fake(options: FakeOptions) -> FakeModelServer {
    FakeModelServer::start_with(options, vec![], 0)
        .await
        .unwrap()
}

fn env(server: &FakeModelServer) -> Vec<(&'static str, String)> {
    vec![
        ("RELATA_MODEL_URL", server.base_url()),
        ("RELATA_MODEL_NAME", "fake-model".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_endpoint_passes_every_step() {
    let server = fake(FakeOptions::default()).await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok     reachable"), "{out}");
    assert!(out.contains("ok     model"), "{out}");
    assert!(out.contains("ok     structured"), "{out}");
    let chat = server.chat_requests();
    assert_eq!(chat.len(), 1);
    assert_eq!(
        chat[0].json().unwrap()["response_format"]["type"],
        "json_schema"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_on_json_schema_suggests_json_object_schema() {
    let server = fake(FakeOptions {
        reject_json_schema_dialect: true,
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED structured"), "{out}");
    assert!(
        out.contains("HTTP 500 on response_format json_schema: llama-cpp-python answers so; it wants --dialect json_object_schema"),
        "{out}"
    );
    assert_eq!(server.chat_requests().len(), 1, "the probe does not retry");

    let (code, out) = probe(env(&server), vec!["--dialect", "json_object_schema"]).await;
    assert_eq!(code, 0, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_override_the_environment() {
    let server = fake(FakeOptions::default()).await;
    let url = server.base_url();
    let url: &'static str = Box::leak(url.into_boxed_str());
    let (code, out) = probe(
        vec![("RELATA_MODEL_URL", "http://127.0.0.1:9/v1".into())],
        vec!["--url", url, "--model", "fake-model"],
    )
    .await;
    assert_eq!(code, 0, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlisted_model_is_a_warning_with_the_list() {
    let server = fake(FakeOptions::default()).await;
    let (code, out) = probe(env(&server), vec!["--model", "other-model"]).await;
    assert_eq!(code, 0, "the request still round-trips: {out}");
    assert!(
        out.contains("other-model is not listed (listed: fake-model)"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_the_contract_fails() {
    let server = fake(FakeOptions {
        default: Behaviour::completion("Sure! Here are the entities: Ada."),
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("not with relata.extract JSON: not_json"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_endpoint_fails_with_a_remedy() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (code, out) = probe(
        vec![
            ("RELATA_MODEL_URL", format!("http://127.0.0.1:{port}/v1")),
            ("RELATA_MODEL_NAME", "m".into()),
        ],
        vec![],
    )
    .await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED reachable"), "{out}");
    assert!(out.contains("remedy: is the server running"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_configuration_names_the_variable() {
    let (code, out) = probe(vec![], vec![]).await;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("RELATA_MODEL_URL is required"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_is_sent_but_never_printed() {
    let server = fake(FakeOptions::default()).await;
    let mut e = env(&server);
    e.push(("RELATA_MODEL_API_KEY", "sk-probe-SENTINEL-123456".into()));
    let (code, out) = probe(e, vec![]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("api key set"), "{out}");
    assert!(!out.contains("SENTINEL"), "{out}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-probe-SENTINEL-123456")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_failed_step_makes_the_probe_exit_non_zero() {
    // The model list is refused but the structured request round-trips: still a failure.
    let server = fake(FakeOptions {
        models_behaviour: Some(Behaviour::error(404, "no model list here")),
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert!(out.contains("FAILED reachable"), "{out}");
    assert!(out.contains("ok     structured"), "{out}");
    assert_eq!(code, 1, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_is_told_it_is_slow_not_asked_if_it_runs() {
    let server = fake(FakeOptions {
        models_behaviour: Some(
            Behaviour::json(200, &serde_json::json!({"data": []}))
                .delayed(std::time::Duration::from_secs(3)),
        ),
        ..FakeOptions::default()
    })
    .await;
    let mut e = env(&server);
    e.push(("RELATA_MODEL_REQUEST_TIMEOUT_MS", "300".into()));
    let (code, out) = probe(e, vec![]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED reachable"), "{out}");
    assert!(out.contains("running but slow"), "{out}");
    assert!(out.contains("RELATA_MODEL_REQUEST_TIMEOUT_MS"), "{out}");
    assert!(!out.contains("is the server running"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_named_with_its_target_and_never_followed() {
    let target = fake(FakeOptions::default()).await;
    let location = format!("{}/models", target.base_url());
    let server = fake(FakeOptions {
        models_behaviour: Some(Behaviour::redirect(308, &location)),
        default: Behaviour::redirect(308, &format!("{}/chat/completions", target.base_url())),
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&location), "{out}");
    assert!(
        out.contains("set RELATA_MODEL_URL to the URL the redirect names"),
        "{out}"
    );
    assert!(
        target.requests().is_empty(),
        "the probe followed the redirect"
    );
}

/// A model list as a server family writes it.
fn models_of(owned_by: &str) -> Behaviour {
    Behaviour::json(
        200,
        &serde_json::json!({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": owned_by}]}),
    )
}

/// The probe names the server family it sees, and its remedies fit that family: a
/// llama-cpp-python server is told json_object_schema, a llama-server json_schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_names_the_family_and_its_remedy_fits_it() {
    let server = fake(FakeOptions {
        reject_json_schema_dialect: true,
        models_behaviour: Some(models_of("me")),
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec![]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("server family: llama-cpp-python"), "{out}");
    assert!(
        out.contains(
            "warn   dialect     llama-cpp-python takes dialect json_object_schema, not json_schema"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "llama-cpp-python takes dialect json_object_schema: --dialect json_object_schema"
        ),
        "{out}"
    );

    let server = fake(FakeOptions {
        models_behaviour: Some(models_of("llamacpp")),
        default: Behaviour::completion("Sure! Here is some JSON."),
        ..FakeOptions::default()
    })
    .await;
    let (code, out) = probe(env(&server), vec!["--dialect", "json_object_schema"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("server family: llama-server"), "{out}");
    assert!(
        out.contains(
            "llama-server does not enforce dialect json_object_schema: --dialect json_schema"
        ),
        "{out}"
    );
    let (code, out) = probe(env(&server), vec![]).await;
    assert!(
        out.contains("ok     dialect     llama-server takes dialect json_schema"),
        "{out}"
    );
    assert_eq!(
        code, 1,
        "the fake's prose is still not relata's JSON: {out}"
    );
}
