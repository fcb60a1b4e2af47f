//! Recipient screening before anything is queued: syntax, suppressions and unsubscribes of the
//! sending domain, disposable domains, and whether the recipient's domain can receive mail at all.
//! Only definitive answers refuse: a DNS timeout lets the recipient through and delivery decides.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::address;
use crate::dns::{Dns, MailVerdict};
use crate::error::{Blocked, Result};
use crate::store::Store;
use crate::tools::disposable::is_disposable;

/// The recipients that may be sent to (normalized, de-duplicated, in input order) and the rest.
#[derive(Debug, Default)]
pub struct Screened {
    pub accepted: Vec<String>,
    pub blocked: Vec<Blocked>,
}

/// How long all DNS checks of one request may take together.
const DNS_DEADLINE: Duration = Duration::from_secs(4);

pub async fn screen(
    store: &Store,
    dns: &Arc<Dns>,
    sender_domain: &str,
    input: &[String],
) -> Result<Screened> {
    Ok(screen_with(store, dns, sender_domain, input, |_| Ok(())).await?.0)
}

/// `screen`, also running `also` in the snapshot that reads the suppressions (after they are
/// asked for, so that a backend across a network reads everything in one exchange), and
/// answering what it found.
pub async fn screen_with<T: Send + 'static>(
    store: &Store,
    dns: &Arc<Dns>,
    sender_domain: &str,
    input: &[String],
    also: impl FnOnce(&crate::store::Rtx) -> crate::store::Result<T> + Send + 'static,
) -> Result<(Screened, T)> {
    let mut out = Screened::default();
    let mut candidates: Vec<(String, String)> = Vec::new(); // (address, its domain)
    for raw in input {
        // Submission passes UTF-8 addresses (SMTPUTF8); the API parsed its input ASCII-only.
        match address::parse_intl(raw) {
            Ok(a) => {
                let normalized = format!("{}@{}", a.local, a.domain);
                if !candidates.iter().any(|(c, _)| c.eq_ignore_ascii_case(&normalized)) {
                    candidates.push((normalized, a.domain));
                }
            }
            Err(why) => out.blocked.push(Blocked {
                email: raw.clone(),
                reason: "invalid_address",
                message: format!("not a valid address: {why}"),
            }),
        }
    }
    let lookup: Vec<(String, String)> = candidates.clone();
    let domain = sender_domain.to_owned();
    // Hosted domains are delivered here, without DNS (`queue::local`): no MX check for them.
    let (suppressed, hosted, found) = store
        .read(move |r| -> crate::store::Result<_> {
            r.suppressions_ahead(&domain, lookup.iter().map(|(a, _)| a.as_str()))?;
            r.domains_ahead(lookup.iter().map(|(_, d)| d.as_str()))?;
            let found = also(r)?;
            let mut suppressed = Vec::with_capacity(lookup.len());
            let mut hosted = std::collections::HashSet::new();
            for (address, to) in &lookup {
                suppressed.push(r.suppression(&domain, address)?);
                if r.hosts(to)? {
                    hosted.insert(to.clone());
                }
            }
            Ok((suppressed, hosted, found))
        })
        .await?;
    let mut remaining = Vec::new();
    for ((address, domain), suppression) in candidates.into_iter().zip(suppressed) {
        if let Some(s) = suppression {
            let (reason, message) = if s.reason == "unsubscribed" {
                ("unsubscribed", format!("{address} unsubscribed from mail of {sender_domain}"))
            } else {
                ("suppressed", format!("{address} is suppressed ({}): {}", s.reason, s.source))
            };
            out.blocked.push(Blocked { email: address, reason, message });
        } else if is_disposable(&domain) {
            out.blocked.push(Blocked {
                email: address,
                reason: "disposable_address",
                message: format!("{domain} is a disposable (throwaway) email provider"),
            });
        } else {
            remaining.push((address, domain));
        }
    }
    let asked = remaining.iter().map(|(_, d)| d.as_str()).filter(|d| !hosted.contains(*d));
    let verdicts = mail_verdicts(dns, asked, DNS_DEADLINE).await;
    for (address, domain) in remaining {
        match verdicts.get(&domain) {
            Some(MailVerdict::Refuses(why)) => out.blocked.push(Blocked {
                email: address,
                reason: "no_mx",
                message: format!("{domain} cannot receive mail: {why}"),
            }),
            _ => out.accepted.push(address),
        }
    }
    Ok((out, found))
}

/// One DNS verdict per distinct domain, looked up concurrently under one deadline; a domain
/// without an answer by then is missing from the map (unknown).
pub async fn mail_verdicts<'a>(
    dns: &Arc<Dns>,
    domains: impl Iterator<Item = &'a str>,
    deadline: Duration,
) -> HashMap<String, MailVerdict> {
    let distinct: std::collections::HashSet<&str> = domains.collect();
    if distinct.len() == 1
        && let Some(&only) = distinct.iter().next()
    {
        // One domain (most sends): looked up here, without a task to spawn and join.
        let mut verdicts = HashMap::new();
        if let Ok(verdict) = tokio::time::timeout(deadline, dns.accepts_mail(only)).await {
            verdicts.insert(only.to_owned(), verdict);
        }
        return verdicts;
    }
    let mut set = tokio::task::JoinSet::new();
    for domain in distinct {
        let (dns, domain) = (dns.clone(), domain.to_owned());
        set.spawn(async move {
            let verdict = dns.accepts_mail(&domain).await;
            (domain, verdict)
        });
    }
    let mut verdicts = HashMap::new();
    let collect = async {
        while let Some(joined) = set.join_next().await {
            if let Ok((domain, verdict)) = joined {
                verdicts.insert(domain, verdict);
            }
        }
    };
    // Past the deadline the missing domains count as unknown, which never refuses.
    let _ = tokio::time::timeout(deadline, collect).await;
    verdicts
}
