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
use relata_store::{PendingSummary, Store};

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

    /// One pass: judge batches until none is left (or, unless `wait`, another promoter
    /// holds the chain), then refresh the gauges. Returns the decisions recorded.
    pub async fn pass(&self, wait: bool) -> Result<u64, relata_store::StoreError> {
        let mut total = 0;
        loop {
            let s = self
                .store
                .promote_pending(&self.policy, self.settings.batch, wait)
                .await?;
            for (kind, decision, count) in &s.decided {
                PromotionDecided {
                    kind: *kind,
                    decision: *decision,
                    count: *count,
                }
                .emit(&self.metrics);
            }
            total += s.total();
            if s.busy || s.total() == 0 {
                break;
            }
        }
        let pending = self.store.review_pending_summary().await?;
        ReviewQueueObserved {
            pending: &pending,
            now: chrono::Utc::now(),
        }
        .emit(&self.metrics);
        Ok(total)
    }

    /// Pass every `interval` until `shutdown` resolves, then one last pass (bounded by
    /// `final_deadline`), so a batch run that stops leaves its candidates judged.
    pub async fn run(self, shutdown: impl Future<Output = ()>, final_deadline: Duration) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut tick = tokio::time::interval(self.settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // A pass waiting on a store that does not answer is abandoned at shutdown
            // (its transaction rolls back), never waited for.
            let next = async {
                tick.tick().await;
                self.pass(false).await
            };
            tokio::select! {
                _ = &mut shutdown => break,
                r = next => {
                    if let Err(e) = r {
                        PromotionFailed { error: &e }.emit();
                    }
                }
            }
        }
        // The last pass waits its turn for the chain instead of skipping: the pass just
        // abandoned may still hold it until its rollback reaches the server, and skipping
        // would leave this run's last candidates unjudged.
        match tokio::time::timeout(final_deadline, self.pass(true)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => PromotionFailed { error: &e }.emit(),
            Err(_) => tracing::warn!(
                "the last promotion pass did not finish before the deadline; `relata promote` or the next worker judges the rest"
            ),
        }
        self.store.close().await;
    }
}
