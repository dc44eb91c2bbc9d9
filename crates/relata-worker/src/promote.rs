//! The promoter: runs the promotion policy beside the job loop, never inside it.
//!
//! A commit returns what the policy needs of every row it wrote ([`Candidate`]s), and
//! the job hands them to its worker's promoter through a bounded queue without waiting
//! ([`Proposals::offer`]). Every `interval` the promoter judges what was handed over,
//! in batches, on its own store connection — nothing is read back — then sweeps the
//! store for candidates nobody handed over (a worker without a promoter, one that was
//! killed, a hand-off dropped because the queue was full or the store failed), and
//! refreshes the review-queue gauges. Its failures are logged and tried again on the
//! next tick; nothing it does can hold up a job: a store that cannot record decisions
//! leaves the workers committing and nothing promoted until it can. An evidence log that
//! does not end where its head says is refused by the store with a sentence naming the
//! record, which the promoter logs once (not every tick) until a tick succeeds again.
//!
//! The sweep stops at the highest ids the previous tick saw, so that it leaves the rows
//! committed since then to the workers that committed them: reading those back is the
//! work the hand-off exists to save (BENCHMARKS.md §1b). Whichever path comes first
//! judges a candidate; the other finds it judged and skips it.

use std::future::Future;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use relata_core::{Policy, PolicyDecision, RowKind};
use relata_store::{Candidate, PendingSummary, PromoteCursor, Store, Wait};
use tokio::sync::mpsc;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindDecisionLabels {
    kind: &'static str,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// The promotion metric families.
#[derive(Clone, Debug, Default)]
pub struct PromotionMetrics {
    decisions: Family<KindDecisionLabels, Counter>,
    pending: Family<KindLabels, Gauge>,
    oldest_age: Family<KindLabels, Gauge>,
    stale_after: Gauge,
    handoffs_dropped: Counter,
}

impl PromotionMetrics {
    pub fn register(registry: &mut Registry) -> PromotionMetrics {
        let m = PromotionMetrics::default();
        registry.register(
            "relata_promotion_decisions",
            "Policy decisions recorded by this worker's promoter, by candidate kind and decision (allow, review, deny)",
            m.decisions.clone(),
        );
        registry.register(
            "relata_review_pending",
            "Candidates waiting for a reviewer, by kind (store-wide)",
            m.pending.clone(),
        );
        registry.register(
            "relata_review_oldest_pending_age_seconds",
            "Age of the oldest candidate waiting for a reviewer, by kind (0 when none waits)",
            m.oldest_age.clone(),
        );
        registry.register(
            "relata_review_stale_after_seconds",
            "How old the oldest pending candidate may get before RelataReviewQueueStale fires ([review] stale_after_hours)",
            m.stale_after.clone(),
        );
        registry.register(
            "relata_promotion_handoffs_dropped",
            "Commits whose candidates this worker's promoter could not take (its queue was full) and left to the sweep",
            m.handoffs_dropped.clone(),
        );
        m
    }
}

/// How the promoter came to judge a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgedFrom {
    /// Handed over by the commit that wrote it.
    Commit,
    /// Found by a sweep of the store.
    Sweep,
}

impl JudgedFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            JudgedFrom::Commit => "commit",
            JudgedFrom::Sweep => "sweep",
        }
    }
}

/// A promoter pass recorded decisions.
#[derive(Debug)]
pub struct PromotionDecided {
    pub kind: RowKind,
    pub decision: PolicyDecision,
    pub count: u64,
    pub from: JudgedFrom,
}

impl PromotionDecided {
    pub fn emit(&self, m: &PromotionMetrics) {
        tracing::info!(
            kind = self.kind.as_str(),
            decision = self.decision.as_str(),
            count = self.count,
            from = self.from.as_str(),
            "promotion decisions recorded"
        );
        m.decisions
            .get_or_create(&KindDecisionLabels {
                kind: self.kind.as_str(),
                decision: self.decision.as_str(),
            })
            .inc_by(self.count);
    }
}

/// Commits' candidates the promoter could not take (its queue was full: it was behind,
/// or the store could not record decisions); a sweep judges them instead.
#[derive(Debug)]
pub struct HandoffsDropped {
    pub commits: u64,
}

impl HandoffsDropped {
    pub fn emit(&self, m: &PromotionMetrics) {
        tracing::warn!(
            commits = self.commits,
            "the promoter's queue was full: these commits' candidates are left to the sweep"
        );
        m.handoffs_dropped.inc_by(self.commits);
    }
}

/// The review queue as the store sees it now.
#[derive(Debug)]
pub struct ReviewQueueObserved<'a> {
    pub pending: &'a [PendingSummary],
    pub now: chrono::DateTime<chrono::Utc>,
}

impl ReviewQueueObserved<'_> {
    pub fn emit(&self, m: &PromotionMetrics) {
        for p in self.pending {
            let labels = KindLabels {
                kind: p.kind.as_str(),
            };
            let age = p.oldest.map_or(0, |t| (self.now - t).num_seconds().max(0));
            tracing::debug!(
                kind = p.kind.as_str(),
                pending = p.count,
                oldest_age_s = age,
                "review queue"
            );
            m.pending.get_or_create(&labels).set(p.count);
            m.oldest_age.get_or_create(&labels).set(age);
        }
    }
}

/// The promoter could not record decisions (the store is unavailable or refused); the
/// workers go on committing, and the next tick tries again.
#[derive(Debug)]
pub struct PromotionFailed<'a> {
    pub error: &'a relata_store::StoreError,
}

impl PromotionFailed<'_> {
    pub fn emit(&self) {
        tracing::warn!(
            error = %self.error,
            retryable = self.error.is_retryable(),
            "promotion decisions not recorded this time; candidates stay unpromoted"
        );
    }
}

/// The promoter stopped recording decisions because the evidence log does not end where
/// its head says (a record written behind relata's back, or the last one altered). The
/// store's sentence names the record and what to run; the workers go on committing.
#[derive(Debug)]
pub struct PromotionStopped<'a> {
    pub error: &'a relata_store::StoreError,
}

impl PromotionStopped<'_> {
    pub fn emit(&self) {
        tracing::error!(
            "promotion stopped: {}; extraction and classification go on, and no decision is recorded until the log ends where its head says",
            self.error
        );
    }
}

/// What the promoter says when a tick fails. A log that does not verify fails every tick
/// the same way until a person repairs it: that is said once ([`PromotionStopped`]), and
/// again only when the sentence changes or after a tick that recorded decisions, not a
/// line every interval. Any other failure (an unavailable store) is logged each time, as
/// the next tick may well succeed.
#[derive(Debug, Default)]
struct FailureLog {
    stopped: Option<String>,
}

/// What [`FailureLog`] says of one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Say {
    Failed,
    Stopped,
    Nothing,
}

impl FailureLog {
    fn failed(&mut self, e: &relata_store::StoreError) {
        match self.judge(e) {
            Say::Failed => PromotionFailed { error: e }.emit(),
            Say::Stopped => PromotionStopped { error: e }.emit(),
            Say::Nothing => {}
        }
    }

    fn judge(&mut self, e: &relata_store::StoreError) -> Say {
        if e.kind() != relata_store::ErrorKind::ChainBroken {
            return Say::Failed;
        }
        let said = e.to_string();
        if self.stopped.as_deref() == Some(said.as_str()) {
            return Say::Nothing;
        }
        self.stopped = Some(said);
        Say::Stopped
    }

    fn succeeded(&mut self) {
        if self.stopped.take().is_some() {
            tracing::info!("the evidence log takes decisions again: promotion resumed");
        }
    }
}

/// How the promoter runs.
#[derive(Debug, Clone)]
pub struct PromoterSettings {
    pub interval: Duration,
    /// Candidates of each kind per sweep transaction.
    pub batch: i64,
    pub stale_after: Duration,
}

/// How many commits' candidates may wait for the promoter. At the bench's rate (600 to
/// 800 commits a second on two cores) that is two to three ticks of the default interval;
/// beyond it a commit's candidates are dropped from the hand-off, never waited for, and
/// the sweep judges them.
pub const HANDOFF_CAPACITY: usize = 4096;

/// Handed-over candidates judged per transaction. Larger than a sweep's batch: nothing is
/// read for them, and each transaction's fixed work (the chain's lock and end, the check
/// for candidates a sweep judged first, the commit) is then spread over more decisions.
pub const HANDOFF_BATCH: usize = 4000;

/// The jobs' side of the hand-off to the promoter (cheap to clone).
#[derive(Debug, Clone)]
pub struct Proposals {
    queue: mpsc::Sender<Vec<Candidate>>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Proposals {
    /// Hand a commit's candidates to the promoter, or, when its queue is full, leave
    /// them to the sweep: never waits.
    pub fn offer(&self, candidates: Vec<Candidate>) {
        if candidates.is_empty() {
            return;
        }
        if self.queue.try_send(candidates).is_err() {
            self.dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct Promoter {
    store: Store,
    policy: Policy,
    settings: PromoterSettings,
    metrics: PromotionMetrics,
    handed: mpsc::Receiver<Vec<Candidate>>,
    proposals: Proposals,
}

impl Promoter {
    pub fn new(
        store: Store,
        policy: Policy,
        settings: PromoterSettings,
        metrics: PromotionMetrics,
    ) -> Promoter {
        metrics
            .stale_after
            .set(i64::try_from(settings.stale_after.as_secs()).unwrap_or(i64::MAX));
        let (queue, handed) = mpsc::channel(HANDOFF_CAPACITY);
        Promoter {
            store,
            policy,
            settings,
            metrics,
            handed,
            proposals: Proposals {
                queue,
                dropped: Default::default(),
            },
        }
    }

    /// Where the jobs hand this promoter the candidates their commits wrote.
    pub fn proposals(&self) -> Proposals {
        self.proposals.clone()
    }

    /// Judge what commits have handed over so far, [`HANDOFF_BATCH`] candidates per
    /// transaction.
    /// A batch that cannot be recorded is dropped (the sweep finds its candidates) and
    /// the rest wait in the queue for the next tick.
    async fn judge_handed(&mut self) -> Result<u64, relata_store::StoreError> {
        let dropped = self
            .proposals
            .dropped
            .swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            HandoffsDropped { commits: dropped }.emit(&self.metrics);
        }
        let batch = HANDOFF_BATCH;
        let mut total = 0;
        loop {
            let mut todo: Vec<Candidate> = Vec::new();
            while todo.len() < batch {
                match self.handed.try_recv() {
                    Ok(candidates) => todo.extend(candidates),
                    Err(_) => break,
                }
            }
            if todo.is_empty() {
                return Ok(total);
            }
            let mentions: Vec<i64> = todo
                .iter()
                .map(Candidate::id)
                .filter(|id| id.kind == RowKind::Entity)
                .map(|id| id.id)
                .collect();
            let s = self.store.promote_committed(&self.policy, todo).await?;
            // Beside the commits, like promotion: place the mentions they stored among the
            // canonical entities. A failure leaves them for `relata entities resolve`;
            // meanwhile their claims pair by name.
            if let Err(e) = self.store.resolve_new_entities(&mentions).await {
                tracing::warn!(error = %e, "entity resolution failed; `relata entities resolve` places these mentions");
            }
            self.decided(&s, JudgedFrom::Commit);
            if s.already_judged > 0 {
                tracing::debug!(
                    candidates = s.already_judged,
                    "handed-over candidates a sweep had judged first"
                );
            }
            total += s.total();
        }
    }

    fn decided(&self, s: &relata_store::PromoteSummary, from: JudgedFrom) {
        for (kind, decision, count) in &s.decided {
            PromotionDecided {
                kind: *kind,
                decision: *decision,
                count: *count,
                from,
            }
            .emit(&self.metrics);
        }
    }

    /// One sweep over the candidates above `from` and at most `upto`: judge full batches
    /// until one drains what was there (or, with [`Wait::SkipIfBusy`], another promoter holds the
    /// chain), then refresh the gauges. Returns the decisions recorded and how far the
    /// pass read.
    ///
    /// A pass does not chase the workers: once a batch comes back short, what they
    /// commit after it waits for the next tick. Chasing them turned every tick into
    /// hundreds of small transactions, each paying a batch's fixed reads, its chain
    /// lock and its commit for a few dozen rows (BENCHMARKS.md §1b, series 17).
    pub async fn pass(
        &self,
        wait: Wait,
        from: PromoteCursor,
        upto: PromoteCursor,
    ) -> Result<(u64, PromoteCursor), relata_store::StoreError> {
        let mut total = 0;
        let mut cursor = from;
        loop {
            let s = self
                .store
                .promote_pending(
                    &self.policy,
                    relata_store::Sweep::batch(self.settings.batch)
                        .wait(wait)
                        .after(cursor)
                        .upto(upto),
                )
                .await?;
            cursor = s.reached;
            self.decided(&s, JudgedFrom::Sweep);
            total += s.total();
            if s.busy || !s.more {
                break;
            }
        }
        let pending = self.store.review_pending_summary().await?;
        ReviewQueueObserved {
            pending: &pending,
            now: chrono::Utc::now(),
        }
        .emit(&self.metrics);
        Ok((total, cursor))
    }

    /// One tick: judge what commits handed over, then sweep up to `upto` (the high
    /// water of the tick before) and refresh the gauges. Returns how far the sweep read
    /// and how many decisions the tick recorded.
    async fn tick(
        &mut self,
        from: PromoteCursor,
        upto: PromoteCursor,
    ) -> Result<(PromoteCursor, u64), relata_store::StoreError> {
        let handed = self.judge_handed().await?;
        let (swept, reached) = self.pass(Wait::SkipIfBusy, from, upto).await?;
        Ok((reached, handed + swept))
    }

    /// Tick every `interval` until `shutdown` resolves, then judge what is left (bounded
    /// by `final_deadline`), so a batch run that stops leaves its candidates judged.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>, final_deadline: Duration) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut tick = tokio::time::interval(self.settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sweep = Sweep::default();
        // The first sweep goes up to what is there at start-up: nothing of it will be
        // handed over.
        let mut ceiling: Option<PromoteCursor> = None;
        let mut failures = FailureLog::default();
        loop {
            // A tick waiting on a store that does not answer is abandoned at shutdown
            // (its transaction rolls back), never waited for.
            let from = sweep.floor();
            let next = async {
                tick.tick().await;
                let high = self.store.candidate_high_water().await?;
                let upto = ceiling.replace(high).unwrap_or(high);
                self.tick(from, upto).await
            };
            tokio::select! {
                _ = &mut shutdown => break,
                r = next => match r {
                    Ok((reached, recorded)) => {
                        // Only a decision recorded proves the log takes them again: a
                        // tick with nothing to judge, or one that found another promoter
                        // appending, never looked at its end.
                        if recorded > 0 {
                            failures.succeeded();
                        }
                        sweep.finished(reached);
                    }
                    Err(e) => failures.failed(&e),
                }
            }
        }
        // The jobs have stopped: judge what they handed over, then sweep everything. The
        // sweep waits its turn for the chain instead of skipping: the tick just abandoned
        // may still hold it until its rollback reaches the server, and skipping would
        // leave this run's last candidates unjudged. It reads from the start, so a
        // candidate any earlier sweep went by is judged too.
        let last = async {
            self.judge_handed().await?;
            self.pass(Wait::Block, PromoteCursor::START, PromoteCursor::END)
                .await
        };
        match tokio::time::timeout(final_deadline, last).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => failures.failed(&e),
            Err(_) => tracing::warn!(
                "the last promotion pass did not finish before the deadline; `relata promote` or the next worker judges the rest"
            ),
        }
        self.store.close().await;
    }
}

/// Every this many passes one reads from further back (see [`Sweep`]).
const LONG_PASS_EVERY: u32 = 30;

/// Where each pass of [`Promoter::run`] starts reading.
///
/// A pass starts where the pass before the previous one got to, not where the previous
/// one did: ids are handed out inside the committing transaction, so a job's rows can
/// become visible a moment after a higher id has been judged, and starting one pass back
/// reads them on the next pass. Every [`LONG_PASS_EVERY`]th pass starts where the last
/// such pass got to (about a minute back at the default interval), for a commit slower
/// than that; the first pass, the last one at shutdown and `relata promote` read from the
/// start. A row no pass has read is not lost: it stays unjudged, so unpromoted, until
/// one does. Without a cursor every batch walked past every candidate already judged, a
/// cost that grew with the store (BENCHMARKS.md §1b).
#[derive(Debug, Default)]
struct Sweep {
    passes: u32,
    before_last: PromoteCursor,
    last: PromoteCursor,
    long: PromoteCursor,
}

impl Sweep {
    fn is_long(&self) -> bool {
        self.passes.is_multiple_of(LONG_PASS_EVERY)
    }

    fn floor(&self) -> PromoteCursor {
        if self.is_long() {
            self.long
        } else {
            self.before_last
        }
    }

    fn finished(&mut self, reached: PromoteCursor) {
        if self.is_long() {
            self.long = reached;
        }
        self.before_last = self.last;
        self.last = reached;
        self.passes = self.passes.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(claim: i64) -> PromoteCursor {
        PromoteCursor::START.with(RowKind::Claim, claim)
    }

    /// A damaged log fails every tick alike: it is said once (the store's sentence
    /// names the record and what to run), not once a tick; again when the sentence
    /// changes or after promotion resumed. An unavailable store is logged each time.
    #[test]
    fn a_broken_chain_is_said_once_not_every_tick() {
        let broken = |seq: i64| relata_store::StoreError::ChainBroken {
            seq,
            what: format!(
                "evidence record {seq} is in the log, past the chain's head (record {}): it was written behind relata's back",
                seq - 1
            ),
        };
        let mut log = FailureLog::default();
        let mut said = Vec::new();
        for _ in 0..5 {
            said.push(log.judge(&broken(3)));
        }
        said.push(log.judge(&broken(4)));
        log.succeeded();
        said.push(log.judge(&broken(4)));
        for _ in 0..2 {
            said.push(log.judge(&relata_store::StoreError::InvalidInput(
                "anything else".into(),
            )));
        }
        use Say::*;
        assert_eq!(
            said,
            [
                Stopped, Nothing, Nothing, Nothing, Nothing, Stopped, Stopped, Failed, Failed
            ]
        );
        let sentence = broken(3).to_string();
        assert!(
            sentence.contains("evidence record 3") && sentence.contains("relata evidence verify"),
            "{sentence}"
        );
    }

    #[test]
    fn a_pass_starts_where_the_pass_before_the_last_one_got_to() {
        let mut s = Sweep::default();
        assert_eq!(
            s.floor(),
            PromoteCursor::START,
            "the first pass reads everything"
        );
        s.finished(at(100));
        assert_eq!(
            s.floor(),
            PromoteCursor::START,
            "one pass back is the start"
        );
        s.finished(at(250));
        assert_eq!(s.floor(), at(100));
        s.finished(at(400));
        assert_eq!(s.floor(), at(250));
    }

    #[test]
    fn every_thirtieth_pass_starts_where_the_last_long_pass_got_to() {
        let mut s = Sweep::default();
        let mut floors = Vec::new();
        for n in 0..=(2 * LONG_PASS_EVERY) {
            floors.push(s.floor());
            s.finished(at(i64::from(n + 1) * 10));
        }
        let n = LONG_PASS_EVERY as usize;
        assert_eq!(floors[0], PromoteCursor::START);
        assert_eq!(floors[n], at(10), "the first pass reached 10");
        assert_eq!(floors[2 * n], at(i64::from(LONG_PASS_EVERY + 1) * 10));
        assert_eq!(floors[n - 1], at(i64::from(LONG_PASS_EVERY - 2) * 10));
    }
}
