//! `/metrics`, `/healthz` and `/readyz` (the shared handlers of `relata-ops`).
//!
//! `/healthz` answers while the process runs. `/readyz` answers 200 only while the worker
//! can do useful work: it has a broker consumer and a store connection, and the model
//! endpoint has not answered with an authentication, model-not-found or redirect error
//! (such a worker pauses consumption; readiness says so, and clears when it resumes).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use prometheus_client::registry::Registry;

/// Why the worker is not ready. The first cause set wins until it is cleared.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    inner: Arc<Mutex<ReadyState>>,
}

#[derive(Debug, Default)]
struct ReadyState {
    consuming: bool,
    provider_blocked: Option<String>,
    draining: bool,
}

impl Readiness {
    pub fn set_consuming(&self, on: bool) {
        self.lock().consuming = on;
    }

    /// The model endpoint refuses the deployment (401/403/404/redirect); `None` once it
    /// answers again.
    pub fn set_provider_blocked(&self, why: Option<String>) {
        self.lock().provider_blocked = why;
    }

    pub fn set_draining(&self) {
        self.lock().draining = true;
    }

    /// `Ok` when ready, else the reason.
    pub fn check(&self) -> Result<(), String> {
        let s = self.lock();
        if s.draining {
            return Err("shutting down".into());
        }
        if let Some(why) = &s.provider_blocked {
            return Err(format!("model provider refused requests: {why}"));
        }
        if !s.consuming {
            return Err("not consuming from the broker".into());
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReadyState> {
        // A poisoned lock only means a panic elsewhere; the state itself stays coherent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl relata_ops::ReadyCheck for Readiness {
    async fn check(&self) -> Result<(), String> {
        Readiness::check(self)
    }
}

/// The worker's listener: the shared operational endpoints ([`relata_ops::router`]) with
/// this worker's [`Readiness`].
pub fn router(registry: Arc<Registry>, readiness: Readiness) -> Router {
    relata_ops::router(registry, readiness)
}

/// Bind and serve until the returned task is aborted.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    readiness: Readiness,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = router(registry, readiness);
    let handle = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics server stopped");
        }
    });
    Ok((bound, handle))
}
