//! Mail that a hosted domain sends to a mailbox of this server, handed over by the delivery
//! queue (`queue::local`) rather than sent to our own MX. It is checked, parsed and filed as our
//! MX files mail (the same recipient check, parsing, folders, reply links, reports and
//! `email.received` event); only the trace and authentication headers differ: this server
//! signed the message itself, so nothing is looked up in DNS.

use crate::error::Result;
use crate::ids::{new_id, now_ms};
use crate::queue::local::{Commit, Handing, Handover, Local};
use crate::store::{Outcome, Prepared, Wtx};

use super::{Envelope, Receiver, auth, inspect, link_reply, rfc2822_date};

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
        let Some(seen) = inspect(&full, now) else {
            let why = "554 5.6.0 the message could not be parsed".to_owned();
            outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Failed(why.clone()))));
            return Handover { outcomes, commit: None };
        };
        let envelope = Envelope {
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            helo: self.host.clone(),
            from: mail_from.to_owned(),
            recipients: accepted.clone(),
            tls: false,
        };
        let resolved = match self.resolve(&accepted).await {
            Ok(resolved) => resolved,
            Err(e) => {
                let why = format!("451 4.3.0 temporary failure: {e}");
                outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Deferred(why.clone()))));
                return Handover { outcomes, commit: None };
            }
        };
        // Forwarding applies to mail from outside; mail we send goes where it was addressed.
        let super::Inbox { mut template, copies, delivered, reports, parents, answer, .. } =
            self.inbox(&envelope, seen, &verdict, &id, &resolved);
        // One template for every copy here: it names the address only when all share one.
        template.delivered_to =
            delivered.first().filter(|d| delivered.iter().all(|x| x == *d)).cloned();
        let r = &verdict.results;
        let auth = [r.spf, r.dkim, r.dmarc];
        let prepared = Prepared::of(&full, copies.len());
        // The write may be retried (the disk refused it): each run starts from the same parts.
        let commit: Commit = std::sync::Arc::new(move |w: &mut Wtx<'_>| -> Result<()> {
            let mut template = template.clone();
            link_reply(w, (&parents, &answer), &mut template, &copies, (&full, prepared.clone()))?;
            w.emit_received(&template, &copies, auth)?;
            reports.clone().apply(w, now)
        });
        outcomes.extend(accepted.into_iter().map(|r| (r, Outcome::Delivered(DELIVERED.into()))));
        Handover { outcomes, commit: Some(commit) }
    }
}
