//! Delivery to other servers: recipients grouped by destination, the relay or each domain's
//! mail exchangers tried in preference order, one transaction per pooled session, within the
//! limits of the destination's provider group (`shaping`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::Deps;
use super::client::{Broken, Need};
use super::shaping::{Group, Held, is_throttle};
use super::sts::{self, Refusals, Tls};
use crate::dns::Destination;
use crate::mta_sts::{Mode, Policy};
use crate::store::{Email, Outcome};

/// Recipients grouped by where they are delivered: the relay (`None`) or each recipient domain.
fn group(app: &Deps, recipients: &[String]) -> Vec<(Option<String>, Vec<String>)> {
    if app.delivery.relay.is_some() {
        return vec![(None, recipients.to_vec())];
    }
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for r in recipients {
        // In A-labels: DNS and the provider groups know a domain by that form.
        let domain = crate::address::domain_key(r);
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

/// Where one destination's mail goes.
enum Target {
    /// The configured smarthost.
    Relay(String, u16),
    /// The domain's mail exchangers in preference order, their provider group, and the
    /// domain's MTA-STS policy when it is in `enforce` or `testing` mode.
    Hosts(Vec<String>, Arc<Group>, Option<Arc<Policy>>),
    /// Nowhere, for now or for good: every recipient gets this outcome without a connection.
    Settled(Outcome),
}

async fn target(app: &Deps, domain: Option<&str>) -> Target {
    match (domain, &app.delivery.relay) {
        (_, Some(relay)) => {
            match relay.rsplit_once(':').and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?))) {
                Some((host, port)) => Target::Relay(host, port),
                None => Target::Settled(Outcome::Deferred(format!("bad relay address {relay}"))),
            }
        }
        (Some(domain), None) => match app.dns.destination(domain).await {
            Destination::Hosts(hosts) => {
                let group = app.queue.shaper.group(hosts.first().map_or(domain, String::as_str));
                let policy = app.queue.sts.policy(domain).await.filter(|p| p.mode != Mode::None);
                Target::Hosts(hosts, group, policy)
            }
            Destination::Never(why) => {
                Target::Settled(Outcome::Bounced(format!("550 5.1.2 {why}")))
            }
            Destination::Unknown(why) => Target::Settled(Outcome::Deferred(why)),
        },
        (None, None) => Target::Settled(Outcome::Deferred("no destination".into())),
    }
}

/// What delivering to other servers made of the recipients: outcomes, and the recipients held
/// back by their provider group (no attempt was made for them), with the earliest time to retry.
#[derive(Default)]
pub(super) struct Remote {
    pub outcomes: Vec<(String, Outcome)>,
    pub held: Option<Instant>,
}

impl Remote {
    fn hold(&mut self, recipient: &str, held: Held) {
        tracing::debug!(%recipient, why = held.why, "held by its provider group");
        self.held = Some(self.held.map_or(held.until, |h| h.min(held.until)));
    }
}

/// Delivers `message` to `pending` (none of them hosted here). One transaction per recipient,
/// each with its own bounce address: a DSN can then only report the recipient it was issued for
/// (see `Tokens::bounce_address`).
pub(super) async fn deliver_all(
    app: &Deps,
    email: &Email,
    sender_domain: &str,
    pending: &[String],
    message: &[u8],
) -> Remote {
    let mut remote = Remote::default();
    for (domain, recipients) in group(app, pending) {
        let target = target(app, domain.as_deref()).await;
        for recipient in &recipients {
            if let Target::Hosts(_, group, _) = &target
                && let Err(held) = group.admit()
            {
                remote.hold(recipient, held);
                continue;
            }
            let from = bounce_address(app, email, recipient, sender_domain);
            let one = std::slice::from_ref(recipient);
            let label = domain.as_deref().unwrap_or("relay");
            remote.outcomes.extend(deliver(app, label, &target, &from, one, message).await);
        }
    }
    remote
}

/// The bounce address of `recipient` of `email`: one per recipient, so that a DSN (or whoever
/// learns the address) can speak only for that recipient.
pub(super) fn bounce_address(app: &Deps, email: &Email, recipient: &str, domain: &str) -> String {
    // Forwarded mail goes out under the address its forward was given (SRS): bounces go back
    // to its original sender, not to us.
    if let Some(from) = &email.envelope_from {
        return from.clone();
    }
    let n = email
        .deliveries
        .iter()
        .position(|d| d.recipient.eq_ignore_ascii_case(recipient))
        .unwrap_or(0);
    app.tokens.bounce_address(&email.summary.id, n, domain)
}

/// Delivers to one destination: the relay, or the domain's mail exchangers in preference order
/// (under the domain's MTA-STS policy, see `sts`).
async fn deliver(
    app: &Deps,
    domain: &str,
    target: &Target,
    from: &str,
    recipients: &[String],
    message: &[u8],
) -> Vec<(String, Outcome)> {
    let _slot = app.queue.domain_slot(domain).await;
    let port = app.delivery.port;
    let (hosts, group, policy): (Vec<(String, u16)>, _, _) = match target {
        Target::Relay(host, port) => (vec![(host.clone(), *port)], None, None),
        Target::Hosts(hosts, group, policy) => {
            (hosts.iter().map(|h| (h.clone(), port)).collect(), Some(group), policy.as_deref())
        }
        Target::Settled(outcome) => return all(recipients, outcome.clone()),
    };
    let _connection = match group {
        Some(group) => group.connection().await,
        None => None,
    };
    let relay = group.is_none();
    let tx = Transaction { app, domain, from, recipients, message, group: group.map(|g| &**g) };
    let allow_private = relay || app.delivery.allow_private;
    // What the API caller sees stays generic: connection errors of particular hosts and ports
    // would make the send API a port scanner. The details go to the log.
    let mut reached_any = false;
    let mut refusals = Refusals::default();
    for (host, port) in hosts {
        if !allow_private && host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok() {
            tracing::warn!(%host, "mail exchanger is an IP address literal; refused");
            continue;
        }
        let Some(tls) = sts::plan(domain, &host, policy, &mut refusals) else {
            continue;
        };
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
            match tx.to_host(addr, &host, tls, policy, &mut refusals).await {
                Ok(outcomes) => return outcomes,
                Err(Some(settled)) => return settled,
                Err(None) => {}
            }
        }
    }
    if let Some(why) = refusals.deferral(domain) {
        return all(recipients, Outcome::Deferred(why));
    }
    if !reached_any {
        tracing::warn!(domain, "no public mail exchanger; refused");
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

/// One message for one destination's recipients, tried on one address after another.
struct Transaction<'a> {
    app: &'a Deps,
    domain: &'a str,
    from: &'a str,
    recipients: &'a [String],
    message: &'a [u8],
    group: Option<&'a Group>,
}

impl Transaction<'_> {
    /// Delivers at `addr`: the outcomes, or `Err(Some(..))` when the answer settles the
    /// destination for now (a throttling greeting), or `Err(None)` to try the next address.
    async fn to_host(
        &self,
        addr: SocketAddr,
        host: &str,
        tls: Tls,
        policy: Option<&Policy>,
        refusals: &mut Refusals,
    ) -> Result<Vec<(String, Outcome)>, Option<Vec<(String, Outcome)>>> {
        let (app, recipients) = (self.app, self.recipients);
        // Under `testing`, a pooled session goes on serving: its host was checked when it was
        // opened, and checking again per message would cost a handshake each.
        let need = match tls {
            Tls::Testing if app.queue.pool.has_idle(addr) => Need::Usual,
            tls => tls.need(),
        };
        let mut result = transact(app, addr, host, need, self).await;
        if let (Err(e), Some(policy)) = (&result, policy)
            && let Some(why) = e.policy()
        {
            refusals.record(self.domain, policy.mode, host, why);
            if tls == Tls::Testing {
                result = transact(app, addr, host, Need::Usual, self).await;
            }
        }
        match result {
            Ok(outcomes) => {
                if let Some(group) = self.group {
                    heed(app, group, &outcomes);
                }
                Ok(outcomes)
            }
            Err(e) => {
                tracing::info!(%host, %addr, error = %e.0, "delivery connection failed");
                // A server too busy to greet us speaks for the whole group: trying its other
                // hosts now is the hammering the pause exists to prevent.
                if let (Some(group), Some(reply)) = (self.group, e.greeting())
                    && is_throttle(reply)
                {
                    group.throttled(&app.queue.shaper.config, reply);
                    return Err(Some(all(recipients, Outcome::Deferred(reply.to_owned()))));
                }
                Err(None)
            }
        }
    }
}

/// What a transaction's answers mean for the group: a throttling answer pauses it, a delivery
/// resets its backoff.
fn heed(app: &Deps, group: &Group, outcomes: &[(String, Outcome)]) {
    let throttled = outcomes.iter().find_map(|(_, o)| match o {
        Outcome::Deferred(reply) if is_throttle(reply) => Some(reply),
        _ => None,
    });
    match throttled {
        Some(reply) => group.throttled(&app.queue.shaper.config, reply),
        None if outcomes.iter().any(|(_, o)| matches!(o, Outcome::Delivered(_))) => {
            group.delivered()
        }
        None => {}
    }
}

/// One transaction on a pooled session; a reused session that turns out dead gets one retry on
/// a fresh connection. A transport failure is a delivery outcome in the making (the caller
/// tries the next address, then defers), never an error of the server.
async fn transact(
    app: &Deps,
    addr: SocketAddr,
    host: &str,
    need: Need,
    tx: &Transaction<'_>,
) -> std::result::Result<Vec<(String, Outcome)>, Broken> {
    let utf8 = super::smtputf8::needs(tx.from, tx.recipients, tx.message);
    for _ in 0..2 {
        let mut session = app.queue.pool.session(addr, host, need).await?;
        if let Some(need) = utf8
            && !session.offers_smtputf8()
        {
            // Nothing was sent: the session stays good for other mail.
            app.queue.pool.put_back(addr, session);
            return Ok(all(tx.recipients, super::smtputf8::refused(need, host)));
        }
        match session.transaction(tx.from, tx.recipients, tx.message, utf8.is_some()).await {
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
