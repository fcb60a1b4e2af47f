//! Who may receive: the RCPT TO decision (hosted domains only, so we are never an open relay;
//! mailboxes and the system addresses; a mailbox's quota) and, at the end of DATA, whether a
//! message still fits the quotas of its mailboxes.

use super::{Receiver, STORAGE_FULL, System, routing, system};
use crate::error::{Error, Result};
use crate::store::Wtx;

/// The answer to a recipient whose mailbox has no room (RFC 3463 X.2.2: mailbox full).
pub const MAILBOX_FULL: &str = "552 5.2.2 the mailbox is full\r\n";

impl Receiver {
    /// The RCPT TO decision: `Err` carries the SMTP reply.
    pub async fn check_recipient(&self, address: &str) -> std::result::Result<(), String> {
        self.check_recipient_of(address, 0).await
    }

    /// `check_recipient` for a message of `size` bytes as its sender declared (MAIL FROM
    /// SIZE=, 0 when not): a mailbox that is full, or that it would overfill, is refused here,
    /// for this recipient alone, before any data is sent.
    pub async fn check_recipient_of(
        &self,
        address: &str,
        size: u64,
    ) -> std::result::Result<(), String> {
        let Some((local, _)) = address.rsplit_once('@') else {
            return Err("501 5.1.3 recipient must be a full address\r\n".into());
        };
        // Hosted domains are stored in A-labels: a Unicode domain (SMTPUTF8) is compared so.
        let raw_local = local;
        let (local, domain) = (local.to_ascii_lowercase(), crate::address::domain_key(address));
        let is_system = match system(&local) {
            // A bounce address we never issued is refused here, before any data is taken.
            Some(System::Bounce(tagged)) => {
                if self.tokens.bounce_id(&tagged, &domain).is_none() {
                    return Err(format!("550 5.1.1 no mailbox {local}@{domain} here\r\n"));
                }
                true
            }
            Some(_) => true,
            // A bounce of mail we forwarded: only to an SRS0 address we made, and not too old.
            None if super::srs::is_srs(raw_local) => {
                if super::srs::decode(&self.srs, raw_local, crate::ids::now_ms()).is_none() {
                    return Err(format!("550 5.1.1 no mailbox {local}@{domain} here\r\n"));
                }
                true
            }
            None => false,
        };
        let default = self.quota_default;
        let separator = self.subaddress.clone();
        let lookup = self
            .store
            .read(move |r| -> Result<_> {
                if !r.hosts(&domain)? {
                    return Ok(Err(format!(
                        "550 5.7.1 relaying denied: {domain} is not hosted here\r\n"
                    )));
                }
                if is_system {
                    return Ok(Ok(()));
                }
                Ok(match r.mailbox_quota(&domain, &local, default)? {
                    Some((_, q)) if q.is_full() || !q.fits(size) => Err(MAILBOX_FULL.into()),
                    Some(_) => Ok(()),
                    // No mailbox of that name: an alias, a `+tag` or the catch-all may take it
                    // (their mailboxes' quotas are checked with the message).
                    None => match routing::resolve(r, &local, &domain, &separator)? {
                        Some(t) if !t.mailboxes.is_empty() || !t.outside.is_empty() => Ok(()),
                        _ => Err(format!("550 5.1.1 no mailbox {local}@{domain} here\r\n")),
                    },
                })
            })
            .await;
        match lookup {
            // Ours, but the disk takes no writes: say so now rather than after the data.
            Ok(Ok(())) if !self.store.writable() => Err(STORAGE_FULL.into()),
            Ok(answer) => answer,
            Err(Error::StorageUnavailable(_)) => Err(STORAGE_FULL.into()),
            Err(e) => {
                tracing::error!(error = %e, "recipient check failed");
                Err("451 4.3.0 temporary failure, try again later\r\n".into())
            }
        }
    }
}

/// Whether a message of `size` bytes fits the quota of any of the mailboxes of `copies`. The
/// SMTP reply to a message is one for all its recipients: a message that fits some mailboxes
/// is stored in all of them (one over its quota by at most this message, and refused at RCPT
/// from then on), as RFC 5321 section 6.1 forbids dropping what was accepted without a notice.
/// Senders that declare the size (SIZE=) hear of each full mailbox at its RCPT instead.
pub(super) fn room_in_any(
    w: &Wtx<'_>,
    copies: &[(String, String)],
    size: u64,
    default: u64,
) -> Result<bool> {
    for (_, mailbox) in copies {
        if w.has_room(mailbox, size, default)? {
            return Ok(true);
        }
    }
    Ok(copies.is_empty())
}
