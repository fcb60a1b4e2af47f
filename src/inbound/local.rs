//! Mail that a hosted domain sends to a mailbox of this server, handed over by the delivery
//! queue (`queue::local`) rather than sent to our own MX. It is checked, parsed and filed as our
//! MX files mail (the same recipient check, parsing, folders, reply links, reports and
//! `email.received` event); only the trace and authentication headers differ: this server
//! signed the message itself, so nothing is looked up in DNS.

use crate::error::Result;
use crate::ids::{new_id, now_ms};
use crate::queue::local::{Commit, Handing, Handover, Local};
use crate::store::{Outcome, Wtx};

use super::filing::groups;
use super::filter::Filed;
use super::{Envelope, Receiver, auth, forward, inspect, reply_link, rfc2822_date};

/// The reply a delivered recipient gets.
const DELIVERED: &str = "250 2.0.0 delivered to a mailbox of this server";

impl Local for Receiver {
    fn hand_over<'a>(
        &'a self,
        sender_domain: &'a str,
        mail_from: &'a str,
        recipients: &'a [String],
        message: &'a [u8],
    ) -> Handing<'a> {
        Box::pin(self.take_local(sender_domain, mail_from, recipients, message))
    }

    fn file_report(&self, mailbox: &str, message: Vec<u8>) -> Option<Commit> {
        self.file_report_for(mailbox, message)
    }
}

/// What a refusal of our MX means for the sender: 5xx is final, anything else is tried again.
fn refused(reply: &str) -> Outcome {
    let text = reply.trim_end().to_owned();
    if text.starts_with('5') { Outcome::Bounced(text) } else { Outcome::Deferred(text) }
}

/// What a handed-over message became before anything is written.
struct Routed {
    groups: Vec<super::filing::Group>,
    flags: Vec<(String, String, crate::store::Folder, Vec<String>)>,
    outgoing: Vec<super::forward::Outgoing>,
    /// The Message-IDs it answers, what it reports about mail we sent, and what kind of
    /// answer it is (a person's, or automatic) for the sequences it answers.
    links: (Vec<String>, super::reports::Reports, crate::store::ReplySeen),
}

impl Receiver {
    async fn take_local(
        &self,
        sender_domain: &str,
        mail_from: &str,
        recipients: &[String],
        message: &[u8],
    ) -> Handover {
        let mut outcomes = Vec::with_capacity(recipients.len());
        let mut accepted = Vec::with_capacity(recipients.len());
        for r in recipients {
            match self.check_recipient(r).await {
                Ok(()) => accepted.push(r.clone()),
                Err(reply) => outcomes.push((r.clone(), refused(&reply))),
            }
        }
        if accepted.is_empty() {
            return Handover { outcomes, commit: None };
        }
        // Only the hop count: our loop marker names our own domain on every redirect between
        // mailboxes of this server.
        if forward::looping(message, &[]) {
            let why = refused(forward::LOOPING);
            outcomes.extend(accepted.into_iter().map(|r| (r, why.clone())));
            return Handover { outcomes, commit: None };
        }
        let id = new_id("em");
        let now = now_ms();
        let (results, verdict) = auth::local(message, sender_domain, mail_from, &self.host);
        let received = format!(
            "Received: by {} (local delivery) id {id}; {}\r\n",
            self.host,
            rfc2822_date(now)
        );
        let message = super::trace::without_our_results(message, &self.host);
        let full = [received.as_bytes(), results.as_bytes(), &message].concat();
        let trace = received.len() + results.len();
        let Some(seen) = inspect(&full, now) else {
            let why = "554 5.6.0 the message could not be parsed".to_owned();
            outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Failed(why.clone()))));
            return Handover { outcomes, commit: None };
        };
        let envelope = Envelope {
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            helo: self.host.clone(),
            from: script_sender(mail_from, &seen.email.summary.from),
            recipients: accepted.clone(),
            tls: false,
        };
        let routed = match self.route_local(&envelope, seen, &verdict, &id, (&full, trace)).await {
            Ok(Ok(routed)) => routed,
            Ok(Err(reply)) => {
                let why = refused(&reply);
                outcomes.extend(accepted.into_iter().map(|r| (r, why.clone())));
                return Handover { outcomes, commit: None };
            }
            Err(e) => {
                let why = format!("451 4.3.0 temporary failure: {e}");
                outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Deferred(why.clone()))));
                return Handover { outcomes, commit: None };
            }
        };
        let commit = commit_of(routed, verdict, now);
        outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Delivered(DELIVERED.into()))));
        Handover { outcomes, commit: Some(commit) }
    }

    /// Routes a handed-over message as our MX routes mail: aliases and forwards (outside
    /// targets forwarded with SRS and ARC), then each mailbox's Sieve script and vacation.
    /// `Ok(Err(reply))` when every recipient's script rejected it.
    async fn route_local(
        &self,
        envelope: &Envelope,
        seen: super::Inspected,
        verdict: &auth::Verdict,
        id: &str,
        (full, trace): (&[u8], usize),
    ) -> Result<std::result::Result<Routed, String>> {
        let resolved = self.resolve(&envelope.recipients).await?;
        let super::Inbox {
            template, mut copies, delivered, reports, parents, outside, answer, ..
        } = self.inbox(envelope, seen, verdict, id, &resolved);
        // Mail of this server is not spam-filtered here: each copy goes to the inbox unless
        // its mailbox's script says otherwise.
        let mut filed: Vec<Filed> = copies.iter().map(|_| Filed::inbox()).collect();
        let reached: std::collections::HashMap<String, String> =
            copies.iter().map(|(copy, _)| copy.clone()).zip(delivered).collect();
        let decided = self.sieve_copies(envelope, verdict, full, &mut copies, &mut filed).await?;
        if let Some(reply) = decided.refused {
            return Ok(Err(reply));
        }
        let delivered: Vec<String> =
            copies.iter().map(|(copy, _)| reached.get(copy).cloned().unwrap_or_default()).collect();
        let forwards: Vec<forward::Forward<'_>> =
            outside.iter().map(|(target, via)| forward::Forward { target, via }).collect();
        let now = now_ms();
        let mut outgoing = self.forwards(envelope, (full, trace), &template, &forwards, now).await;
        let redirects = &decided.redirects;
        outgoing.extend(self.redirected(envelope, (full, trace), &template, redirects, now).await);
        outgoing.extend(self.answers(decided.sends, now));
        let groups = groups(&template, (&copies, &delivered), filed, (full, trace));
        let (flags, links) = (decided.flags, (parents, reports, answer));
        Ok(Ok(Routed { groups, flags, outgoing, links }))
    }
}

/// The envelope sender a mailbox's script sees and answers: a message of ours carries one of
/// our bounce addresses, which names the message, not its author; the author is the checked
/// From of a message this server signed.
fn script_sender(mail_from: &str, from: &str) -> String {
    let local = mail_from.rsplit_once('@').map_or(mail_from, |(l, _)| l);
    if local.to_ascii_lowercase().starts_with("bounces+") {
        crate::address::bare(from).to_ascii_lowercase()
    } else {
        mail_from.to_owned()
    }
}

/// The write of a routed message: its copies, flags, reports, and what it sends on. The write
/// may be retried (the disk refused it): each run starts from the same parts.
fn commit_of(routed: Routed, verdict: auth::Verdict, now: u64) -> Commit {
    let r = &verdict.results;
    let auth = [r.spf, r.dkim, r.dmarc];
    std::sync::Arc::new(move |w: &mut Wtx<'_>| -> Result<()> {
        let (parents, reports, answer) = &routed.links;
        let first = routed.groups.first();
        let sender = first.map(|g| crate::address::bare(&g.template.summary.from).to_owned());
        let copies: Vec<(String, String)> =
            routed.groups.iter().flat_map(|g| g.copies.iter().cloned()).collect();
        let reply_of = reply_link(w, parents, sender.as_deref().unwrap_or(""), &copies, answer)?;
        for group in &routed.groups {
            let mut template = group.template.clone();
            template.in_reply_to_id.clone_from(&reply_of);
            let raw = (&group.raw, Some(group.prepared.clone()));
            w.store_copies_to(&template, &group.copies, &group.delivered, raw.0, raw.1)?;
            w.emit_received(&template, &group.copies, auth)?;
            let answered = reply_of.as_deref();
            super::file_replies(w, answered, &template, &group.copies, answer)?;
        }
        for (copy, mailbox, folder, flags) in &routed.flags {
            w.imap_deliver_flags(mailbox, *folder, copy, flags.clone(), now)?;
        }
        reports.clone().apply(w, now)?;
        for (email, raw) in &routed.outgoing {
            w.enqueue_submitted(email, raw, now)?;
        }
        Ok(())
    })
}
