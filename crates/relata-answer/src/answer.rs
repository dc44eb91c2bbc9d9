//! The answer path: question → passages → model → gate → outcome.

use relata_core::contract::ANSWER_ABSTENTION;
use relata_core::{AnswerStatus, Reason, SourceHandle, Task};
use relata_model::{AnswerSource, CallRecord, ModelCall, ModelClient, ModelError, TransportKind};
use relata_store::{AnswerCall, AttachedClaim, NewAnswer, Passage, Store, StoreError};
use relata_validate::{AnswerConfig, AnswerJudgement, SourceText, judge_answer};
use serde::Serialize;

use crate::figure_asked::FigureKind;
use crate::metrics::{AnswerFinished, AnswerMetrics};

/// Longest question, in bytes.
pub const MAX_QUESTION_BYTES: usize = 2_000;

/// Why a question got no answer at all. Only the model being unavailable and the store
/// failing are errors; invalid model output is an answer (`degraded`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The question or `k` is unusable; the message names the field.
    #[error("{field}: {problem}")]
    BadRequest {
        field: &'static str,
        problem: String,
    },
    /// The model endpoint did not answer after the adapter's bounded retries (timeouts,
    /// refused or reset connections, 429, 5xx) or refused the request (401, 403, 404,
    /// 400, …). Nothing was recorded: no answer was produced.
    #[error("the model is unavailable: {0}")]
    Model(ModelError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AskError {
    /// Whether asking again later can help: a model transport failure or an unavailable
    /// store can pass; a bad request or a provider refusal will not.
    pub fn is_retryable(&self) -> bool {
        match self {
            AskError::BadRequest { .. } => false,
            AskError::Model(e) => e.is_retryable(),
            AskError::Store(e) => e.is_retryable(),
        }
    }

    /// The model timed out (as opposed to failing in any other way).
    pub fn is_model_timeout(&self) -> bool {
        matches!(
            self,
            AskError::Model(e) if matches!(
                e.transport_kind(),
                Some(TransportKind::Timeout | TransportKind::ConnectTimeout)
            )
        )
    }
}

/// A claim attached to a source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceClaim {
    pub claim_id: i64,
    pub statement: String,
    pub quote: String,
    /// Byte offsets (UTF-8) of the quote in the document's current revision.
    pub quote_start: usize,
    pub quote_end: usize,
}

/// A source as returned: what was shown to the model under `handle`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub handle: String,
    pub document_id: i64,
    pub title: Option<String>,
    /// The document's own bytes from `start` to `end`.
    pub text: String,
    pub start: usize,
    pub end: usize,
    /// `false` for a source the question's words did not find, shown because a claim in
    /// it contradicts a claim in a retrieved one (see [`CONTRADICTING_SOURCES`]).
    pub retrieved: bool,
    pub claims: Vec<SourceClaim>,
}

/// A stored `contradicts` relation between claims of two sources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContradictionOut {
    pub a: String,
    pub b: String,
    pub claims: [i64; 2],
    /// No person (or policy) has promoted the relation or one of its claims yet. Such a
    /// contradiction is listed all the same: a warning waiting for a person is never
    /// hidden from the person asking.
    pub pending_review: bool,
}

/// Why an answer is qualified: a rejection reason (degraded), a warning (answered), or
/// `no_sources` (abstained without asking the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caveat {
    pub reason: &'static str,
    pub detail: String,
}

/// Most sources shown beyond the retrieved ones because they contradict them: a stored
/// `contradicts` relation between a claim of a retrieved passage and a claim elsewhere
/// brings that claim's passage in, so the other side of a disagreement is shown (to the
/// person asking and to the model) even when the question's words did not find it.
pub const CONTRADICTING_SOURCES: usize = 2;

/// The `reason` of the caveat that says nothing was retrieved.
pub const NO_SOURCES: &str = "no_sources";

/// The `reason` of the caveat that says the question names something no retrieved
/// source mentions, so relata abstained without asking the model
/// ([`crate::answerability`]).
pub const NOT_IN_SOURCES: &str = "not_in_sources";

/// The `reason` of the caveat that says the question asks for a kind of figure (a year,
/// a length, a number …) that no retrieved sentence about what it names gives, so relata
/// abstained without asking the model ([`crate::figure_asked`]).
pub const FIGURE_NOT_GIVEN: &str = "figure_not_given";

/// The `reason` of the caveat that says a stored claim was left out because its
/// document's bytes no longer match its quote (an edit outside relata).
pub const SOURCE_ALTERED: &str = "source_altered";

/// One answer: exactly the body of `POST /v1/answers` and of `relata ask --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    pub question: String,
    pub status: AnswerStatus,
    /// `true` only when answered.
    pub sufficient: bool,
    /// The prose; `null` when degraded.
    pub answer: Option<String>,
    pub citations: Vec<String>,
    pub sources: Vec<Source>,
    pub contradictions: Vec<ContradictionOut>,
    pub caveats: Vec<Caveat>,
}

/// Asks questions: retrieval in the store, the model under opaque handles, the answer
/// gate, and the record of every answer.
#[derive(Debug, Clone)]
pub struct Answerer {
    store: Store,
    client: ModelClient,
    gate: AnswerConfig,
    /// Fingerprint of the current classify task version: contradictions are read from it.
    classify_fingerprint: String,
    metrics: AnswerMetrics,
}

/// Check a question and `k` before anything else runs.
pub fn check_request(question: &str, k: usize) -> Result<(), AskError> {
    let bad = |field, problem: String| Err(AskError::BadRequest { field, problem });
    if question.trim().is_empty() {
        return bad("question", "is empty".into());
    }
    if question.len() > MAX_QUESTION_BYTES {
        return bad(
            "question",
            format!(
                "is {} bytes, over the bound of {MAX_QUESTION_BYTES}",
                question.len()
            ),
        );
    }
    if question.contains('\0') {
        return bad("question", "holds a NUL character (U+0000)".into());
    }
    if !(1..=relata_store::MAX_K).contains(&k) {
        return bad(
            "k",
            format!("must be between 1 and {}, not {k}", relata_store::MAX_K),
        );
    }
    Ok(())
}

impl Answerer {
    pub fn new(
        store: Store,
        client: ModelClient,
        gate: AnswerConfig,
        classify_fingerprint: String,
        metrics: AnswerMetrics,
    ) -> Answerer {
        Answerer {
            store,
            client,
            gate,
            classify_fingerprint,
            metrics,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Answer `question` from at most `k` sources. Every outcome — answered, abstained,
    /// degraded — is `Ok` and recorded; only an unavailable model or store is an error.
    /// The model is asked at most once: invalid output is never retried or repaired.
    #[tracing::instrument(name = "answer", skip_all, fields(task = "answer", k))]
    pub async fn ask(&self, question: &str, k: usize) -> Result<Answer, AskError> {
        let started = std::time::Instant::now();
        check_request(question, k)?;
        let Retrieved {
            sources,
            altered,
            contradictions,
            unmentioned,
            ungiven,
            retrieved,
        } = self.retrieve(question, k).await?;

        let mut out = Answer {
            question: question.to_owned(),
            status: AnswerStatus::Abstained,
            sufficient: false,
            answer: None,
            citations: Vec::new(),
            sources: sources
                .iter()
                .enumerate()
                .map(|(i, (p, c))| source_out(i, i < retrieved, p, c))
                .collect(),
            contradictions,
            caveats: Vec::new(),
        };
        for (document_id, c) in &altered {
            out.caveats.push(source_altered(*document_id, c));
        }
        let asked = match unanswerable(&sources, &unmentioned, ungiven) {
            Some(caveat) => {
                out.answer = Some(ANSWER_ABSTENTION.to_owned());
                out.caveats.push(caveat);
                Asked::default()
            }
            None => self.ask_model(question, &sources, &mut out).await?,
        };
        out.sufficient = out.status == AnswerStatus::Answered;

        let id = self.record(question, k, &out, &sources, &asked).await?;
        AnswerFinished {
            answer_id: id,
            status: out.status,
            sources: out.sources.len(),
            reasons: &asked.reasons,
            duration: started.elapsed(),
        }
        .emit(&self.metrics);
        Ok(out)
    }

    /// The passages that match `question`, each with the claims whose quotes still hold in
    /// it, the claims whose quotes no longer do, the contradictions among them, and what
    /// the question names that none mentions.
    async fn retrieve(&self, question: &str, k: usize) -> Result<Retrieved, AskError> {
        let mut passages = self.store.retrieve_passages(question, k).await?;
        // Only read when a passage was found (otherwise every name is unmentioned).
        let unmentioned = crate::answerability::unmentioned_in(question, &passages);
        let ungiven = crate::figure_asked::ungiven_in(question, &passages);
        let retrieved = passages.len();
        let other_side = self
            .store
            .contradicting_passages(&self.classify_fingerprint, &passages, CONTRADICTING_SOURCES)
            .await?;
        passages.extend(other_side);
        let claims = self.store.attach_claims(&passages).await?;
        let contradictions = self
            .store
            .contradictions(&self.classify_fingerprint, &passages)
            .await?
            .into_iter()
            .map(|c| ContradictionOut {
                a: handle(c.passage_a),
                b: handle(c.passage_b),
                claims: [c.claim_a, c.claim_b],
                pending_review: c.pending_review,
            })
            .collect();
        let mut altered = Vec::new();
        let sources: Vec<(Passage, Vec<AttachedClaim>)> = passages
            .into_iter()
            .zip(claims)
            .map(|(p, cs)| {
                let (holding, broken): (Vec<_>, Vec<_>) =
                    cs.into_iter().partition(|c| c.quote_holds_in(&p));
                altered.extend(broken.into_iter().map(|c| (p.document_id, c)));
                (p, holding)
            })
            .collect();
        Ok(Retrieved {
            sources,
            altered,
            contradictions,
            unmentioned,
            ungiven,
            retrieved,
        })
    }

    /// Show the sources to the model under opaque handles and judge its answer into `out`.
    async fn ask_model(
        &self,
        question: &str,
        sources: &[(Passage, Vec<AttachedClaim>)],
        out: &mut Answer,
    ) -> Result<Asked, AskError> {
        let shown: Vec<AnswerSource> = sources
            .iter()
            .enumerate()
            .map(|(i, (p, _))| AnswerSource {
                handle: SourceHandle::nth(i as u32 + 1),
                title: p.title.clone(),
                text: p.text.clone(),
            })
            .collect();
        let ModelCall { record, result } = self.client.answer(question, &shown).await;
        let mut asked = Asked::default();
        match result {
            Err(ModelError::InvalidOutput { reason, detail }) => {
                // Unusable at envelope level (truncated, refused, empty, too large):
                // counted once by the adapter; the answer degrades.
                out.status = AnswerStatus::Degraded;
                asked.reasons.push(reason);
                out.caveats.push(Caveat {
                    reason: reason.as_str(),
                    detail: self.client.detail(&detail),
                });
            }
            Err(e) => {
                // Transport (after the adapter's retries) or a provider refusal: no
                // answer exists, so nothing is recorded as one.
                return Err(AskError::Model(e));
            }
            Ok(completion) => {
                let texts: Vec<SourceText<'_>> = sources
                    .iter()
                    .map(|(p, _)| SourceText {
                        title: p.title.as_deref(),
                        text: &p.text,
                    })
                    .collect();
                let contract = self.client.config().contract(Task::Answer);
                let j = judge_answer(
                    &self.gate,
                    &contract,
                    question,
                    &texts,
                    completion.content.as_bytes(),
                );
                self.take_judgement(&j, out, &mut asked);
            }
        }
        asked.record = Some(record);
        Ok(asked)
    }

    /// The gate's judgement of the model's answer, into `out`: its status, a caveat for
    /// each rejection and warning, and the answer when accepted.
    fn take_judgement(&self, j: &AnswerJudgement, out: &mut Answer, asked: &mut Asked) {
        out.status = j.status();
        for r in &j.rejections {
            // Counted once, here; never retried.
            self.client
                .record_invalid_output(Task::Answer, r.reason, &r.detail);
            asked.reasons.push(r.reason);
            out.caveats.push(Caveat {
                reason: r.reason.as_str(),
                detail: self.client.detail(&r.detail),
            });
        }
        for w in &j.warnings {
            let detail = match w.reason {
                Some(r) => format!("{r}: {}", w.detail),
                None => w.detail.clone(),
            };
            out.caveats.push(Caveat {
                reason: w.warning.as_str(),
                detail: self.client.detail(&detail),
            });
        }
        if let Some(a) = j.accepted() {
            out.answer = Some(a.prose().to_owned());
            asked.cited = a.citations().to_vec();
            out.citations = asked.cited.iter().map(|h| h.to_string()).collect();
        }
    }

    /// Record the answer, with the model call when there was one; its id.
    async fn record(
        &self,
        question: &str,
        k: usize,
        out: &Answer,
        sources: &[(Passage, Vec<AttachedClaim>)],
        asked: &Asked,
    ) -> Result<i64, AskError> {
        let caveats = serde_json::to_value(&out.caveats).unwrap_or_default();
        let call = asked.record.as_ref().map(|r| AnswerCall {
            model: &r.model,
            prompt_version: r.prompt_version,
            schema_id: r.schema.id,
            schema_version: r.schema.version,
            schema_sha256: &r.schema.sha256,
            sent_schema_sha256: r.sent_schema_sha256.as_deref(),
            started_at: r.started_at,
            finished_at: r.finished_at,
            duration_ms: u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
            attempts: r.attempts.max(1),
            prompt_tokens: r.usage.map(|u| u.prompt_tokens),
            completion_tokens: r.usage.map(|u| u.completion_tokens),
            excerpt: r.excerpt.as_deref(),
        });
        let id = self
            .store
            .record_answer(&NewAnswer {
                question,
                k,
                status: out.status,
                answer: out.answer.as_deref(),
                citations: &asked.cited,
                sources,
                reasons: &asked.reasons,
                caveats,
                call,
            })
            .await?;
        Ok(id)
    }
}

/// What the store gave for a question ([`Answerer::retrieve`]).
struct Retrieved {
    /// Each passage with the claims whose quotes still hold in it.
    sources: Vec<(Passage, Vec<AttachedClaim>)>,
    /// Claims left out: their quotes no longer match their documents' bytes.
    altered: Vec<(i64, AttachedClaim)>,
    contradictions: Vec<ContradictionOut>,
    /// What the question names that no passage mentions.
    unmentioned: Vec<String>,
    /// The kind of figure the question asks for, when no passage gives one.
    ungiven: Option<FigureKind>,
    /// How many of `sources`, from the first, the question found; the rest were brought
    /// in by a contradiction.
    retrieved: usize,
}

/// What asking the model leaves for the record besides the answer: why it was degraded,
/// the sources the accepted answer cites, and the call itself.
#[derive(Default)]
struct Asked {
    reasons: Vec<Reason>,
    cited: Vec<SourceHandle>,
    record: Option<CallRecord>,
}

/// Why the model is not asked at all, as the caveat of the abstention: nothing was
/// retrieved, or the question names what no source mentions.
fn unanswerable(
    sources: &[(Passage, Vec<AttachedClaim>)],
    unmentioned: &[String],
    ungiven: Option<FigureKind>,
) -> Option<Caveat> {
    if sources.is_empty() {
        // Nothing to answer from: abstain without spending a model call.
        Some(Caveat {
            reason: NO_SOURCES,
            detail: "no stored passage matches the question; the model was not asked".to_owned(),
        })
    } else if !unmentioned.is_empty() {
        // The question names what no source mentions: they cannot answer it, and a
        // model shown them would answer from what they do say.
        Some(Caveat {
            reason: NOT_IN_SOURCES,
            detail: format!(
                "no source mentions {}; the model was not asked",
                unmentioned
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    } else {
        // The question asks for a figure of a kind that no sentence about its names
        // gives: the sources cannot answer it either.
        ungiven.map(|kind| Caveat {
            reason: FIGURE_NOT_GIVEN,
            detail: format!(
                "the question asks for {}; no source gives one about what it names; the model was not asked",
                kind.noun()
            ),
        })
    }
}

/// The caveat for a claim left out because its quote no longer matches its document (an
/// edit outside relata); logged as an error, since `relata evidence verify` should run.
fn source_altered(document_id: i64, c: &AttachedClaim) -> Caveat {
    tracing::error!(
        claim_id = c.claim_id,
        document_id,
        "claim:{} not served: its quote is no longer its document's text at bytes [{}, {}); run `relata evidence verify`",
        c.claim_id,
        c.quote_start,
        c.quote_end
    );
    Caveat {
        reason: SOURCE_ALTERED,
        detail: format!(
            "claim:{} is not shown: its quote is no longer its document's text at bytes [{}, {}); the document was changed outside relata",
            c.claim_id, c.quote_start, c.quote_end
        ),
    }
}

/// The handle of the `i`-th source (0-based).
fn handle(i: usize) -> String {
    SourceHandle::nth(i as u32 + 1).to_string()
}

fn source_out(i: usize, retrieved: bool, p: &Passage, claims: &[AttachedClaim]) -> Source {
    Source {
        handle: handle(i),
        document_id: p.document_id,
        title: p.title.clone(),
        text: p.text.clone(),
        start: p.start,
        end: p.end,
        retrieved,
        claims: claims
            .iter()
            .map(|c| SourceClaim {
                claim_id: c.claim_id,
                statement: c.statement.clone(),
                quote: c.quote.clone(),
                quote_start: c.quote_start,
                quote_end: c.quote_end,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked_field_by_field() {
        let field = |q: &str, k| match check_request(q, k) {
            Err(AskError::BadRequest { field, .. }) => Some(field),
            _ => None,
        };
        assert_eq!(field("Where was Curie born?", 8), None);
        assert_eq!(field("  ", 8), Some("question"));
        assert_eq!(field(&"a".repeat(2_001), 8), Some("question"));
        assert_eq!(field(&"a".repeat(2_000), 8), None);
        assert_eq!(field("a\0b", 8), Some("question"));
        assert_eq!(field("ok?", 0), Some("k"));
        assert_eq!(field("ok?", 21), Some("k"));
        assert_eq!(field("ok?", 20), None);
    }
}
