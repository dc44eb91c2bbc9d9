//! What the worker loop owns between events, and how it waits for the next one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use relata_queue::Deliveries;
use tokio::sync::Semaphore;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Interval;

use super::consume::{Pause, next_delivery};
use super::{Event, RunSummary, WorkerSettings};
use crate::JobOutcome;
use crate::metrics::ProgressTally;

/// The loop's state: everything an event may change.
#[derive(Debug)]
pub(super) struct LoopState {
    /// The stream deliveries come from; `None` while paused.
    pub(super) deliveries: Option<Deliveries>,
    /// Streams ended by a pause, kept open until their held deliveries are settled.
    pub(super) retired: Vec<Deliveries>,
    /// Jobs in flight, each with the consumption generation it was taken in.
    pub(super) running: JoinSet<(u64, JobOutcome)>,
    /// Bounds what runs; the prefetch already bounds what the broker sends.
    pub(super) slots: Arc<Semaphore>,
    pub(super) pause: Pause,
    /// Why the run ends refused by the provider, once it must (the `exit` policy, or a
    /// batch run paused too long).
    pub(super) refused: Option<String>,
    pub(super) summary: RunSummary,
    pub(super) tally: ProgressTally,
    progress_tick: Interval,
}

impl LoopState {
    pub(super) fn new(
        settings: &WorkerSettings,
        deliveries: Deliveries,
        now: Instant,
    ) -> LoopState {
        let mut progress_tick = tokio::time::interval_at(
            tokio::time::Instant::now() + settings.summary_interval,
            settings.summary_interval,
        );
        progress_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        LoopState {
            deliveries: Some(deliveries),
            retired: Vec::new(),
            running: JoinSet::new(),
            slots: Arc::new(Semaphore::new(usize::from(settings.concurrency.max(1)))),
            pause: Pause::new(settings, now),
            refused: None,
            summary: RunSummary::default(),
            tally: ProgressTally::new(now),
            progress_tick,
        }
    }

    /// Wait for whichever source has something first.
    pub(super) async fn next_event<S: Future<Output = ()>>(
        &mut self,
        shutdown: Pin<&mut S>,
        idle: Option<Duration>,
    ) -> Event {
        // Restarted on every event: idle means nothing at all happened for that long.
        let idle_timer = sleep_until(idle.map(|d| Instant::now() + d));
        // A batch run (`exit_when_idle`) must not wait forever on a deployment that
        // stays refused: paused for that long, it exits as the `exit` policy would.
        let paused_too_long = sleep_until(self.pause.give_up_at());
        let probe = sleep_until(self.pause.probe_at());
        let has_running = !self.running.is_empty();
        let may_idle = !has_running && self.pause.is_consuming();
        tokio::select! {
            () = shutdown => Event::Shutdown,
            () = paused_too_long => Event::PausedTooLong,
            Some(done) = self.running.join_next(), if has_running => Event::JobDone(done),
            next = next_delivery(&mut self.deliveries) => Event::Delivery(next.map(Box::new)),
            () = probe => Event::Probe,
            _ = self.progress_tick.tick() => Event::Progress,
            () = idle_timer, if may_idle => Event::Idle,
        }
    }

    /// Count a finished job in the run's summary.
    pub(super) fn record(&mut self, done: Result<JobOutcome, JoinError>) {
        match done {
            Ok(outcome) => *self.summary.outcomes.entry(outcome).or_default() += 1,
            Err(e) if e.is_panic() => {
                tracing::error!("a job handler panicked; its delivery will be redelivered")
            }
            Err(_) => {}
        }
    }
}

/// Resolves at `at`, or never.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
