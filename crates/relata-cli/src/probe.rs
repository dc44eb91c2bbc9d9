//! `relata model probe`: check an endpoint the way an operator would before a run.
//!
//! Three steps, each printed as `ok`, `warn` or `FAILED` with a remedy: the endpoint is
//! reachable (`GET {url}/models`), the model is listed, and one tiny structured request in
//! the configured dialect round-trips (the answer is the contract's JSON, as judged by the
//! gate). Exit 0 only when every step passed (a model missing from the list is a warning);
//! 1 when any step failed, even if a later one passed; 2 when the configuration is
//! unusable. Each remedy follows from what was actually seen: a server that answers
//! slowly is not told to check whether it is running.

use std::process::ExitCode;

use relata_core::{Reason, Task};
use relata_model::{
    Dialect, ModelClient, ModelConfig, ModelError, ModelList, ModelMetrics, ProviderFamily,
    StatusClass, TransportKind, extract_messages,
};
use relata_validate::{ExtractShape, GateConfig, judge_extract_as};

/// Probe settings come from the same environment as the workers (`RELATA_MODEL_*`); these
/// flags override it. The API key is read from `RELATA_MODEL_API_KEY` or
/// `RELATA_MODEL_API_KEY_FILE` only, never from a flag.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Base URL, e.g. http://127.0.0.1:11434/v1 (default: $RELATA_MODEL_URL).
    #[arg(long)]
    url: Option<String>,
    /// Model name (default: $RELATA_MODEL_NAME).
    #[arg(long)]
    model: Option<String>,
    /// json_schema | json_object_schema | none (default: $RELATA_MODEL_DIALECT, else json_schema).
    #[arg(long)]
    dialect: Option<String>,
}

/// A tiny document for the structured request.
const PROBE_SOURCE: &str = relata_model::PROBE_DOCUMENT;
/// Enough for a small answer; a model that needs more will say `truncated`.
const PROBE_MAX_TOKENS: u32 = 400;

fn step(status: &str, name: &str, detail: &str) {
    crate::out::line_or_exit(format_args!("{status:<6} {name:<11} {detail}"));
}

fn remedy(text: &str) {
    crate::out::line_or_exit(format_args!("{:<6} {:<11} remedy: {text}", "", ""));
}

pub fn run(args: ProbeArgs) -> ExitCode {
    let overrides = [
        ("RELATA_MODEL_URL", args.url),
        ("RELATA_MODEL_NAME", args.model),
        ("RELATA_MODEL_DIALECT", args.dialect),
    ];
    let lookup = |name: &str| {
        overrides
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let mut config = match ModelConfig::default().with_env(lookup) {
        Ok(c) => c,
        Err(e) => {
            step("FAILED", "config", &e.to_string());
            remedy("set RELATA_MODEL_URL and RELATA_MODEL_NAME (or pass --url and --model)");
            return ExitCode::from(2);
        }
    };
    // An operator wants the first failure, not a backoff schedule.
    config.retry_max_attempts = 1;
    let client = match ModelClient::new(config, ModelMetrics::default()) {
        Ok(c) => c,
        Err(e) => {
            step("FAILED", "config", &e.to_string());
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("relata model probe: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    if runtime.block_on(probe(&client)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

async fn probe(client: &ModelClient) -> bool {
    let cfg = client.config();
    crate::out::line_or_exit(format_args!(
        "probing {} (model {}, dialect {}, api key {})",
        cfg.url,
        cfg.model,
        cfg.dialect,
        if cfg.api_key.is_some() {
            "set"
        } else {
            "not set"
        }
    ));
    let (listed, family) = match reachable(client).await {
        Reachable::Listed(list) => {
            model_listed(cfg, &list.models);
            dialect_fits(cfg, list.family);
            (true, list.family)
        }
        Reachable::NoList => (false, ProviderFamily::Unknown),
        Reachable::Stop => return false,
    };
    // A failed list does not fail the probe alone when the structured request works;
    // the exit code still says a step failed.
    structured(client, family).await && listed
}

/// Step 2b: the configured dialect is the one the server family takes, and the family
/// enforces it (a warning otherwise: the gate still judges every answer).
fn dialect_fits(cfg: &ModelConfig, family: ProviderFamily) {
    if family.ignores_response_format() {
        step(
            "warn",
            "dialect",
            &format!(
                "{family} ignores response_format: the schema is sent but nothing enforces it"
            ),
        );
        remedy(
            "expect more invalid output than on a server that compiles the schema; the gate still judges every answer",
        );
        return;
    }
    match family.dialect() {
        Some(d) if d == cfg.dialect => step(
            "ok",
            "dialect",
            &format!("{family} takes dialect {d} and enforces the schema"),
        ),
        Some(d) => {
            step(
                "warn",
                "dialect",
                &format!("{family} takes dialect {d}, not {}", cfg.dialect),
            );
            remedy(&format!("set RELATA_MODEL_DIALECT={d} (or --dialect {d})"));
        }
        None => step(
            "ok",
            "dialect",
            &format!(
                "server family not recognised; dialect {} is tried as configured",
                cfg.dialect
            ),
        ),
    }
}

/// What the first step found.
enum Reachable {
    /// The endpoint listed its models.
    Listed(ModelList),
    /// No list, for a reason the structured request may still get past.
    NoList,
    /// No point going on: nothing answers, or the key or URL is refused.
    Stop,
}

/// Step 1: `GET {url}/models`.
async fn reachable(client: &ModelClient) -> Reachable {
    let cfg = client.config();
    let e = match client.list_models().await {
        Ok(list) => {
            step(
                "ok",
                "reachable",
                &format!(
                    "GET {} listed {} model(s); server family: {}",
                    cfg.models_url(),
                    list.models.len(),
                    list.family
                ),
            );
            return Reachable::Listed(list);
        }
        Err(e) => e,
    };
    step(
        "FAILED",
        "reachable",
        &format!("GET {}: {e}", cfg.models_url()),
    );
    if let ModelError::Transport { kind, .. } = &e {
        remedy(&transport_remedy(*kind, cfg));
        return Reachable::Stop;
    }
    match e.status_class() {
        Some(StatusClass::Unauthorized) => {
            remedy("check the key in RELATA_MODEL_API_KEY or RELATA_MODEL_API_KEY_FILE");
            Reachable::Stop
        }
        Some(StatusClass::Redirect) => {
            remedy(
                "set RELATA_MODEL_URL to the URL the redirect names (relata never follows redirects: the document text goes to the configured endpoint or nowhere)",
            );
            Reachable::Stop
        }
        Some(StatusClass::NotFound) => {
            remedy(
                "the base URL usually ends in /v1; some servers have no model list, so the structured request is tried anyway",
            );
            Reachable::NoList
        }
        _ => {
            remedy("the structured request is tried anyway");
            Reachable::NoList
        }
    }
}

/// Step 2: the configured model is among those listed (a warning when not).
fn model_listed(cfg: &ModelConfig, models: &[String]) {
    if models.contains(&cfg.model) {
        step("ok", "model", &format!("{} is listed", cfg.model));
        return;
    }
    let shown: Vec<&str> = models.iter().take(10).map(String::as_str).collect();
    step(
        "warn",
        "model",
        &format!(
            "{} is not listed (listed: {})",
            cfg.model,
            if shown.is_empty() {
                "none".to_owned()
            } else {
                shown.join(", ")
            }
        ),
    );
    remedy("set RELATA_MODEL_NAME (or --model) to a listed model, or pull it (ollama pull <name>)");
}

/// Step 3: one structured request, its answer judged by the gate.
async fn structured(client: &ModelClient, family: ProviderFamily) -> bool {
    let cfg = client.config();
    let messages = extract_messages(cfg.extract_prompt, cfg.dialect, PROBE_SOURCE, None);
    let call = client
        .complete(Task::Extract, &messages, PROBE_MAX_TOKENS)
        .await;
    let took = format!("{:.1}s", call.record.duration.as_secs_f64());
    let completion = match call.result {
        Ok(c) => c,
        Err(e) => {
            step(
                "FAILED",
                "structured",
                &format!(
                    "{} in dialect {} ({took}): {e}",
                    cfg.chat_url(),
                    cfg.dialect
                ),
            );
            remedy(&structured_remedy(&e, cfg, family));
            return false;
        }
    };
    let shape = ExtractShape::of(&cfg.contract(Task::Extract)).unwrap_or(ExtractShape::Quotes);
    let judgement = judge_extract_as(
        &GateConfig::default(),
        shape,
        PROBE_SOURCE,
        None,
        completion.content.as_bytes(),
        None,
    );
    if let Some(r) = judgement.response_rejection() {
        step(
            "FAILED",
            "structured",
            &format!(
                "the server answered ({took}) but not with relata.extract JSON: {} ({})",
                r.reason, r.detail
            ),
        );
        remedy(&match (cfg.dialect, family.dialect()) {
            (Dialect::None, Some(d)) => format!("with --dialect none the schema is only in the prompt; {family} enforces dialect {d}: --dialect {d}"),
            (Dialect::None, None) => "with --dialect none the schema is only in the prompt; if the server supports structured output, try --dialect json_schema (OpenAI, vLLM, Ollama, llama-server) or --dialect json_object_schema (llama-cpp-python)".to_owned(),
            (d, Some(takes)) if d != takes => format!("{family} does not enforce dialect {d}: --dialect {takes}"),
            (d, Some(_)) => format!("{family} enforces dialect {d}, but this model did not write relata's JSON: a larger model"),
            (d, None) => format!("the server may ignore response_format in dialect {d}; try --dialect json_schema (OpenAI, vLLM, Ollama, llama-server) or --dialect json_object_schema (llama-cpp-python), or a larger model"),
        });
        return false;
    }
    let accepted = judgement.accepted();
    step(
        "ok",
        "structured",
        &format!(
            "round-trip in dialect {} ({took}): valid relata.extract JSON, {} entities and {} claims accepted, {} row(s) rejected",
            cfg.dialect,
            accepted.entities().len(),
            accepted.claims().len(),
            judgement.rejections().len()
        ),
    );
    true
}

/// What to do about a transport failure, from what was seen: no listener, no name, no
/// answer in time, a broken handshake, a cut connection, or a server answering an error.
fn transport_remedy(kind: TransportKind, cfg: &ModelConfig) -> String {
    match kind {
        TransportKind::ConnectRefused => "is the server running and listening there? RELATA_MODEL_URL is the base URL, e.g. http://127.0.0.1:11434/v1".to_owned(),
        TransportKind::Dns => "the host name in RELATA_MODEL_URL does not resolve: check its spelling and the machine's DNS".to_owned(),
        TransportKind::ConnectTimeout => format!(
            "no connection within {} ms (RELATA_MODEL_CONNECT_TIMEOUT_MS): a wrong host or port, or a firewall dropping packets",
            cfg.connect_timeout_ms
        ),
        TransportKind::Timeout => format!(
            "the server accepted the connection but did not answer within {} ms: it is running but slow or busy; raise RELATA_MODEL_REQUEST_TIMEOUT_MS (a small model on CPU can take 5-25 s per request) or check its load",
            cfg.request_timeout_ms
        ),
        TransportKind::Tls => "the TLS handshake failed: check http:// against https:// in RELATA_MODEL_URL, and the server's certificate".to_owned(),
        TransportKind::Reset | TransportKind::BodyCutOff => "the connection was cut before a whole answer arrived: a proxy in between, or a server crashing on the request? check its logs".to_owned(),
        TransportKind::Http429 => "the server is rate-limiting this key: wait, or raise the key's limits".to_owned(),
        k => match k.http_status() {
            Some(status) => {
                format!("the server is running but answered HTTP {status}: check its logs")
            }
            None => {
                "the request failed below HTTP: check the server's logs and the network".to_owned()
            }
        },
    }
}

fn structured_remedy(e: &ModelError, cfg: &ModelConfig, family: ProviderFamily) -> String {
    let refused = matches!(
        e,
        ModelError::Permanent {
            status: 400 | 422,
            ..
        } | ModelError::Transport {
            kind: TransportKind::Http500,
            ..
        }
    );
    match (e, cfg.dialect) {
        // What the family takes decides the remedy: never a dialect it would ignore.
        _ if refused && family.dialect().is_some_and(|d| d != cfg.dialect) => {
            let d = family.dialect().unwrap_or(cfg.dialect);
            format!("{family} takes dialect {d}: --dialect {d}")
        }
        _ if refused && family.dialect() == Some(cfg.dialect) => format!(
            "{family} takes dialect {} but refused this schema: see the server's message above; extract-p10 (the default) sends only what every server family compiles (RELATA_MODEL_EXTRACT_PROMPT)",
            cfg.dialect
        ),
        (
            ModelError::Transport {
                kind: TransportKind::Http500,
                ..
            },
            Dialect::JsonSchema,
        ) => "HTTP 500 on response_format json_schema: llama-cpp-python answers so; it wants --dialect json_object_schema".to_owned(),
        (ModelError::Permanent { status: 400 | 422, .. }, Dialect::JsonSchema) => {
            "the server rejected response_format json_schema: llama-cpp-python wants --dialect json_object_schema; a server without structured output, --dialect none".to_owned()
        }
        (ModelError::Permanent { status: 400 | 422, .. }, Dialect::JsonObjectSchema) => {
            "the server rejected response_format json_object: OpenAI, vLLM, Ollama and llama-server want --dialect json_schema".to_owned()
        }
        (ModelError::Permanent { .. }, _) if e.status_class() == Some(StatusClass::Unauthorized) => {
            "check the key in RELATA_MODEL_API_KEY or RELATA_MODEL_API_KEY_FILE".to_owned()
        }
        (ModelError::Permanent { .. }, _) if e.status_class() == Some(StatusClass::NotFound) => {
            "model or route not found: check RELATA_MODEL_NAME and that RELATA_MODEL_URL ends in /v1".to_owned()
        }
        (ModelError::Permanent { .. }, _) if e.status_class() == Some(StatusClass::Redirect) => {
            "set RELATA_MODEL_URL to the URL the redirect names (relata never follows redirects)".to_owned()
        }
        (ModelError::Permanent { status: 200, .. }, _) => {
            "something other than the model server answered (see what came back above): check RELATA_MODEL_URL and any proxy in between".to_owned()
        }
        (ModelError::InvalidOutput { reason: Reason::Truncated, .. }, _) => {
            "the answer hit the token limit: the model rambles; a dialect with the schema (json_schema, json_object_schema) usually stops it".to_owned()
        }
        (ModelError::InvalidOutput { reason: Reason::Refusal, .. }, _) => {
            "the model or the provider's filter refused the probe document: the provider's content policy, not relata, decided".to_owned()
        }
        (ModelError::Transport { kind, .. }, _) => transport_remedy(*kind, cfg),
        _ => "see the message above".to_owned(),
    }
}
