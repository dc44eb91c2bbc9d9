//! The API key never appears in logs, Debug output, errors, stored excerpts or metrics.

use std::io::Write;
use std::sync::{Arc, Mutex};

use relata_model::{ModelConfig, ModelError};
use relata_testkit::{Behaviour, FakeOptions};
use serde_json::json;

use crate::support::Harness;

const SENTINEL: &str = "sk-relata-SENTINEL-7f3a9c2e1d";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn keyed(c: &mut ModelConfig) {
    *c = c
        .clone()
        .with_env(|k| (k == "RELATA_MODEL_API_KEY").then(|| SENTINEL.to_owned()))
        .unwrap();
    c.retry_max_attempts = 2;
}

#[tokio::test]
async fn the_key_is_sent_and_never_shown() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let h = Harness::with(
        FakeOptions::default(),
        vec![
            // A provider that echoes the key, in every shape it could.
            Behaviour::error(
                401,
                &format!("Incorrect API key provided: {SENTINEL}. Header was Bearer {SENTINEL}"),
            ),
            Behaviour::error(503, &format!("upstream saw {SENTINEL}")),
            Behaviour::completion_with(
                json!(format!("{{\"entities\": [{{\"name\": \"{SENTINEL}\"")),
                "length",
            ),
        ],
        keyed,
    )
    .await;

    let permanent = h.client.extract("text", None).await;
    let transient_then_truncated = h.client.extract("text", None).await;

    // The key was sent, as a bearer token.
    let reqs = h.server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );

    let err = permanent.result.clone().unwrap_err();
    assert!(matches!(err, ModelError::Permanent { status: 401, .. }));
    assert!(err.is_configuration_failure());
    let truncated = transient_then_truncated.result.clone().unwrap_err();
    assert_eq!(
        truncated.invalid_reason(),
        Some(relata_core::Reason::Truncated)
    );
    let excerpt = transient_then_truncated.record.excerpt.clone().unwrap();
    assert!(excerpt.contains("[redacted]"), "{excerpt}");

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("model provider refused"),
        "the capture works: {logs}"
    );
    assert!(logs.contains("model transport failure"), "{logs}");

    let shown = [
        ("logs", logs),
        ("error display", format!("{err} {truncated}")),
        ("error debug", format!("{err:?} {truncated:?}")),
        (
            "record debug",
            format!(
                "{:?} {:?}",
                permanent.record, transient_then_truncated.record
            ),
        ),
        (
            "record json",
            serde_json::to_string(&transient_then_truncated.record).unwrap(),
        ),
        ("client debug", format!("{:?}", h.client)),
        ("config debug", format!("{:?}", h.client.config())),
        ("metrics", h.encoded()),
    ];
    for (what, text) in shown {
        assert!(
            !text.contains(SENTINEL),
            "the key leaked into {what}: {text}"
        );
        assert!(
            !text.contains("SENTINEL-7f3a"),
            "part of the key leaked into {what}"
        );
    }
}

#[test]
fn a_key_file_is_read_and_never_named_in_errors() {
    let dir = std::env::temp_dir().join(format!("relata-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("key");
    std::fs::write(&path, format!("  {SENTINEL}\n")).unwrap();
    let p = path.to_string_lossy().into_owned();
    let cfg = ModelConfig::default()
        .with_env(|k| match k {
            "RELATA_MODEL_URL" => Some("http://127.0.0.1:9/v1".into()),
            "RELATA_MODEL_NAME" => Some("m".into()),
            "RELATA_MODEL_API_KEY_FILE" => Some(p.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(cfg.api_key.as_ref().unwrap().expose(), SENTINEL);
    assert!(!format!("{cfg:?}").contains(SENTINEL));
    let both = ModelConfig::default()
        .with_env(|k| match k {
            "RELATA_MODEL_URL" => Some("http://127.0.0.1:9/v1".into()),
            "RELATA_MODEL_NAME" => Some("m".into()),
            "RELATA_MODEL_API_KEY_FILE" => Some(p.clone()),
            "RELATA_MODEL_API_KEY" => Some(SENTINEL.into()),
            _ => None,
        })
        .unwrap_err();
    assert!(!both.to_string().contains(SENTINEL));
    std::fs::remove_dir_all(&dir).unwrap();
}
