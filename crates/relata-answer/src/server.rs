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
//! requests in flight finish.

use std::net::SocketAddr;
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
use serde::Deserialize;
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
            post(answers).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
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

/// Serve `router` on `listener` until `shutdown` resolves (the binary passes its one
/// SIGTERM/SIGINT signal); requests in flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down: no new requests; finishing those in flight");
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AskBody {
    question: String,
    #[serde(default = "default_k")]
    k: usize,
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

/// The field a serde error names (`unknown field `x``, `missing field `question``).
fn named_field(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
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
    let req: AskBody = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let message = e.to_string();
            let field = named_field(&message).map(str::to_owned);
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not a question: {message}"),
                field.as_deref(),
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
    fn serde_errors_name_their_field() {
        let e = serde_json::from_str::<AskBody>(r#"{"question": "q", "kk": 3}"#).unwrap_err();
        assert_eq!(named_field(&e.to_string()), Some("kk"));
        let e = serde_json::from_str::<AskBody>(r#"{"k": 3}"#).unwrap_err();
        assert_eq!(named_field(&e.to_string()), Some("question"));
    }
}
