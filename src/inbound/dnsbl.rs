//! DNS blacklists asked about the client that connected to our MX (`inbound.dnsbl`): every zone
//! at once, all within one deadline, answers cached per address. A listing is evidence for the
//! spam score, never a refusal on its own: lists err, and a refusal would lose the mail.
//! Addresses no list can hold are never asked about: private and link-local networks, and
//! 127.0.0.1 and ::1 (RFC 5782 5: lists must not list 127.0.0.1; the rest of 127/8 is their
//! test range, 127.0.0.2 being listed everywhere, so it is asked about).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::dns::Dns;
use crate::health::dnsbl::query_name;
use crate::health::join_all;
use crate::health::lookup::{Answer, Resolve};

/// Addresses remembered at once; past it the cache starts again (a flood of new clients must
/// not grow it without bound).
const MAX_CACHED: usize = 20_000;
/// How long an answer is kept: lists update within the hour.
const KEEP: Duration = Duration::from_secs(15 * 60);

/// The lists and what they said.
pub struct Blacklists {
    zones: Vec<String>,
    deadline: Duration,
    cache: Mutex<HashMap<IpAddr, (Instant, Vec<String>)>>,
}

/// Whether a list could hold `ip` at all.
fn askable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.octets() == [127, 0, 0, 1])
        }
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || (segments[0] & 0xfe00) == 0xfc00
                || (segments[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// An answer inside 127.0.0.0/16 is a listing; others (Spamhaus's 127.255.255.x for refused
/// queries) are not.
fn is_listing(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if v4.octets()[..2] == [127, 0])
}

impl Blacklists {
    pub fn new(zones: Vec<String>, deadline: Duration) -> Blacklists {
        Blacklists { zones, deadline, cache: Mutex::new(HashMap::new()) }
    }

    /// The zones that list `ip`; a zone that did not answer in time lists nothing.
    pub async fn listing(&self, dns: &Dns, ip: IpAddr) -> Vec<String> {
        if self.zones.is_empty() || !askable(ip) {
            return Vec::new();
        }
        if let Some(known) = self.cached(ip) {
            return known;
        }
        let deadline = self.deadline;
        let asks: Vec<_> = self
            .zones
            .iter()
            .map(|zone| async move {
                let name = query_name(ip, zone);
                match tokio::time::timeout(deadline, dns.addrs(&name, false)).await {
                    Ok(Answer::Found(addrs)) => Some(addrs.iter().any(is_listing).then_some(zone)),
                    Ok(Answer::Nothing) => Some(None),
                    Ok(Answer::Failed(_)) | Err(_) => None,
                }
            })
            .collect();
        let answers = join_all(asks).await;
        let all_answered = answers.iter().all(Option::is_some);
        let listed: Vec<String> = answers.into_iter().flatten().flatten().cloned().collect();
        // A list that did not answer is asked again next time rather than taken as clean.
        if all_answered && let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
            cache.insert(ip, (Instant::now(), listed.clone()));
        }
        listed
    }

    fn cached(&self, ip: IpAddr) -> Option<Vec<String>> {
        let cache = self.cache.lock().ok()?;
        let (at, listed) = cache.get(&ip)?;
        (at.elapsed() < KEEP).then(|| listed.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_addresses_a_list_can_hold_are_asked_about() {
        for ip in
            ["192.168.1.2", "10.0.0.1", "172.16.0.9", "127.0.0.1", "::1", "fe80::1", "fd00::2"]
        {
            assert!(!askable(ip.parse().expect("ip")), "{ip}"); // ok: test
        }
        for ip in ["127.0.0.2", "203.0.113.9", "2001:db8::1"] {
            assert!(askable(ip.parse().expect("ip")), "{ip}"); // ok: test
        }
    }
}
