//! The one way a long-running command (a worker, a backfill) learns it should stop.

/// Resolves on SIGTERM or SIGINT (Ctrl-C). Where SIGTERM cannot be listened for (not a
/// Unix, or registration failed), it says so once and resolves on SIGINT alone, so every
/// command still stops gracefully from a terminal; it never waits on nothing.
pub async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(e) => tracing::warn!(
                error = %e,
                "cannot listen for SIGTERM; only SIGINT (Ctrl-C) stops this command gracefully"
            ),
        }
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::warn!(error = %e, "cannot listen for SIGINT either; stop with SIGKILL");
        std::future::pending::<()>().await;
    }
}
