//! What happens to mail that reaches our MX: recipients are checked at RCPT time (hosted domains
//! only, so we are never an open relay); an accepted message gets Received and
//! Authentication-Results (SPF, DKIM, DMARC by mail-auth) headers, is parsed, is offered to the
//! registered claimants (services above us that take some mail for themselves), and otherwise
//! is committed to every recipient mailbox's inbox before the 250. Reports about mail we sent
//! (DSNs to our bounce addresses, ARF complaints) and replies to it update the sent messages
//! and suppressions.

pub mod auth;
mod disposition;
pub mod dmarc;
mod dmarc_seen;
mod dnsbl;
mod dsn_to_sender;
mod filing;
mod filter;
mod forward;
mod greylist;
mod inbox;
mod inspect;
pub mod learn;
mod local;
mod recipient;
pub mod report;
mod reports;
mod routing;
mod sieve;
mod sieve_out;
mod srs;
mod stamp;
mod trace;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use crate::config::Inbound;
use crate::dns::Dns;
use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::store::{Email, Store, Wtx};
use crate::tracking::Tokens;
use auth::Verdict;
pub use disposition::DMARC_REFUSED;
use disposition::{Disposition, disposition};
use filing::groups;
use filter::Filter;
use inbox::{Inbox, file_replies, reply_link};
pub use inspect::{Inspected, inspect};
pub use recipient::MAILBOX_FULL;
use recipient::room_in_any;
use reports::Reports;
use stamp::rfc2822_date;

/// The envelope of a received message.
pub struct Envelope {
    pub ip: IpAddr,
    pub helo: String,
    pub from: String,
    pub recipients: Vec<String>,
    pub tls: bool,
}

/// A received message as claimants see it: authenticated, parsed, not stored yet.
pub struct Arrival<'a> {
    pub recipients: &'a [String],
    pub seen: &'a Inspected,
    pub verdict: &'a Verdict,
    /// The message with our trace headers, as it would be stored.
    pub raw: &'a [u8],
    pub now: u64,
}

/// What `Claimant::claim` returns: the id of the first stored copy when the message was taken.
pub type Claim<'a> = Pin<Box<dyn Future<Output = Result<Option<String>>> + Send + 'a>>;

/// A service above inbound that takes some received mail for itself. Claimants
/// are asked in the order they were registered, before the inbox.
pub trait Claimant: Send + Sync {
    /// Takes `arrival` when it is this claimant's, storing what it needs; `None` leaves it to
    /// the next claimant and then the inbox (with nothing written, except by a claimant of
    /// system addresses, which stores what was for them and leaves the other recipients).
    fn claim<'a>(&'a self, arrival: &'a Arrival<'a>) -> Claim<'a>;
}

/// Local parts that are not mailboxes but that we answer for on every hosted domain.
enum System {
    /// `bounces+<email id>-<tag>`: DSNs about that message (the tag is verified later).
    Bounce(String),
    /// `unsubscribe`: the mailto: of List-Unsubscribe.
    Unsubscribe,
    /// `postmaster` (RFC 5321 requires it) and `abuse`: complaints.
    Postmaster,
    /// `dmarc-reports` and `tls-reports`: DMARC and TLS-RPT aggregate reports.
    Reports,
}

fn system(local: &str) -> Option<System> {
    let lower = local.to_ascii_lowercase();
    if let Some(tagged) = lower.strip_prefix("bounces+") {
        return Some(System::Bounce(tagged.to_owned()));
    }
    match lower.as_str() {
        "unsubscribe" => Some(System::Unsubscribe),
        "postmaster" | "abuse" => Some(System::Postmaster),
        // Aggregate reports about our domains (`reporting` claims what is sent there).
        "dmarc-reports" | "tls-reports" => Some(System::Reports),
        _ => None,
    }
}

/// The receiving side of our MX, with the handles it uses.
pub struct Receiver {
    store: Store,
    tokens: Tokens,
    dns: Arc<Dns>,
    /// Our name in Received headers and Authentication-Results.
    host: String,
    /// See `config::Smtp::feedback_senders`.
    feedback_senders: Vec<String>,
    claimants: Vec<Box<dyn Claimant>>,
    /// `mailbox.quota_bytes`: the quota of a mailbox without one of its own.
    quota_default: u64,
    /// `inbound.*`: DMARC enforcement and the spam filter's lists.
    inbound: Inbound,
    filter: Filter,
    /// `smtp.subaddress_separator`: "" when sub-addressing is off.
    subaddress: String,
    /// The key of our SRS0 addresses (`srs`), derived from the server's secret.
    srs: ring::hmac::Key,
    /// Wakes the delivery queue for mail sent on: forwards, redirects, vacation answers.
    queue: crate::wake::Wake,
    /// The Sieve runtime mailbox scripts run in (`filters::runtime`).
    sieve: Arc<::sieve::Runtime>,
    /// `reports.dmarc_interval` when `reports.dmarc_send` is on: the period received mail is
    /// counted in for the DMARC aggregate reports we send.
    dmarc_interval: Option<std::time::Duration>,
}

/// What `Receiver::accept` did with a message.
#[derive(Debug)]
pub enum Accepted {
    /// Stored or claimed; the id of its first copy.
    Stored(String),
    /// Refused: it was for mailboxes only, and would overfill every one of them.
    OverQuota,
    /// Refused with this reply: DMARC asks for it, or every recipient's filter scored it past
    /// its reject threshold.
    Refused(&'static str),
    /// Refused with this reply: every recipient's Sieve script rejected it (RFC 5429).
    Rejected(String),
}

/// The reply to mail every recipient's spam filter refuses.
pub const SPAM_REFUSED: &str =
    "550 5.7.1 message refused: it looks like spam to the recipient's filter\r\n";

/// Where the recipients of one message go.
#[derive(Default)]
struct Routed {
    /// Each mailbox once, with the address that reached it first (its `deliveredTo`).
    mailboxes: Vec<(String, String)>,
    /// Outside addresses aliases and forwards lead to, with the alias or mailbox forwarding.
    outside: Vec<(String, String)>,
    /// Messages and recipient numbers named by verified bounce addresses.
    bounce_ids: Vec<(String, usize)>,
    to_system: bool,
    /// Bounces to our SRS0 addresses: the original sender each names, and the address.
    returns: Vec<(String, String)>,
}

/// What each recipient that is no system address resolves to, by its lower-cased address.
type Resolved = Vec<(String, Option<routing::Targets>)>;

/// The answer while the store refuses writes (RFC 3463 X.3.1: mail system full): the sender
/// keeps the message and tries again.
pub const STORAGE_FULL: &str = "452 4.3.1 insufficient system storage, try again later\r\n";

impl Receiver {
    pub fn new(store: Store, tokens: Tokens, dns: Arc<Dns>, smtp: &crate::config::Smtp) -> Self {
        Receiver {
            store,
            dns,
            host: smtp.host().to_owned(),
            feedback_senders: smtp.feedback_senders.clone(),
            claimants: Vec::new(),
            quota_default: crate::config::Mailbox::default().quota_bytes,
            inbound: Inbound::default(),
            filter: Filter::new(crate::junk::Models::new(), &Inbound::default()),
            subaddress: smtp.subaddress_separator.clone(),
            srs: tokens.derived_key("srs"),
            queue: crate::wake::Wake::default(),
            sieve: Arc::new(crate::filters::runtime(smtp.host())),
            tokens,
            dmarc_interval: None,
        }
    }

    /// The delivery queue's wake-up handle, for forwarded mail and what Sieve scripts send.
    pub fn set_queue(&mut self, queue: crate::wake::Wake) {
        self.queue = queue;
    }

    /// Sets DMARC enforcement and the spam filter (`inbound.*`), with the classifier's models
    /// (shared with the API and IMAP, which train them).
    pub fn set_filter(&mut self, inbound: &Inbound, models: crate::junk::Models) {
        self.inbound = inbound.clone();
        self.filter = Filter::new(models, inbound);
    }

    /// Turns on noting received mail for the DMARC aggregate reports we send, per period of
    /// `interval` (`reports.dmarc_send`, `reports.dmarc_interval`).
    pub fn set_dmarc_reports(&mut self, interval: Option<std::time::Duration>) {
        self.dmarc_interval = interval;
    }

    /// Sets the quota of mailboxes without one of their own (`mailbox.quota_bytes`).
    pub fn set_quota_default(&mut self, bytes: u64) {
        self.quota_default = bytes;
    }

    /// Offers received mail to `claimant` before the inbox.
    pub fn register(&mut self, claimant: Box<dyn Claimant>) {
        self.claimants.push(claimant);
    }

    /// Resolves the recipients that are no system addresses (aliases, `+tag`, catch-all).
    async fn resolve(&self, recipients: &[String]) -> Result<Resolved> {
        let wanted: Vec<String> = recipients
            .iter()
            .filter(|r| {
                let local = r.rsplit_once('@').map_or(r.as_str(), |(l, _)| l);
                system(local).is_none() && !srs::is_srs(local)
            })
            .map(|r| lowered(r))
            .collect();
        let separator = self.subaddress.clone();
        self.store
            .read(move |r| -> Result<Resolved> {
                let mut out = Vec::with_capacity(wanted.len());
                for address in wanted {
                    let (local, domain) = address.rsplit_once('@').unwrap_or((&address, ""));
                    let targets = routing::resolve(r, local, domain, &separator)?;
                    out.push((address.clone(), targets));
                }
                Ok(out)
            })
            .await
    }

    fn route(&self, recipients: &[String], resolved: &Resolved) -> Routed {
        let mut routed = Routed::default();
        for r in recipients {
            let local = r.rsplit_once('@').map_or(r.as_str(), |(local, _)| local);
            let domain = crate::address::domain_key(r);
            match system(local) {
                Some(System::Bounce(tagged)) => {
                    routed.bounce_ids.extend(self.tokens.bounce_id(&tagged, &domain));
                }
                Some(_) => routed.to_system = true,
                None if srs::is_srs(local) => {
                    // Checked at RCPT; a day boundary since then may end its age.
                    if let Some(original) = srs::decode(&self.srs, local, now_ms()) {
                        routed.returns.push((original, r.clone()));
                    }
                }
                None => {
                    let address = format!("{}@{domain}", local.to_ascii_lowercase());
                    let found = resolved.iter().find(|(a, _)| *a == address);
                    let mut add = |mailbox: &str| {
                        if !routed.mailboxes.iter().any(|(m, _)| m == mailbox) {
                            routed.mailboxes.push((mailbox.to_owned(), address.clone()));
                        }
                    };
                    match found {
                        Some((_, Some(targets))) => {
                            targets.mailboxes.iter().for_each(|m| add(m));
                            for o in &targets.outside {
                                if !routed.outside.iter().any(|(t, _)| *t == o.0) {
                                    routed.outside.push(o.clone());
                                }
                            }
                        }
                        // Accepted at RCPT but gone since: filed as the mailbox it named.
                        _ => add(&address),
                    }
                }
            }
        }
        routed
    }

    /// Authenticates, parses, filters and stores a message; returns the id of its first stored
    /// copy.
    pub async fn accept(&self, envelope: Envelope, raw: Vec<u8>) -> Result<Accepted> {
        let id = new_id("em");
        let now = now_ms();
        let (ip, from, to) = (envelope.ip, envelope.from.as_str(), &envelope.recipients);
        if forward::looping(&raw, to) {
            tracing::info!(%ip, from = %envelope.from, "message refused: forwarding loop");
            return Ok(Accepted::Refused(forward::LOOPING));
        }
        if !greylist::passes(&self.store, &self.inbound, ip, from, to, now).await? {
            tracing::info!(%ip, from = %envelope.from, "message greylisted");
            return Ok(Accepted::Refused(greylist::GREYLISTED));
        }
        let (full, verdict, trace) = self.stamp(&envelope, raw, &id, now).await;
        let from_domain = verdict.from_domain.clone();
        let ours =
            !from_domain.is_empty() && self.store.read(move |r| r.hosts(&from_domain)).await?;
        let done = disposition(&verdict, ours, &self.inbound, roll());
        self.note_dmarc(&envelope, &verdict, &done).await;
        let forced = match done {
            Disposition::Refuse(reply) => {
                tracing::info!(from = %envelope.from, from_domain = %verdict.from_domain,
                    ip = %envelope.ip, "message refused: DMARC");
                return Ok(Accepted::Refused(reply));
            }
            Disposition::Junk(why) => Some(why),
            Disposition::Deliver => None,
        };
        // Parsed once, for what the message is and for what the spam filter makes of it.
        let bounded = crate::mime::bound(&full);
        let message = bounded.parse().ok_or_else(|| Error::invalid("unparseable message", ""))?;
        let seen = inspect::inspect_parsed(&message, full.len() as u64, now);
        let resolved = self.resolve(&envelope.recipients).await?;
        // Mail for mailboxes alone is refused when it fits none of them; a system address or a
        // forward takes it anyway.
        let only_mailboxes = resolved.len() == envelope.recipients.len()
            && resolved.iter().all(|(_, t)| t.as_ref().is_none_or(|t| t.outside.is_empty()));
        let arrival = Arrival {
            recipients: &envelope.recipients,
            seen: &seen,
            verdict: &verdict,
            raw: &full,
            now,
        };
        for claimant in &self.claimants {
            if let Some(id) = claimant.claim(&arrival).await? {
                return Ok(Accepted::Stored(id));
            }
        }
        let Inbox { template, copies, delivered, reports, parents, answer, outside, returns } =
            self.inbox(&envelope, seen, &verdict, &id, &resolved);
        let why = forced.clone();
        let sender = crate::address::bare(&template.summary.from).to_owned();
        let found = (sender.as_str(), forced);
        let mut filed = self.filed(&envelope, &verdict, &message, &copies, &parents, found).await?;
        if !filed.is_empty() && filed.iter().all(|f| f.reject) {
            tracing::info!(from = %envelope.from, ip = %envelope.ip,
                "message refused: spam past every recipient's reject threshold");
            return Ok(Accepted::Refused(SPAM_REFUSED));
        }
        let mut copies = copies;
        // Sieve may drop copies (discard, reject, redirect): each kept one keeps its address.
        let reached: std::collections::HashMap<String, String> =
            copies.iter().map(|(copy, _)| copy.clone()).zip(delivered).collect();
        let decided =
            self.sieve_copies(&envelope, &verdict, &full, &mut copies, &mut filed).await?;
        let delivered: Vec<String> =
            copies.iter().map(|(copy, _)| reached.get(copy).cloned().unwrap_or_default()).collect();
        if let Some(reply) = decided.refused {
            tracing::info!(from = %envelope.from, ip = %envelope.ip,
                "message refused: every recipient's Sieve script rejects it");
            return Ok(Accepted::Rejected(reply));
        }
        let flags = decided.flags;
        let r = &verdict.results;
        let auth = [r.spf, r.dkim, r.dmarc];
        let groups = groups(&template, (&copies, &delivered), filed, (&full, trace));
        let mut forwards = Vec::with_capacity(outside.len());
        // What the filter makes of the message, for the forwarding mailboxes' filters.
        let features = (!outside.is_empty()).then(|| crate::junk::features_of(&message));
        drop(message);
        drop(bounded);
        for (target, via) in &outside {
            let features = features.as_ref();
            if self.spam_for_forwarding(&envelope, &verdict, features, via, why.as_deref()).await? {
                tracing::info!(via = %via, "spam not forwarded");
            } else {
                forwards.push(forward::Forward { target, via });
            }
        }
        let mut outgoing =
            self.forwards(&envelope, (&full, trace), &template, &forwards, now).await;
        outgoing.extend(self.pass_back((&full, trace), &template, &returns, now));
        let redirects = &decided.redirects;
        outgoing
            .extend(self.redirected(&envelope, (&full, trace), &template, redirects, now).await);
        outgoing.extend(self.answers(decided.sends, now));
        let wake = !outgoing.is_empty();
        let size = full.len() as u64;
        drop(full);
        // Checked in the write that stores it, so concurrent sessions cannot all pass one check.
        let quota = only_mailboxes.then_some(self.quota_default);
        let stored = self
            .store
            .write(move |w| -> Result<_> {
                if let Some(default) = quota
                    && !room_in_any(w, &copies, size, default)?
                {
                    return Ok(false);
                }
                let reply_of = reply_link(w, &parents, &sender, &copies, &answer)?;
                for group in &groups {
                    let mut template = group.template.clone();
                    template.in_reply_to_id.clone_from(&reply_of);
                    w.store_copies_to(
                        &template,
                        &group.copies,
                        &group.delivered,
                        &group.raw,
                        Some(group.prepared.clone()),
                    )?;
                    w.emit_received(&template, &group.copies, auth)?;
                    file_replies(w, reply_of.as_deref(), &template, &group.copies, &answer)?;
                }
                for (copy, mailbox, folder, flags) in &flags {
                    w.imap_deliver_flags(mailbox, *folder, copy, flags.clone(), now)?;
                }
                reports.apply(w, now)?;
                // In the same write as the copies: a message is forwarded if and only if stored.
                for (email, raw) in &outgoing {
                    w.enqueue_submitted(email, raw, now)?;
                }
                Ok(true)
            })
            .await?;
        if stored && wake {
            self.queue.wake();
        }
        Ok(if stored { Accepted::Stored(id) } else { Accepted::OverQuota })
    }
}

/// A number from 0 to 99 for DMARC's `pct` sample.
fn roll() -> u8 {
    (rand::random::<u32>() % 100) as u8
}

/// `local@domain` as mailboxes and aliases are keyed: the local part lower-cased, the domain in
/// A-labels.
fn lowered(address: &str) -> String {
    let local = address.rsplit_once('@').map_or(address, |(local, _)| local);
    format!("{}@{}", local.to_ascii_lowercase(), crate::address::domain_key(address))
}
