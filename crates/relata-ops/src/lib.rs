//! The operational endpoints every relata server has, written once: the worker's
//! metrics listener and `relata serve` both merge [`router`] into theirs, so the two
//! answer `/metrics`, `/healthz` and `/readyz` the same way.
//!
//! * `GET /metrics`: the registry in the OpenMetrics text format (500 if it cannot be
//!   encoded);
//! * `GET /healthz`: 200 `ok` while the process runs;
//! * `GET /readyz`: 200 `ready`, or 503 `not ready: <why>` — what "ready" means is the
//!   server's own [`ReadyCheck`].
//!
//! It knows nothing of relata's stores, broker or model: a server says what readiness
//! means, this crate only answers for it. It also holds the one metric every server with a
//! gate exports the same way, `relata_validation_check_enabled` ([`CheckConfigured`]).

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;

mod checks;

pub use checks::{CheckConfigured, CheckEnabledMetric};

/// The content type of `/metrics`.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether a server can do useful work now; `Err` holds the reason, shown after
/// `not ready: ` in the body of a 503.
pub trait ReadyCheck: Clone + Send + Sync + 'static {
    fn check(&self) -> impl Future<Output = Result<(), String>> + Send;
}

#[derive(Clone)]
struct OpsState<R> {
    registry: Arc<Registry>,
    ready: R,
}

/// `/metrics`, `/healthz` and `/readyz`, to merge into a server's router.
pub fn router<R: ReadyCheck>(registry: Arc<Registry>, ready: R) -> Router {
    Router::new()
        .route("/metrics", get(metrics::<R>))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz::<R>))
        .with_state(OpsState { registry, ready })
}

/// The registry in the OpenMetrics text format.
pub fn metrics_response(registry: &Registry) -> Response {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, registry) {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "metrics encoding failed\n",
        )
            .into_response(),
    }
}

async fn metrics<R: ReadyCheck>(State(s): State<OpsState<R>>) -> Response {
    metrics_response(&s.registry)
}

async fn readyz<R: ReadyCheck>(State(s): State<OpsState<R>>) -> Response {
    match s.ready.check().await {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use prometheus_client::metrics::counter::Counter;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tower::ServiceExt;

    #[derive(Clone, Default)]
    struct Switch(Arc<AtomicBool>);

    impl ReadyCheck for Switch {
        async fn check(&self) -> Result<(), String> {
            if self.0.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err("switched off".into())
            }
        }
    }

    async fn get(app: &Router, path: &str) -> (StatusCode, Option<String>, String) {
        let r = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = r.status();
        let ct = r
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_three_endpoints_answer_as_documented() {
        let mut registry = Registry::default();
        let c = Counter::<u64>::default();
        registry.register("relata_things", "Things", c.clone());
        c.inc();
        let switch = Switch::default();
        let app = router(Arc::new(registry), switch.clone());

        let (status, ct, body) = get(&app, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct.as_deref(), Some(OPENMETRICS_CONTENT_TYPE));
        assert!(body.contains("relata_things_total 1"), "{body}");
        assert!(body.ends_with("# EOF\n"), "{body}");

        assert_eq!(get(&app, "/healthz").await.0, StatusCode::OK);

        let (status, _, body) = get(&app, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "not ready: switched off\n");
        switch.0.store(true, Ordering::Relaxed);
        let (status, _, body) = get(&app, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ready\n"));
    }
}
