//! Failed logins of mail clients, counted per client address and mailbox, and per client
//! address alone; never per mailbox alone. A mailbox-wide count let anyone lock the owner out
//! by guessing wrong a few times: now a guesser only locks itself out, of that mailbox first and
//! of every mailbox after more failures, while the owner from another address logs in as ever.
//! App passwords are 120 random bits, so the limits guard the password checks (slow on purpose)
//! more than the passwords.
//!
//! Only failures take a token: a client that logs in right is never slowed down. Once a bucket
//! is empty, logins it covers are refused unchecked until a token is back.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Failures allowed per address, as a multiple of those per address and mailbox: enough that
/// the people behind one NAT mistyping their own passwords do not lock each other out.
pub const PER_ADDRESS_FACTOR: u32 = 5;

/// The longest user name counted per mailbox: no address is longer (RFC 5321: 254), and a
/// longer one would only make the table of buckets grow.
const LONGEST_USER: usize = 320;

pub struct LoginLimits {
    by_address: DefaultKeyedRateLimiter<IpAddr>,
    by_pair: DefaultKeyedRateLimiter<(IpAddr, String)>,
    blocked: Mutex<HashMap<Blocked, Instant>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Blocked {
    Address(IpAddr),
    Pair(IpAddr, String),
}

/// The address a client is counted under: an IPv4 address as is (also when mapped into IPv6),
/// an IPv6 client by its /64, which one subscriber usually holds whole.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

impl LoginLimits {
    /// `failures` in a row are allowed per address and mailbox, `PER_ADDRESS_FACTOR` times as
    /// many per address; one more each minute after that.
    pub fn new(failures: u32) -> LoginLimits {
        let quota = |burst: u32| {
            let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
            Quota::per_minute(NonZeroU32::MIN).allow_burst(burst)
        };
        LoginLimits {
            by_address: RateLimiter::keyed(quota(failures.saturating_mul(PER_ADDRESS_FACTOR))),
            by_pair: RateLimiter::keyed(quota(failures)),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a login from `ip` to `mailbox` (lower-cased) may be checked now.
    pub fn allowed(&self, ip: IpAddr, mailbox: &str) -> bool {
        let ip = client_key(ip);
        let now = Instant::now();
        let blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        let open = |key: &Blocked| blocked.get(key).is_none_or(|until| *until <= now);
        open(&Blocked::Address(ip)) && open(&Blocked::Pair(ip, mailbox.to_owned()))
    }

    /// Counts a failed login from `ip` to `mailbox`.
    pub fn failed(&self, ip: IpAddr, mailbox: &str) {
        let ip = client_key(ip);
        let mut empty = Vec::new();
        let wait = |not_until: governor::NotUntil<_>| {
            not_until.wait_time_from(DefaultClock::default().now())
        };
        if let Err(not_until) = self.by_address.check_key(&ip) {
            empty.push((Blocked::Address(ip), wait(not_until)));
        }
        // A name no mailbox can have counts against the address only.
        if mailbox.len() <= LONGEST_USER {
            let pair = (ip, mailbox.to_owned());
            if let Err(not_until) = self.by_pair.check_key(&pair) {
                empty.push((Blocked::Pair(pair.0, pair.1), wait(not_until)));
            }
        }
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, wait) in empty {
            blocked.insert(key, Instant::now() + wait);
        }
    }

    /// Forgets full buckets and blocks that are over.
    pub fn tidy(&self) {
        self.by_address.retain_recent();
        self.by_pair.retain_recent();
        let now = Instant::now();
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        blocked.retain(|_, until| *until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_block_the_address_for_the_mailbox_and_then_for_all_but_never_the_owner() {
        let limits = LoginLimits::new(2);
        let (guesser, owner): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        for _ in 0..2 {
            assert!(limits.allowed(guesser, "m@x.test"));
            limits.failed(guesser, "m@x.test");
        }
        assert!(limits.allowed(guesser, "m@x.test"), "the burst itself is allowed");
        limits.failed(guesser, "m@x.test");
        assert!(!limits.allowed(guesser, "m@x.test"), "the pair is blocked");
        assert!(limits.allowed(owner, "m@x.test"), "the owner elsewhere is not");
        assert!(limits.allowed(guesser, "other@x.test"), "nor the guesser's other mailboxes yet");
        // Ten failures per address in all (five times two): then every mailbox is closed to it.
        for i in 0..8 {
            limits.failed(guesser, &format!("n{i}@x.test"));
        }
        assert!(!limits.allowed(guesser, "other@x.test"), "the address is blocked");
        assert!(limits.allowed(owner, "m@x.test"));
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap_or(IpAddr::from([0; 4]));
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap_or(IpAddr::from([0; 4]));
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(client_key(mapped), IpAddr::from([192, 0, 2, 7]));
        let limits = LoginLimits::new(1);
        limits.failed(a, "m@x.test");
        limits.failed(b, "m@x.test");
        assert!(!limits.allowed(a, "m@x.test"), "one /64, one count");
        assert!(limits.allowed(other, "m@x.test"));
    }
}
