//! `relata serve`: answers over HTTP.
//!
//! * `POST /v1/answers` with `{"question": "...", "k": 8}` (`k` optional, 1..=20): 200
//!   with the [`Answer`] for every outcome (answered, abstained, degraded); 400 with
//!   `{"error", "field"}` for an unknown field, a missing or empty question, a question
//!   over 2,000 bytes or a `k` out of range; 413 for a body over 16 KiB; 504 when the
//!   model timed out (or the request outlived its deadline), 502 for any other model
//!   failure; 503 when the server is at its concurrency bound or the store is
//!   unavailable.
//! * `GET /healthz` (the process runs), `GET /readyz` (the store answers), `GET /metrics`.
//!
//! [`router`] returns a plain `Router<()>` so other routers can be merged into the same
//! server; [`serve`] serves with the client's address available
//! (`ConnectInfo<SocketAddr>`) until the shutdown future it is given resolves, letting
//! requests in flight finish, within bounds on held connections ([`crate::listen`]). A
//! declared body length over the limit is refused with 413 before the body is read.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use prometheus_client::registry::Registry;
use tokio::sync::Semaphore;

use crate::{Answerer, AskError};

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Questions answered at once; more wait up to `queue_timeout`, then get 503.
    pub max_concurrency: usize,
    /// How long a request waits for a free slot.
    pub queue_timeout: Duration,
    /// Deadline of one answer (retrieval, the model with its retries, the record); past
    /// it the request gets 504 and nothing is recorded.
    pub request_timeout: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_concurrency: 8,
            queue_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(300),
        }
    }
}

#[derive(Clone)]
struct AppState {
    answerer: Arc<Answerer>,
    permits: Arc<Semaphore>,
    config: ServeConfig,
}

/// The answer routes, ready to be merged with others or served by [`serve`].
pub fn router(answerer: Answerer, registry: Arc<Registry>, config: ServeConfig) -> Router {
    let answerer = Arc::new(answerer);
    let ready = StoreReady(answerer.clone());
    let state = AppState {
        answerer,
        permits: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
        config,
    };
    Router::new()
        .route(
            "/v1/answers",
            post(answers)
                .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
                .route_layer(axum::middleware::from_fn(|r, n| {
                    crate::listen::refuse_declared_over(MAX_BODY_BYTES, r, n)
                })),
        )
        .with_state(state)
        .merge(relata_ops::router(registry, ready))
}

/// Ready while the store answers (and is migrated).
#[derive(Clone)]
struct StoreReady(Arc<Answerer>);

impl relata_ops::ReadyCheck for StoreReady {
    async fn check(&self) -> Result<(), String> {
        self.0
            .store()
            .check_migrated()
            .await
            .map_err(|e| format!("store: {e}"))
    }
}

/// Serve `router` on `listener` within `limits` until `shutdown` resolves (the binary
/// passes its one SIGTERM/SIGINT signal); requests in flight finish. See
/// [`crate::listen`] for what the limits hold.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: crate::listen::Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    crate::listen::serve(listener, router, limits, shutdown).await
}

#[derive(Debug, PartialEq, Eq)]
struct AskBody {
    question: String,
    k: usize,
}

/// A refused body: what was wrong, and the field it was wrong in when there is one.
#[derive(Debug, PartialEq, Eq)]
struct BodyError {
    message: String,
    field: Option<String>,
}

/// Read `{"question": string, "k": integer?}`, naming the field a problem is in (never
/// its value: serde's messages quote the value, `invalid type: integer `42``).
fn parse_body(body: &[u8]) -> Result<AskBody, BodyError> {
    let refuse = |message: String, field| Err(BodyError { message, field });
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return refuse(format!("the request body is not JSON: {e}"), None),
    };
    let Some(object) = value.as_object() else {
        return refuse(
            "the request body must be a JSON object: {\"question\": \"...\", \"k\": 8}".into(),
            None,
        );
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "question" | "k"))
    {
        // Bounded: the name is the client's own text.
        let name: String = unknown.chars().take(64).collect();
        return Err(BodyError {
            message: format!("unknown field `{name}`: a question has `question` and `k`"),
            field: Some(name),
        });
    }
    let question = match object.get("question") {
        Some(serde_json::Value::String(q)) => q.clone(),
        Some(_) => return refuse("question must be a string".into(), Some("question".into())),
        None => return refuse("missing field `question`".into(), Some("question".into())),
    };
    let k = match object.get("k") {
        None => default_k(),
        Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(k) => k,
            None => {
                return refuse(
                    format!("k must be a whole number from 1 to {}", relata_store::MAX_K),
                    Some("k".into()),
                );
            }
        },
    };
    Ok(AskBody { question, k })
}

fn default_k() -> usize {
    relata_store::DEFAULT_K
}

fn error(status: StatusCode, message: &str, field: Option<&str>) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": message, "field": field})),
    )
        .into_response()
}

async fn answers(State(s): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body is over {MAX_BODY_BYTES} bytes"),
                None,
            );
        }
        Err(r) => return error(r.status(), &r.body_text(), None),
    };
    let req = match parse_body(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not a question: {}", e.message),
                e.field.as_deref(),
            );
        }
    };
    if let Err(AskError::BadRequest { field, problem }) = crate::check_request(&req.question, req.k)
    {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("{field} {problem}"),
            Some(field),
        );
    }
    let permit =
        match tokio::time::timeout(s.config.queue_timeout, s.permits.clone().acquire_owned()).await
        {
            Ok(Ok(p)) => p,
            _ => {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many questions in flight; try again",
                    None,
                );
            }
        };
    let result = tokio::time::timeout(
        s.config.request_timeout,
        s.answerer.ask(&req.question, req.k),
    )
    .await;
    drop(permit);
    match result {
        Ok(Ok(answer)) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Ok(Err(e)) => ask_error(&e),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            "the answer did not finish within the request deadline",
            None,
        ),
    }
}

fn ask_error(e: &AskError) -> Response {
    let status = match e {
        AskError::BadRequest { field, .. } => {
            return error(StatusCode::BAD_REQUEST, &e.to_string(), Some(field));
        }
        AskError::Model(_) if e.is_model_timeout() => StatusCode::GATEWAY_TIMEOUT,
        AskError::Model(_) => StatusCode::BAD_GATEWAY,
        AskError::Store(_) if e.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
        AskError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    tracing::warn!(status = status.as_u16(), error = %e, "question not answered");
    error(status, &e.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_body_names_its_field_never_its_value() {
        let field = |body: &str| parse_body(body.as_bytes()).unwrap_err().field;
        assert_eq!(
            field(r#"{"question": "q", "kk": 3}"#).as_deref(),
            Some("kk")
        );
        assert_eq!(field(r#"{"k": 3}"#).as_deref(), Some("question"));
        assert_eq!(field(r#"{"question": 42}"#).as_deref(), Some("question"));
        assert_eq!(
            field(r#"{"question": "q", "k": 1e9}"#).as_deref(),
            Some("k")
        );
        assert_eq!(field(r#"{"question": "q", "k": -1}"#).as_deref(), Some("k"));
        assert_eq!(field("[1]"), None);
        assert_eq!(field("not json"), None);
        let long = format!(r#"{{"question": "q", "{}": 1}}"#, "x".repeat(500));
        assert_eq!(field(&long).map(|f| f.len()), Some(64));
        assert_eq!(
            parse_body(br#"{"question": "Where?"}"#),
            Ok(AskBody {
                question: "Where?".into(),
                k: relata_store::DEFAULT_K
            })
        );
    }
}
