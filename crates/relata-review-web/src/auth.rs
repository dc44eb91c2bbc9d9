//! Who may decide: sign-in tokens, sessions, CSRF tokens and the sign-in rate limit.
//!
//! A sign-in token is `rlt_` followed by 64 hex digits (256 random bits from the
//! operating system's generator through `rand`'s thread-local CSPRNG). The store keeps only
//! its sha256. A session is an in-memory entry keyed by another random value that travels
//! in an HttpOnly, SameSite=Strict cookie; it carries its own CSRF token, which every
//! state-changing form must send back. Sessions live in the serving process only: a restart
//! signs everyone out, which is the safe direction. A session remembers the hash of the
//! token that opened it, and every request checks that it is still the reviewer's current
//! token: reissuing a token ends the sessions of the old one at once, in every process.

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
    /// The sha256 (hex) of the sign-in token that opened it.
    pub token_sha256: String,
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
    /// Start a session for `reviewer`, opened by the token whose sha256 is
    /// `token_sha256`; returns its cookie value.
    pub fn create(&self, reviewer: &str, token_sha256: &str) -> String {
        let id = random_hex(32);
        let session = Session {
            reviewer: reviewer.to_owned(),
            token_sha256: token_sha256.to_owned(),
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

/// Failed sign-ins per client address over a sliding window. An attempt is counted
/// *before* its token is looked up ([`SignInLimiter::begin`]) and forgiven only when it
/// succeeds, so a burst of concurrent guesses cannot get more than the allowed number of
/// answers: the check and the count are one step under one lock.
#[derive(Debug, Default)]
pub struct SignInLimiter {
    failures: Mutex<HashMap<IpAddr, Attempts>>,
}

#[derive(Debug, Default)]
struct Attempts {
    /// Attempts counted in the window (failures, and those still being looked up).
    at: VecDeque<Instant>,
    /// A refusal at the limit was logged in this blocked spell.
    block_logged: bool,
}

/// An attempt counted against its address; [`SignInLimiter::succeeded`] forgives it.
#[derive(Debug)]
pub struct Attempt {
    addr: IpAddr,
    at: Instant,
    /// Attempts counted in the window with this one.
    pub counted: usize,
}

/// The address has used up its attempts.
#[derive(Debug, PartialEq, Eq)]
pub struct Blocked {
    /// Until the oldest counted attempt leaves the window.
    pub wait: Duration,
    /// The first refusal of this blocked spell (the one worth a log line).
    pub first: bool,
}

impl SignInLimiter {
    /// Count an attempt from `addr`, or refuse it when the address has used up its
    /// attempts within [`SIGN_IN_WINDOW`].
    pub fn begin(&self, addr: IpAddr) -> Result<Attempt, Blocked> {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_TRACKED_ADDRESSES && !map.contains_key(&addr) {
            map.retain(|_, a| a.at.back().is_some_and(|t| t.elapsed() < SIGN_IN_WINDOW));
        }
        let a = map.entry(addr).or_default();
        while a.at.front().is_some_and(|t| t.elapsed() >= SIGN_IN_WINDOW) {
            a.at.pop_front();
        }
        if a.at.len() >= SIGN_IN_ATTEMPTS {
            let wait = a.at.front().map_or(SIGN_IN_WINDOW, |t| {
                SIGN_IN_WINDOW.saturating_sub(t.elapsed())
            });
            let first = !a.block_logged;
            a.block_logged = true;
            return Err(Blocked { wait, first });
        }
        a.block_logged = false;
        let at = Instant::now();
        a.at.push_back(at);
        Ok(Attempt {
            addr,
            at,
            counted: a.at.len(),
        })
    }

    /// The attempt signed in: it no longer counts against its address.
    pub fn succeeded(&self, attempt: Attempt) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = map.get_mut(&attempt.addr)
            && let Some(k) = a.at.iter().position(|t| *t == attempt.at)
        {
            a.at.remove(k);
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
        for k in 1..=SIGN_IN_ATTEMPTS {
            assert_eq!(l.begin(one).unwrap().counted, k);
        }
        let blocked = l.begin(one).expect_err("blocked after ten");
        assert!(blocked.wait > Duration::from_secs(14 * 60));
        assert!(blocked.first);
        assert!(!l.begin(one).unwrap_err().first, "one log line a spell");
        assert!(l.begin(two).is_ok());
    }

    #[test]
    fn attempts_in_flight_count_before_their_answer_and_a_success_is_forgiven() {
        let l = SignInLimiter::default();
        let ip: IpAddr = "192.0.2.3".parse().unwrap();
        // Ten lookups at once, none answered yet: the eleventh is refused before its own.
        let pending: Vec<Attempt> = (0..SIGN_IN_ATTEMPTS)
            .map(|_| l.begin(ip).unwrap())
            .collect();
        assert!(l.begin(ip).is_err());
        // A success frees its place; failures keep theirs.
        let mut pending = pending.into_iter();
        l.succeeded(pending.next().unwrap());
        assert!(l.begin(ip).is_ok());
        assert!(l.begin(ip).is_err());
    }

    #[test]
    fn sessions_carry_their_own_csrf_and_end_on_removal() {
        let s = Sessions::default();
        let a = s.create("ada", "h1");
        let b = s.create("ada", "h1");
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
