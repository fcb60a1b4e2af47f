//! Delivery to other servers: recipients grouped by destination, the relay or each domain's
//! mail exchangers tried in preference order, one transaction per pooled session.

use std::net::SocketAddr;

use super::Deps;
use super::client::Broken;
use crate::dns::Destination;
use crate::store::Outcome;

/// Recipients grouped by where they are delivered: the relay (`None`) or each recipient domain.
pub(super) fn group(app: &Deps, recipients: &[String]) -> Vec<(Option<String>, Vec<String>)> {
    if app.delivery.relay.is_some() {
        return vec![(None, recipients.to_vec())];
    }
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for r in recipients {
        let domain = r.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase()).unwrap_or_default();
        match groups.iter_mut().find(|(d, _)| d.as_deref() == Some(domain.as_str())) {
            Some((_, list)) => list.push(r.clone()),
            None => groups.push((Some(domain), vec![r.clone()])),
        }
    }
    groups
}

fn all(recipients: &[String], outcome: Outcome) -> Vec<(String, Outcome)> {
    recipients.iter().map(|r| (r.clone(), outcome.clone())).collect()
}

/// Delivers to one destination: the relay, or the domain's mail exchangers in preference order.
pub(super) async fn deliver(
    app: &Deps,
    domain: Option<&str>,
    from: &str,
    recipients: &[String],
    message: &[u8],
) -> Vec<(String, Outcome)> {
    let _slot = app.queue.domain_slot(domain.unwrap_or("relay")).await;
    let port = app.delivery.port;
    let hosts: Vec<(String, u16)> = match (domain, &app.delivery.relay) {
        (_, Some(relay)) => {
            match relay.rsplit_once(':').and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?))) {
                Some(target) => vec![target],
                None => {
                    return all(
                        recipients,
                        Outcome::Deferred(format!("bad relay address {relay}")),
                    );
                }
            }
        }
        (Some(domain), None) => match app.dns.destination(domain).await {
            Destination::Hosts(hosts) => hosts.into_iter().map(|h| (h, port)).collect(),
            Destination::Never(why) => {
                return all(recipients, Outcome::Bounced(format!("550 5.1.2 {why}")));
            }
            Destination::Unknown(why) => return all(recipients, Outcome::Deferred(why)),
        },
        (None, None) => return Vec::new(),
    };
    let relay = domain.is_none();
    let allow_private = relay || app.delivery.allow_private;
    // What the API caller sees stays generic: connection errors of particular hosts and ports
    // would make the send API a port scanner. The details go to the log.
    let mut reached_any = false;
    for (host, port) in hosts {
        if !allow_private && host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok() {
            tracing::warn!(%host, "mail exchanger is an IP address literal; refused");
            continue;
        }
        let ips = match app.dns.addresses(&host).await {
            Ok(ips) => ips,
            Err(e) => {
                tracing::info!(%host, error = %e, "mail exchanger does not resolve");
                reached_any = true;
                continue;
            }
        };
        for ip in ips.into_iter().filter(|ip| allow_private || crate::dns::is_public(*ip)).take(2) {
            reached_any = true;
            let addr = SocketAddr::new(ip, port);
            match transact(app, addr, &host, from, recipients, message).await {
                Ok(outcomes) => return outcomes,
                Err(e) => tracing::info!(%host, %addr, error = %e.0, "delivery connection failed"),
            }
        }
    }
    if !reached_any {
        tracing::warn!(domain = domain.unwrap_or("relay"), "no public mail exchanger; refused");
        return all(
            recipients,
            Outcome::Failed("550 5.4.4 the domain's mail exchangers have no public address".into()),
        );
    }
    let text = if relay {
        "4.4.1 the relay could not be reached"
    } else {
        "4.4.1 no mail exchanger could be reached"
    };
    all(recipients, Outcome::Deferred(text.into()))
}

/// One transaction on a pooled session; a reused session that turns out dead gets one retry on
/// a fresh connection. A transport failure is a delivery outcome in the making (the caller
/// tries the next address, then defers), never an error of the server.
async fn transact(
    app: &Deps,
    addr: SocketAddr,
    host: &str,
    from: &str,
    recipients: &[String],
    message: &[u8],
) -> std::result::Result<Vec<(String, Outcome)>, Broken> {
    for _ in 0..2 {
        let mut session = app.queue.pool.session(addr, host).await?;
        match session.transaction(from, recipients, message).await {
            Ok(outcomes) => {
                app.queue.pool.put_back(addr, session);
                return Ok(outcomes);
            }
            Err(e) if session.reused => {
                tracing::debug!(error = %e.0, %addr, "pooled session was dead")
            }
            Err(e) => return Err(e),
        }
    }
    Err(Broken(format!("{addr}: connection lost twice")))
}
