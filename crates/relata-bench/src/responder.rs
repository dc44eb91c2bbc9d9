//! An instant fake model over a raw socket, answering every extract request with a
//! response grounded in that request's own chunk (so real text works, not only fixtures),
//! and optionally injecting transport faults or invalid output, or forwarding to a real
//! server while recording the bodies (for the direct load generator).
//!
//! Like relata-testkit's fake it answers with `Connection: close`; unlike it, it computes
//! each answer from the request, which a route table of fixed answers cannot do for a
//! 10,000-document corpus.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How the fake answers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// A valid response grounded in the chunk: up to `rows / 2` entities and as many
    /// claims, each quoting one sentence verbatim. `delay` before answering.
    Grounded { rows: usize, delay: Duration },
    /// Like `Grounded`, but a fraction `rate` of requests get a transport fault of a
    /// mixed kind (500, 502, 503, 429, reset mid-body, closed without answer, a hang
    /// longer than the client's timeout of `hang`).
    Faults { rate: f64, hang: Duration },
    /// Every response is invalid, cycling through kinds (not JSON, trailing content,
    /// unknown field, ungrounded quote, truncated at the token limit, empty).
    Invalid,
    /// Forward to `upstream` (a base URL ending in `/v1`), recording each body.
    Proxy { upstream: String },
}

pub const FAULT_KINDS: [&str; 7] = [
    "http_500",
    "http_502",
    "http_503",
    "http_429",
    "reset_mid_body",
    "closed_no_answer",
    "hang",
];

#[derive(Debug, Default)]
pub struct Counters {
    pub chat: AtomicU64,
    pub faults: [AtomicU64; 7],
}

/// One forwarded request (proxy mode).
#[derive(Debug, Clone)]
pub struct Recorded {
    pub body: Vec<u8>,
    pub received: Instant,
    pub answered: Instant,
}

#[derive(Debug)]
pub struct Responder {
    pub addr: std::net::SocketAddr,
    pub counters: Arc<Counters>,
    pub recorded: Arc<Mutex<Vec<Recorded>>>,
    accept: JoinHandle<()>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Responder {
    pub async fn start(mode: Mode) -> std::io::Result<Responder> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .map_err(std::io::Error::other)?;
        let shared = Arc::new(Shared {
            mode,
            counters: counters.clone(),
            recorded: recorded.clone(),
            client,
        });
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        Ok(Responder {
            addr,
            counters,
            recorded,
            accept,
        })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn chat_requests(&self) -> u64 {
        self.counters.chat.load(Ordering::Relaxed)
    }

    pub fn faults(&self) -> Vec<(&'static str, u64)> {
        FAULT_KINDS
            .iter()
            .zip(self.counters.faults.iter())
            .map(|(k, c)| (*k, c.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[derive(Debug)]
struct Shared {
    mode: Mode,
    counters: Arc<Counters>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    client: reqwest::Client,
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(8192);
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 1 << 20 {
            return Err(std::io::Error::other("header too large"));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    Ok((request_line, body))
}

fn response(status: u16, extra: &str, body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn completion(content: &str, finish_reason: &str) -> Vec<u8> {
    let v = json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000u64,
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 100, "total_tokens": 200}
    });
    v.to_string().into_bytes()
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (line, body) = read_request(&mut stream).await?;
    if line.starts_with("GET") {
        let models = json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]});
        stream
            .write_all(&response(200, "", models.to_string().as_bytes()))
            .await?;
        return stream.shutdown().await;
    }
    let n = shared.counters.chat.fetch_add(1, Ordering::Relaxed);
    let user = user_message(&body);
    match &shared.mode {
        Mode::Grounded { rows, delay } => {
            if !delay.is_zero() {
                tokio::time::sleep(*delay).await;
            }
            let content = grounded(&user, *rows);
            stream
                .write_all(&response(200, "", &completion(&content, "stop")))
                .await?;
        }
        Mode::Faults { rate, hang } => {
            let (fault, kind) = {
                let mut rng = rand::rng();
                (
                    rng.random_bool(*rate),
                    rng.random_range(0..FAULT_KINDS.len()),
                )
            };
            if fault {
                shared.counters.faults[kind].fetch_add(1, Ordering::Relaxed);
                let err = br#"{"error":{"message":"injected fault","type":"server_error"}}"#;
                match FAULT_KINDS[kind] {
                    "http_500" => stream.write_all(&response(500, "", err)).await?,
                    "http_502" => stream.write_all(&response(502, "", err)).await?,
                    "http_503" => stream.write_all(&response(503, "", err)).await?,
                    "http_429" => {
                        stream
                            .write_all(&response(429, "Retry-After: 0\r\n", err))
                            .await?
                    }
                    "reset_mid_body" => {
                        let full = response(200, "", &completion(&grounded(&user, 10), "stop"));
                        stream.write_all(&full[..full.len() / 2]).await?;
                        reset(stream)?;
                        return Ok(());
                    }
                    "closed_no_answer" => {
                        reset(stream)?;
                        return Ok(());
                    }
                    _ => {
                        tokio::time::sleep(*hang).await;
                        return Ok(());
                    }
                }
                return stream.shutdown().await;
            }
            let content = grounded(&user, 10);
            stream
                .write_all(&response(200, "", &completion(&content, "stop")))
                .await?;
        }
        Mode::Invalid => {
            let (content, finish) = invalid(&user, n);
            stream
                .write_all(&response(200, "", &completion(&content, finish)))
                .await?;
        }
        Mode::Proxy { upstream } => {
            let received = Instant::now();
            let url = format!("{}/chat/completions", upstream.trim_end_matches('/'));
            let answer = shared
                .client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await;
            let (status, bytes) = match answer {
                Ok(r) => {
                    let s = r.status().as_u16();
                    (s, r.bytes().await.map(|b| b.to_vec()).unwrap_or_default())
                }
                Err(_) => (502, b"{}".to_vec()),
            };
            if let Ok(mut log) = shared.recorded.lock() {
                log.push(Recorded {
                    body,
                    received,
                    answered: Instant::now(),
                });
            }
            stream.write_all(&response(status, "", &bytes)).await?;
        }
    }
    stream.shutdown().await
}

/// Close with a TCP reset (SO_LINGER 0). A zero linger never blocks on drop, which is
/// what the deprecation of `set_linger` warns about.
#[allow(deprecated)]
fn reset(stream: TcpStream) -> std::io::Result<()> {
    stream.set_linger(Some(Duration::ZERO))?;
    drop(stream);
    Ok(())
}

/// The user message of a chat request ("" when there is none).
pub fn user_message(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    v["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The chunk text between `BEGIN <d>\n` and `\nEND <d>`.
fn source_of(user: &str) -> Option<&str> {
    let start = user.find('\n')? + 1;
    let end = user.rfind("\nEND ")?;
    user.get(start..end)
}

/// Sentences of the source fit to quote: at least four words, cut to at most 200 bytes
/// on a character boundary (a prefix of the text is still verbatim).
fn sentences(source: &str) -> Vec<&str> {
    source
        .split_inclusive(['.', '\n'])
        .filter_map(|s| {
            let s = s.trim();
            let s = relata_core::text::cut(s, 200).trim_end();
            (s.split_whitespace().count() >= 4 && s.len() >= 12).then_some(s)
        })
        .collect()
}

/// An entity name from the first two words of a sentence, trimmed of punctuation.
fn name_of(sentence: &str) -> Option<String> {
    let words: Vec<String> = sentence
        .split_whitespace()
        .take(2)
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned())
        .filter(|w| !w.is_empty())
        .collect();
    let name = words.join(" ");
    (name.chars().filter(|c| c.is_alphabetic()).count() >= 2).then_some(name)
}

/// The answer to every question of the answer bench: valid whatever passage comes first
/// (it cites the first, which every request with a source has, states no figure, and says
/// what every sentence of the bench's documents says, as `citation_supported` requires).
pub const ANSWER: &str = r#"{"answer": "Benton described the long summer season [S1].", "citations": ["S1"], "found": true}"#;

/// A valid answer to an extract, classify or answer request.
pub fn grounded(user: &str, rows: usize) -> String {
    // A question follows the delimited sources; a chunk's own text cannot put it there.
    if user
        .rfind("\nQuestion: ")
        .is_some_and(|q| user.rfind("\nEND ").is_some_and(|end| q > end))
    {
        return ANSWER.to_owned();
    }
    if let Some(pairs) = user.split("Requested pairs (a, b):\n").nth(1) {
        let relations: Vec<Value> = pairs
            .lines()
            .filter_map(|l| l.split_once(", "))
            .map(|(a, b)| json!({"a": a.trim(), "b": b.trim(), "relation": "unrelated"}))
            .collect();
        return json!({ "relations": relations }).to_string();
    }
    let Some(source) = source_of(user) else {
        return r#"{"entities":[],"claims":[]}"#.to_owned();
    };
    if source.starts_with("S1: ") {
        return grounded_v2(source, rows);
    }
    let mut entities = Vec::new();
    let mut claims = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for s in sentences(source) {
        if entities.len() * 2 >= rows {
            break;
        }
        let Some(name) = name_of(s) else { continue };
        if !seen.insert(name.to_lowercase()) {
            continue;
        }
        entities.push(json!({"name": name, "type": "other"}));
        claims.push(json!({
            // The quote restated: the support check keeps it, so every row is accepted.
            "statement": s,
            "quote": s,
            "subject": name,
        }));
    }
    json!({"entities": entities, "claims": claims}).to_string()
}

/// A valid `relata.extract` v2 answer (`extract-p4`, `extract-p5`; valid under v3,
/// `extract-p7`, too) to a chunk shown as numbered sentences with its names listed: each
/// sentence that opens with a listed name gets a claim about that name stating the
/// sentence itself (it reads alone and its support is total), the others `null`; at most
/// `rows / 2` claims, and their subjects as entities.
fn grounded_v2(source: &str, rows: usize) -> String {
    let names: Vec<&str> = source
        .lines()
        .find_map(|l| l.strip_prefix("Names: "))
        .map(|l| l.split("; ").collect())
        .unwrap_or_default();
    let mut claims = serde_json::Map::new();
    let mut subjects: Vec<&str> = Vec::new();
    for line in source.lines() {
        let Some((handle, sentence)) = line.split_once(": ") else {
            continue;
        };
        if !(handle.starts_with('S') && handle[1..].bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let subject = names
            .iter()
            .filter(|n| sentence.starts_with(**n) || sentence.starts_with(&format!("The {n}")))
            .max_by_key(|n| n.len());
        let claim = match subject {
            Some(name) if claims.values().filter(|c| !c.is_null()).count() * 2 < rows => {
                if !subjects.contains(name) {
                    subjects.push(name);
                }
                json!({"subject": name, "statement": sentence})
            }
            _ => Value::Null,
        };
        claims.insert(handle.to_owned(), claim);
    }
    let entities: Vec<Value> = subjects
        .iter()
        .map(|n| json!({"name": n, "type": "other"}))
        .collect();
    json!({"entities": entities, "claims": claims}).to_string()
}

/// The `n`th invalid answer: a different kind each time.
fn invalid(user: &str, n: u64) -> (String, &'static str) {
    let valid = grounded(user, 10);
    match n % 6 {
        0 => (
            "I am sorry, here are the facts you asked for.".to_owned(),
            "stop",
        ),
        1 => (format!("{valid} and more"), "stop"),
        2 => (
            r#"{"entities":[],"claims":[],"confidence":0.9}"#.to_owned(),
            "stop",
        ),
        3 => (
            json!({
                "entities": [{"name": "Nobody Inparticular", "type": "person"}],
                "claims": [{
                    "statement": "Nobody Inparticular invented the telephone in 1802",
                    "quote": "the telephone was invented in 1802 by nobody",
                    "subject": "Nobody Inparticular"
                }]
            })
            .to_string(),
            "stop",
        ),
        4 => (valid[..valid.len() / 2].to_owned(), "length"),
        _ => (String::new(), "stop"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grounded_quotes_are_in_the_source() {
        let user = "BEGIN RELATA_DATA\nAda Lovelace wrote the first algorithm. Charles Babbage designed the engine in London.\nEND RELATA_DATA";
        let v: Value = serde_json::from_str(&grounded(user, 10)).unwrap_or(Value::Null);
        let claims = v["claims"].as_array().cloned().unwrap_or_default();
        assert_eq!(claims.len(), 2);
        for c in claims {
            let q = c["quote"].as_str().unwrap_or("?");
            assert!(user.contains(q), "{q}");
        }
    }

    #[test]
    fn grounded_v2_claims_state_sentences_about_listed_names() {
        let user = "BEGIN X\nS1: Ada Lovelace wrote the first algorithm.\nS2: It ran on nothing.\nNames: Ada Lovelace; Charles Babbage\nEND X";
        let v: Value = serde_json::from_str(&grounded(user, 10)).unwrap_or(Value::Null);
        assert_eq!(v["claims"]["S1"]["subject"], "Ada Lovelace");
        assert_eq!(
            v["claims"]["S1"]["statement"],
            "Ada Lovelace wrote the first algorithm."
        );
        assert!(v["claims"]["S2"].is_null(), "{v}");
        assert_eq!(
            v["entities"],
            json!([{"name": "Ada Lovelace", "type": "other"}])
        );
    }

    #[test]
    fn classify_answers_every_pair() {
        let user = "BEGIN X\nC1: a\nC2: b\nEND X\nRequested pairs (a, b):\nC1, C2\n";
        let v: Value = serde_json::from_str(&grounded(user, 10)).unwrap_or(Value::Null);
        assert_eq!(v["relations"][0]["a"], "C1");
        assert_eq!(v["relations"][0]["b"], "C2");
    }
}
