//! What a connection's I/O loop checks besides its session: the listener's registry (waits that
//! pressure shortens, and shedding) and the MX's limits per client address over all its
//! sessions: message bytes a minute, and refused recipients a minute. A session limits itself
//! (slower answers, `max_errors`), but a client that opens many sessions from one address is
//! only seen here.
//!
//! The limits are token buckets refilled continuously, keyed by the client's address (an IPv6
//! address by its /64, which one client usually holds whole).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::intake::Intake;
use super::session::{Envelope, Session};
use crate::config::Smtp;
use crate::listener::{Presence, Waited};

/// The reply to every recipient from an address that has had too many refused, and the end of
/// its session: nothing more is answered, not even about a mailbox that exists.
const PROBING: &str =
    "421 4.7.0 too many unknown recipients from your address, try again later\r\n";
/// The reply to mail past the per-address byte rate; the sender tries again later.
const TOO_MUCH: &str = "452 4.7.0 too much mail from your address, try again later\r\n";

/// Token buckets, one per client address.
pub struct Buckets {
    per_second: f64,
    capacity: f64,
    map: Mutex<HashMap<IpAddr, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before full ones are forgotten on the spot rather than by `tidy`.
const MAX_KEPT: usize = 100_000;

impl Buckets {
    /// `per_minute` tokens a minute, at most `capacity` held; `None` for no limit (0).
    pub fn new(per_minute: u64, capacity: u64) -> Option<Buckets> {
        (per_minute > 0).then(|| Buckets {
            per_second: per_minute as f64 / 60.0,
            capacity: capacity.max(per_minute) as f64,
            map: Mutex::new(HashMap::new()),
        })
    }

    /// Runs `f` on `ip`'s bucket, refilled up to now.
    fn with<T>(&self, ip: IpAddr, f: impl FnOnce(&mut f64) -> T) -> T {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_KEPT {
            self.forget_full(&mut map, now);
        }
        let bucket = map.entry(key(ip)).or_insert(Bucket { tokens: self.capacity, at: now });
        let refill = now.duration_since(bucket.at).as_secs_f64() * self.per_second;
        bucket.tokens = (bucket.tokens + refill).min(self.capacity);
        bucket.at = now;
        f(&mut bucket.tokens)
    }

    /// Takes `n` tokens of `ip`'s; `false`, and nothing taken, when it holds fewer.
    pub fn take(&self, ip: IpAddr, n: u64) -> bool {
        self.with(ip, |tokens| {
            let ok = *tokens >= n as f64;
            if ok {
                *tokens -= n as f64;
            }
            ok
        })
    }

    /// Gives back `n` tokens taken from `ip`'s.
    pub fn give_back(&self, ip: IpAddr, n: u64) {
        let capacity = self.capacity;
        self.with(ip, |tokens| *tokens = (*tokens + n as f64).min(capacity));
    }

    /// Whether `ip` holds at least `n` tokens (or a full bucket, when `n` is more).
    pub fn holds(&self, ip: IpAddr, n: u64) -> bool {
        let need = (n as f64).min(self.capacity);
        self.with(ip, |tokens| *tokens >= need)
    }

    /// Forgets the buckets that are full again, so memory follows recent clients only.
    pub fn tidy(&self) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        self.forget_full(&mut map, Instant::now());
    }

    fn forget_full(&self, map: &mut HashMap<IpAddr, Bucket>, now: Instant) {
        map.retain(|_, b| {
            b.tokens + now.duration_since(b.at).as_secs_f64() * self.per_second < self.capacity
        });
    }
}

/// An IPv4 address (also when mapped into IPv6) as it is; an IPv6 address by its /64.
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// The MX's limits per client address.
pub struct Limits {
    /// Message bytes a minute.
    pub bytes: Option<Buckets>,
    /// Refused recipients a minute.
    pub refusals: Option<Buckets>,
}

impl Limits {
    pub fn new(cfg: &Smtp) -> Limits {
        let per_minute = cfg.max_bytes_per_ip_per_minute as u64;
        let refusals = u64::from(cfg.max_refused_recipients_per_ip_per_minute);
        Limits {
            // A message as large as the largest taken always fits a full bucket.
            bytes: Buckets::new(per_minute, per_minute.max(cfg.max_message_size as u64)),
            refusals: Buckets::new(refusals, refusals),
        }
    }

    pub fn tidy(&self) {
        self.bytes.iter().chain(&self.refusals).for_each(Buckets::tidy);
    }
}

/// What the I/O loop of one connection consults.
#[derive(Default)]
pub struct Guard<'a> {
    /// The session's entry in its listener's registry (none in transcript tests).
    pub presence: Option<&'a Presence>,
    /// `smtp.stress_timeout`.
    pub stress_timeout: Duration,
    /// The MX's limits per client address (none for submission).
    pub limits: Option<&'a Limits>,
}

impl Guard<'_> {
    /// Waits for the client at most `limit`: through the listener's registry when there is one
    /// (shorter under pressure, and shed when the slot is needed).
    pub async fn wait<F: Future>(&self, io: F, limit: Duration) -> Waited<F::Output> {
        match self.presence {
            Some(presence) => presence.wait(io, limit, self.stress_timeout).await,
            None => match tokio::time::timeout(limit, io).await {
                Ok(out) => Waited::Done(out),
                Err(_) => Waited::TimedOut,
            },
        }
    }

    /// The answer to RCPT TO `address`: the mail system's, unless this client address is over
    /// one of its limits. A recipient takes a refusal token before it is looked up and gives it
    /// back unless refused, so however many sessions ask at once, no more answers come than
    /// tokens.
    pub async fn check_recipient<I: Intake>(
        &self,
        session: &Session,
        intake: &I,
        address: &str,
    ) -> Result<(), String> {
        let ip = session.peer().ip;
        let declared = session.declared_size() as u64;
        let (bytes, refusals) = match self.limits {
            Some(l) => (l.bytes.as_ref(), l.refusals.as_ref()),
            None => (None, None),
        };
        if refusals.is_some_and(|r| !r.take(ip, 1)) {
            tracing::info!(%ip, "smtp: recipients deferred, too many refused from this address");
            return Err(PROBING.into());
        }
        let answer = if bytes.is_some_and(|b| !b.holds(ip, declared.max(1))) {
            Err(TOO_MUCH.into())
        } else {
            intake.check_recipient_sized(session.login(), address, declared).await
        };
        let refused = matches!(&answer, Err(reply) if reply.starts_with('5'));
        if let Some(r) = refusals.filter(|_| !refused) {
            r.give_back(ip, 1);
        }
        answer
    }

    /// The reply to a message: the mail system's, unless its bytes pass this client address's
    /// allowance.
    pub async fn deliver<I: Intake>(
        &self,
        intake: &I,
        envelope: Envelope,
        message: Vec<u8>,
    ) -> String {
        let bytes = self.limits.and_then(|l| l.bytes.as_ref());
        if bytes.is_some_and(|b| !b.take(envelope.ip, message.len() as u64)) {
            tracing::info!(ip = %envelope.ip, "smtp: message deferred, over the byte rate");
            return TOO_MUCH.into();
        }
        intake.take_message(envelope, message).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_its_capacity_and_refills_with_time() {
        let buckets = Buckets::new(60, 3).unwrap_or_else(|| unreachable!());
        let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
        assert!(buckets.capacity == 60.0, "at least a minute's worth");
        assert!(buckets.take(a, 60));
        assert!(!buckets.take(a, 1), "empty");
        assert!(buckets.take(b, 30), "another address has its own");
        std::thread::sleep(Duration::from_millis(1100));
        assert!(buckets.take(a, 1), "one a second comes back");
        buckets.give_back(a, 100);
        assert!(buckets.take(a, 60) && !buckets.take(a, 1), "capped at its capacity");
        buckets.give_back(a, 60);
        buckets.tidy();
        assert_eq!(
            buckets.map.lock().map(|m| m.len()).unwrap_or(9),
            1,
            "a full one forgotten, the other kept"
        );
        assert!(Buckets::new(0, 10).is_none(), "0 is no limit");
    }

    #[test]
    fn an_ipv6_client_is_known_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap_or_else(|_| unreachable!());
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap_or_else(|_| unreachable!());
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap_or_else(|_| unreachable!());
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap_or_else(|_| unreachable!());
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
        assert_eq!(key(mapped), IpAddr::from([192, 0, 2, 1]));
    }
}
