//! What the people who decide see and do: the review queue, one candidate in full, a
//! reviewer's decision, and the counts behind the gauges and `relata status`.

use chrono::{DateTime, Utc};
use relata_core::{ActorKind, CandidateId, Decision, PromotionState, Reviewer, RowKind, Warning};

use super::chain::{
    Chain, EvidenceRecord, EvidenceRow, NewRecord, Via, Wait, begin_append, evidence_record,
};
use crate::error::{Result, StoreError};
use crate::{Store, parse_label};

/// Which candidates [`Store::review_list`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewFilter {
    pub kind: Option<RowKind>,
    /// Only candidates every document of which has this source.
    pub source: Option<String>,
    /// `Pending` for the review queue; `Proposed` is refused (not yet judged).
    pub state: PromotionState,
    pub limit: i64,
}

impl Default for ReviewFilter {
    fn default() -> Self {
        ReviewFilter {
            kind: None,
            source: None,
            state: PromotionState::Pending,
            limit: 100,
        }
    }
}

/// A candidate as the review queue shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReviewCandidate {
    /// `claim:42`: what approve and reject take.
    pub id: CandidateId,
    pub kind: RowKind,
    pub state: PromotionState,
    /// The policy rule that decided (absent while `proposed`).
    pub rule: Option<String>,
    /// Why it needs review (warnings, relation kind, "no policy rule matched").
    pub reasons: Vec<String>,
    pub sources: Vec<String>,
    /// Its document has a newer revision than the one it was proposed from: it can be
    /// rejected but not approved.
    pub stale: bool,
    pub proposed_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    /// The row itself.
    pub row: serde_json::Value,
}

/// The chunk a claim or entity came from, with a claim's quote located in it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChunkContext {
    pub chunk_id: i64,
    pub text: String,
    /// UTF-8 byte offsets of the claim's quote within `text`.
    pub quote: Option<(usize, usize)>,
}

/// A warning the gate attached to the candidate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CandidateWarning {
    pub warning: Warning,
    pub reason: Option<String>,
    pub detail: String,
}

/// The model call that proposed a candidate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct CallRecord {
    pub id: i64,
    pub job_id: String,
    pub model: String,
    pub prompt_version: String,
    pub schema_id: String,
    pub schema_version: i32,
    pub schema_sha256: String,
    pub started_at: DateTime<Utc>,
}

/// Everything `relata review show` prints.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CandidateDetail {
    #[serde(flatten)]
    pub candidate: ReviewCandidate,
    pub chunk: Option<ChunkContext>,
    pub warnings: Vec<CandidateWarning>,
    pub call: Option<CallRecord>,
    pub evidence: Vec<EvidenceRecord>,
}

/// Why a reviewer's decision about one candidate was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalReason {
    /// No such candidate.
    NotFound,
    /// The policy has not judged it yet (`relata promote` runs the policy now).
    NotJudged,
    /// It is not pending: already promoted, rejected or denied.
    AlreadyDecided(PromotionState),
    /// Its document changed since it was proposed.
    Stale,
    /// Its content is not what the policy judged (edited behind relata's back).
    Changed,
    /// The log holds it for a person but the review queue has no row for it (the row
    /// was deleted behind relata's back).
    NotQueued,
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefusalReason::NotFound => f.write_str("no such candidate"),
            RefusalReason::NotJudged => {
                f.write_str("not yet judged by the policy (`relata promote` runs it now)")
            }
            RefusalReason::AlreadyDecided(s) => write!(f, "already decided: {s}"),
            RefusalReason::Stale => f.write_str(
                "stale: its document changed since it was proposed (it can be rejected, not approved)",
            ),
            RefusalReason::Changed => f.write_str(
                "its content differs from what the policy judged (run `relata evidence verify`)",
            ),
            RefusalReason::NotQueued => f.write_str(
                "held for review, but its row in the review queue is missing (run `relata evidence verify`)",
            ),
        }
    }
}

/// One refused candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub id: CandidateId,
    pub reason: RefusalReason,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.id, self.reason)
    }
}

/// A decision recorded by [`Store::review_decide`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decided {
    pub id: CandidateId,
    pub state: PromotionState,
    pub evidence_seq: i64,
}

/// Pending candidates of one kind, for the review-queue gauges.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingSummary {
    pub kind: RowKind,
    pub count: i64,
    pub oldest: Option<DateTime<Utc>>,
}

/// Candidates of one kind in one state, for `relata status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CandidateCount {
    pub kind: RowKind,
    pub state: PromotionState,
    pub count: i64,
}

impl Store {
    /// Candidates in one state (the review queue by default), oldest first.
    pub async fn review_list(&self, filter: &ReviewFilter) -> Result<Vec<ReviewCandidate>> {
        if filter.state == PromotionState::Proposed {
            return Err(StoreError::InvalidInput(
                "candidates not yet judged by the policy have no review state; run `relata promote`"
                    .into(),
            ));
        }
        let rows = sqlx::query_as::<_, DecidedRow>(concat!(
            candidate_select!(),
            " WHERE p.state = $1
                AND ($2::text IS NULL OR p.candidate_kind = $2)
                AND ($3::text IS NULL OR p.sources = ARRAY[$3::text])
              ORDER BY p.proposed_at, p.candidate_kind, p.candidate_id
              LIMIT $4"
        ))
        .bind(filter.state.as_str())
        .bind(filter.kind.map(RowKind::as_str))
        .bind(filter.source.as_deref())
        .bind(filter.limit)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(review_candidate).collect()
    }

    /// One candidate with its chunk, warnings, model call and evidence; `None` when it
    /// does not exist. Also for candidates not yet judged (`proposed`).
    pub async fn review_show(&self, id: CandidateId) -> Result<Option<CandidateDetail>> {
        let row: Option<serde_json::Value> =
            sqlx::query_scalar("SELECT relata_candidate_row($1, $2)")
                .bind(id.kind.as_str())
                .bind(id.id)
                .fetch_one(&self.pool)
                .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let judged = sqlx::query_as::<_, DecidedRow>(concat!(
            candidate_select!(),
            " WHERE p.candidate_kind = $1 AND p.candidate_id = $2"
        ))
        .bind(id.kind.as_str())
        .bind(id.id)
        .fetch_optional(&self.pool)
        .await?;
        let candidate = match judged {
            Some(r) => review_candidate(r)?,
            None => ReviewCandidate {
                id,
                kind: id.kind,
                state: PromotionState::Proposed,
                rule: None,
                reasons: Vec::new(),
                sources: Vec::new(),
                stale: false,
                proposed_at: None,
                decided_at: None,
                row: row.clone(),
            },
        };
        let field = |k: &str| row.get(k).and_then(serde_json::Value::as_i64);
        let chunk = match (id.kind, field("chunk_id")) {
            (RowKind::Relation, _) | (_, None) => None,
            (_, Some(chunk_id)) => Some(
                self.chunk_context(chunk_id, field("quote_start").zip(field("quote_end")))
                    .await?,
            ),
        };
        let warnings = self.candidate_warnings(id).await?;
        let call = match field("call_id") {
            None => None,
            Some(call_id) => {
                sqlx::query_as::<_, CallRecord>(
                    "SELECT id, job_id, model, prompt_version, schema_id, schema_version,
                            schema_sha256, started_at
                     FROM model_calls WHERE id = $1",
                )
                .bind(call_id)
                .fetch_optional(&self.pool)
                .await?
            }
        };
        let evidence = self.evidence_history(Some(id), i64::MAX).await?;
        Ok(Some(CandidateDetail {
            candidate,
            chunk,
            warnings,
            call,
            evidence,
        }))
    }

    /// Record a reviewer's decision about pending candidates: all of them or none. Each
    /// must be pending, unchanged since the policy judged it (its canonical content hashes
    /// as the evidence says) and — to be approved — not stale (its document has no newer
    /// revision). A rejection needs a note. Refusals come back as
    /// [`StoreError::ReviewRefused`], naming every refused candidate.
    ///
    /// `via` says how the decision was made, and goes on each record (and into its hash).
    /// A log that does not end where its head says refuses every decision with
    /// [`StoreError::ChainBroken`], naming the record.
    pub async fn review_decide(
        &self,
        ids: &[CandidateId],
        decision: Decision,
        reviewer: &Reviewer,
        note: Option<&str>,
        via: &Via,
    ) -> Result<Vec<Decided>> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if decision == Decision::Reject && note.is_none() {
            return Err(StoreError::InvalidInput(
                "a rejection needs a note saying why (--note)".into(),
            ));
        }
        if ids.is_empty() {
            return Err(StoreError::InvalidInput("no candidate named".into()));
        }
        let mut unique = ids.to_vec();
        unique.sort();
        unique.dedup();
        let (mut tx, head) = begin_append(&self.pool, Wait::Block).await?;
        let head = head.ok_or_else(|| StoreError::Invariant("evidence_head has no row".into()))?;
        let mut refusals = Vec::new();
        let mut ok = Vec::new();
        for id in &unique {
            match decidable(&mut tx, *id, decision).await? {
                Ok(queued) => ok.push((*id, queued)),
                Err(reason) => refusals.push(Refusal { id: *id, reason }),
            }
        }
        if !refusals.is_empty() {
            return Err(StoreError::ReviewRefused(refusals));
        }
        let mut chain = Chain::new(head)?;
        let state = PromotionState::after_review(decision);
        let mut decided = Vec::with_capacity(ok.len());
        for (id, queued) in ok {
            let seq = chain.append(NewRecord {
                candidate: id,
                candidate_sha256: queued.judged_sha256,
                call_id: queued.call_id,
                task_version: queued.task_version,
                actor_kind: ActorKind::Reviewer,
                actor: reviewer.name().to_owned(),
                decision: decision.into(),
                reasons: Vec::new(),
                note: note.map(str::to_owned),
                via: Some(via.clone()),
            });
            decided.push(Decided {
                id,
                state,
                evidence_seq: seq,
            });
        }
        let at = chain.now;
        chain.write(&mut tx).await?;
        for d in &decided {
            sqlx::query(
                "UPDATE promotions SET state = $3, evidence_seq = $4, decided_at = $5
                 WHERE candidate_kind = $1 AND candidate_id = $2",
            )
            .bind(d.id.kind.as_str())
            .bind(d.id.id)
            .bind(d.state.as_str())
            .bind(d.evidence_seq)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(decided)
    }

    /// The last `limit` evidence records (of one candidate, or all), in chain order.
    pub async fn evidence_history(
        &self,
        candidate: Option<CandidateId>,
        limit: i64,
    ) -> Result<Vec<EvidenceRecord>> {
        let rows = sqlx::query_as::<_, EvidenceRow>(concat!(
            "SELECT * FROM (",
            evidence_select!(),
            " WHERE ($1::text IS NULL OR (candidate_kind = $1 AND candidate_id = $2))
              ORDER BY seq DESC LIMIT $3) t ORDER BY seq"
        ))
        .bind(candidate.map(|c| c.kind.as_str()))
        .bind(candidate.map(|c| c.id))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(evidence_record).collect()
    }

    /// Pending candidates by kind, with the oldest's proposal time.
    pub async fn review_pending_summary(&self) -> Result<Vec<PendingSummary>> {
        let rows = sqlx::query_as::<_, PendingRow>(
            "SELECT candidate_kind AS kind, count(*) AS count, min(proposed_at) AS oldest
             FROM promotions
             WHERE state = 'pending' GROUP BY candidate_kind ORDER BY candidate_kind",
        )
        .fetch_all(&self.pool)
        .await?;
        let found: Vec<PendingSummary> = rows
            .into_iter()
            .map(|r| {
                Ok(PendingSummary {
                    kind: parse_label(r.kind)?,
                    count: r.count,
                    oldest: r.oldest,
                })
            })
            .collect::<Result<_>>()?;
        // Every kind, so a gauge drops to zero when its queue empties.
        Ok(RowKind::ALL
            .iter()
            .map(|k| {
                found
                    .iter()
                    .find(|f| f.kind == *k)
                    .cloned()
                    .unwrap_or(PendingSummary {
                        kind: *k,
                        count: 0,
                        oldest: None,
                    })
            })
            .collect())
    }

    /// Candidates by kind and state (`proposed`: not yet judged).
    pub async fn candidate_counts(&self) -> Result<Vec<CandidateCount>> {
        sqlx::query_as::<_, CountRow>(
            "SELECT kind, state, count(*) AS count FROM candidate_states GROUP BY kind, state
             ORDER BY kind, state",
        )
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(|r| {
            Ok(CandidateCount {
                kind: parse_label(r.kind)?,
                state: parse_label(r.state)?,
                count: r.count,
            })
        })
        .collect()
    }
}

/// A queued candidate as a reviewer's decision reads it (its row locked), with the
/// evidence record that queued it.
#[derive(sqlx::FromRow)]
struct QueuedRow {
    state: String,
    /// Its canonical content's hash now; null when the row is gone.
    now_sha256: Option<String>,
    /// The hash the policy judged.
    judged_sha256: String,
    call_id: Option<i64>,
    task_version: String,
    stale: bool,
}

/// Whether a reviewer may decide `id` now: its queue row (locked until the transaction
/// ends), or why not.
async fn decidable(
    tx: &mut sqlx::PgConnection,
    id: CandidateId,
    decision: Decision,
) -> Result<std::result::Result<QueuedRow, RefusalReason>> {
    let queued = sqlx::query_as::<_, QueuedRow>(
        "SELECT p.state,
                relata_candidate_sha256(p.candidate_kind, p.candidate_id) AS now_sha256,
                encode(e.candidate_sha256, 'hex') AS judged_sha256, e.call_id, e.task_version,
                EXISTS (SELECT 1 FROM document_revisions dr
                        JOIN documents d ON d.id = dr.document_id
                        WHERE dr.id = ANY (p.revision_ids)
                          AND d.current_revision_id <> dr.id) AS stale
         FROM promotions p JOIN evidence e ON e.seq = p.evidence_seq
         WHERE p.candidate_kind = $1 AND p.candidate_id = $2
         FOR UPDATE OF p",
    )
    .bind(id.kind.as_str())
    .bind(id.id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(queued) = queued else {
        // Not in the review queue: the policy allowed or denied it (its record says
        // which), has not judged it, or it does not exist.
        let state: Option<String> = sqlx::query_scalar(
            "SELECT relata_candidate_state($1, $2)
             WHERE relata_candidate_sha256($1, $2) IS NOT NULL",
        )
        .bind(id.kind.as_str())
        .bind(id.id)
        .fetch_optional(&mut *tx)
        .await?;
        return Ok(Err(match state.map(parse_label).transpose()? {
            None => RefusalReason::NotFound,
            Some(PromotionState::Proposed) => RefusalReason::NotJudged,
            Some(PromotionState::Pending) => RefusalReason::NotQueued,
            Some(decided) => RefusalReason::AlreadyDecided(decided),
        }));
    };
    let state: PromotionState = parse_label(queued.state.clone())?;
    Ok(if state != PromotionState::Pending {
        Err(RefusalReason::AlreadyDecided(state))
    } else if queued.now_sha256.as_deref() != Some(queued.judged_sha256.as_str()) {
        Err(RefusalReason::Changed)
    } else if queued.stale && decision == Decision::Approve {
        Err(RefusalReason::Stale)
    } else {
        Ok(queued)
    })
}

/// A decided candidate's columns as [`candidate_select!`] reads them.
#[derive(sqlx::FromRow)]
struct DecidedRow {
    candidate_kind: String,
    candidate_id: i64,
    state: String,
    rule: String,
    reasons: Vec<String>,
    sources: Vec<String>,
    stale: bool,
    proposed_at: DateTime<Utc>,
    decided_at: DateTime<Utc>,
    row: serde_json::Value,
}

fn review_candidate(r: DecidedRow) -> Result<ReviewCandidate> {
    let kind: RowKind = parse_label(r.candidate_kind)?;
    Ok(ReviewCandidate {
        id: CandidateId {
            kind,
            id: r.candidate_id,
        },
        kind,
        state: parse_label(r.state)?,
        rule: Some(r.rule),
        reasons: r.reasons,
        sources: r.sources,
        stale: r.stale,
        proposed_at: Some(r.proposed_at),
        decided_at: Some(r.decided_at),
        row: r.row,
    })
}

#[derive(sqlx::FromRow)]
struct ChunkRow {
    text: String,
    start_byte: i32,
}

#[derive(sqlx::FromRow)]
struct WarningDetailRow {
    warning: String,
    reason: Option<String>,
    detail: String,
}

#[derive(sqlx::FromRow)]
struct CountRow {
    kind: String,
    state: String,
    count: i64,
}

#[derive(sqlx::FromRow)]
struct PendingRow {
    kind: String,
    count: i64,
    oldest: Option<DateTime<Utc>>,
}

/// How a document is named on the review page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentHeading {
    pub source: String,
    pub external_id: String,
    pub title: Option<String>,
}

impl Store {
    /// The chunk a claim or entity came from, with the claim's quote (document byte
    /// offsets) located in it when it lies inside on character boundaries.
    async fn chunk_context(
        &self,
        chunk_id: i64,
        quote: Option<(i64, i64)>,
    ) -> Result<ChunkContext> {
        let chunk =
            sqlx::query_as::<_, ChunkRow>("SELECT text, start_byte FROM chunks WHERE id = $1")
                .bind(chunk_id)
                .fetch_one(&self.pool)
                .await?;
        let text = chunk.text;
        let start = i64::from(chunk.start_byte);
        let quote = quote.and_then(|(qs, qe)| {
            let s = usize::try_from(qs - start).ok();
            let e = usize::try_from(qe - start).ok();
            s.zip(e).filter(|(s, e)| {
                s < e && *e <= text.len() && text.is_char_boundary(*s) && text.is_char_boundary(*e)
            })
        });
        Ok(ChunkContext {
            chunk_id,
            text,
            quote,
        })
    }

    /// The warnings the gate attached to a candidate, in the order it attached them.
    async fn candidate_warnings(&self, id: CandidateId) -> Result<Vec<CandidateWarning>> {
        let column = match id.kind {
            RowKind::Entity => "entity_id",
            RowKind::Claim => "claim_id",
            RowKind::Relation => "relation_id",
            // A join proposal carries no warnings: the gate accepts it whole or not at all.
            RowKind::Join => return Ok(Vec::new()),
        };
        sqlx::query_as::<_, WarningDetailRow>(sqlx::AssertSqlSafe(format!(
            "SELECT warning, reason, detail FROM warnings WHERE {column} = $1 ORDER BY id"
        )))
        .bind(id.id)
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(|r| {
            Ok(CandidateWarning {
                warning: parse_label(r.warning)?,
                reason: r.reason,
                detail: r.detail,
            })
        })
        .collect()
    }

    /// A document's source, external id and title, for a candidate's card on the review
    /// page; `None` when there is no such document.
    pub async fn document_heading(&self, document_id: i64) -> Result<Option<DocumentHeading>> {
        let row: Option<(String, String, Option<String>)> =
            sqlx::query_as("SELECT source, external_id, title FROM documents WHERE id = $1")
                .bind(document_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(source, external_id, title)| DocumentHeading {
            source,
            external_id,
            title,
        }))
    }

    /// The evidence records of reviewers' decisions (not the policy's), newest first:
    /// the review page's history.
    pub async fn reviewer_decisions(&self, offset: i64, limit: i64) -> Result<Vec<EvidenceRecord>> {
        let rows = sqlx::query_as::<_, EvidenceRow>(concat!(
            evidence_select!(),
            " WHERE actor_kind = 'reviewer' ORDER BY seq DESC OFFSET $1 LIMIT $2"
        ))
        .bind(offset.max(0))
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(evidence_record).collect()
    }
}
