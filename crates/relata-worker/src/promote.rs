//! The promoter: runs the promotion policy beside the job loop, never inside it.
//!
//! Every `interval` it judges the candidates without a decision, in batches, on its own
//! store connection, and refreshes the review-queue gauges. Its failures are logged and
//! tried again on the next tick; nothing it does can hold up a job: a store that cannot
//! record decisions leaves the workers committing and nothing promoted until it can.
//! Several workers' promoters share the chain's end by skipping a tick when another holds
//! it, so none of them waits for another either.

use std::future::Future;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use relata_core::{Policy, PolicyDecision, RowKind};
use relata_store::{PendingSummary, PromoteCursor, Store};

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
        m
    }
}

/// A promoter pass recorded decisions.
#[derive(Debug)]
pub struct PromotionDecided {
    pub kind: RowKind,
    pub decision: PolicyDecision,
    pub count: u64,
}

impl PromotionDecided {
    pub fn emit(&self, m: &PromotionMetrics) {
        tracing::info!(
            kind = self.kind.as_str(),
            decision = self.decision.as_str(),
            count = self.count,
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

/// How the promoter runs.
#[derive(Debug, Clone)]
pub struct PromoterSettings {
    pub interval: Duration,
    /// Candidates of each kind per transaction.
    pub batch: i64,
    pub stale_after: Duration,
}

/// See the module docs.
#[derive(Debug)]
pub struct Promoter {
    store: Store,
    policy: Policy,
    settings: PromoterSettings,
    metrics: PromotionMetrics,
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
        Promoter {
            store,
            policy,
            settings,
            metrics,
        }
    }

    /// One pass over the candidates above `from`: judge full batches until one drains
    /// what was there (or, unless `wait`, another promoter holds the chain), then
    /// refresh the gauges. Returns the decisions recorded and how far the pass read.
    ///
    /// A pass does not chase the workers: once a batch comes back short, what they
    /// commit after it waits for the next tick. Chasing them turned every tick into
    /// hundreds of small transactions, each paying a batch's fixed reads, its chain
    /// lock and its commit for a few dozen rows (BENCHMARKS.md §1b, series 17).
    pub async fn pass(
        &self,
        wait: bool,
        from: PromoteCursor,
    ) -> Result<(u64, PromoteCursor), relata_store::StoreError> {
        let mut total = 0;
        let mut cursor = from;
        loop {
            let s = self
                .store
                .promote_pending_after(&self.policy, self.settings.batch, wait, cursor)
                .await?;
            cursor = s.reached;
            for (kind, decision, count) in &s.decided {
                PromotionDecided {
                    kind: *kind,
                    decision: *decision,
                    count: *count,
                }
                .emit(&self.metrics);
            }
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

    /// Pass every `interval` until `shutdown` resolves, then one last pass (bounded by
    /// `final_deadline`), so a batch run that stops leaves its candidates judged.
    pub async fn run(self, shutdown: impl Future<Output = ()>, final_deadline: Duration) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut tick = tokio::time::interval(self.settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sweep = Sweep::default();
        loop {
            // A pass waiting on a store that does not answer is abandoned at shutdown
            // (its transaction rolls back), never waited for.
            let from = sweep.floor();
            let next = async {
                tick.tick().await;
                self.pass(false, from).await
            };
            tokio::select! {
                _ = &mut shutdown => break,
                r = next => match r {
                    Ok((_, reached)) => sweep.finished(reached),
                    Err(e) => PromotionFailed { error: &e }.emit(),
                }
            }
        }
        // The last pass waits its turn for the chain instead of skipping: the pass just
        // abandoned may still hold it until its rollback reaches the server, and skipping
        // would leave this run's last candidates unjudged. It reads from the start, so a
        // candidate any earlier pass went by is judged too.
        match tokio::time::timeout(final_deadline, self.pass(true, PromoteCursor::START)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => PromotionFailed { error: &e }.emit(),
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
