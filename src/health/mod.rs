//! Domain health: SPF, DKIM, DMARC, MX and DNS blacklists of one domain, scored 0-100. The same
//! report answers `GET /v1/domain-health` (hosted domains, checked against this server's keys,
//! host name and sending addresses) and the public check-deliverability tool (any domain).
//!
//! Every lookup runs concurrently under one deadline: a check whose DNS has not answered by then
//! is a `warn` saying so, so a hung nameserver costs seconds, never an error.

pub mod checks;
pub mod dnsbl;
pub mod lookup;
pub mod spf;
pub mod spf_check;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::config::Config;
use crate::dns::Dns;
use crate::store::Domain;
use lookup::{Answer, Resolve};

/// All lookups of one report share this deadline.
pub const DEADLINE: Duration = Duration::from_secs(4);

/// Points per check; a `warn` earns half (the total rounded down). All five passing is 100.
pub const WEIGHTS: Weights = Weights { spf: 25, dkim: 25, dmarc: 20, mx: 15, blacklists: 15 };

pub struct Weights {
    pub spf: u32,
    pub dkim: u32,
    pub dmarc: u32,
    pub mx: u32,
    pub blacklists: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Nothing could be checked (blacklists: no list configured or none answered): not a
    /// pass, and scored as a warning. Ordered below `Warn` so a check's worst issue still shows.
    Unknown,
    Warn,
    Fail,
}

/// SPF and DMARC: one record.
#[derive(Debug, Serialize)]
pub struct RecordCheck {
    pub status: Status,
    pub record: Option<String>,
    pub detail: String,
    pub hint: Option<String>,
}

/// DKIM (selectors found) and MX (hosts).
#[derive(Debug, Serialize)]
pub struct RecordsCheck {
    pub status: Status,
    pub records: Vec<String>,
    pub detail: String,
    pub hint: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blacklists {
    pub status: Status,
    pub listed: bool,
    pub checked: Vec<String>,
    pub listed_on: Vec<String>,
    pub detail: String,
    pub hint: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub domain: String,
    pub score: u32,
    pub checked_at: u64,
    pub spf: RecordCheck,
    pub dkim: RecordsCheck,
    pub dmarc: RecordCheck,
    pub mx: RecordsCheck,
    pub blacklists: Blacklists,
}

/// What a check found: facts for the detail, and issues that lower its status.
#[derive(Debug, Default)]
pub struct Findings {
    facts: Vec<String>,
    issues: Vec<(Status, String, String)>,
}

impl Findings {
    pub fn fact(&mut self, text: impl Into<String>) {
        self.facts.push(text.into());
    }

    pub fn warn(&mut self, detail: impl Into<String>, hint: impl Into<String>) {
        self.issues.push((Status::Warn, detail.into(), hint.into()));
    }

    pub fn fail(&mut self, detail: impl Into<String>, hint: impl Into<String>) {
        self.issues.push((Status::Fail, detail.into(), hint.into()));
    }

    pub fn status(&self) -> Status {
        self.issues.iter().map(|(s, _, _)| *s).max().unwrap_or(Status::Pass)
    }

    /// Issues first, worst first, then the facts.
    pub fn detail(&self) -> String {
        let mut issues: Vec<&(Status, String, String)> = self.issues.iter().collect();
        issues.sort_by_key(|i| std::cmp::Reverse(i.0));
        let parts: Vec<&str> = issues
            .iter()
            .map(|(_, d, _)| d.as_str())
            .chain(self.facts.iter().map(String::as_str))
            .collect();
        let mut text = parts.join("; ");
        text.push('.');
        text
    }

    /// How to fix every issue, worst first; none when all is well.
    pub fn hint(&self) -> Option<String> {
        let mut issues: Vec<&(Status, String, String)> = self.issues.iter().collect();
        issues.sort_by_key(|i| std::cmp::Reverse(i.0));
        let mut hints: Vec<&str> = Vec::new();
        for (_, _, h) in issues {
            if !h.is_empty() && !hints.contains(&h.as_str()) {
                hints.push(h);
            }
        }
        (!hints.is_empty()).then(|| hints.join(" "))
    }

    pub fn record(self, record: Option<String>) -> RecordCheck {
        RecordCheck { status: self.status(), detail: self.detail(), hint: self.hint(), record }
    }

    pub fn records(self, records: Vec<String>) -> RecordsCheck {
        RecordsCheck { status: self.status(), detail: self.detail(), hint: self.hint(), records }
    }
}

impl Report {
    /// Adds what DMARC aggregate reports say to the DMARC check: `failing` lists the sources
    /// (IP, messages) whose mail failed alignment lately. A source that is ours needs SPF or
    /// DKIM fixed; one that is not is someone sending as the domain. Only the detail and hint
    /// change: the score stays that of the DNS records.
    pub fn note_failing_sources(&mut self, failing: &[(String, u64)], days: u64) {
        if failing.is_empty() {
            return;
        }
        let total: u64 = failing.iter().map(|(_, n)| n).sum();
        let listed: Vec<String> =
            failing.iter().take(5).map(|(ip, n)| format!("{ip} ({n})")).collect();
        let more = if failing.len() > 5 { ", ..." } else { "" };
        let d = &mut self.dmarc;
        d.detail = format!(
            "{} DMARC reports of the last {days} days: {total} messages from {} sources failed \
             alignment: {}{more}.",
            d.detail.trim_end_matches('.'),
            failing.len(),
            listed.join(", ")
        );
        let hint = "A source that is yours needs SPF to authorize it or DKIM to sign its mail \
                    with this domain; one that is not is someone sending as you (see \
                    GET /v1/dmarc-reports or the dashboard's \"Who sends as you\").";
        d.hint = Some(match d.hint.take() {
            Some(h) => format!("{h} {hint}"),
            None => hint.to_owned(),
        });
    }
}

/// What the checks compare a domain against.
pub struct Context<'a> {
    pub domain: &'a str,
    /// The stored record when the domain is hosted here: its DKIM keys are checked exactly, and
    /// SPF, MX and blacklists are judged against this server.
    pub hosted: Option<&'a Domain>,
    /// Addresses this server's mail leaves from (configured, plus the relay's); empty for a
    /// domain that is not hosted here.
    pub sending_ips: Vec<IpAddr>,
    /// Problems finding the sending addresses (the relay did not resolve).
    pub sending_notes: Vec<String>,
    pub hostname: Option<&'a str>,
    pub helo: &'a str,
    pub zones: Vec<dnsbl::Zone>,
}

/// The report on `domain`; `hosted` is its stored record when it is one of ours.
pub async fn report(dns: &Dns, config: &Config, domain: &str, hosted: Option<&Domain>) -> Report {
    let deadline = Instant::now() + DEADLINE;
    let checked_at = crate::ids::now_ms();
    let (sending_ips, sending_notes) = match hosted {
        Some(_) => sending_ips(dns, config, deadline).await,
        None => (Vec::new(), Vec::new()),
    };
    let ctx = Context {
        domain,
        hosted,
        sending_ips,
        sending_notes,
        hostname: config.smtp.hostname.as_deref(),
        helo: config.smtp.host(),
        zones: config.health.dnsbl_zones.iter().map(|z| dnsbl::Zone::parse(z)).collect(),
    };
    let late = |what: &str| format!("{what}: DNS did not answer within {} s", DEADLINE.as_secs());
    let retry = "Check that the domain's nameservers answer, then run the check again.";
    let (spf, dkim, dmarc, mx, blacklists) = tokio::join!(
        by(deadline, spf_check::check(dns, &ctx), || {
            let mut f = Findings::default();
            f.warn(late("SPF"), retry);
            f.record(None)
        }),
        by(deadline, checks::dkim(dns, &ctx), || {
            let mut f = Findings::default();
            f.warn(late("DKIM"), retry);
            f.records(Vec::new())
        }),
        by(deadline, checks::dmarc(dns, &ctx), || {
            let mut f = Findings::default();
            f.warn(late("DMARC"), retry);
            f.record(None)
        }),
        by(deadline, checks::mx(dns, &ctx), || {
            let mut f = Findings::default();
            f.warn(late("MX"), retry);
            f.records(Vec::new())
        }),
        dnsbl::check(dns, &ctx, deadline),
    );
    let score = score([
        (spf.status, WEIGHTS.spf),
        (dkim.status, WEIGHTS.dkim),
        (dmarc.status, WEIGHTS.dmarc),
        (mx.status, WEIGHTS.mx),
        (blacklists.status, WEIGHTS.blacklists),
    ]);
    Report { domain: domain.to_owned(), score, checked_at, spf, dkim, dmarc, mx, blacklists }
}

pub fn score(parts: [(Status, u32); 5]) -> u32 {
    let halves: u32 = parts
        .iter()
        .map(|(status, weight)| {
            weight
                * match status {
                    Status::Pass => 2,
                    Status::Unknown | Status::Warn => 1,
                    Status::Fail => 0,
                }
        })
        .sum();
    halves / 2
}

/// `fut`'s output, or `late()` once the deadline passes.
pub async fn by<T>(deadline: Instant, fut: impl Future<Output = T>, late: impl FnOnce() -> T) -> T {
    tokio::time::timeout_at(deadline, fut).await.unwrap_or_else(|_| late())
}

/// The configured sending addresses plus those of the relay host, when one is set.
async fn sending_ips(dns: &Dns, config: &Config, deadline: Instant) -> (Vec<IpAddr>, Vec<String>) {
    let mut ips = config.delivery.sending_ips.clone();
    let mut notes = Vec::new();
    if let Some(relay) = &config.delivery.relay {
        let host = relay.rsplit_once(':').map_or(relay.as_str(), |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            ips.push(ip);
        } else {
            let lookups = join_all(vec![dns.addrs(host, false), dns.addrs(host, true)]);
            match tokio::time::timeout_at(deadline, lookups).await {
                Ok(answers) => {
                    let mut any = false;
                    for answer in answers {
                        match answer {
                            Answer::Found(found) => {
                                any = true;
                                ips.extend(found);
                            }
                            Answer::Nothing => {}
                            Answer::Failed(e) => notes.push(e),
                        }
                    }
                    if !any && notes.is_empty() {
                        notes.push(format!("the relay host {host} has no addresses"));
                    }
                }
                Err(_) => notes.push(format!("the relay host {host} did not resolve in time")),
            }
        }
    }
    ips.sort();
    ips.dedup();
    (ips, notes)
}

/// Runs futures concurrently on the current task and returns their outputs in order.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, slot) in futures.iter_mut().zip(outputs.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(out) => *slot = Some(out),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_pass_is_100_and_a_warn_is_half() {
        let all = |s| [(s, 25), (s, 25), (s, 20), (s, 15), (s, 15)];
        assert_eq!(score(all(Status::Pass)), 100);
        assert_eq!(score(all(Status::Warn)), 50);
        assert_eq!(score(all(Status::Fail)), 0);
        let mixed = [
            (Status::Warn, 25),
            (Status::Pass, 25),
            (Status::Fail, 20),
            (Status::Pass, 15),
            (Status::Pass, 15),
        ];
        assert_eq!(score(mixed), 67);
    }

    #[tokio::test]
    async fn a_check_past_the_deadline_gives_its_fallback() {
        let deadline = Instant::now() + Duration::from_millis(20);
        let late = by(deadline, std::future::pending::<u8>(), || 7).await;
        assert_eq!(late, 7);
        let slow = |n: u64| async move {
            tokio::time::sleep(Duration::from_millis(10 * n)).await;
            n
        };
        let outputs = join_all(vec![slow(3), slow(1), slow(2)]).await;
        assert_eq!(outputs, [3, 1, 2]);
    }

    #[test]
    fn findings_put_the_worst_first() {
        let mut f = Findings::default();
        f.fact("one record");
        f.warn("soft", "do a");
        f.fail("hard", "do b");
        assert_eq!(f.status(), Status::Fail);
        assert_eq!(f.detail(), "hard; soft; one record.");
        assert_eq!(f.hint().as_deref(), Some("do b do a"));
        assert_eq!(Findings::default().hint(), None);
    }
}
