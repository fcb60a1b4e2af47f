//! DNS blacklists: each sending address and each MX host address is asked of every IP list
//! (`d.c.b.a.zone` A), the domain itself of every domain list (`example.com.zone` A). An answer
//! in 127.0.0.0/16 means listed; other answers (Spamhaus's 127.255.255.x) mean the list refused
//! the query, and a list that does not answer is a warning, never a listing.

use std::net::IpAddr;

use tokio::time::Instant;

use super::lookup::{Answer, Resolve};
use super::spf::nibbles;
use super::{Blacklists, Context, Findings, by, join_all};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    pub name: String,
    /// A domain list (such as dbl.spamhaus.org), asked about the domain name, not addresses.
    pub by_domain: bool,
}

impl Zone {
    /// `zone` for an IP list, `domain:zone` for a domain list.
    pub fn parse(entry: &str) -> Zone {
        match entry.strip_prefix("domain:") {
            Some(zone) => Zone { name: zone.to_owned(), by_domain: true },
            None => Zone { name: entry.to_owned(), by_domain: false },
        }
    }
}

/// The name to ask a list about an address: octets (IPv4) or nibbles (IPv6) reversed.
pub fn query_name(ip: IpAddr, zone: &str) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.{zone}")
        }
        IpAddr::V6(v6) => {
            let mut parts = nibbles(v6);
            parts.reverse();
            format!("{}.{zone}", parts.join("."))
        }
    }
}

fn is_listing(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if v4.octets()[..2] == [127, 0])
}

pub async fn check<R: Resolve>(r: &R, ctx: &Context<'_>, deadline: Instant) -> Blacklists {
    let mut f = Findings::default();
    let checked: Vec<String> = ctx.zones.iter().map(|z| z.name.clone()).collect();
    if ctx.zones.is_empty() {
        f.fact("no blacklist zones are configured (health.dnsbl_zones)");
        return finish(f, checked, Vec::new());
    }
    let mut ips = ctx.sending_ips.clone();
    ips.extend(mx_addresses(r, ctx.domain, deadline, &mut f).await);
    ips.sort();
    ips.dedup();

    let mut questions: Vec<(String, String, &Zone)> = Vec::new(); // (subject, name, zone)
    for zone in &ctx.zones {
        if zone.by_domain {
            questions.push((ctx.domain.to_owned(), format!("{}.{}", ctx.domain, zone.name), zone));
        } else {
            for ip in &ips {
                questions.push((ip.to_string(), query_name(*ip, &zone.name), zone));
            }
        }
    }
    let late = || Answer::Failed("no answer in time".to_owned());
    let answers = join_all(
        questions.iter().map(|(_, name, _)| by(deadline, r.addrs(name, false), late)).collect(),
    )
    .await;
    let mut listed_on: Vec<String> = Vec::new();
    for ((subject, _, zone), answer) in questions.iter().zip(answers) {
        match answer {
            Answer::Found(codes) if codes.iter().any(is_listing) => {
                let codes: Vec<String> = codes.iter().map(IpAddr::to_string).collect();
                f.fail(
                    format!("{subject} is listed on {} ({})", zone.name, codes.join(", ")),
                    "Find and stop the cause (an open relay, a compromised account, purchased \
                     lists), then request removal on each list's website.",
                );
                if !listed_on.contains(&zone.name) {
                    listed_on.push(zone.name.clone());
                }
            }
            Answer::Found(codes) => f.warn(
                format!(
                    "{} refused the query about {subject} (answer {}); lists such as Spamhaus refuse \
                     queries sent through public resolvers",
                    zone.name,
                    codes.first().map(IpAddr::to_string).unwrap_or_default()
                ),
                "Point delivery.nameserver at a resolver of your own, or drop the zone from \
                 health.dnsbl_zones.",
            ),
            Answer::Nothing => {}
            Answer::Failed(e) => f.warn(
                format!("{} could not be asked about {subject}: {e}", zone.name),
                "Run the check again later; a list that keeps failing can be dropped from \
                 health.dnsbl_zones.",
            ),
        }
    }
    let ip_zones = ctx.zones.iter().filter(|z| !z.by_domain).count();
    if ip_zones > 0 && ips.is_empty() {
        f.fact("no addresses to check (no sending addresses, no MX host addresses)");
    }
    let subjects: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    if !subjects.is_empty() {
        f.fact(format!("checked {} on {} lists", subjects.join(", "), checked.len()));
    }
    if listed_on.is_empty() && f.status() == super::Status::Pass {
        f.fact("not listed");
    }
    finish(f, checked, listed_on)
}

fn finish(f: Findings, checked: Vec<String>, listed_on: Vec<String>) -> Blacklists {
    Blacklists {
        status: f.status(),
        listed: !listed_on.is_empty(),
        checked,
        listed_on,
        detail: f.detail(),
        hint: f.hint(),
    }
}

/// IPv4 addresses of the domain's MX hosts (the addresses its mail servers send from too).
async fn mx_addresses<R: Resolve>(
    r: &R,
    domain: &str,
    deadline: Instant,
    f: &mut Findings,
) -> Vec<IpAddr> {
    let late = || Answer::Failed("no answer in time".to_owned());
    let hosts = match by(deadline, r.mx(domain), late).await {
        Answer::Found(hosts) => hosts,
        Answer::Nothing => return Vec::new(),
        Answer::Failed(e) => {
            f.warn(
                format!("the MX hosts to check could not be looked up: {e}"),
                "Check that the domain's nameservers answer, then run the check again.",
            );
            return Vec::new();
        }
    };
    let names: Vec<&str> =
        hosts.iter().map(|(_, h)| h.as_str()).filter(|h| !h.is_empty()).collect();
    let late = || Answer::Failed("no answer in time".to_owned());
    let answers =
        join_all(names.iter().map(|h| by(deadline, r.addrs(h, false), late)).collect()).await;
    let mut out = Vec::new();
    for answer in answers {
        if let Answer::Found(ips) = answer {
            out.extend(ips);
        }
    }
    out
}
