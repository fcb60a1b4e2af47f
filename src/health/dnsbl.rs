//! DNS blacklists: each sending address and each MX host address is asked of every IP list
//! (`d.c.b.a.zone` A), the domain itself of every domain list (`example.com.zone` A). An answer
//! in 127.0.0.0/16 means listed; other answers (Spamhaus's 127.255.255.x) mean the list refused
//! the query, and a list that does not answer is a warning, never a listing.
//!
//! Anyone may ask for a report (the check-deliverability tool has no key), about a domain whose
//! DNS they wrote: 40 MX hosts of 40 addresses each made 6,400 blacklist questions of one
//! request. So a report asks about at most `MAX_MX_HOSTS` hosts (by preference), takes at most
//! `MAX_ADDRESSES` addresses (ours first) and asks at most `MAX_QUESTIONS` questions; what is
//! left out is named in the detail and makes the check a `warn` (not known, so not a pass).
//! When not one question could be answered (no list configured, nothing to ask about, every
//! list silent or refusing) the check is `unknown`, never a `pass`.

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

/// MX hosts whose addresses a report looks up (the most preferred ones).
pub const MAX_MX_HOSTS: usize = 10;
/// Addresses a report asks the lists about: the sending addresses first, then the MX hosts'.
pub const MAX_ADDRESSES: usize = 16;
/// Blacklist questions of one report, over every zone and address.
pub const MAX_QUESTIONS: usize = 80;

/// What the caps left unchecked.
#[derive(Debug, Default)]
struct Skipped {
    hosts: usize,
    addresses: usize,
    questions: usize,
}

impl Skipped {
    fn note(&self, f: &mut Findings) {
        if self.hosts + self.addresses + self.questions == 0 {
            return;
        }
        let mut parts = Vec::new();
        for (n, what) in [
            (self.hosts, "MX hosts"),
            (self.addresses, "addresses"),
            (self.questions, "list questions"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        f.warn(
            format!(
                "{} not checked: a report asks about at most {MAX_MX_HOSTS} MX hosts, \
                 {MAX_ADDRESSES} addresses and {MAX_QUESTIONS} list questions",
                parts.join(", ")
            ),
            "Check the remaining addresses on the lists' own websites.",
        );
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
        return finish(f, checked, Vec::new(), 0);
    }
    let mut skipped = Skipped::default();
    let by_host = mx_addresses(r, ctx.domain, deadline, &mut f, &mut skipped).await;
    let mut ips = pick_addresses(&ctx.sending_ips, &by_host, &mut skipped);
    ips.sort();
    let (questions, unasked) = questions(ctx, &ips);
    skipped.questions = unasked;
    let late = || Answer::Failed("no answer in time".to_owned());
    let answers = join_all(
        questions.iter().map(|(_, name, _)| by(deadline, r.addrs(name, false), late)).collect(),
    )
    .await;
    let mut listed_on: Vec<String> = Vec::new();
    let mut answered = 0;
    for ((subject, _, zone), answer) in questions.iter().zip(answers) {
        if matches!(answer, Answer::Nothing) || is_listed(&answer) {
            answered += 1;
        }
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
    skipped.note(&mut f);
    let ip_zones = ctx.zones.iter().filter(|z| !z.by_domain).count();
    if ip_zones > 0 && ips.is_empty() {
        f.fact("no addresses to check (no sending addresses, no MX host addresses)");
    }
    let subjects: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    if !subjects.is_empty() {
        f.fact(format!("checked {} on {} lists", subjects.join(", "), checked.len()));
    }
    if answered == 0 {
        f.fact("no list answered a question, so nothing is known");
    } else if listed_on.is_empty() && f.status() == super::Status::Pass {
        f.fact("not listed");
    }
    finish(f, checked, listed_on, answered)
}

fn is_listed(answer: &Answer<Vec<IpAddr>>) -> bool {
    matches!(answer, Answer::Found(codes) if codes.iter().any(is_listing))
}

/// The questions to ask, `(subject, name, zone)`: zone by zone, the domain of a domain list or
/// each address of an IP list, up to `MAX_QUESTIONS`; also how many were left out.
fn questions<'z>(ctx: &'z Context<'_>, ips: &[IpAddr]) -> (Vec<(String, String, &'z Zone)>, usize) {
    let mut all: Vec<(String, String, &Zone)> = Vec::new();
    let mut left_out = 0;
    for zone in &ctx.zones {
        let subjects: Vec<(String, String)> = if zone.by_domain {
            vec![(ctx.domain.to_owned(), format!("{}.{}", ctx.domain, zone.name))]
        } else {
            ips.iter().map(|ip| (ip.to_string(), query_name(*ip, &zone.name))).collect()
        };
        for (subject, name) in subjects {
            if all.len() < MAX_QUESTIONS {
                all.push((subject, name, zone));
            } else {
                left_out += 1;
            }
        }
    }
    (all, left_out)
}

/// The check; `answered` counts the questions a list answered (listed or not listed).
fn finish(
    f: Findings,
    checked: Vec<String>,
    listed_on: Vec<String>,
    answered: usize,
) -> Blacklists {
    let status = if answered == 0 { super::Status::Unknown } else { f.status() };
    Blacklists {
        status,
        listed: !listed_on.is_empty(),
        checked,
        listed_on,
        detail: f.detail(),
        hint: f.hint(),
    }
}

/// IPv4 addresses of the domain's MX hosts (the addresses its mail servers send from too), per
/// host, of the `MAX_MX_HOSTS` most preferred hosts.
async fn mx_addresses<R: Resolve>(
    r: &R,
    domain: &str,
    deadline: Instant,
    f: &mut Findings,
    skipped: &mut Skipped,
) -> Vec<Vec<IpAddr>> {
    let late = || Answer::Failed("no answer in time".to_owned());
    let mut hosts = match by(deadline, r.mx(domain), late).await {
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
    hosts.sort();
    let mut seen = std::collections::BTreeSet::new();
    let names: Vec<&str> = hosts
        .iter()
        .map(|(_, h)| h.as_str())
        .filter(|h| !h.is_empty() && seen.insert(*h))
        .collect();
    skipped.hosts = names.len().saturating_sub(MAX_MX_HOSTS);
    let names = &names[..names.len().min(MAX_MX_HOSTS)];
    let late = || Answer::Failed("no answer in time".to_owned());
    let answers =
        join_all(names.iter().map(|h| by(deadline, r.addrs(h, false), late)).collect()).await;
    answers
        .into_iter()
        .filter_map(|a| match a {
            Answer::Found(ips) => Some(ips),
            _ => None,
        })
        .collect()
}

/// Up to `MAX_ADDRESSES` distinct addresses: the sending ones, then one address of each MX
/// host in turn, so that every host is asked about before any host's second address. Counts
/// what is left out.
fn pick_addresses(
    sending: &[IpAddr],
    by_host: &[Vec<IpAddr>],
    skipped: &mut Skipped,
) -> Vec<IpAddr> {
    let longest = by_host.iter().map(Vec::len).max().unwrap_or(0);
    let rounds = (0..longest).flat_map(|i| by_host.iter().filter_map(move |ips| ips.get(i)));
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for ip in sending.iter().chain(rounds) {
        if !seen.insert(*ip) {
            continue;
        }
        if out.len() < MAX_ADDRESSES {
            out.push(*ip);
        } else {
            skipped.addresses += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_taken_ours_first_then_one_per_host_in_turn_up_to_the_cap() {
        let ip = |a: u8, b: u8| IpAddr::from([198, 51, a, b]);
        let ours = [ip(0, 1)];
        let by_host: Vec<Vec<IpAddr>> =
            (1..=40).map(|h| (1..=40).map(|a| ip(h, a)).chain([ip(0, 1)]).collect()).collect();
        let mut skipped = Skipped::default();
        let picked = pick_addresses(&ours, &by_host, &mut skipped);
        assert_eq!(picked.len(), MAX_ADDRESSES);
        assert_eq!(picked[0], ip(0, 1));
        assert_eq!(&picked[1..4], [ip(1, 1), ip(2, 1), ip(3, 1)]);
        assert_eq!(skipped.addresses, 40 * 40 + 1 - MAX_ADDRESSES);
        let mut f = Findings::default();
        skipped.note(&mut f);
        assert_eq!(f.status(), super::super::Status::Warn);
        assert!(f.detail().contains("not checked"), "{}", f.detail());
    }
}
