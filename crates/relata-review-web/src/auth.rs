//! Who may decide: sign-in tokens, sessions, CSRF tokens and the sign-in rate limit.
//!
//! A sign-in token is `rlt_` followed by 64 hex digits (256 random bits from the
//! operating system's generator through `rand`'s thread-local CSPRNG). The store keeps only
//! its sha256. A session is an in-memory entry keyed by another random value that travels
//! in an HttpOnly, SameSite=Strict cookie; it carries its own CSRF token, which every
//! state-changing form must send back. Sessions live in the serving process only: a restart
//! signs everyone out, which is the safe direction.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;

/// The prefix of every sign-in token, so a leaked one is recognisable in a scan.
pub const TOKEN_PREFIX: &str = "rlt_";

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// Failed sign-ins allowed per client address within [`SIGN_IN_WINDOW`].
pub const SIGN_IN_ATTEMPTS: usize = 10;
pub const SIGN_IN_WINDOW: Duration = Duration::from_secs(15 * 60);

/// Most sessions held at once; past it the oldest is dropped.
const MAX_SESSIONS: usize = 10_000;
/// Most client addresses tracked by the rate limit at once.
const MAX_TRACKED_ADDRESSES: usize = 100_000;

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

/// A new sign-in token: shown once to whoever issues it, stored only as a hash.
pub fn new_token() -> String {
    format!("{TOKEN_PREFIX}{}", random_hex(32))
}

/// Compare without stopping at the first difference.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed-in reviewer.
#[derive(Debug, Clone)]
pub struct Session {
    pub reviewer: String,
    pub csrf: String,
    created: Instant,
    /// One-shot messages shown on the next page (the outcome of a decision).
    pub flash: Vec<Flash>,
}

/// A message carried to the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub ok: bool,
    pub text: String,
}

/// The sessions of this process.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Start a session for `reviewer`; returns its cookie value.
    pub fn create(&self, reviewer: &str) -> String {
        let id = random_hex(32);
        let session = Session {
            reviewer: reviewer.to_owned(),
            csrf: random_hex(32),
            created: Instant::now(),
            flash: Vec::new(),
        };
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(id.clone(), session);
        id
    }

    /// The live session with this cookie value, if any.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(id) {
            Some(s) if s.created.elapsed() < SESSION_TTL => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// Take the session's pending messages.
    pub fn take_flash(&self, id: &str) -> Vec<Flash> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get_mut(id)
            .map(|s| std::mem::take(&mut s.flash))
            .unwrap_or_default()
    }

    pub fn push_flash(&self, id: &str, flash: Flash) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = map.get_mut(id) {
            s.flash.push(flash);
        }
    }

    pub fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

/// Failed sign-ins per client address over a sliding window.
#[derive(Debug, Default)]
pub struct SignInLimiter {
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl SignInLimiter {
    /// `Some(wait)` when `addr` has used up its attempts: how long until the oldest
    /// failure leaves the window.
    pub fn blocked(&self, addr: IpAddr) -> Option<Duration> {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let q = map.get_mut(&addr)?;
        while q.front().is_some_and(|t| t.elapsed() >= SIGN_IN_WINDOW) {
            q.pop_front();
        }
        if q.len() >= SIGN_IN_ATTEMPTS {
            q.front()
                .map(|t| SIGN_IN_WINDOW.saturating_sub(t.elapsed()))
        } else {
            None
        }
    }

    pub fn record_failure(&self, addr: IpAddr) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_TRACKED_ADDRESSES {
            map.retain(|_, q| q.back().is_some_and(|t| t.elapsed() < SIGN_IN_WINDOW));
        }
        let q = map.entry(addr).or_default();
        q.push_back(Instant::now());
        // Never more than the limit is needed to decide.
        while q.len() > SIGN_IN_ATTEMPTS {
            q.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_distinct() {
        let a = new_token();
        let b = new_token();
        assert!(a.starts_with("rlt_"));
        assert_eq!(a.len(), 4 + 64);
        assert_ne!(a, b);
    }

    #[test]
    fn the_limiter_blocks_after_ten_failures_per_address_only() {
        let l = SignInLimiter::default();
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        let two: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..SIGN_IN_ATTEMPTS - 1 {
            l.record_failure(one);
        }
        assert_eq!(l.blocked(one), None);
        l.record_failure(one);
        let wait = l.blocked(one).expect("blocked after ten");
        assert!(wait > Duration::from_secs(14 * 60));
        assert_eq!(l.blocked(two), None);
    }

    #[test]
    fn sessions_carry_their_own_csrf_and_end_on_removal() {
        let s = Sessions::default();
        let a = s.create("ada");
        let b = s.create("ada");
        assert_ne!(s.get(&a).unwrap().csrf, s.get(&b).unwrap().csrf);
        s.push_flash(
            &a,
            Flash {
                ok: true,
                text: "x".into(),
            },
        );
        assert_eq!(s.take_flash(&a).len(), 1);
        assert!(s.take_flash(&a).is_empty());
        s.remove(&a);
        assert!(s.get(&a).is_none());
        assert!(s.get("not-a-session").is_none());
    }
}
