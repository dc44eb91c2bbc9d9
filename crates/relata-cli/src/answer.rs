//! `relata ask` and `relata serve`: questions answered from the store.

use std::sync::Arc;

use anyhow::{Context, Result};
use prometheus_client::registry::Registry;
use relata_answer::{Answer, AnswerChecksConfigured, AnswerMetrics, Answerer, AskError};
use relata_core::{AnswerStatus, Task};
use relata_model::{ModelClient, ModelMetrics};

use crate::config::Config;
use crate::out::outln;

/// Exit code when the model is unavailable (transport failure after retries, or the
/// provider refused the request): EX_UNAVAILABLE.
pub const EXIT_MODEL_UNAVAILABLE: u8 = 69;

#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The question (at most 2,000 bytes).
    pub question: String,
    /// Sources to retrieve, 1..=20.
    #[arg(long, default_value_t = relata_store::DEFAULT_K)]
    pub k: usize,
    /// Print exactly the body `POST /v1/answers` returns.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on: `HOST:PORT`, the host a name (`localhost`) or an address.
    #[arg(long, visible_alias = "listen", default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Connections held at once; past it a new one replaces the oldest idle one, or is
    /// refused when every one has a request in flight.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections: u16,
    /// Questions answered at once; more wait up to 10 s, then get 503.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrency: u16,
    /// Deadline of one answer in seconds (retrieval, the model with its retries, the
    /// record); past it the request gets 504.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub request_timeout_secs: u64,
}

async fn answerer(config: &Config, registry: &mut Registry) -> Result<Answerer> {
    let model_config = config.model()?;
    let gate = config.answer_gate()?;
    let classify = config.task_version(Task::Classify)?;
    let model_metrics = ModelMetrics::register(registry);
    let metrics = AnswerMetrics::register(registry);
    let client = ModelClient::new(model_config, model_metrics).context("model client")?;
    let store = crate::pipeline::store(config).await?;
    AnswerChecksConfigured(&gate).emit(&metrics);
    Ok(Answerer::new(
        store,
        client,
        gate,
        classify.fingerprint(),
        metrics,
    ))
}

/// `relata ask`. Exit 0 for every outcome, 69 when the model is unavailable, 2 for a
/// bad question or any other error.
pub async fn ask(config: &Config, args: AskArgs) -> Result<u8> {
    relata_answer::check_request(&args.question, args.k)?;
    let mut registry = Registry::default();
    let answerer = answerer(config, &mut registry).await?;
    match answerer.ask(&args.question, args.k).await {
        Ok(answer) if args.json => {
            outln!("{}", serde_json::to_string(&answer)?)?;
            Ok(0)
        }
        Ok(answer) => {
            print_human(&answer)?;
            Ok(0)
        }
        Err(e @ AskError::Model(_)) => {
            eprintln!("error: {e}");
            Ok(EXIT_MODEL_UNAVAILABLE)
        }
        Err(e) => Err(e.into()),
    }
}

fn print_human(a: &Answer) -> Result<()> {
    match a.status {
        AnswerStatus::Answered => {
            outln!("{}", a.answer.as_deref().unwrap_or_default())?;
            outln!("")?;
            outln!("Sources:")?;
            // The cited sources, and any brought in by a contradiction: the other side of
            // what the answer stands on is shown even when the answer does not cite it.
            for s in a
                .sources
                .iter()
                .filter(|s| a.citations.contains(&s.handle) || !s.retrieved)
            {
                print_source(s)?;
            }
        }
        AnswerStatus::Abstained => {
            outln!("No answer: {}", a.answer.as_deref().unwrap_or_default())?;
            if !a.sources.is_empty() {
                outln!("")?;
                outln!("Sources retrieved:")?;
                for s in &a.sources {
                    print_source(s)?;
                }
            }
        }
        AnswerStatus::Degraded => {
            outln!("No usable answer: the model's answer failed validation (degraded).")?;
            outln!("")?;
            outln!("Sources retrieved:")?;
            for s in &a.sources {
                print_source(s)?;
            }
        }
    }
    if !a.contradictions.is_empty() {
        outln!("")?;
        outln!("Contradictions between stored claims:")?;
        for c in &a.contradictions {
            // Said on the line itself, not in a footnote: an unreviewed contradiction is
            // still a warning the person asking must see.
            let pending = if c.pending_review {
                " (pending review)"
            } else {
                ""
            };
            outln!(
                "  {} claim {} contradicts {} claim {}{pending}",
                c.a,
                c.claims[0],
                c.b,
                c.claims[1]
            )?;
        }
    }
    if !a.caveats.is_empty() {
        outln!("")?;
        outln!("Caveats:")?;
        for c in &a.caveats {
            outln!("  {}: {}", c.reason, c.detail)?;
        }
    }
    Ok(())
}

fn print_source(s: &relata_answer::Source) -> Result<()> {
    const SHOWN: usize = 300;
    let title = s.title.as_deref().unwrap_or("(untitled)");
    let brought = if s.retrieved {
        ""
    } else {
        "; not found by the question: it contradicts a source that was"
    };
    outln!(
        "  [{}] {} (document {}, bytes {}..{}{brought})",
        s.handle,
        title,
        s.document_id,
        s.start,
        s.end
    )?;
    let text = s.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = relata_core::text::cut(&text, SHOWN);
    let more = if cut.len() < text.len() { "…" } else { "" };
    outln!("      \"{cut}{more}\"")?;
    for c in &s.claims {
        outln!("      claim {}: {}", c.claim_id, c.statement)?;
    }
    Ok(())
}

/// `relata serve`: `POST /v1/answers`, `/healthz`, `/readyz`, `/metrics` until SIGTERM or
/// SIGINT.
pub async fn serve(config: &Config, args: ServeArgs) -> Result<u8> {
    let mut registry = Registry::default();
    let answerer = answerer(config, &mut registry).await?;
    let router = relata_answer::server::router(
        answerer,
        Arc::new(registry),
        relata_answer::server::ServeConfig {
            max_concurrency: usize::from(args.max_concurrency),
            request_timeout: std::time::Duration::from_secs(args.request_timeout_secs),
            ..relata_answer::server::ServeConfig::default()
        },
    );
    // The review page beside the answers: its own routes, sessions and headers.
    let review = relata_review_web::router(
        relata_review_web::StoreBackend::new(
            crate::pipeline::store(config).await?,
            config.reviewers()?,
        ),
        relata_review_web::ReviewWebConfig {
            secure_cookies: config.review.secure_cookies,
        },
    );
    let router = router.merge(review);
    let listener = tokio::net::TcpListener::bind(args.addr.as_str())
        .await
        .with_context(|| format!("cannot listen on {} (--addr HOST:PORT)", args.addr))?;
    let bound = listener.local_addr()?;
    tracing::info!(%bound, "serving POST /v1/answers, /healthz, /readyz, /metrics, the review page at /review");
    if !bound.ip().is_loopback() {
        tracing::warn!(%bound, "serving plain HTTP beyond this machine: sign-in tokens and session cookies cross the network unencrypted; put a TLS proxy in front and set [review] secure_cookies = true");
    }
    if config.reviewers()?.is_empty() {
        tracing::warn!(
            "no reviewer is configured ([review] reviewers, RELATA_REVIEWERS): /review is served but nobody can sign in"
        );
    }
    let limits = relata_answer::listen::Limits {
        max_connections: usize::from(args.max_connections),
        ..relata_answer::listen::Limits::default()
    };
    relata_answer::server::serve(listener, router, limits, crate::signal::shutdown())
        .await
        .context("serving HTTP")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use relata_core::{AnswerCheck, Severity};
    use relata_validate::judge_answer;

    use super::*;

    /// Fails if the configuration relata ships (no file: the defaults) disables or
    /// demotes any fatal answer check, and proves the gate built from it is live.
    #[test]
    fn the_shipped_configuration_keeps_every_fatal_answer_check_fatal() {
        let gate = Config::default().answer_gate().unwrap();
        for check in [
            AnswerCheck::HandleKnown,
            AnswerCheck::Cited,
            AnswerCheck::Degenerate,
            AnswerCheck::Abstention,
        ] {
            let s = gate.setting(check);
            assert!(
                s.enabled,
                "{check} is disabled in the shipped configuration"
            );
            assert_eq!(s.severity, Severity::Reject, "{check} is not fatal");
        }
        for check in [
            AnswerCheck::MarkersMatch,
            AnswerCheck::FigureInSources,
            AnswerCheck::CitationSupported,
        ] {
            assert!(gate.setting(check).enabled, "{check} is disabled");
        }
        let sources = [relata_validate::SourceText::untitled(
            "Marie Curie was born in Warsaw in 1867.",
        )];
        for bad in [
            r#"{"answer": "Marie Curie was born in Warsaw [S7].", "citations": ["S7"], "found": true}"#,
            r#"{"answer": "Marie Curie was born in Warsaw.", "citations": [], "found": true}"#,
            r#"{"answer": "sufficient", "citations": ["S1"], "found": true}"#,
            r#"{"answer": "I do not know.", "citations": [], "found": false}"#,
        ] {
            let j = judge_answer(
                &gate,
                &relata_core::ANSWER_V1,
                "Where was Marie Curie born?",
                &sources,
                bad.as_bytes(),
            );
            assert!(!j.rejections.is_empty(), "accepted: {bad}");
        }
    }
}
