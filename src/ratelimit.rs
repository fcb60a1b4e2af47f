//! Token buckets (governor). The public tools are limited per client IP: the client is the socket
//! peer, or the last address in `X-Forwarded-For` when the peer is a configured trusted proxy, so
//! a client cannot escape its bucket by sending that header itself. The authenticated API is
//! limited per API key, after authentication, so unknown keys never get (or exhaust) a bucket.
//! (Mail clients' failed logins are counted in `credentials`.)

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use hyper::HeaderMap;

use crate::error::{Error, Result};

pub struct ToolLimits {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    trusted_proxies: Vec<IpAddr>,
}

impl ToolLimits {
    pub fn new(per_minute: u32, burst: u32, trusted_proxies: Vec<IpAddr>) -> ToolLimits {
        let rate = NonZeroU32::new(per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
        ToolLimits {
            limiter: RateLimiter::keyed(Quota::per_minute(rate).allow_burst(burst)),
            trusted_proxies,
        }
    }

    /// The address the request is accounted to.
    pub fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusted_proxies.contains(&peer.ip()) {
            return peer.ip();
        }
        headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(peer.ip())
    }

    /// Takes a token for `ip`, or 429 with the seconds until one is available.
    pub fn check(&self, ip: IpAddr) -> Result<()> {
        take(&self.limiter, &ip)
    }

    /// Forgets buckets that are full again, so memory follows recent clients only.
    pub fn tidy(&self) {
        self.limiter.retain_recent();
    }
}

/// Per-API-key buckets of the authenticated API, keyed by key id.
pub struct ApiLimits {
    limiter: DefaultKeyedRateLimiter<Arc<str>>,
}

impl ApiLimits {
    pub fn new(per_second: u32, burst: u32) -> ApiLimits {
        let rate = NonZeroU32::new(per_second.max(1)).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
        ApiLimits { limiter: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)) }
    }

    /// Takes a token for the key `key_id`, or 429 with the seconds until one is available.
    pub fn check(&self, key_id: &Arc<str>) -> Result<()> {
        take(&self.limiter, key_id)
    }

    /// Forgets buckets that are full again (idle and revoked keys).
    pub fn tidy(&self) {
        self.limiter.retain_recent();
    }
}

fn take<K>(limiter: &DefaultKeyedRateLimiter<K>, key: &K) -> Result<()>
where
    K: std::hash::Hash + Eq + Clone,
{
    match limiter.check_key(key) {
        Ok(()) => Ok(()),
        Err(not_until) => {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            // Whole seconds, rounded up: a client that waits that long finds a token.
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            Err(Error::RateLimited { retry_after: secs.max(1) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_over_its_burst_waits_and_others_do_not() {
        let limits = ToolLimits::new(6, 2, vec![]);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        assert!(limits.check(a).is_ok());
        assert!(limits.check(a).is_ok());
        match limits.check(a) {
            Err(Error::RateLimited { retry_after }) => assert!((1..=10).contains(&retry_after)),
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(limits.check(b).is_ok());
    }

    #[test]
    fn a_key_over_its_burst_waits_and_other_keys_do_not() {
        let limits = ApiLimits::new(1, 3);
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("key-a"), Arc::from("key-b"));
        for _ in 0..3 {
            assert!(limits.check(&a).is_ok());
        }
        match limits.check(&a) {
            Err(Error::RateLimited { retry_after }) => assert_eq!(retry_after, 1),
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(limits.check(&b).is_ok());
    }

    #[test]
    fn forwarded_for_counts_only_behind_a_trusted_proxy() {
        let proxy: SocketAddr = "127.0.0.1:5000".parse().unwrap_or_else(|_| unreachable!());
        let stranger: SocketAddr = "192.0.2.7:5000".parse().unwrap_or_else(|_| unreachable!());
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.4".parse().unwrap_or_else(|_| unreachable!()),
        );
        let limits = ToolLimits::new(6, 2, vec![proxy.ip()]);
        assert_eq!(
            limits.client(proxy, &headers),
            "198.51.100.4".parse::<IpAddr>().unwrap_or(proxy.ip())
        );
        assert_eq!(limits.client(stranger, &headers), stranger.ip());
    }
}
