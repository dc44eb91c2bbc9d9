//! An in-memory `ReviewBackend` for the page's own tests: it holds candidates, tokens and
//! decisions the way the promotion store does (one decision per candidate, a note required
//! to reject, newest history first), so the tests exercise the web layer alone. The page
//! over the real store is tested where the store backend lives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{TimeZone, Utc};
use relata_review_web::{
    BackendResult, Candidate, CandidateBody, CandidateId, CandidatePage, ChainStatus, ClaimView,
    DecideOutcome, Decision, EntityView, HistoryEntry, ReviewBackend, ReviewFilter, WarningView,
};

#[derive(Debug, Default)]
struct Inner {
    tokens: HashMap<String, String>,
    candidates: Vec<Candidate>,
    history: Vec<HistoryEntry>,
    broken: Option<(i64, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct Memory(Arc<Mutex<Inner>>);

impl Memory {
    pub fn with_token(self, name: &str, token: &str) -> Self {
        self.0
            .lock()
            .unwrap()
            .tokens
            .insert(name.to_owned(), token.to_owned());
        self
    }

    pub fn add(&self, c: Candidate) {
        self.0.lock().unwrap().candidates.push(c);
    }

    pub fn break_chain(&self, seq: i64, reason: &str) {
        self.0.lock().unwrap().broken = Some((seq, reason.to_owned()));
    }

    pub fn decisions(&self) -> Vec<HistoryEntry> {
        self.0.lock().unwrap().history.clone()
    }
}

pub fn claim_view(id: i64, statement: &str, chunk: &str, quote: &str) -> ClaimView {
    let start = chunk.find(quote).expect("quote in chunk");
    ClaimView {
        claim_id: id,
        statement: statement.to_owned(),
        subject: "Ada Lovelace".to_owned(),
        quote: quote.to_owned(),
        document_title: Some("Ada Lovelace".to_owned()),
        source: "wiki".to_owned(),
        external_id: format!("doc-{id}"),
        chunk_text: chunk.to_owned(),
        quote_in_chunk: Some(start..start + quote.len()),
    }
}

pub fn claim(id: i64, statement: &str, chunk: &str, quote: &str) -> Candidate {
    Candidate {
        id: CandidateId {
            kind: relata_review_web::RowKind::Claim,
            id,
        },
        pending: true,
        stale: false,
        reasons: vec!["claims need a person's approval (rule: claims-reviewed)".to_owned()],
        proposed_at: Utc
            .with_ymd_and_hms(2026, 12, 1, 10, 0, id as u32 % 60)
            .unwrap(),
        model: "smollm2-135m".to_owned(),
        prompt_version: "extract-p2".to_owned(),
        warnings: vec![WarningView {
            warning: "figure_not_in_quote".to_owned(),
            detail: "1843".to_owned(),
        }],
        body: CandidateBody::Claim(claim_view(id, statement, chunk, quote)),
    }
}

impl ReviewBackend for Memory {
    async fn sign_in(&self, reviewer: &str, secret: &str) -> BackendResult<bool> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .tokens
            .get(reviewer)
            .is_some_and(|t| t == secret))
    }

    async fn token_current(&self, reviewer: &str, token_sha256: &str) -> BackendResult<bool> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .tokens
            .get(reviewer)
            .is_some_and(|t| relata_store::review_token_sha256(t) == token_sha256))
    }

    async fn list(&self, f: &ReviewFilter) -> BackendResult<CandidatePage> {
        let inner = self.0.lock().unwrap();
        let matching: Vec<&Candidate> = inner
            .candidates
            .iter()
            .filter(|c| c.pending)
            .filter(|c| f.kind.is_none_or(|k| c.id.kind == k))
            .filter(|c| {
                f.source.as_deref().is_none_or(|s| match &c.body {
                    CandidateBody::Claim(cl) => cl.source == s,
                    CandidateBody::Entity(e) => e.source == s,
                    CandidateBody::Relation { a, .. } => a.source == s,
                    CandidateBody::Join { a, .. } => a.source == s,
                })
            })
            .collect();
        let mut sorted = matching.clone();
        sorted.sort_by_key(|c| (c.proposed_at, c.id.id));
        Ok(CandidatePage {
            more: sorted.len() as u64 > f.offset + f.limit,
            candidates: sorted
                .into_iter()
                .skip(f.offset as usize)
                .take(f.limit as usize)
                .cloned()
                .collect(),
        })
    }

    async fn show(&self, id: CandidateId) -> BackendResult<Option<Candidate>> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .candidates
            .iter()
            .find(|c| c.id == id)
            .cloned())
    }

    async fn decide(
        &self,
        ids: &[CandidateId],
        decision: Decision,
        reviewer: &str,
        note: Option<&str>,
    ) -> BackendResult<Vec<DecideOutcome>> {
        let mut inner = self.0.lock().unwrap();
        let mut out = Vec::new();
        for id in ids {
            let Some(pos) = inner.candidates.iter().position(|c| c.id == *id) else {
                out.push(DecideOutcome::Refused {
                    reason: "no such candidate".into(),
                });
                continue;
            };
            if !inner.candidates[pos].pending {
                out.push(DecideOutcome::Refused {
                    reason: "already decided".into(),
                });
                continue;
            }
            if decision == Decision::Reject && note.is_none() {
                out.push(DecideOutcome::Refused {
                    reason: "a note is required".into(),
                });
                continue;
            }
            inner.candidates[pos].pending = false;
            let seq = inner.history.len() as i64 + 1;
            inner.history.insert(
                0,
                HistoryEntry {
                    seq,
                    candidate: id.to_string(),
                    decision: decision.as_str().to_owned(),
                    reviewer: reviewer.to_owned(),
                    at: Utc::now(),
                    note: note.map(str::to_owned),
                },
            );
            out.push(DecideOutcome::Recorded { evidence_seq: seq });
        }
        Ok(out)
    }

    async fn history(&self, offset: u64, limit: u64) -> BackendResult<Vec<HistoryEntry>> {
        let inner = self.0.lock().unwrap();
        Ok(inner
            .history
            .iter()
            .skip(offset as usize)
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn verify(&self) -> BackendResult<ChainStatus> {
        let inner = self.0.lock().unwrap();
        Ok(match &inner.broken {
            Some((seq, reason)) => ChainStatus::Broken {
                seq: Some(*seq),
                reason: reason.clone(),
            },
            None => ChainStatus::Intact {
                records: inner.history.len() as u64,
            },
        })
    }
}

pub fn relation(id: i64, a: &Candidate, b: &Candidate) -> Candidate {
    let view = |c: &Candidate| match &c.body {
        CandidateBody::Claim(v) => Box::new(v.clone()),
        _ => panic!("a relation joins two claims"),
    };
    Candidate {
        id: CandidateId {
            kind: relata_review_web::RowKind::Relation,
            id,
        },
        pending: true,
        stale: false,
        reasons: vec!["relation contradicts needs a person's approval".to_owned()],
        proposed_at: Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap(),
        model: "smollm2-135m".to_owned(),
        prompt_version: "classify-p1".to_owned(),
        warnings: Vec::new(),
        body: CandidateBody::Relation {
            relation: "contradicts".to_owned(),
            a: view(a),
            b: view(b),
        },
    }
}

/// A model's proposal that two entities are one thing, with its evidence.
pub fn join(id: i64, a: (i64, &str, &str), b: (i64, &str, &str), quote: &str) -> Candidate {
    let view = |(entity_id, name, chunk): (i64, &str, &str)| {
        Box::new(EntityView {
            entity_id,
            name: name.to_owned(),
            entity_type: "event".to_owned(),
            document_title: Some(format!("About {name}")),
            source: "wiki".to_owned(),
            external_id: format!("doc-{entity_id}"),
            chunk_text: chunk.to_owned(),
        })
    };
    Candidate {
        id: CandidateId {
            kind: relata_review_web::RowKind::Join,
            id,
        },
        pending: true,
        stale: false,
        reasons: vec!["policy rule joins".to_owned()],
        proposed_at: Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap(),
        model: "qwen2.5-0.5b".to_owned(),
        prompt_version: "join-p1".to_owned(),
        warnings: Vec::new(),
        body: CandidateBody::Join {
            a: view(a),
            b: view(b),
            quote: quote.to_owned(),
            quote_from_a: false,
        },
    }
}
