//! The page over the promotion store: what `relata serve` uses. Every call is one of the
//! store's own (`review_list`, `review_show`, `review_decide`, `evidence_verify`, the
//! reviewers' decisions, the sign-in tokens), so a decision made here meets the same
//! conditions as `relata review approve|reject` and writes the same evidence record.

use chrono::{DateTime, Utc};
use relata_core::{CandidateId, Decision, PromotionState, Reviewers, RowKind};
use relata_store::{
    CandidateDetail, ErrorKind, ReviewFilter as StoreFilter, Store, StoreError, Via,
};

use crate::backend::{
    BackendError, BackendResult, Candidate, CandidateBody, CandidatePage, ChainStatus, ClaimView,
    DecideOutcome, EntityView, HistoryEntry, ReviewBackend, ReviewFilter, WarningView,
};

/// Deepest page the queue serves: the store lists from the oldest, so page N reads
/// N × 20 rows.
pub const MAX_QUEUE_DEPTH: u64 = 10_000;

/// The review page's backend over the store, with the configured reviewers.
#[derive(Debug, Clone)]
pub struct StoreBackend {
    store: Store,
    reviewers: Reviewers,
}

impl StoreBackend {
    pub fn new(store: Store, reviewers: Reviewers) -> StoreBackend {
        StoreBackend { store, reviewers }
    }

    async fn claim_view(&self, detail: &CandidateDetail) -> BackendResult<Option<ClaimView>> {
        let row = &detail.candidate.row;
        let (Some(document_id), Some(chunk)) = (int(row, "document_id"), detail.chunk.as_ref())
        else {
            return Ok(None);
        };
        let heading = self
            .store
            .document_heading(document_id)
            .await
            .map_err(failure)?;
        Ok(Some(ClaimView {
            claim_id: detail.candidate.id.id,
            statement: text(row, "statement"),
            subject: text(row, "subject"),
            quote: text(row, "quote"),
            document_title: heading.as_ref().and_then(|h| h.title.clone()),
            source: heading
                .as_ref()
                .map(|h| h.source.clone())
                .unwrap_or_default(),
            external_id: heading.map(|h| h.external_id).unwrap_or_default(),
            chunk_text: chunk.text.clone(),
            quote_in_chunk: chunk.quote.map(|(s, e)| s..e),
        }))
    }

    async fn entity_view(&self, detail: &CandidateDetail) -> BackendResult<EntityView> {
        let row = &detail.candidate.row;
        let heading = match int(row, "document_id") {
            Some(d) => self.store.document_heading(d).await.map_err(failure)?,
            None => None,
        };
        Ok(EntityView {
            entity_id: detail.candidate.id.id,
            name: text(row, "name"),
            entity_type: text(row, "type"),
            document_title: heading.as_ref().and_then(|h| h.title.clone()),
            source: heading
                .as_ref()
                .map(|h| h.source.clone())
                .unwrap_or_default(),
            external_id: heading.map(|h| h.external_id).unwrap_or_default(),
            chunk_text: detail
                .chunk
                .as_ref()
                .map(|c| c.text.clone())
                .unwrap_or_default(),
        })
    }

    /// The two candidates a row is drawn from (a relation's claims, a join's entities),
    /// named by the row's `keys`; `None` when either is gone.
    async fn drawn_from(
        &self,
        row: &serde_json::Value,
        kind: RowKind,
        keys: [&str; 2],
    ) -> BackendResult<Option<[CandidateDetail; 2]>> {
        let [Some(a), Some(b)] = keys.map(|k| int(row, k).map(|id| CandidateId { kind, id }))
        else {
            return Ok(None);
        };
        let show = |id| async move { self.store.review_show(id).await.map_err(failure) };
        Ok(match (show(a).await?, show(b).await?) {
            (Some(a), Some(b)) => Some([a, b]),
            _ => None,
        })
    }

    async fn candidate(&self, id: CandidateId) -> BackendResult<Option<Candidate>> {
        let Some(detail) = self.store.review_show(id).await.map_err(failure)? else {
            return Ok(None);
        };
        let row = &detail.candidate.row;
        let body = match id.kind {
            RowKind::Claim => match self.claim_view(&detail).await? {
                Some(v) => CandidateBody::Claim(v),
                None => return Ok(None),
            },
            RowKind::Entity => CandidateBody::Entity(self.entity_view(&detail).await?),
            RowKind::Relation => {
                let Some([a, b]) = self
                    .drawn_from(row, RowKind::Claim, ["claim_a", "claim_b"])
                    .await?
                else {
                    return Ok(None);
                };
                let (Some(a), Some(b)) = (self.claim_view(&a).await?, self.claim_view(&b).await?)
                else {
                    return Ok(None);
                };
                CandidateBody::Relation {
                    relation: text(row, "relation"),
                    a: Box::new(a),
                    b: Box::new(b),
                }
            }
            RowKind::Join => {
                let Some([a, b]) = self
                    .drawn_from(row, RowKind::Entity, ["entity_id", "joined_to"])
                    .await?
                else {
                    return Ok(None);
                };
                CandidateBody::Join {
                    quote_from_a: int(row, "evidence_document_id") == int(row, "document_a"),
                    a: Box::new(self.entity_view(&a).await?),
                    b: Box::new(self.entity_view(&b).await?),
                    quote: text(row, "quote"),
                }
            }
        };
        let c = &detail.candidate;
        let started = detail.call.as_ref().map(|c| c.started_at);
        Ok(Some(Candidate {
            id,
            pending: c.state == PromotionState::Pending,
            stale: c.stale,
            // The deciding rule first, then what about the row led there.
            reasons: c
                .rule
                .iter()
                .map(|r| format!("policy rule {r}"))
                .chain(c.reasons.iter().cloned())
                .collect(),
            proposed_at: c
                .proposed_at
                .or(started)
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
            model: detail
                .call
                .as_ref()
                .map(|c| c.model.clone())
                .unwrap_or_else(|| "(no model call on record)".to_owned()),
            prompt_version: detail
                .call
                .as_ref()
                .map(|c| c.prompt_version.clone())
                .unwrap_or_default(),
            warnings: detail
                .warnings
                .iter()
                .map(|w| WarningView {
                    warning: w.warning.as_str().to_owned(),
                    detail: match &w.reason {
                        Some(r) => format!("{r}: {}", w.detail),
                        None => w.detail.clone(),
                    },
                })
                .collect(),
            body,
        }))
    }
}

fn int(row: &serde_json::Value, key: &str) -> Option<i64> {
    row.get(key).and_then(serde_json::Value::as_i64)
}

fn text(row: &serde_json::Value, key: &str) -> String {
    row.get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn failure(e: StoreError) -> BackendError {
    BackendError {
        retryable: e.is_retryable(),
        // The store's sentence names the record and what to run; a database error's
        // words are for the server log, not the page.
        shown: e.kind() == ErrorKind::ChainBroken,
        message: e.to_string(),
    }
}

impl ReviewBackend for StoreBackend {
    async fn sign_in(&self, reviewer: &str, secret: &str) -> BackendResult<bool> {
        // Only a configured name can sign in, whatever tokens the store still holds for
        // people no longer listed.
        if self.reviewers.get(reviewer).is_err() {
            return Ok(false);
        }
        self.store
            .check_review_token(reviewer, secret)
            .await
            .map_err(failure)
    }

    async fn token_current(&self, reviewer: &str, token_sha256: &str) -> BackendResult<bool> {
        if self.reviewers.get(reviewer).is_err() {
            return Ok(false);
        }
        self.store
            .check_review_token_sha256(reviewer, token_sha256)
            .await
            .map_err(failure)
    }

    async fn list(&self, f: &ReviewFilter) -> BackendResult<CandidatePage> {
        let end = (f.offset + f.limit).min(MAX_QUEUE_DEPTH);
        let rows = self
            .store
            .review_list(&StoreFilter {
                kind: f.kind,
                source: f.source.clone(),
                state: PromotionState::Pending,
                limit: (end + 1) as i64,
            })
            .await
            .map_err(failure)?;
        let more = rows.len() as u64 > end && end < MAX_QUEUE_DEPTH;
        let mut candidates = Vec::new();
        for r in rows.iter().skip(f.offset as usize).take(f.limit as usize) {
            if let Some(c) = self.candidate(r.id).await? {
                candidates.push(c);
            }
        }
        Ok(CandidatePage { candidates, more })
    }

    async fn show(&self, id: CandidateId) -> BackendResult<Option<Candidate>> {
        self.candidate(id).await
    }

    async fn decide(
        &self,
        ids: &[CandidateId],
        decision: Decision,
        reviewer: &str,
        note: Option<&str>,
    ) -> BackendResult<Vec<DecideOutcome>> {
        let refuse_all = |reason: String| {
            ids.iter()
                .map(|_| DecideOutcome::Refused {
                    reason: reason.clone(),
                })
                .collect()
        };
        let reviewer = match self.reviewers.get(reviewer) {
            Ok(r) => r,
            Err(e) => return Ok(refuse_all(e.to_string())),
        };
        // The page's reviewer is the session's, so that is how the decision was made.
        match self
            .store
            .review_decide(ids, decision, &reviewer, note, &Via::ReviewPage)
            .await
        {
            Ok(done) => Ok(ids
                .iter()
                .map(|id| match done.iter().find(|d| d.id == *id) {
                    Some(d) => DecideOutcome::Recorded {
                        evidence_seq: d.evidence_seq,
                    },
                    None => DecideOutcome::Refused {
                        reason: "the store did not record it".to_owned(),
                    },
                })
                .collect()),
            // All or none, as on the command line: name each refused candidate's reason,
            // and say why the others were left alone.
            Err(StoreError::ReviewRefused(refusals)) => Ok(ids
                .iter()
                .map(|id| DecideOutcome::Refused {
                    reason: match refusals.iter().find(|r| r.id == *id) {
                        Some(r) => r.reason.to_string(),
                        None => "left undecided: a selection is decided all or none, and another candidate in it was refused".to_owned(),
                    },
                })
                .collect()),
            Err(e) if e.kind() == ErrorKind::InvalidInput => Ok(refuse_all(e.to_string())),
            Err(e) => Err(failure(e)),
        }
    }

    async fn history(&self, offset: u64, limit: u64) -> BackendResult<Vec<HistoryEntry>> {
        let records = self
            .store
            .reviewer_decisions(offset as i64, limit as i64)
            .await
            .map_err(failure)?;
        Ok(records
            .into_iter()
            .map(|r| HistoryEntry {
                seq: r.seq,
                candidate: r.candidate.to_string(),
                decision: r.decision.as_str().to_owned(),
                reviewer: r.actor,
                at: r.decided_at,
                note: r.note,
            })
            .collect())
    }

    async fn verify(&self) -> BackendResult<ChainStatus> {
        let report = self.store.evidence_verify().await.map_err(failure)?;
        Ok(match report.problem {
            None => ChainStatus::Intact {
                records: report.records.max(0) as u64,
            },
            Some(p) => ChainStatus::Broken {
                seq: p.seq,
                reason: p.to_string(),
            },
        })
    }
}
