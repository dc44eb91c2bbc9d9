//! Serving HTTP/1.1 within bounds a careless or hostile client cannot stretch.
//!
//! `axum::serve` sets no timeout and no connection cap: idle, slow-header and slow-body
//! connections stay open for ever, and enough of them exhaust the process's file
//! descriptors, after which nothing answers (not even `/healthz`). This accept loop:
//!
//! * gives every request's head [`Limits::header_timeout`] to arrive, measured from the
//!   moment the connection waits for it, so a connection kept alive between requests is
//!   closed after the same time idle (hyper's header-read timer);
//! * gives every request's body [`Limits::body_timeout`] from its head, after which
//!   reading it fails (the handler answers 400 and the connection closes);
//! * holds at most [`Limits::max_connections`] connections. At the cap a new connection
//!   takes the place of the oldest one with no request in flight (one waiting for its
//!   head or idle between requests), so sockets that never send a request cannot starve
//!   those that do; when every held connection has a request in flight, the new one is
//!   refused (closed at once) rather than queued.
//!
//! A declared `Content-Length` over a route's limit is refused with 413 before any of the
//! body is read: [`refuse_declared_over`].

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{Notify, watch};
use tower::ServiceExt;

/// How long and how many: the server's bounds against held connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections held at once.
    pub max_connections: usize,
    /// Time for a request's head to arrive; also how long a kept-alive connection may sit
    /// idle between requests.
    pub header_timeout: Duration,
    /// Time for a request's body to arrive, from its head.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // Far under the usual descriptor limit (the process also holds its database
            // pool, the model client and its logs).
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
        }
    }
}

/// One held connection, as the accept loop sees it.
#[derive(Debug, Default)]
struct Held {
    /// Requests in flight on it (0: waiting for a head, or idle between requests).
    busy: AtomicUsize,
    /// Told to close when a newer connection takes its place.
    evict: Notify,
}

/// The connections held, oldest first (ids grow with acceptance).
#[derive(Debug, Default)]
struct Table {
    next: u64,
    held: BTreeMap<u64, Arc<Held>>,
}

impl Table {
    /// Admit a new connection under `cap`: its id, after evicting the oldest one with no
    /// request in flight when the table is full; `None` when every held one is busy.
    fn admit(&mut self, cap: usize) -> Option<(u64, Arc<Held>)> {
        if self.held.len() >= cap.max(1) {
            let idle = self
                .held
                .iter()
                .find(|(_, h)| h.busy.load(Ordering::SeqCst) == 0)
                .map(|(id, _)| *id)?;
            if let Some(h) = self.held.remove(&idle) {
                // A stored permit: the connection closes even if it is not waiting yet.
                h.evict.notify_one();
            }
        }
        let id = self.next;
        self.next += 1;
        let held = Arc::new(Held::default());
        self.held.insert(id, held.clone());
        Some((id, held))
    }
}

fn lock(t: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts a request in flight on its connection until dropped.
struct InFlight(Arc<Held>);

impl InFlight {
    fn enter(h: &Arc<Held>) -> InFlight {
        h.busy.fetch_add(1, Ordering::SeqCst);
        InFlight(h.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request body that fails once its deadline passes: a client sending a few bytes a
/// second cannot hold a handler (and its connection) for longer.
struct Deadline {
    inner: Body,
    sleep: Pin<Box<tokio::time::Sleep>>,
    after: Duration,
}

#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimedOut(Duration);

impl hyper::body::Body for Deadline {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyTimedOut(self.after).into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Refuse, before reading any of it, a body whose declared length is over `max` bytes
/// (a route layer: `route_layer(middleware::from_fn(move |r, n| refuse_declared_over(max, r, n)))`).
pub async fn refuse_declared_over(max: usize, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        let body = serde_json::json!({
            "error": format!("the request body is over {max} bytes"),
            "field": null,
        });
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            axum::Json(body),
        )
            .into_response();
    }
    next.run(req).await
}

/// Serve `router` on `listener` within `limits` until `shutdown` resolves; requests in
/// flight then finish. The client's address is available to handlers as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table = Arc::new(Mutex::new(Table::default()));
    // Dropped to ask every connection to finish; `closed` resolves when all have.
    let (stop_tx, stop_rx) = watch::channel(());
    let (done_tx, done_rx) = watch::channel(());
    let mut refused = Refusals::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors (EMFILE/ENFILE) or a connection reset before it
                    // was taken: wait a moment instead of spinning on the error.
                    tracing::warn!(error = %e, "http: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let admitted = lock(&table).admit(limits.max_connections);
        let Some((id, held)) = admitted else {
            refused.note(limits.max_connections);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let table = table.clone();
        let mut stop_rx = stop_rx.clone();
        let done_rx = done_rx.clone();
        tokio::spawn(async move {
            let on_conn = held.clone();
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let guard = InFlight::enter(&on_conn);
                    let (mut parts, body) = req.into_parts();
                    parts.extensions.insert(ConnectInfo(remote));
                    let body = Body::new(Deadline {
                        inner: Body::new(body),
                        sleep: Box::pin(tokio::time::sleep(limits.body_timeout)),
                        after: limits.body_timeout,
                    });
                    let router = router.clone();
                    async move {
                        let res = router.oneshot(Request::from_parts(parts, body)).await;
                        drop(guard);
                        res
                    }
                });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .keep_alive(true);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let mut stopping = false;
            loop {
                tokio::select! {
                    _ = conn.as_mut() => break,
                    () = held.evict.notified() => break,
                    changed = stop_rx.changed(), if !stopping => {
                        let _ = changed;
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            lock(&table).held.remove(&id);
            drop(done_rx);
        });
    }
    tracing::info!("shutting down: no new requests; finishing those in flight");
    drop(listener);
    drop(stop_rx);
    drop(stop_tx);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

/// Refused connections, logged at most once a minute with their count (a flood of
/// them must not become a flood of log lines).
#[derive(Debug, Default)]
struct Refusals {
    since_logged: u64,
    logged_at: Option<Instant>,
}

impl Refusals {
    fn note(&mut self, cap: usize) {
        self.since_logged += 1;
        if self
            .logged_at
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
        {
            tracing::warn!(
                refused = self.since_logged,
                max_connections = cap,
                "http: connections refused: every held connection has a request in flight"
            );
            self.since_logged = 0;
            self.logged_at = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    const QUICK: Limits = Limits {
        max_connections: 20,
        header_timeout: Duration::from_millis(500),
        body_timeout: Duration::from_millis(500),
    };

    /// A server of `/healthz` and `POST /echo` (16 bytes at most, declared) within
    /// `limits`; dropping the sender stops it.
    async fn start(limits: Limits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let router = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route(
                "/echo",
                post(
                    |body: Result<Bytes, axum::extract::rejection::BytesRejection>| async move {
                        match body {
                            Ok(b) => (StatusCode::OK, b).into_response(),
                            Err(r) => (r.status(), r.body_text()).into_response(),
                        }
                    },
                )
                .route_layer(axum::middleware::from_fn(|r, n| {
                    refuse_declared_over(16, r, n)
                })),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, router, limits, async move {
            let _ = rx.await;
        }));
        (addr, tx)
    }

    /// What the server sends before it closes, or `None` if it neither answers nor
    /// closes within `within`.
    async fn read_to_close(s: &mut TcpStream, within: Duration) -> Option<String> {
        let mut out = Vec::new();
        let read = tokio::time::timeout(within, async {
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        read.ok()
            .map(|()| String::from_utf8_lossy(&out).into_owned())
    }

    async fn healthz(addr: SocketAddr) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        read_to_close(&mut s, Duration::from_secs(5))
            .await
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn idle_and_slow_header_connections_are_closed_at_the_header_timeout() {
        let (addr, _stop) = start(QUICK).await;
        let mut idle = TcpStream::connect(addr).await.unwrap();
        let mut slow = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let trickle = tokio::spawn(async move {
            // One header byte every 100 ms: never a whole head.
            for b in b"GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
                if slow.write_all(&[*b]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            read_to_close(&mut slow, Duration::from_secs(5)).await
        });
        assert!(
            read_to_close(&mut idle, Duration::from_secs(5))
                .await
                .is_some(),
            "an idle connection was still open after 5 s"
        );
        assert!(
            trickle.await.unwrap().is_some(),
            "a slow head was still open"
        );
        // Closed by the timeout (0.5 s), not by the test's own bound.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        // A kept-alive connection is closed after the same time idle.
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let answer = read_to_close(&mut kept, Duration::from_secs(5)).await;
        assert!(
            answer
                .as_deref()
                .is_some_and(|a| a.starts_with("HTTP/1.1 200")),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn sockets_held_past_the_cap_cannot_starve_a_request() {
        let limits = Limits {
            header_timeout: Duration::from_secs(60),
            ..QUICK
        };
        let (addr, _stop) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..100 {
            held.push(TcpStream::connect(addr).await.unwrap());
        }
        // Every one of them idle: the server still answers, at once.
        let answer = healthz(addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
        // And holds no more than its cap of them: the rest were closed.
        let mut open = 0;
        for s in &mut held {
            if read_to_close(s, Duration::from_millis(20)).await.is_none() {
                open += 1;
            }
        }
        assert!(
            open <= limits.max_connections,
            "{open} held connections still open"
        );
        assert!(
            open > 0,
            "the cap closed every connection, not only the oldest"
        );
    }

    #[tokio::test]
    async fn a_slow_body_fails_at_the_body_timeout() {
        let (addr, _stop) = start(QUICK).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
            .await
            .unwrap();
        let started = Instant::now();
        let answer = read_to_close(&mut s, Duration::from_secs(5)).await;
        assert!(
            answer
                .as_deref()
                .is_some_and(|a| a.starts_with("HTTP/1.1 400")),
            "{answer:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_before_any_body() {
        let (addr, _stop) = start(QUICK).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
            .await
            .unwrap();
        let answer = tokio::time::timeout(Duration::from_millis(400), async {
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf).await.unwrap_or(0);
            String::from_utf8_lossy(&buf[..n]).into_owned()
        })
        .await
        .unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
        // Under the limit it is served.
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello")
            .await
            .unwrap();
        let answer = read_to_close(&mut s, Duration::from_secs(5))
            .await
            .unwrap_or_default();
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("hello"),
            "{answer:?}"
        );
    }

    #[test]
    fn a_full_table_evicts_its_oldest_idle_connection_or_refuses() {
        let mut t = Table::default();
        let (a, ha) = t.admit(2).unwrap();
        let (_b, hb) = t.admit(2).unwrap();
        hb.busy.fetch_add(1, Ordering::SeqCst);
        // Full: the oldest idle one (a) goes.
        let (_c, hc) = t.admit(2).unwrap();
        assert!(!t.held.contains_key(&a));
        assert_eq!(t.held.len(), 2);
        drop(ha);
        // Both busy now: refused, nothing evicted.
        hc.busy.fetch_add(1, Ordering::SeqCst);
        assert!(t.admit(2).is_none());
        assert_eq!(t.held.len(), 2);
    }
}
