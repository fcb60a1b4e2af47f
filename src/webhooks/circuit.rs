//! Per-endpoint circuit breakers. After `THRESHOLD` failures in a row (no connection, no answer
//! in time, or 5xx) an endpoint's circuit opens: its due events stay in the outbox untouched (no
//! attempt, no write) and one of them goes out as a probe per interval, which grows from
//! `webhooks.retry_initial` to `MAX_PROBE_INTERVAL`, jittered so endpoints opened together do not
//! probe together. Any other answer closes the circuit and the backlog flows again.
//!
//! The state lives in memory only: a restart closes every circuit, which costs a dead endpoint
//! `THRESHOLD` attempts before it opens again, a price not worth a table.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use super::locked;

/// Failures in a row that open a circuit.
pub const THRESHOLD: u32 = 5;
/// Probes of an open circuit are at most this far apart.
const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Breaker {
    failures: u32,
    /// Probes that failed since the circuit opened.
    probes_failed: u32,
    next_probe: u64,
    probing: bool,
}

impl Breaker {
    fn open(&self) -> bool {
        self.failures >= THRESHOLD
    }
}

pub struct Circuits {
    breakers: Mutex<HashMap<String, Breaker>>,
    initial: u64,
}

impl Circuits {
    pub fn new(initial: Duration) -> Circuits {
        Circuits { breakers: Mutex::new(HashMap::new()), initial: initial.as_millis() as u64 }
    }

    /// The wait before the next probe after `failed` probes: doubling, capped, minus up to a
    /// quarter at random.
    fn interval(&self, failed: u32) -> u64 {
        let cap = MAX_PROBE_INTERVAL.as_millis() as u64;
        let base = self.initial.saturating_mul(1u64 << failed.min(30)).min(cap).max(1);
        base - rand::random::<u64>() % (base / 4 + 1)
    }

    /// Records the outcome of a real attempt; `failed` when the endpoint could not be reached,
    /// did not answer in time or answered 5xx.
    pub fn record(&self, webhook: &str, failed: bool, probe: bool, now: u64) {
        let mut breakers = locked(&self.breakers);
        if !failed {
            breakers.remove(webhook);
            return;
        }
        let b = breakers.entry(webhook.to_owned()).or_default();
        let was_open = b.open();
        b.failures = b.failures.saturating_add(1);
        if probe {
            b.probing = false;
            b.probes_failed = b.probes_failed.saturating_add(1);
            b.next_probe = now + self.interval(b.probes_failed);
        } else if !was_open && b.open() {
            b.next_probe = now + self.interval(0);
        }
    }

    /// Endpoints whose circuits are open.
    pub fn open(&self) -> HashSet<String> {
        locked(&self.breakers).iter().filter(|(_, b)| b.open()).map(|(k, _)| k.clone()).collect()
    }

    /// Whether the open endpoint `webhook` may send its probe now; if so it is marked probing.
    pub fn take_probe(&self, webhook: &str, now: u64) -> bool {
        let mut breakers = locked(&self.breakers);
        let Some(b) = breakers.get_mut(webhook).filter(|b| b.open()) else { return false };
        if b.probing || b.next_probe > now {
            return false;
        }
        b.probing = true;
        true
    }

    /// A probe that was chosen but not sent (its event went meanwhile).
    pub fn release_probe(&self, webhook: &str) {
        if let Some(b) = locked(&self.breakers).get_mut(webhook) {
            b.probing = false;
        }
    }

    /// When the next probe of an open circuit is due.
    pub fn next_probe(&self) -> Option<u64> {
        let breakers = locked(&self.breakers);
        breakers.values().filter(|b| b.open() && !b.probing).map(|b| b.next_probe).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_probes_then_closes_on_an_answer() {
        let c = Circuits::new(Duration::from_secs(1));
        for _ in 0..THRESHOLD - 1 {
            c.record("wh", true, false, 0);
        }
        assert!(c.open().is_empty());
        c.record("wh", true, false, 0);
        assert!(c.open().contains("wh"));
        let first = c.next_probe().expect("probe time"); // ok: test
        assert!((750..=1000).contains(&first), "{first}");
        assert!(!c.take_probe("wh", first - 1));
        assert!(c.take_probe("wh", first));
        assert!(!c.take_probe("wh", first), "one probe at a time");
        c.record("wh", true, true, first);
        let second = c.next_probe().expect("probe time"); // ok: test
        assert!((first + 1500..=first + 2000).contains(&second), "{second}");
        c.record("wh", false, true, second);
        assert!(c.open().is_empty() && c.next_probe().is_none());
    }
}
