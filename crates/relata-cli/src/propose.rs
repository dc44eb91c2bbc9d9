//! `relata entities propose`: the model asked about the pairs no rule decides, each
//! answer judged by the gate, and every `one` handed to the promotion policy, which holds
//! it for a person. Nothing here joins anything.

use anyhow::{Context, Result};
use relata_core::{JoinVerdict, SourceHandle, Task};
use relata_model::{JoinSide, ModelCall, ModelClient, ModelError, ModelMetrics};
use relata_store::entities::UndecidedPair;
use relata_store::{AskSide, JoinAnswer, JoinCommit, NewModelCall, Store, join_job_id};
use relata_validate::{JoinInput, JoinSource, Rejection, judge_join};
use tracing::Instrument;

use crate::config::Config;
use crate::out::outln;
use crate::pipeline::store;

/// What a run asked and what came of it.
#[derive(Debug, Default, serde::Serialize)]
struct Summary {
    asked: u64,
    /// Verdicts the gate accepted, by verdict.
    one: u64,
    two: u64,
    unsure: u64,
    /// Responses the gate refused (each on `relata_model_invalid_output_total`).
    rejected: u64,
    /// Calls that failed (transport, provider): nothing recorded, asked again next run.
    failed: u64,
    /// Pairs asked before with the same model and prompt.
    already_asked: u64,
    /// `one` proposals the policy held for a person, and any it allowed.
    held_for_review: u64,
    allowed: u64,
    pairs: Vec<Asked>,
}

/// What came of one ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    /// A verdict the gate accepted.
    One,
    Two,
    Unsure,
    /// The response refused (by the gate, or at the envelope).
    Rejected,
    /// The call failed: nothing recorded.
    Failed,
}

impl From<JoinVerdict> for Outcome {
    fn from(v: JoinVerdict) -> Outcome {
        match v {
            JoinVerdict::One => Outcome::One,
            JoinVerdict::Two => Outcome::Two,
            JoinVerdict::Unsure => Outcome::Unsure,
        }
    }
}

/// One pair asked.
#[derive(Debug, serde::Serialize)]
struct Asked {
    entity: i64,
    other: i64,
    name: String,
    other_name: String,
    outcome: Outcome,
    /// The evidence, or why the response was refused.
    detail: String,
    /// The candidate a `one` became (`join:ID`).
    candidate: Option<String>,
}

pub async fn propose(config: &Config, limit: u32, json: bool) -> Result<u8> {
    let store = store(config).await?;
    let policy = config.policy()?;
    let client =
        ModelClient::new(config.model()?, ModelMetrics::default()).context("model client")?;
    let version = client.task_version(Task::Join);
    let pairs = store
        .undecided_pairs(limit as usize)
        .await
        .context("reading the undecided pairs")?;
    let ids: Vec<_> = pairs
        .iter()
        .map(|p| join_job_id(&version, p.a.mention_id, p.b.mention_id))
        .collect();
    let on_record = store
        .jobs_on_record(&ids)
        .await
        .context("reading the jobs on record")?;
    let mut summary = Summary::default();
    let mut candidates = Vec::new();
    let progress = crate::backfill::progress_bar(pairs.len() as u64, "pairs");
    for (pair, id) in pairs.iter().zip(&ids) {
        progress.inc(1);
        if on_record.contains(id.as_str()) {
            summary.already_asked += 1;
            continue;
        }
        let span = tracing::info_span!("join", job_id = %id, task = %Task::Join);
        let asked = ask(&store, &client, pair)
            .instrument(span)
            .await
            .with_context(|| {
                format!(
                    "asking about entities {} and {}",
                    pair.a.mention_id, pair.b.mention_id
                )
            })?;
        let Some((mut asked, candidate)) = asked else {
            summary.already_asked += 1;
            continue;
        };
        summary.asked += 1;
        *match asked.outcome {
            Outcome::One => &mut summary.one,
            Outcome::Two => &mut summary.two,
            Outcome::Unsure => &mut summary.unsure,
            Outcome::Rejected => &mut summary.rejected,
            Outcome::Failed => &mut summary.failed,
        } += 1;
        if let Some(c) = candidate {
            asked.candidate = Some(c.id().to_string());
            candidates.push(c);
        }
        summary.pairs.push(asked);
    }
    progress.finish_and_clear();
    let decided = store
        .promote_committed(&policy, candidates)
        .await
        .context("judging the proposals by the policy")?;
    for (_, decision, n) in &decided.decided {
        match decision {
            relata_core::PolicyDecision::Review => summary.held_for_review += n,
            relata_core::PolicyDecision::Allow => summary.allowed += n,
            relata_core::PolicyDecision::Deny => {}
        }
    }
    report(&summary, json)?;
    Ok(u8::from(summary.failed > 0))
}

/// Ask about one pair and record the answer; `None` when another run recorded it first.
async fn ask(
    store: &Store,
    client: &ModelClient,
    pair: &UndecidedPair,
) -> Result<Option<(Asked, Option<relata_store::Candidate>)>> {
    let (a, b) = (pair.a.mention_id, pair.b.mention_id);
    let sides = store.join_sides(a, b).await?;
    let shown = shown(&sides);
    let call = client.join(&shown).await;
    let mut asked = Asked {
        entity: a,
        other: b,
        name: sides[0].name.clone(),
        other_name: sides[1].name.clone(),
        outcome: Outcome::Failed,
        detail: String::new(),
        candidate: None,
    };
    let ModelCall { record, result } = call;
    let completion = match result {
        Err(ModelError::InvalidOutput { reason, detail }) => {
            // Unusable at envelope level: counted once by the adapter.
            let rejection = Rejection {
                kind: None,
                index: None,
                reason,
                detail: client.detail(&detail),
            };
            let call = relata_worker::new_model_call(&record, None);
            return commit(
                store,
                [a, b],
                &call,
                &JoinAnswer::Rejected {
                    rejection: &rejection,
                    envelope: true,
                },
                asked,
            )
            .await;
        }
        Err(e) => {
            // Transport (after the adapter's retries) or a provider refusal: nothing to
            // judge, nothing recorded; the next run asks again.
            asked.outcome = Outcome::Failed;
            asked.detail = client.detail(&e.to_string());
            return Ok(Some((asked, None)));
        }
        Ok(c) => c,
    };
    judge_and_commit(
        store,
        client,
        (&sides, &shown),
        &record,
        &completion.content,
        asked,
    )
    .await
}

/// The sides as the model is shown them: each sentence under its handle, numbered over
/// both sides.
fn shown(sides: &[AskSide; 2]) -> [JoinSide; 2] {
    let mut n = 0;
    sides.each_ref().map(|s| JoinSide {
        name: s.name.clone(),
        entity_type: s.entity_type,
        title: s.title.clone(),
        sentences: s
            .sentences
            .iter()
            .map(|t| {
                n += 1;
                (SourceHandle::nth(n), t.text.clone())
            })
            .collect(),
    })
}

/// Judge a response by the gate and record it: the verdict with its evidence, or the
/// rejection (counted once here).
async fn judge_and_commit(
    store: &Store,
    client: &ModelClient,
    (sides, shown): (&[AskSide; 2], &[JoinSide; 2]),
    record: &relata_model::CallRecord,
    content: &str,
    mut asked: Asked,
) -> Result<Option<(Asked, Option<relata_store::Candidate>)>> {
    let (a, b) = (sides[0].mention_id, sides[1].mention_id);
    let all: Vec<(SourceHandle, &relata_store::AskedSentence)> = shown
        .iter()
        .zip(sides)
        .flat_map(|(s, side): (&JoinSide, &AskSide)| {
            s.sentences.iter().map(|(h, _)| *h).zip(&side.sentences)
        })
        .collect();
    let sources: Vec<JoinSource<'_>> = all
        .iter()
        .map(|(h, s)| JoinSource {
            handle: *h,
            text: &s.text,
        })
        .collect();
    let input = JoinInput {
        sources: &sources,
        names: [&sides[0].name, &sides[1].name],
    };
    match judge_join(&input, content.as_bytes()) {
        Ok(accepted) => {
            let handle = accepted.source.to_string();
            let sentence = all
                .iter()
                .find(|(h, _)| *h == accepted.source)
                .map(|(_, s)| *s)
                .context("the gate accepted a handle that was not sent")?;
            let call = relata_worker::new_model_call(record, None);
            asked.detail = format!("{handle}: \"{}\"", accepted.quote);
            commit(
                store,
                [a, b],
                &call,
                &JoinAnswer::Accepted {
                    verdict: accepted.verdict,
                    source_handle: &handle,
                    sentence,
                    start: accepted.start,
                    end: accepted.end,
                },
                asked,
            )
            .await
        }
        Err(rejection) => {
            client.record_invalid_output(Task::Join, rejection.reason, &rejection.detail);
            let call = relata_worker::new_model_call(record, Some(client.excerpt(content)));
            commit(
                store,
                [a, b],
                &call,
                &JoinAnswer::Rejected {
                    rejection: &rejection,
                    envelope: false,
                },
                asked,
            )
            .await
        }
    }
}

async fn commit(
    store: &Store,
    sides: [i64; 2],
    call: &NewModelCall,
    answer: &JoinAnswer<'_>,
    mut asked: Asked,
) -> Result<Option<(Asked, Option<relata_store::Candidate>)>> {
    match answer {
        JoinAnswer::Accepted { verdict, .. } => asked.outcome = (*verdict).into(),
        JoinAnswer::Rejected { rejection, .. } => {
            asked.outcome = Outcome::Rejected;
            asked.detail = format!("{}: {}", rejection.reason, rejection.detail);
        }
    }
    match store
        .commit_join(sides, call, answer)
        .await
        .context("recording the answer")?
    {
        JoinCommit::AlreadyAsked => Ok(None),
        JoinCommit::Committed { candidate, .. } => Ok(Some((asked, candidate))),
    }
}

fn report(s: &Summary, json: bool) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string(s)?)?;
        return Ok(());
    }
    for p in &s.pairs {
        let verdict = match p.outcome {
            Outcome::One => "one thing",
            Outcome::Two => "two things",
            Outcome::Unsure => "cannot tell",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
        };
        outln!(
            "entity {} {:?} / entity {} {:?}: {verdict} — {}",
            p.entity,
            p.name,
            p.other,
            p.other_name,
            p.detail
        )?;
        if let Some(c) = &p.candidate {
            outln!("  proposal {c}: relata review show {c}")?;
        }
    }
    outln!(
        "{} pairs asked: {} one thing, {} two things, {} cannot tell, {} refused by the gate, {} failed; {} asked before",
        s.asked,
        s.one,
        s.two,
        s.unsure,
        s.rejected,
        s.failed,
        s.already_asked
    )?;
    outln!(
        "{} proposals held for a person (relata review list --kind join), {} allowed by a policy rule; an approved join is applied by relata entities resolve",
        s.held_for_review,
        s.allowed
    )?;
    Ok(())
}
