//! Which mailbox an enrollment sends from: the sequence's `from`, or one mailbox of its sender
//! group, taken in turn (round-robin; the turn is kept on the sequence, so it survives restarts).
//! The choice is made at the enrollment's first step and kept: every message of one enrollment
//! comes from the same mailbox, and a reply reaches the mailbox that wrote.

use crate::error::Result;
use crate::store::{Enrollment, Sequence, Wtx};

/// The mailbox address and the From header built from it.
pub struct Sender {
    pub mailbox: String,
    pub from_header: String,
}

/// The enrollment's mailbox, chosen now when it has none yet; `None` when no mailbox may send
/// for it any more (its mailbox was deleted, or the group has none left).
pub fn sticky(
    w: &mut Wtx<'_>,
    e: &mut Enrollment,
    sequence: &mut Sequence,
) -> Result<Option<Sender>> {
    if let (Some(mailbox), Some(from_header)) = (&e.mailbox, &e.from_header) {
        if !w.mailbox_exists(mailbox)? {
            return Ok(None);
        }
        return Ok(Some(Sender { mailbox: mailbox.clone(), from_header: from_header.clone() }));
    }
    let chosen = match sequence.sender_group_id.clone() {
        Some(group) => rotate(w, sequence, &group)?,
        None => w.mailbox_exists(&sequence.from)?.then(|| Sender {
            mailbox: sequence.from.clone(),
            from_header: sequence.from_header.clone(),
        }),
    };
    if let Some(s) = &chosen {
        e.mailbox = Some(s.mailbox.clone());
        e.from_header = Some(s.from_header.clone());
    }
    Ok(chosen)
}

/// The group's next mailbox in turn, among those that still exist.
fn rotate(w: &mut Wtx<'_>, sequence: &mut Sequence, group: &str) -> Result<Option<Sender>> {
    let Some(group) = w.group_in_write(&sequence.domain, group)? else { return Ok(None) };
    let mut members = Vec::with_capacity(group.mailboxes.len());
    for address in &group.mailboxes {
        let (local, domain) = address.rsplit_once('@').unwrap_or((address, ""));
        if let Some(m) = w.mailbox_in_write(domain, local)? {
            members.push(m);
        }
    }
    if members.is_empty() {
        return Ok(None);
    }
    let m = &members[(sequence.rotation % members.len() as u64) as usize];
    sequence.rotation += 1;
    Ok(Some(Sender {
        mailbox: m.address.clone(),
        from_header: crate::mail::build::from_header(m.display_name.as_deref(), &m.address),
    }))
}
