//! Mail for mailboxes of this server. A recipient whose domain is hosted here is handed to the
//! receiving side (registered by inbound, which sits above the queue) instead of looked up in
//! DNS and sent over SMTP to ourselves: the signed message is filed exactly as our MX would file
//! it, and the copies are written in the same transaction that removes the queue entry, so a
//! crash can neither lose the message nor file it twice.
//!
//! Warmup mail keeps the SMTP path: it exists to build the reputation of real deliveries, and
//! its receiving side (the warmup claim on arrivals) is a separate write of its own.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::store::{Email, Outcome, Rtx, SendType, Wtx};

/// Writes the received copies of a handed-over message; run inside the write that commits the
/// attempt (and run again if that write is retried).
pub type Commit = Arc<dyn Fn(&mut Wtx<'_>) -> crate::error::Result<()> + Send + Sync>;

/// What the receiving side made of a handed-over message.
pub struct Handover {
    /// Every recipient with its outcome: delivered, or refused as our MX would refuse it.
    pub outcomes: Vec<(String, Outcome)>,
    /// The copies to write, when any recipient took the message.
    pub commit: Option<Commit>,
}

pub type Handing<'a> = Pin<Box<dyn Future<Output = Handover> + Send + 'a>>;

/// The receiving side, as the queue hands mail to it.
pub trait Local: Send + Sync {
    /// Checks the recipients and prepares the copies of `message` (signed by `sender_domain`,
    /// with the envelope sender `mail_from`); nothing is written yet.
    fn hand_over<'a>(
        &'a self,
        sender_domain: &'a str,
        mail_from: &'a str,
        recipients: &'a [String],
        message: &'a [u8],
    ) -> Handing<'a>;

    /// Prepares a report this server writes about a hosted mailbox's own mail (a DSN) for that
    /// mailbox's inbox, filed as received mail is; `None` when it cannot be parsed. The copy
    /// is written only if the mailbox still exists when the commit runs.
    fn file_report(&self, mailbox: &str, message: Vec<u8>) -> Option<Commit>;
}

/// Hosted domains are stored in A-labels; a recipient may be written with a Unicode domain.
fn domain_of(address: &str) -> String {
    crate::address::domain_key(address)
}

/// The hosted domains among the recipients still pending; none for warmup mail.
pub fn hosted_domains(r: &Rtx, email: &Email) -> crate::store::Result<HashSet<String>> {
    let mut hosted = HashSet::new();
    if email.send_type == Some(SendType::Warmup) {
        return Ok(hosted);
    }
    for d in email.deliveries.iter().filter(|d| !d.status.is_final()) {
        let domain = domain_of(&d.recipient);
        if !hosted.contains(&domain) && r.hosts(&domain)? {
            hosted.insert(domain);
        }
    }
    Ok(hosted)
}

/// Hands the recipients of a hosted domain to `local`; returns the others, the outcomes of the
/// handed ones and the copies to commit. Each recipient is handed over alone with its own bounce
/// address (`bounce`), as each remote recipient gets its own SMTP transaction: a copy records
/// its envelope sender, and a co-recipient who learnt another's bounce address could forge a
/// DSN that suppresses that recipient.
pub async fn hand_over(
    local: &dyn Local,
    hosted: &HashSet<String>,
    pending: Vec<String>,
    sender_domain: &str,
    bounce: &(dyn Fn(&str) -> String + Sync),
    message: &[u8],
) -> (Vec<String>, Handover) {
    let (here, elsewhere): (Vec<String>, Vec<String>) =
        pending.into_iter().partition(|r| hosted.contains(&domain_of(r)));
    let mut outcomes = Vec::with_capacity(here.len());
    let mut commits = Vec::new();
    for recipient in &here {
        let from = bounce(recipient);
        let one = std::slice::from_ref(recipient);
        let handed = local.hand_over(sender_domain, &from, one, message).await;
        outcomes.extend(handed.outcomes);
        commits.extend(handed.commit);
    }
    let commit = (!commits.is_empty()).then(|| -> Commit {
        Arc::new(move |w: &mut Wtx<'_>| commits.iter().try_for_each(|c| c(w)))
    });
    (elsewhere, Handover { outcomes, commit })
}
