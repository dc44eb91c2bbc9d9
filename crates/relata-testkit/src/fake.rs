//! The fake OpenAI-compatible server.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// Largest request head (request line + headers) the fake reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body the fake reads.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What the fake does with one chat-completions request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Behaviour {
    /// Answer with `status`, extra `headers` and `body` (sent as-is), after `delay_ms`.
    Respond {
        status: u16,
        #[serde(default)]
        headers: Vec<(String, String)>,
        body: String,
        #[serde(default)]
        delay_ms: u64,
    },
    /// Accept the request and never answer (until the client goes away).
    // Empty struct variants, not unit variants: serde ignores unknown fields beside the
    // tag of an internally tagged unit variant, and a script typo must be an error.
    Hang {},
    /// Send the status line and headers announcing all of `body`, then only its first
    /// `after_bytes` bytes, then reset the connection (`SO_LINGER` 0: a real RST).
    ResetMidBody {
        status: u16,
        body: String,
        after_bytes: usize,
    },
    /// Close the connection without writing anything.
    CloseImmediately {},
    /// Answer with `status`, extra `headers` and a body of arbitrary bytes (invalid UTF-8
    /// included), which [`Behaviour::Respond`]'s string body cannot carry.
    RespondBytes {
        status: u16,
        #[serde(default)]
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// A completion with no rows, in the shape of the extract contract the request asks
    /// for: `{"entities":[],"claims":{}}` for a prompt that numbers sentences
    /// (`relata.extract` v2), `{"entities":[],"claims":[]}` otherwise. The default.
    EmptyExtract {},
}

impl Behaviour {
    /// A 200 chat completion whose `choices[0].message.content` is `content`, finished
    /// with `stop`, with usage and a few provider-added envelope fields.
    pub fn completion(content: &str) -> Behaviour {
        Behaviour::completion_with(json!(content), "stop")
    }

    /// A 200 chat completion with the given content value (a string or `null`) and
    /// `finish_reason`.
    pub fn completion_with(content: Value, finish_reason: &str) -> Behaviour {
        Behaviour::json(
            200,
            &json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 1_700_000_000u64,
                "model": "fake-model",
                "system_fingerprint": "relata-testkit",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": null,
                    "finish_reason": finish_reason
                }],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
            }),
        )
    }

    /// A 200 chat completion with `content` and a `usage` object as given (providers have
    /// sent negative counts and 2^64−1).
    pub fn completion_with_usage(content: &str, usage: Value) -> Behaviour {
        Behaviour::json(
            200,
            &json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop"
                }],
                "usage": usage
            }),
        )
    }

    /// A 200 whose content the provider's filter stopped (`finish_reason: content_filter`).
    pub fn content_filter(content: &str) -> Behaviour {
        Behaviour::completion_with(json!(content), "content_filter")
    }

    /// A 200 whose body is a provider error (`{"error": {...}}`), as some gateways send.
    pub fn error_in_200(code: Value, message: &str) -> Behaviour {
        Behaviour::json(
            200,
            &json!({"error": {"message": message, "type": "fake_error", "code": code}}),
        )
    }

    /// A redirect (`status` 301/302/307/308) to `location`, with no body.
    pub fn redirect(status: u16, location: &str) -> Behaviour {
        Behaviour::Respond {
            status,
            headers: vec![("Location".to_owned(), location.to_owned())],
            body: String::new(),
            delay_ms: 0,
        }
    }

    /// A 200 HTML page, as a proxy's login or error page.
    pub fn html_page() -> Behaviour {
        Behaviour::Respond {
            status: 200,
            headers: vec![(
                "Content-Type".to_owned(),
                "text/html; charset=utf-8".to_owned(),
            )],
            body: "<!DOCTYPE html><html><body><h1>Sign in to continue</h1></body></html>".into(),
            delay_ms: 0,
        }
    }

    /// A 200 server-sent event stream of `content` (as a server that ignores
    /// `"stream": false` sends).
    pub fn sse_stream(content: &str) -> Behaviour {
        let chunk = json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]
        });
        Behaviour::Respond {
            status: 200,
            headers: vec![("Content-Type".to_owned(), "text/event-stream".to_owned())],
            body: format!("data: {chunk}\n\ndata: [DONE]\n\n"),
            delay_ms: 0,
        }
    }

    /// A 200 whose `choices[0].message.content` is a JSON value that is not a string.
    pub fn content_value(content: Value) -> Behaviour {
        Behaviour::completion_with(content, "stop")
    }

    /// A 200 chat completion whose content holds an invalid UTF-8 byte (0xFF) between
    /// `before` and `after`.
    pub fn invalid_utf8_content(before: &str, after: &str) -> Behaviour {
        let marker = "\u{1}INVALID\u{1}";
        let text = match Behaviour::completion(&format!("{before}{marker}{after}")) {
            Behaviour::Respond { body, .. } => body,
            _ => unreachable!("completion is a Respond"),
        };
        let escaped = serde_json::to_string(marker).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        let (head, tail) = text.split_once(escaped).unwrap_or((&text, ""));
        let mut body = head.as_bytes().to_vec();
        body.push(0xFF);
        body.extend_from_slice(tail.as_bytes());
        Behaviour::RespondBytes {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    /// A 200 envelope with two `choices` keys: which one is the answer is ambiguous.
    pub fn duplicate_choices(first: &str, second: &str) -> Behaviour {
        let choice = |c: &str| json!([{"index": 0, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}]);
        Behaviour::Respond {
            status: 200,
            headers: Vec::new(),
            body: format!(
                r#"{{"object":"chat.completion","choices":{},"choices":{}}}"#,
                choice(first),
                choice(second)
            ),
            delay_ms: 0,
        }
    }

    /// A 200 chat completion that carries a `refusal` instead of content.
    pub fn refusal(text: &str) -> Behaviour {
        Behaviour::json(
            200,
            &json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": null, "refusal": text},
                    "finish_reason": "stop"
                }]
            }),
        )
    }

    /// Any status with a JSON body.
    pub fn json(status: u16, body: &Value) -> Behaviour {
        Behaviour::Respond {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay_ms: 0,
        }
    }

    /// An error status with an OpenAI-style error body.
    pub fn error(status: u16, message: &str) -> Behaviour {
        Behaviour::json(
            status,
            &json!({"error": {"message": message, "type": "fake_error", "code": status}}),
        )
    }

    /// Never answer.
    pub fn hang() -> Behaviour {
        Behaviour::Hang {}
    }

    /// A completion of `content` cut off half-way through the body by a reset.
    pub fn reset_mid_body(content: &str) -> Behaviour {
        match Behaviour::completion(content) {
            Behaviour::Respond { status, body, .. } => Behaviour::ResetMidBody {
                status,
                after_bytes: body.len() / 2,
                body,
            },
            other => other,
        }
    }

    /// Close the connection without answering.
    pub fn close_immediately() -> Behaviour {
        Behaviour::CloseImmediately {}
    }

    /// Add a `Retry-After: <seconds>` header (only to [`Behaviour::Respond`]).
    pub fn retry_after(self, seconds: u64) -> Behaviour {
        self.header("Retry-After", &seconds.to_string())
    }

    /// Add a header (only to [`Behaviour::Respond`]).
    pub fn header(mut self, name: &str, value: &str) -> Behaviour {
        if let Behaviour::Respond { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// Wait before answering (only for [`Behaviour::Respond`]).
    pub fn delayed(mut self, delay: Duration) -> Behaviour {
        if let Behaviour::Respond { delay_ms, .. } = &mut self {
            *delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        }
        self
    }
}

/// How the fake is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FakeOptions {
    /// Model ids listed by `GET …/models`.
    pub models: Vec<String>,
    /// Emulate llama-cpp-python: answer HTTP 500 to any request whose
    /// `response_format.type` is `json_schema` (without consuming the script).
    pub reject_json_schema_dialect: bool,
    /// Once the scripted queue is empty: the first route whose needle occurs in the
    /// request body answers (routes are not consumed). Lets a pipeline test answer each
    /// document with a response grounded in that document, whatever order jobs run in.
    pub routes: Vec<Route>,
    /// What to do once the scripted queue is empty and no route matches.
    pub default: Behaviour,
    /// What `GET …/models` does instead of listing `models` (a server without a model
    /// list, a slow one, a redirect). Not taken from the scripted queue.
    pub models_behaviour: Option<Behaviour>,
}

/// A standing answer for requests whose body contains `needle`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub needle: String,
    pub behaviour: Behaviour,
}

impl Default for FakeOptions {
    fn default() -> Self {
        FakeOptions {
            models: vec!["fake-model".to_owned()],
            reject_json_schema_dialect: false,
            routes: Vec::new(),
            default: Behaviour::EmptyExtract {},
            models_behaviour: None,
        }
    }
}

/// A script for the `relata-fake-model` binary: options plus a queue of behaviours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(flatten)]
    pub options: FakeOptions,
    #[serde(default)]
    pub queue: Vec<Behaviour>,
}

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased, values as sent (including `authorization`: redaction
    /// tests need to see that the key was sent — and only there).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub received_at: Instant,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn is_chat(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }
}

#[derive(Debug)]
struct Shared {
    options: FakeOptions,
    queue: Mutex<VecDeque<Behaviour>>,
    log: Mutex<Vec<RecordedRequest>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running fake server on `127.0.0.1`. Stops when dropped.
#[derive(Debug)]
pub struct FakeModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for FakeModelServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeModelServer {
    /// Start on an ephemeral port with default options and this scripted queue.
    pub async fn start(queue: Vec<Behaviour>) -> std::io::Result<FakeModelServer> {
        FakeModelServer::start_with(FakeOptions::default(), queue, 0).await
    }

    /// Start with options and a queue on `127.0.0.1:port` (0: any free port).
    pub async fn start_with(
        options: FakeOptions,
        queue: Vec<Behaviour>,
        port: u16,
    ) -> std::io::Result<FakeModelServer> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            options,
            queue: Mutex::new(queue.into()),
            log: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(FakeModelServer {
            addr,
            shared,
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to configure a client with, e.g. `http://127.0.0.1:41234/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Append behaviours to the queue.
    pub fn push(&self, behaviours: impl IntoIterator<Item = Behaviour>) {
        lock(&self.shared.queue).extend(behaviours);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Chat-completion requests received so far.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_chat())
            .collect()
    }

    /// The highest number of chat requests the server held open at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Connection tasks live in this set: aborting the accept task drops it, which aborts
    // every connection (hung ones included).
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve(stream, Arc::clone(&shared)));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

fn parse_head(bytes: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    Some(Head {
        method,
        path,
        headers,
    })
}

async fn read_request(stream: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = parse_head(&buf[..head_end])?;
    let len: usize = head
        .headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if len > MAX_BODY_BYTES {
        return None;
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(len);
    Some(RecordedRequest {
        method: head.method,
        path: head.path,
        headers: head.headers,
        body,
        received_at: Instant::now(),
    })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn response_head(status: u16, headers: &[(String, String)], body_len: usize) -> String {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {body_len}\r\nConnection: close\r\n",
        reason_phrase(status)
    );
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (n, v) in headers {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: impl AsRef<[u8]>,
) {
    let body = body.as_ref();
    let head = response_head(status, headers, body.len());
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

/// Decrements the in-flight count however the request ends.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    lock(&shared.log).push(request.clone());

    if request.method == "GET" && request.path.ends_with("/models") {
        if let Some(behaviour) = shared.options.models_behaviour.clone() {
            act(stream, behaviour, InFlight::enter(&shared)).await;
            return;
        }
        let data: Vec<Value> = shared
            .options
            .models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "owned_by": "relata-testkit"}))
            .collect();
        let body = json!({"object": "list", "data": data}).to_string();
        write_response(&mut stream, 200, &[], &body).await;
        return;
    }
    if !request.is_chat() {
        let body = json!({"error": {"message": "no such route"}}).to_string();
        write_response(&mut stream, 404, &[], &body).await;
        return;
    }

    let in_flight = InFlight::enter(&shared);
    if shared.options.reject_json_schema_dialect {
        let wants_json_schema = request
            .json()
            .and_then(|v| {
                v.pointer("/response_format/type")
                    .and_then(Value::as_str)
                    .map(|t| t == "json_schema")
            })
            .unwrap_or(false);
        if wants_json_schema {
            drop(in_flight);
            write_response(&mut stream, 500, &[], "Internal Server Error").await;
            return;
        }
    }
    let scripted = lock(&shared.queue).pop_front();
    let behaviour = scripted.unwrap_or_else(|| {
        let body = String::from_utf8_lossy(&request.body);
        shared
            .options
            .routes
            .iter()
            .find(|r| body.contains(&r.needle))
            .map_or_else(|| shared.options.default.clone(), |r| r.behaviour.clone())
    });
    let behaviour = match behaviour {
        Behaviour::EmptyExtract {} => {
            // extract-p4, extract-p5 and extract-p7 show the chunk as numbered sentences.
            let v2 = String::from_utf8_lossy(&request.body).contains("numbered sentences");
            Behaviour::completion(if v2 {
                r#"{"entities":[],"claims":{}}"#
            } else {
                r#"{"entities":[],"claims":[]}"#
            })
        }
        other => other,
    };
    act(stream, behaviour, in_flight).await;
}

/// Carry out one behaviour. A request stops counting as in flight the moment its answer
/// starts (before the first byte is written): a client can only start its next request
/// after receiving this answer, so counting until the handler returns would see a
/// phantom overlap whenever the client is quicker than this task's clean-up.
async fn act(mut stream: TcpStream, behaviour: Behaviour, in_flight: InFlight<'_>) {
    match behaviour {
        Behaviour::Respond {
            status,
            headers,
            body,
            delay_ms,
        } => {
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            drop(in_flight);
            write_response(&mut stream, status, &headers, &body).await;
        }
        // Rendered for its request before it acts; without one, the v1 shape.
        Behaviour::EmptyExtract {} => {
            Box::pin(act(
                stream,
                Behaviour::completion(r#"{"entities":[],"claims":[]}"#),
                in_flight,
            ))
            .await;
        }
        Behaviour::Hang {} => {
            // Hold the connection until the client gives up.
            let mut sink = [0u8; 1024];
            while let Ok(n) = stream.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        }
        Behaviour::ResetMidBody {
            status,
            body,
            after_bytes,
        } => {
            drop(in_flight);
            let head = response_head(status, &[], body.len());
            let cut = after_bytes.min(body.len());
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body.as_bytes()[..cut]).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = stream.set_zero_linger();
            drop(stream);
        }
        Behaviour::CloseImmediately {} => {
            drop(in_flight);
            let _ = stream.set_zero_linger();
            drop(stream);
        }
        Behaviour::RespondBytes {
            status,
            headers,
            body,
        } => {
            drop(in_flight);
            write_response(&mut stream, status, &headers, &body).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_round_trip_through_json() {
        let script = Script {
            options: FakeOptions::default(),
            queue: vec![
                Behaviour::error(429, "slow down").retry_after(1),
                Behaviour::hang(),
                Behaviour::reset_mid_body("{}"),
                Behaviour::close_immediately(),
                Behaviour::invalid_utf8_content("{", "}"),
                Behaviour::redirect(307, "http://127.0.0.1:9/v1/chat/completions"),
            ],
        };
        let text = serde_json::to_string(&script).unwrap();
        let back: Script = serde_json::from_str(&text).unwrap();
        assert_eq!(back, script);
        assert!(serde_json::from_str::<Script>(r#"{"queue":[{"kind":"hang","x":1}]}"#).is_err());
    }

    #[test]
    fn invalid_utf8_sits_inside_the_content_string() {
        let Behaviour::RespondBytes { body, .. } = Behaviour::invalid_utf8_content("{\"a\":", "}")
        else {
            panic!("bytes");
        };
        assert!(std::str::from_utf8(&body).is_err());
        let lossy = String::from_utf8_lossy(&body);
        let v: Value = serde_json::from_str(&lossy).unwrap();
        assert_eq!(
            v.pointer("/choices/0/message/content").unwrap(),
            "{\"a\":\u{FFFD}}"
        );
    }
}
