//! The broker-level retry policy: one small object that both classifies and schedules.

use crate::topology::{RetryTier, Topology};

/// What to do with a job whose attempt failed with a transport error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Publish it to `tier`'s retry queue with the attempt header set to `next_attempt`.
    RetryLater { next_attempt: u32, tier: RetryTier },
    /// Out of attempts: dead-letter it (`transport_exhausted`).
    Exhausted { attempts: u32 },
}

/// Attempts are counted from 1 (the first delivery). After attempt `n` fails, the job
/// waits in tier `n` (the last tier repeating if there are more attempts than tiers)
/// until `max_attempts` have been made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    tiers: Vec<RetryTier>,
    max_attempts: u32,
}

impl RetryPolicy {
    /// `max_attempts` counts every attempt, the first included; with no tiers every
    /// failure is final.
    pub fn new(tiers: Vec<RetryTier>, max_attempts: u32) -> RetryPolicy {
        let max_attempts = if tiers.is_empty() {
            1
        } else {
            max_attempts.max(1)
        };
        RetryPolicy {
            tiers,
            max_attempts,
        }
    }

    /// One attempt per declared tier plus the first: 5 s, 30 s, 300 s → 4 attempts.
    pub fn from_topology(topology: &Topology) -> RetryPolicy {
        let tiers = topology.tiers().to_vec();
        let max = u32::try_from(tiers.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        RetryPolicy::new(tiers, max)
    }

    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Decide after attempt `attempt` (1-based) failed.
    pub fn decide(&self, attempt: u32) -> RetryDecision {
        let attempt = attempt.max(1);
        if attempt >= self.max_attempts {
            return RetryDecision::Exhausted { attempts: attempt };
        }
        let index = usize::try_from(attempt - 1).unwrap_or(usize::MAX);
        match self.tiers.get(index).or(self.tiers.last()) {
            Some(&tier) => RetryDecision::RetryLater {
                next_attempt: attempt + 1,
                tier,
            },
            None => RetryDecision::Exhausted { attempts: attempt },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> RetryTier {
        RetryTier::from_millis(ms)
    }

    #[test]
    fn walks_the_ladder_then_gives_up() {
        let p = RetryPolicy::new(vec![t(5_000), t(30_000)], 4);
        assert_eq!(
            p.decide(1),
            RetryDecision::RetryLater {
                next_attempt: 2,
                tier: t(5_000)
            }
        );
        assert_eq!(
            p.decide(2),
            RetryDecision::RetryLater {
                next_attempt: 3,
                tier: t(30_000)
            }
        );
        // More attempts than tiers: the last tier repeats.
        assert_eq!(
            p.decide(3),
            RetryDecision::RetryLater {
                next_attempt: 4,
                tier: t(30_000)
            }
        );
        assert_eq!(p.decide(4), RetryDecision::Exhausted { attempts: 4 });
        assert_eq!(p.decide(40), RetryDecision::Exhausted { attempts: 40 });
    }

    #[test]
    fn no_tiers_means_no_retry() {
        let p = RetryPolicy::new(vec![], 10);
        assert_eq!(p.decide(1), RetryDecision::Exhausted { attempts: 1 });
    }

    #[test]
    fn from_topology_gives_one_attempt_per_tier_plus_the_first() {
        let topo = Topology::new(&crate::TopologyConfig::default()).unwrap();
        let p = RetryPolicy::from_topology(&topo);
        assert_eq!(p.max_attempts(), 4);
        assert_eq!(p.decide(0), p.decide(1));
    }
}
