//! Taking deliveries, and the pause that stops taking them while the provider refuses the
//! deployment.
//!
//! [`Pause`] is the pause and resume state machine as a plain value: it is told what
//! happened and when, and answers what to do, so that it is tested without a broker. The
//! worker methods below carry its answers out against the broker, the readiness flag and
//! the metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use relata_queue::{Deliveries, Delivery};
use tokio::task::JoinError;

use super::settle::Settle;
use super::state::LoopState;
use super::{Control, Worker, WorkerSettings};
use crate::metrics::{ConsumptionPaused, ConsumptionResumed};
use crate::{JobOutcome, OnProviderRefusal};

/// Whether the worker takes deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Consuming,
    /// Consumption cancelled after a refusal; deliveries already received go back
    /// untried until the stream ends.
    Pausing,
    /// Not consuming; the provider is asked again at the probe time.
    Paused,
}

/// What to do with a delivery that has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    Run,
    /// Received before a pause's cancel took effect: back untried.
    Hold,
}

/// A pause has begun: consumption must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Paused {
    /// The first wait before the provider is asked again.
    pub(super) retry_in: Duration,
    /// The policy is to exit once the stream has ended, not to wait for the provider.
    pub(super) exiting: bool,
}

/// What the end of the delivery stream means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamEnd {
    /// A pause took effect: keep the stream until its held deliveries are settled, and
    /// ask the provider again at [`Pause::probe_at`].
    Paused,
    /// A pause took effect and the policy is to exit.
    Exit,
    /// The broker ended the stream of its own accord: the run is over.
    Closed,
}

/// The pause and resume state machine.
#[derive(Debug)]
pub(super) struct Pause {
    flow: Flow,
    /// Bumped on each resume. A job carries the generation it was taken in: a refusal
    /// from a job taken before a resume must not pause the worker again.
    generation: u64,
    paused_at: Instant,
    probe_delay: Duration,
    probe_at: Instant,
    retry_min: Duration,
    retry_max: Duration,
    exit_on_refusal: bool,
    give_up_after: Option<Duration>,
}

impl Pause {
    pub(super) fn new(settings: &WorkerSettings, now: Instant) -> Pause {
        Pause {
            flow: Flow::Consuming,
            generation: 0,
            paused_at: now,
            probe_delay: settings.provider_retry_min,
            probe_at: now,
            retry_min: settings.provider_retry_min,
            retry_max: settings.provider_retry_max,
            exit_on_refusal: settings.on_provider_refusal == OnProviderRefusal::Exit,
            give_up_after: settings.exit_when_idle,
        }
    }

    /// The generation a job taken now belongs to.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    pub(super) fn is_consuming(&self) -> bool {
        self.flow == Flow::Consuming
    }

    /// When to ask the provider again; `None` unless paused.
    pub(super) fn probe_at(&self) -> Option<Instant> {
        (self.flow == Flow::Paused).then_some(self.probe_at)
    }

    /// When a paused batch run (`exit_when_idle`) stops waiting for the provider and
    /// exits; `None` unless paused with that setting.
    pub(super) fn give_up_at(&self) -> Option<Instant> {
        match self.give_up_after {
            Some(d) if self.flow == Flow::Paused => Some(self.paused_at + d),
            _ => None,
        }
    }

    pub(super) fn admit(&self) -> Admit {
        match self.flow {
            Flow::Consuming => Admit::Run,
            Flow::Pausing | Flow::Paused => Admit::Hold,
        }
    }

    /// A job taken in `generation` ended with `outcome`. A hold means the provider
    /// refuses the deployment: the first one of the current generation pauses.
    pub(super) fn job_done(
        &mut self,
        generation: u64,
        outcome: JobOutcome,
        now: Instant,
    ) -> Option<Paused> {
        let pauses = outcome == JobOutcome::Held
            && generation == self.generation
            && self.flow == Flow::Consuming;
        if !pauses {
            return None;
        }
        self.flow = Flow::Pausing;
        self.paused_at = now;
        self.probe_delay = self.retry_min;
        Some(Paused {
            retry_in: self.probe_delay,
            exiting: self.exit_on_refusal,
        })
    }

    /// The delivery stream ended.
    pub(super) fn stream_ended(&mut self, now: Instant) -> StreamEnd {
        if self.flow != Flow::Pausing {
            return StreamEnd::Closed;
        }
        if self.exit_on_refusal {
            return StreamEnd::Exit;
        }
        self.flow = Flow::Paused;
        self.probe_at = now + self.probe_delay;
        StreamEnd::Paused
    }

    /// The provider still refuses (or cannot be reached): wait twice as long, up to the
    /// maximum. Returns the new wait.
    pub(super) fn probe_failed(&mut self, now: Instant) -> Duration {
        self.probe_delay = (self.probe_delay * 2).min(self.retry_max);
        self.probe_at = now + self.probe_delay;
        self.probe_delay
    }

    /// The provider answers but the broker would not start a consumer: try again after
    /// the same wait, since the provider is not what failed.
    pub(super) fn consume_failed(&mut self, now: Instant) {
        self.probe_at = now + self.probe_delay;
    }

    /// Consuming again. Returns how long the pause lasted.
    pub(super) fn resumed(&mut self, now: Instant) -> Duration {
        self.flow = Flow::Consuming;
        self.generation += 1;
        now.saturating_duration_since(self.paused_at)
    }
}

/// The next delivery, or never when there is no stream (a paused worker).
pub(super) async fn next_delivery(deliveries: &mut Option<Deliveries>) -> Option<Delivery> {
    match deliveries {
        Some(d) => d.next().await,
        None => std::future::pending().await,
    }
}

impl Worker {
    /// Run a delivery, or hold it when a pause has begun.
    pub(super) async fn take(
        self: &Arc<Self>,
        state: &mut LoopState,
        delivery: Delivery,
    ) -> Control {
        let generation = state.pause.generation();
        let me = Arc::clone(self);
        match state.pause.admit() {
            Admit::Run => {
                // Wait for a free slot; the prefetch already bounds what the broker
                // sends, this bounds what runs.
                let Ok(permit) = state.slots.clone().acquire_owned().await else {
                    return Control::Stop;
                };
                state.running.spawn(async move {
                    let outcome = me.handle(delivery).await;
                    drop(permit);
                    (generation, outcome)
                });
            }
            Admit::Hold => {
                state.running.spawn(async move {
                    let taken = Instant::now();
                    let outcome = me.settle(delivery, None, Settle::Hold, taken).await;
                    (generation, outcome)
                });
            }
        }
        Control::Continue
    }

    /// Count a finished job; a hold (the provider refuses the deployment) pauses.
    pub(super) fn job_done(
        &self,
        state: &mut LoopState,
        done: Result<(u64, JobOutcome), JoinError>,
    ) {
        let paused = match &done {
            Ok((generation, outcome)) => {
                state.pause.job_done(*generation, *outcome, Instant::now())
            }
            Err(_) => None,
        };
        state.record(done.map(|(_, o)| o));
        let Some(Paused { retry_in, exiting }) = paused else {
            return;
        };
        let why = self.refusal().unwrap_or_default();
        ConsumptionPaused {
            task: self.settings.task,
            why: &why,
            retry_in,
            exiting,
        }
        .emit(&self.metrics);
        state.refused = exiting.then_some(why);
        self.readiness.set_consuming(false);
        if let Some(d) = state.deliveries.as_mut() {
            d.stop();
        }
    }

    pub(super) fn stream_ended(&self, state: &mut LoopState) -> Control {
        match state.pause.stream_ended(Instant::now()) {
            StreamEnd::Closed => Control::Stop,
            end => {
                state.retired.extend(state.deliveries.take());
                match end {
                    StreamEnd::Exit => Control::Stop,
                    _ => Control::Continue,
                }
            }
        }
    }

    /// Ask the provider again; when it answers, consume again.
    pub(super) async fn probe(&self, state: &mut LoopState) {
        if let Err(e) = self.model.check_provider().await {
            let retry_in = state.pause.probe_failed(Instant::now());
            tracing::warn!(
                error = %self.model.redact(&e.to_string()),
                retry_in_ms = u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
                "model provider still refuses or is unreachable; consumption stays paused"
            );
            return;
        }
        // The paused streams' deliveries were settled long ago.
        for d in state.retired.drain(..) {
            d.close().await;
        }
        let task = self.settings.task;
        match self.broker.consume(task, self.concurrency()).await {
            Ok(d) => {
                state.deliveries = Some(d);
                let paused_for = state.pause.resumed(Instant::now());
                *self.lock_refusal() = None;
                self.readiness.set_provider_blocked(None);
                self.readiness.set_consuming(true);
                ConsumptionResumed { task, paused_for }.emit(&self.metrics);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot resume consuming yet");
                state.pause.consume_failed(Instant::now());
            }
        }
    }

    /// A batch run paused for as long as it may be idle exits as the `exit` policy would.
    pub(super) fn give_up_paused(&self, state: &mut LoopState) -> Control {
        tracing::warn!("paused for longer than --exit-when-idle; exiting with the jobs queued");
        state.refused = Some(self.refusal().unwrap_or_default());
        Control::Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relata_core::Task;

    const MIN: Duration = Duration::from_secs(10);
    const MAX: Duration = Duration::from_secs(300);

    fn settings(policy: OnProviderRefusal, idle: Option<Duration>) -> WorkerSettings {
        WorkerSettings {
            on_provider_refusal: policy,
            exit_when_idle: idle,
            provider_retry_min: MIN,
            provider_retry_max: MAX,
            ..WorkerSettings::new(Task::Extract)
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// A pause machine under the `pause` policy, and the instant it starts at.
    fn consuming() -> (Pause, Instant) {
        let t0 = Instant::now();
        (
            Pause::new(&settings(OnProviderRefusal::Pause, None), t0),
            t0,
        )
    }

    #[test]
    fn a_consuming_worker_runs_deliveries_and_neither_probes_nor_gives_up() {
        let (p, _) = consuming();
        assert!(p.is_consuming());
        assert_eq!(p.admit(), Admit::Run);
        assert_eq!(p.probe_at(), None);
        assert_eq!(p.give_up_at(), None);
    }

    #[test]
    fn only_a_hold_pauses() {
        for &outcome in JobOutcome::ALL {
            let (mut p, t0) = consuming();
            let paused = p.job_done(0, outcome, t0);
            match outcome {
                JobOutcome::Held => assert_eq!(
                    paused,
                    Some(Paused {
                        retry_in: MIN,
                        exiting: false
                    })
                ),
                JobOutcome::Accepted
                | JobOutcome::Partial
                | JobOutcome::Invalid
                | JobOutcome::AlreadyDone
                | JobOutcome::Retried
                | JobOutcome::Dead
                | JobOutcome::Requeued => {
                    assert_eq!(paused, None, "{outcome}");
                    assert_eq!(p.admit(), Admit::Run, "{outcome}");
                }
            }
        }
    }

    #[test]
    fn a_pausing_worker_holds_what_arrives_and_pauses_once() {
        let (mut p, t0) = consuming();
        assert!(p.job_done(0, JobOutcome::Held, t0).is_some());
        assert_eq!(p.admit(), Admit::Hold);
        assert!(!p.is_consuming());
        // The cancel has not taken effect yet: not paused, so no probe.
        assert_eq!(p.probe_at(), None);
        // The deliveries held meanwhile come back as holds too; they do not pause again.
        assert_eq!(p.job_done(0, JobOutcome::Held, t0 + secs(1)), None);
    }

    #[test]
    fn the_stream_ending_after_a_pause_schedules_the_first_probe() {
        let (mut p, t0) = consuming();
        p.job_done(0, JobOutcome::Held, t0);
        assert_eq!(p.stream_ended(t0 + secs(2)), StreamEnd::Paused);
        assert_eq!(p.probe_at(), Some(t0 + secs(2) + MIN));
        assert_eq!(p.admit(), Admit::Hold);
    }

    #[test]
    fn the_stream_ending_without_a_pause_ends_the_run() {
        let (mut p, t0) = consuming();
        assert_eq!(p.stream_ended(t0), StreamEnd::Closed);
    }

    #[test]
    fn under_the_exit_policy_a_pause_exits_once_the_stream_ends() {
        let t0 = Instant::now();
        let mut p = Pause::new(&settings(OnProviderRefusal::Exit, None), t0);
        assert_eq!(
            p.job_done(0, JobOutcome::Held, t0),
            Some(Paused {
                retry_in: MIN,
                exiting: true
            })
        );
        assert_eq!(p.stream_ended(t0), StreamEnd::Exit);
    }

    #[test]
    fn each_refused_probe_doubles_the_wait_up_to_the_maximum() {
        let (mut p, t0) = consuming();
        p.job_done(0, JobOutcome::Held, t0);
        p.stream_ended(t0);
        let mut waits = Vec::new();
        for n in 1..=7 {
            let now = t0 + secs(1000 * n);
            let wait = p.probe_failed(now);
            assert_eq!(p.probe_at(), Some(now + wait));
            waits.push(wait.as_secs());
        }
        assert_eq!(waits, [20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn a_broker_that_will_not_consume_is_asked_again_after_the_same_wait() {
        let (mut p, t0) = consuming();
        p.job_done(0, JobOutcome::Held, t0);
        p.stream_ended(t0);
        let wait = p.probe_failed(t0 + secs(10));
        p.consume_failed(t0 + secs(100));
        assert_eq!(p.probe_at(), Some(t0 + secs(100) + wait));
        assert_eq!(p.admit(), Admit::Hold);
    }

    #[test]
    fn resuming_consumes_again_and_reports_how_long_the_pause_lasted() {
        let (mut p, t0) = consuming();
        p.job_done(0, JobOutcome::Held, t0 + secs(5));
        p.stream_ended(t0 + secs(6));
        p.probe_failed(t0 + secs(16));
        assert_eq!(p.resumed(t0 + secs(65)), secs(60));
        assert!(p.is_consuming());
        assert_eq!(p.admit(), Admit::Run);
        assert_eq!(p.probe_at(), None);
        assert_eq!(p.generation(), 1);
    }

    #[test]
    fn a_hold_from_before_a_resume_does_not_pause_again() {
        let (mut p, t0) = consuming();
        p.job_done(0, JobOutcome::Held, t0);
        p.stream_ended(t0);
        p.resumed(t0 + secs(10));
        // Held during the pause, settled after the resume.
        assert_eq!(p.job_done(0, JobOutcome::Held, t0 + secs(11)), None);
        assert!(p.is_consuming());
        // A refusal in the new generation pauses, with the wait back at its minimum.
        p.probe_failed(t0 + secs(12));
        let paused = p.job_done(1, JobOutcome::Held, t0 + secs(20));
        assert_eq!(paused.map(|p| p.retry_in), Some(MIN));
    }

    #[test]
    fn a_paused_batch_run_gives_up_measured_from_the_start_of_the_pause() {
        let t0 = Instant::now();
        let mut p = Pause::new(&settings(OnProviderRefusal::Pause, Some(secs(30))), t0);
        p.job_done(0, JobOutcome::Held, t0 + secs(5));
        // Still pausing: the deadline applies only once paused.
        assert_eq!(p.give_up_at(), None);
        p.stream_ended(t0 + secs(7));
        assert_eq!(p.give_up_at(), Some(t0 + secs(35)));
        p.resumed(t0 + secs(20));
        assert_eq!(p.give_up_at(), None);
    }
}
