//! Judging candidates: a sweep over the rows nobody has judged yet, or the rows a commit
//! has just written, each verdict recorded in the chain and, when a person must decide,
//! in the review queue.

use relata_core::{ActorKind, CandidateId, Policy, PolicyDecision, PromotionState, RowKind};

use super::candidate::{CANDIDATE_READS, Candidate, read_candidates};
use super::chain::{Chain, Head, NewRecord, Wait, begin_append};
use crate::Store;
use crate::copy_binary::CopyBinary;
use crate::error::{Result, StoreError};
/// What one [`Store::promote_pending`] run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PromoteSummary {
    /// Decisions recorded, by candidate kind and policy decision.
    pub decided: Vec<(RowKind, PolicyDecision, u64)>,
    /// Another promoter held the evidence log; nothing was done (try again later).
    pub busy: bool,
    /// Where the next batch of the same pass goes on from.
    #[serde(skip)]
    pub reached: PromoteCursor,
    /// A kind's read stopped at the limit, so more candidates may wait above `reached`;
    /// when false, every candidate above the batch's cursor that was committed when it
    /// read was judged, by it or before it (bar a row whose document is not on record,
    /// which stays unjudged).
    #[serde(skip)]
    pub more: bool,
    /// Candidates offered to [`Store::promote_committed`] that a sweep had judged first
    /// (skipped: a candidate is judged once).
    #[serde(skip)]
    pub already_judged: u64,
}

/// One batch of a sweep: which candidates [`Store::promote_pending`] judges, and what it
/// does when another promoter holds the chain. Built from [`Sweep::batch`], which reads
/// the whole store and waits its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// At most this many candidates of each kind.
    pub batch: i64,
    pub wait: Wait,
    /// Only candidates above this cursor.
    pub after: PromoteCursor,
    /// Only candidates at most this cursor.
    pub upto: PromoteCursor,
}

impl Sweep {
    /// Up to `batch` candidates of each kind, anywhere in the store, waiting its turn.
    pub fn batch(batch: i64) -> Sweep {
        Sweep {
            batch,
            wait: Wait::Block,
            after: PromoteCursor::START,
            upto: PromoteCursor::END,
        }
    }

    /// This sweep over the candidates above `after` only.
    pub fn after(self, after: PromoteCursor) -> Sweep {
        Sweep { after, ..self }
    }

    /// This sweep over the candidates at most `upto` only.
    pub fn upto(self, upto: PromoteCursor) -> Sweep {
        Sweep { upto, ..self }
    }

    /// This sweep, with `wait` for a busy chain.
    pub fn wait(self, wait: Wait) -> Sweep {
        Sweep { wait, ..self }
    }
}

/// How far a promotion pass has read, per candidate kind: the highest id it has read,
/// every row up to which was judged (by it or before it) when it was read.
/// Ids are the candidate tables' own (`entities.id`, `claims.id`, `claim_relations.id`,
/// `entity_join_proposals.id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromoteCursor {
    entity: i64,
    claim: i64,
    relation: i64,
    join: i64,
}

impl PromoteCursor {
    /// Before every candidate: a pass from here reads the whole store.
    pub const START: PromoteCursor = PromoteCursor {
        entity: 0,
        claim: 0,
        relation: 0,
        join: 0,
    };

    /// After every candidate: a pass up to here has no ceiling.
    pub const END: PromoteCursor = PromoteCursor {
        entity: i64::MAX,
        claim: i64::MAX,
        relation: i64::MAX,
        join: i64::MAX,
    };

    pub fn get(&self, kind: RowKind) -> i64 {
        *{ *self }.slot(kind)
    }

    /// This cursor with `kind`'s position set to `id`.
    pub fn with(mut self, kind: RowKind, id: i64) -> PromoteCursor {
        *self.slot(kind) = id;
        self
    }

    fn slot(&mut self, kind: RowKind) -> &mut i64 {
        match kind {
            RowKind::Entity => &mut self.entity,
            RowKind::Claim => &mut self.claim,
            RowKind::Relation => &mut self.relation,
            RowKind::Join => &mut self.join,
        }
    }

    fn advance(&mut self, kind: RowKind, id: i64) {
        let at = self.slot(kind);
        *at = (*at).max(id);
    }
}

impl PromoteSummary {
    pub fn total(&self) -> u64 {
        self.decided.iter().map(|(_, _, n)| n).sum()
    }

    fn add(&mut self, kind: RowKind, d: PolicyDecision) {
        match self
            .decided
            .iter_mut()
            .find(|(k, dd, _)| *k == kind && *dd == d)
        {
            Some((_, _, n)) => *n += 1,
            None => self.decided.push((kind, d, 1)),
        }
    }
}

/// Up to `limit` ids of `kind` above `after` and at most `upto` that have no decision (no
/// evidence record) yet, in order, and how far the read got: the last id returned when
/// the limit was reached, else the last id that exists (every row up to it was judged
/// when read).
async fn unjudged_ids(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    ids_above: &'static str,
    (after, upto): (i64, i64),
    limit: i64,
) -> Result<(Vec<i64>, i64)> {
    let window = limit.max(1);
    let mut todo = Vec::new();
    let mut reached = after;
    loop {
        let ids: Vec<i64> = sqlx::query_scalar(ids_above)
            .bind(reached)
            .bind(window)
            .bind(upto)
            .fetch_all(&mut *tx)
            .await?;
        let Some(&last) = ids.last() else {
            return Ok((todo, reached));
        };
        // The window is every id in (reached, last].
        let judged: std::collections::HashSet<i64> = decided_between(tx, kind, reached, last)
            .await?
            .into_iter()
            .collect();
        for id in ids {
            if !judged.contains(&id) {
                todo.push(id);
                if i64::try_from(todo.len()).unwrap_or(i64::MAX) >= limit {
                    return Ok((todo, id));
                }
            }
        }
        reached = last;
    }
}

/// A candidate's sources or revisions: one for an entity or claim, up to two for a
/// relation; anything else is a bug upstream, refused before it is recorded.
fn one_or_two<T>(id: CandidateId, items: &[T]) -> Result<&[T]> {
    if matches!(items.len(), 1 | 2) {
        Ok(items)
    } else {
        Err(StoreError::Invariant(format!(
            "candidate {id} has {} sources or revisions; one or two expected",
            items.len()
        )))
    }
}

/// Which of `candidates` already have a decision: one range scan per kind present (a
/// batch's ids of one kind lie close together), not a probe per candidate.
async fn judged_among(
    tx: &mut sqlx::PgConnection,
    candidates: &[Candidate],
) -> Result<std::collections::HashSet<CandidateId>> {
    let mut judged = std::collections::HashSet::new();
    for &kind in RowKind::ALL {
        let ids = candidates
            .iter()
            .filter(|c| c.id.kind == kind)
            .map(|c| c.id.id);
        let (Some(lo), Some(hi)) = (ids.clone().min(), ids.max()) else {
            continue;
        };
        let found = decided_between(tx, kind, lo.saturating_sub(1), hi).await?;
        judged.extend(found.into_iter().map(|id| CandidateId { kind, id }));
    }
    Ok(judged)
}

/// The ids of `kind` in `(after, upto]` that have a decision (an evidence record; one id
/// per record, so a reviewed one comes twice): one range scan of the log's candidate
/// index, where `= ANY` over the ids descended it once per id.
async fn decided_between(
    tx: &mut sqlx::PgConnection,
    kind: RowKind,
    after: i64,
    upto: i64,
) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT candidate_id FROM evidence
         WHERE candidate_kind = $1 AND candidate_id > $2 AND candidate_id <= $3",
    )
    .bind(kind.as_str())
    .bind(after)
    .bind(upto)
    .fetch_all(&mut *tx)
    .await?)
}

/// Evaluate the policy on each candidate and record every verdict: one evidence record
/// appended to the chain (whose end `head` this transaction has locked), and for a
/// candidate held for a person a row in the review queue (`promotions`); each kind of
/// write one statement for the whole batch. An allowed or denied candidate's state is its
/// record (`relata_candidate_state`): a second row would only repeat it.
async fn record_verdicts(
    tx: &mut sqlx::PgConnection,
    head: Head,
    policy: &Policy,
    todo: Vec<Candidate>,
    summary: &mut PromoteSummary,
) -> Result<()> {
    if todo.is_empty() {
        return Ok(());
    }
    let mut chain = Chain::new(head)?;
    let decided_at = chain.now;
    // Only held candidates get a queue row; a batch that holds none sends no `COPY` at
    // all (`copy_into` skips an empty one).
    let mut queue = CopyBinary::new(11, 0);
    for c in todo {
        let verdict = policy.evaluate(&c.facts);
        if verdict.decision == PolicyDecision::Review {
            queue
                .text(c.id.kind.as_str())
                .int(c.id.id)
                .text(PromotionState::after_policy(verdict.decision).as_str())
                .text(verdict.decision.as_str())
                .text(&verdict.rule)
                .array(&verdict.reasons)
                .array(one_or_two(c.id, &c.facts.sources)?)
                .array(one_or_two(c.id, &c.revision_ids)?)
                .int(chain.next_seq())
                .timestamptz(c.proposed_at)
                .timestamptz(decided_at)
                .end_row()?;
        }
        summary.add(c.id.kind, verdict.decision);
        chain.append(NewRecord {
            candidate: c.id,
            candidate_sha256: c.sha256,
            call_id: c.call_id,
            task_version: c.task_version,
            actor_kind: ActorKind::Policy,
            actor: verdict.rule,
            decision: verdict.decision.into(),
            reasons: verdict.reasons,
            note: None,
            via: None,
        });
    }
    chain.write(&mut *tx).await?;
    queue
        .copy_into(
            &mut *tx,
            "COPY promotions (candidate_kind, candidate_id, state, policy_decision, rule,
                 reasons, sources, revision_ids, evidence_seq, proposed_at, decided_at)
             FROM STDIN (FORMAT binary)",
        )
        .await?;
    Ok(())
}

impl Store {
    /// Judge up to `sweep.batch` candidates of each kind in `(sweep.after, sweep.upto]`
    /// that have no decision yet, and record each verdict with its evidence in one
    /// transaction. A run that must not queue behind another promoter
    /// ([`Wait::SkipIfBusy`]) returns at once with `busy` set when one is appending.
    ///
    /// A pass goes on from the batch before it by passing `summary.reached` as the next
    /// `after`, so that each batch reads only new rows instead of walking past every
    /// candidate already judged (that walk grows with the store and made a pass
    /// quadratic). A candidate committed below the cursor after the pass went by is not
    /// lost: it stays unjudged, so unpromoted, until a pass from [`PromoteCursor::START`]
    /// finds it. A worker's sweep sets `upto` to leave the rows committed since its last
    /// tick to the workers that committed them, which judge them from what the commit
    /// returned ([`Store::promote_committed`]) instead of reading them back.
    pub async fn promote_pending(&self, policy: &Policy, sweep: Sweep) -> Result<PromoteSummary> {
        let Sweep {
            batch: limit,
            wait,
            after,
            upto,
        } = sweep;
        let (mut tx, head) = begin_append(&self.pool, wait).await?;
        let Some(head) = head else {
            return Ok(PromoteSummary {
                busy: true,
                reached: after,
                more: true,
                ..PromoteSummary::default()
            });
        };
        let mut todo = Vec::new();
        let mut reached = after;
        let mut more = false;
        for (kind, ids_above, _) in CANDIDATE_READS {
            let (ids, read_to) = unjudged_ids(
                &mut tx,
                kind,
                ids_above,
                (after.get(kind), upto.get(kind)),
                limit,
            )
            .await?;
            reached.advance(kind, read_to);
            more |= i64::try_from(ids.len()).unwrap_or(i64::MAX) >= limit;
            todo.extend(read_candidates(&mut tx, kind, &ids).await?);
        }
        let mut summary = PromoteSummary {
            reached,
            more,
            ..PromoteSummary::default()
        };
        record_verdicts(&mut tx, head, policy, todo, &mut summary).await?;
        tx.commit().await?;
        Ok(summary)
    }

    /// Judge candidates a commit has just written, from what the commit returned
    /// ([`Committed::candidates`](crate::Committed::candidates)): nothing is read back
    /// but which of them a sweep has judged meanwhile (those are skipped and counted in
    /// `already_judged`). One transaction; it waits its turn for the chain's end, which
    /// only promoters and reviewers hold, never a commit.
    pub async fn promote_committed(
        &self,
        policy: &Policy,
        candidates: Vec<Candidate>,
    ) -> Result<PromoteSummary> {
        let mut summary = PromoteSummary::default();
        if candidates.is_empty() {
            return Ok(summary);
        }
        let (mut tx, head) = begin_append(&self.pool, Wait::Block).await?;
        let head = head.ok_or_else(|| StoreError::Invariant("evidence_head has no row".into()))?;
        let judged = judged_among(&mut tx, &candidates).await?;
        let offered = candidates.len();
        let todo: Vec<Candidate> = candidates
            .into_iter()
            .filter(|c| !judged.contains(&c.id))
            .collect();
        summary.already_judged = (offered - todo.len()) as u64;
        record_verdicts(&mut tx, head, policy, todo, &mut summary).await?;
        tx.commit().await?;
        Ok(summary)
    }

    /// The highest id of each candidate kind now: where a sweep that must leave later
    /// commits alone stops ([`Sweep::upto`]).
    pub async fn candidate_high_water(&self) -> Result<PromoteCursor> {
        let (entity, claim, relation, join): (Option<i64>, Option<i64>, Option<i64>, Option<i64>) =
            sqlx::query_as(
                "SELECT (SELECT max(id) FROM entities), (SELECT max(id) FROM claims),
                        (SELECT max(id) FROM claim_relations),
                        (SELECT max(id) FROM entity_join_proposals)",
            )
            .fetch_one(&self.pool)
            .await?;
        Ok(PromoteCursor {
            entity: entity.unwrap_or(0),
            claim: claim.unwrap_or(0),
            relation: relation.unwrap_or(0),
            join: join.unwrap_or(0),
        })
    }
}
