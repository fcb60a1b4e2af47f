//! Per-provider shaping. Destinations are grouped by their first mail exchanger: the named groups
//! of `[shaping.<group>]` by MX host suffix, any other host a group of its own with the `default`
//! limits. A group caps the sessions open at once and the messages a minute; a group whose server
//! answers 421, or a 4xx that says "too many", "rate", "throttled" or "server busy" (the rule is
//! `bounce::is_throttle`), is paused: nothing new is tried there until the pause ends, and each
//! throttling answer before the next delivery doubles the pause. Mail for a paused or saturated group is held (its queue entry waits) without
//! counting an attempt, while other groups keep delivering.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{DEFAULT_GROUP, Shaping};

/// One group's limits and state.
pub struct Group {
    /// The group's name: a configured group's, or the MX host's.
    pub name: String,
    /// The metrics label: a built-in group's name, or "other".
    label: &'static str,
    connections: Arc<Semaphore>,
    rate: Option<DefaultDirectRateLimiter>,
    pause: Mutex<Pause>,
}

#[derive(Default)]
struct Pause {
    until: Option<Instant>,
    /// Throttling answers since the last delivery: the exponent of the next pause.
    strikes: u32,
}

/// Why a group cannot take a message now, and until when.
pub struct Held {
    pub until: Instant,
    pub why: &'static str,
}

const BUILT_IN: [&str; 4] = ["gmail", "microsoft", "yahoo", "icloud"];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Group {
    fn new(name: String, connections: usize, per_minute: u32) -> Group {
        let label = BUILT_IN.iter().find(|b| **b == name).copied().unwrap_or("other");
        Group {
            name,
            label,
            connections: Arc::new(Semaphore::new(connections.max(1))),
            rate: NonZeroU32::new(per_minute).map(|n| RateLimiter::direct(Quota::per_minute(n))),
            pause: Mutex::new(Pause::default()),
        }
    }

    /// Until when the group is paused, if it is.
    pub fn paused(&self) -> Option<Instant> {
        let pause = lock(&self.pause);
        pause.until.filter(|until| *until > Instant::now())
    }

    /// Takes one message from the group's per-minute budget, or says when there is one again.
    pub fn admit(&self) -> Result<(), Held> {
        if let Some(until) = self.paused() {
            return Err(Held { until, why: "paused after a throttling answer" });
        }
        let Some(rate) = &self.rate else { return Ok(()) };
        rate.check().map_err(|not_until| Held {
            until: Instant::now() + not_until.wait_time_from(DefaultClock::default().now()),
            why: "per-minute limit reached",
        })
    }

    /// A session slot of the group (waits while all are taken).
    pub async fn connection(&self) -> Option<OwnedSemaphorePermit> {
        self.connections.clone().acquire_owned().await.ok()
    }

    /// The group's server throttled us: pause it, longer each time until a delivery succeeds.
    pub fn throttled(&self, shaping: &Shaping, reply: &str) {
        let mut pause = lock(&self.pause);
        if pause.until.is_some_and(|until| until > Instant::now()) {
            return; // sessions already open when the pause began: one strike for them all
        }
        let exponent = pause.strikes.min(20);
        pause.strikes += 1;
        let wait = shaping.pause_initial.saturating_mul(1 << exponent).min(shaping.pause_max);
        pause.until = Some(Instant::now() + wait);
        crate::metrics::delivery_pause(self.label);
        tracing::warn!(group = %self.name, pause_ms = wait.as_millis() as u64, %reply, "provider group paused");
    }

    /// A delivery went through: the next throttling answer starts from the first pause again.
    pub fn delivered(&self) {
        let mut pause = lock(&self.pause);
        if pause.until.is_none_or(|until| until <= Instant::now()) {
            *pause = Pause::default();
        }
    }
}

/// The one rule for what pauses a group, shared with the bounce classes so that every answer
/// that pauses is classed `policy` (never suppressing).
pub use crate::bounce::is_throttle;

/// The groups of the mail exchangers seen so far, made on first use.
pub struct Shaper {
    pub config: Shaping,
    groups: Mutex<HashMap<String, Arc<Group>>>,
}

fn matches_suffix(host: &str, suffix: &str) -> bool {
    host == suffix
        || host.strip_suffix(suffix).is_some_and(|head| head.ends_with('.') && head.len() > 1)
}

impl Shaper {
    pub fn new(config: Shaping) -> Shaper {
        Shaper { config, groups: Mutex::new(HashMap::new()) }
    }

    /// The group of a destination whose preferred mail exchanger is `mx`.
    pub fn group(&self, mx: &str) -> Arc<Group> {
        let host = mx.trim_end_matches('.').to_ascii_lowercase();
        let named = self
            .config
            .groups
            .iter()
            .find(|g| g.mx_suffixes.iter().any(|s| matches_suffix(&host, s)));
        let fallback = self.config.groups.iter().find(|g| g.name == DEFAULT_GROUP);
        let (name, connections, per_minute) = match (named, fallback) {
            (Some(g), _) => (g.name.clone(), g.connections, g.per_minute),
            (None, Some(d)) => (host, d.connections, d.per_minute),
            (None, None) => (host, 8, 0),
        };
        lock(&self.groups)
            .entry(name.clone())
            .or_insert_with(|| Arc::new(Group::new(name, connections, per_minute)))
            .clone()
    }
}

/// `until` as milliseconds of the wall clock (queue due times are).
pub fn due_ms(until: Instant) -> u64 {
    let wait = until.saturating_duration_since(Instant::now());
    crate::ids::now_ms() + wait.as_millis() as u64 + 1
}

/// The wait before a held message is looked at again, at least a little: a budget that frees
/// up in microseconds must not make the scheduler spin.
pub const MIN_HOLD: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_fall_into_groups_by_suffix() {
        let shaper = Shaper::new(Shaping::default());
        assert_eq!(shaper.group("gmail-smtp-in.l.google.com.").name, "gmail");
        assert_eq!(shaper.group("example-com.mail.protection.outlook.com").name, "microsoft");
        assert_eq!(shaper.group("mta5.am0.yahoodns.net").name, "yahoo");
        assert_eq!(shaper.group("mx01.mail.icloud.com").name, "icloud");
        assert_eq!(shaper.group("notgoogle.com").name, "notgoogle.com");
        assert_eq!(shaper.group("MX.Example.org").name, "mx.example.org");
        assert!(Arc::ptr_eq(&shaper.group("a.google.com"), &shaper.group("b.google.com")));
    }

    #[test]
    fn pauses_double_until_a_delivery() {
        let config = Shaping {
            pause_initial: Duration::from_millis(1),
            pause_max: Duration::from_millis(3),
            ..Shaping::default()
        };
        let group = Group::new("g".into(), 1, 2);
        assert!(group.admit().is_ok() && group.admit().is_ok());
        assert!(group.admit().is_err(), "two a minute");
        let group = Group::new("g".into(), 1, 0);
        for _ in 0..4 {
            group.throttled(&config, "421 slow down");
            assert!(group.paused().is_some());
            std::thread::sleep(Duration::from_millis(4));
        }
        assert_eq!(lock(&group.pause).strikes, 4);
        group.delivered();
        assert_eq!(lock(&group.pause).strikes, 0);
    }
}
