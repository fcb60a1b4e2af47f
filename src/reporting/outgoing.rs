//! Reports out (`reports.dmarc_send`): once a reporting period is over, each group of what a
//! hosted domain received from a policy domain (`store::dmarc_seen`) becomes one aggregate
//! report, queued like any mail the domain sends (so DKIM-signed with its key) to the `rua`
//! addresses that may have it, and the group is removed in the same transaction: a report is
//! queued once, whichever node gets there first. Only the leading node looks.
//!
//! RFC 7489 section 7.1: an address outside the policy domain's organizational domain gets
//! reports only when its domain publishes `<policy domain>._report._dmarc.<its domain>`; a
//! destination's size limit (`!10m`) drops it when the report is larger. At most
//! `MAX_PER_ROUND` reports are made per look, the rest wait for the next.

use std::sync::Arc;
use std::time::Duration;

use hickory_resolver::proto::rr::RData;

use crate::cluster::Node;
use crate::dns::Dns;
use crate::ids::now_ms;
use crate::inbound::dmarc::organizational;
use crate::shutdown::Shutdown;
use crate::store::{DmarcGroup, Store};

/// Reports made per look; a backlog drains over the next looks.
const MAX_PER_ROUND: usize = 100;
/// `rua` addresses one report goes to.
const MAX_DESTINATIONS: usize = 4;

/// What the report sender uses.
pub struct Deps {
    pub store: Store,
    pub dns: Arc<Dns>,
    pub queue: crate::wake::Wake,
    pub node: Arc<Node>,
    /// `reports.dmarc_interval`.
    pub interval: Duration,
}

/// Sends the reports of each period that is over, until shutdown.
pub async fn run(deps: Deps, mut shutdown: Shutdown) {
    let secs = deps.interval.as_secs().max(1);
    // Often enough that a report leaves soon after its period; never more than once a second.
    let look = (deps.interval / 4).clamp(Duration::from_secs(1), Duration::from_secs(300));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(deps.node.poll(look)) => {}
            _ = shutdown.wait() => break,
        }
        if !deps.node.leads() {
            continue;
        }
        match round(&deps, secs).await {
            Ok(0) => {}
            Ok(queued) => {
                tracing::info!(reports = queued, "DMARC aggregate reports queued");
                deps.queue.wake();
            }
            Err(e) => tracing::warn!(error = %e, "DMARC aggregate reports not made"),
        }
    }
}

/// Makes the reports of periods that are over; answers how many were queued.
async fn round(deps: &Deps, secs: u64) -> crate::error::Result<usize> {
    let current = now_ms() / 1000 / secs * secs;
    let groups = deps.store.read(move |r| r.dmarc_due(current, MAX_PER_ROUND)).await?;
    let mut queued = 0;
    for group in groups {
        let to = destinations(&deps.dns, &group).await;
        tracing::debug!(reporter = %group.reporter, policy = %group.policy.domain,
            rows = group.rows.len(), destinations = to.len(), "DMARC aggregate report due");
        let now = now_ms();
        let prepared = if to.is_empty() { None } else { prepare(&group, secs, &to, now) };
        let sent = prepared.is_some();
        let taken = deps
            .store
            .write(move |w| -> crate::store::Result<bool> {
                if !w.take_dmarc_group(&group)? {
                    return Ok(false);
                }
                if let Some((email, raw)) = &prepared {
                    w.enqueue_submitted(email, raw, now)?;
                }
                Ok(true)
            })
            .await?;
        queued += usize::from(taken && sent);
    }
    Ok(queued)
}

/// The queue entry of `group`'s report to `to`, without the destinations its size exceeds.
fn prepare(
    group: &DmarcGroup,
    secs: u64,
    to: &[(String, u64)],
    now: u64,
) -> Option<(crate::store::Email, Vec<u8>)> {
    let addresses: Vec<String> = to.iter().map(|(a, _)| a.clone()).collect();
    let raw = match super::feedback::message(group, secs, &addresses, now) {
        Ok(raw) => raw,
        Err(e) => {
            tracing::warn!(error = %e, policy = %group.policy.domain, "report not written");
            return None;
        }
    };
    let size = raw.len() as u64;
    let fits: Vec<String> =
        to.iter().filter(|(_, max)| *max == 0 || size <= *max).map(|(a, _)| a.clone()).collect();
    if fits.is_empty() {
        tracing::info!(policy = %group.policy.domain, size, "report larger than every rua limit");
        return None;
    }
    // The To header names only those it goes to (fewer names: never larger).
    let raw = if fits.len() == to.len() {
        raw
    } else {
        super::feedback::message(group, secs, &fits, now).ok()?
    };
    let prepared = crate::mail::submitted::prepare(&raw, &group.reporter, now)?;
    let mailbox = format!("{}@{}", super::DMARC_LOCAL, group.reporter);
    Some(prepared.into_email(mailbox, fits, now))
}

/// The `rua` addresses of `group`'s policy that may receive it, with their size limits.
async fn destinations(dns: &Dns, group: &DmarcGroup) -> Vec<(String, u64)> {
    let policy = &group.policy.domain;
    let mut out = Vec::new();
    for (uri, max) in &group.policy.rua {
        let Some(address) = mailto(uri) else { continue };
        let Some((_, domain)) = address.rsplit_once('@') else { continue };
        if organizational(domain) != organizational(policy)
            && !authorized(dns, policy, domain).await
        {
            tracing::info!(%policy, destination = %address,
                "rua destination not authorized (RFC 7489 7.1): no report sent there");
            continue;
        }
        if !out.iter().any(|(a, _)| *a == address) {
            out.push((address, *max));
        }
        if out.len() == MAX_DESTINATIONS {
            break;
        }
    }
    out
}

/// The address of a `rua` destination, lower-cased. mail-auth keeps only `mailto:` URIs and
/// strips the scheme; one written with it is taken too, any other scheme is not.
fn mailto(uri: &str) -> Option<String> {
    let uri = uri.trim();
    let rest = match uri.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("mailto:") => uri.get(7..)?,
        _ if uri.contains(':') => return None,
        _ => uri,
    };
    let address = rest.split(['?', '!']).next()?.trim().to_ascii_lowercase();
    crate::address::parse_intl(&address).is_ok().then_some(address)
}

/// Whether `domain` agreed to receive `policy`'s reports (RFC 7489 7.1).
async fn authorized(dns: &Dns, policy: &str, domain: &str) -> bool {
    let name = format!("{policy}._report._dmarc.{domain}.");
    let Ok(found) = dns.resolver().txt_lookup(name).await else { return false };
    found.answers().iter().any(|record| match &record.data {
        RData::TXT(txt) => {
            let text: Vec<u8> = txt.txt_data.iter().flat_map(|s| s.iter().copied()).collect();
            String::from_utf8_lossy(&text).trim_start().to_ascii_lowercase().starts_with("v=dmarc1")
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailto_uris_give_their_address() {
        assert_eq!(mailto("mailto:Agg@Example.com").as_deref(), Some("agg@example.com"));
        assert_eq!(mailto("agg@example.com").as_deref(), Some("agg@example.com"));
        assert_eq!(mailto("MAILTO:agg@example.com!10m").as_deref(), Some("agg@example.com"));
        assert_eq!(mailto("mailto:agg@example.com?subject=x").as_deref(), Some("agg@example.com"));
        assert_eq!(mailto("https://example.com/report"), None);
        assert_eq!(mailto("mailto:"), None);
        assert_eq!(mailto("mail"), None);
        assert_eq!(mailto("mailté:x@example.com"), None);
    }
}
