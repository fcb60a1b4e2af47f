//! Per-client-IP token buckets for the public tools (governor). The client is the socket peer,
//! or the last address in `X-Forwarded-For` when the peer is a configured trusted proxy, so a
//! client cannot escape its bucket by sending that header itself.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;

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
        match self.limiter.check_key(&ip) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(Error::RateLimited {
                    retry_after: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
                })
            }
        }
    }

    /// Forgets buckets that are full again, so memory follows recent clients only.
    pub fn tidy(&self) {
        self.limiter.retain_recent();
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
