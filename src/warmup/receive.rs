//! Warmup mail arriving at our MX. A message is warmup traffic when it carries the warmup header,
//! every recipient is a mailbox with a warmup enrollment, and the sender is known: a local warmup
//! mailbox whose header names a warmup message it really sent, or a configured peer. Such mail is
//! stored in the hidden warmup folder (never the inbox), counted, and answered with the
//! recipient's reply rate; it counts as landed only with a passing DKIM signature for the
//! sender's domain. Anything else takes the normal inbound path.

use std::time::Duration;

use rand::RngExt;

use super::{HEADER, compose, key_of, text};
use crate::error::Result;
use crate::ids::new_id;
use crate::inbound::{Arrival, Claim, Claimant};
use crate::queue::compose::split_display;
use crate::store::{Email, Folder, SendType, Store, Wtx};
use crate::wake::Wake;

fn header<'a>(email: &'a Email, name: &str) -> Option<&'a str> {
    email.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value.trim())
}

/// Warmup's claim on received mail, registered with inbound.
pub struct Arrivals {
    store: Store,
    queue: Wake,
    /// `warmup.peers`, lower-cased.
    peers: Vec<String>,
    /// `warmup.reply_delay`: replies wait a random time up to this.
    reply_delay: Duration,
}

/// What the receiving side needs, taken from the message before the write.
#[derive(Clone)]
struct Candidate {
    marker: String,
    from: String,
    recipients: Vec<String>,
    authenticated: bool,
    peer: bool,
    is_reply: bool,
    parents: Vec<String>,
    email: Email,
    raw: Vec<u8>,
    now: u64,
}

impl Claimant for Arrivals {
    fn claim<'a>(&'a self, arrival: &'a Arrival<'a>) -> Claim<'a> {
        Box::pin(self.take(arrival))
    }
}

impl Arrivals {
    pub fn new(store: Store, queue: Wake, cfg: &crate::config::Warmup) -> Arrivals {
        Arrivals { store, queue, peers: cfg.peers.clone(), reply_delay: cfg.reply_delay }
    }

    /// Handles `arrival` as warmup traffic when it is; returns the id of its first stored copy,
    /// or `None` when the message is not warmup mail (nothing was written then).
    async fn take(&self, arrival: &Arrival<'_>) -> Result<Option<String>> {
        let seen = arrival.seen;
        let Some(marker) = header(&seen.email, HEADER) else {
            return Ok(None);
        };
        let (_, from) = split_display(&seen.email.summary.from);
        let from = from.to_ascii_lowercase();
        let (sender_domain, _) = key_of(&from);
        let signed = arrival.verdict.dkim_passes_for(sender_domain);
        let candidate = Candidate {
            marker: marker.to_owned(),
            authenticated: signed,
            // A peer is recognised by its address only when its own domain signed the message:
            // a From header alone is whatever the sender typed.
            peer: self.peers.contains(&from) && signed,
            recipients: arrival.recipients.iter().map(|r| r.to_ascii_lowercase()).collect(),
            is_reply: seen.email.in_reply_to.is_some(),
            parents: seen.parents.clone(),
            from,
            email: seen.email.clone(),
            raw: arrival.raw.to_vec(),
            now: arrival.now,
        };
        let delays: Vec<u64> = candidate
            .recipients
            .iter()
            .map(|_| reply_delay(self.reply_delay).as_millis() as u64)
            .collect();
        let outcome = self.store.write(move |w| accept(w, candidate, &delays)).await?;
        Ok(match outcome {
            Some((id, replies)) => {
                if replies > 0 {
                    self.queue.wake();
                }
                Some(id)
            }
            None => None,
        })
    }
}

/// How long before a reply goes out: random up to `max`.
fn reply_delay(max: Duration) -> Duration {
    let max = max.as_millis() as u64;
    Duration::from_millis(if max == 0 { 0 } else { rand::rng().random_range(0..=max) })
}

/// Stores, counts and answers an arrival inside one write; `None` when it is not warmup mail.
fn accept(w: &mut Wtx<'_>, a: Candidate, delays: &[u64]) -> Result<Option<(String, usize)>> {
    if a.recipients.is_empty() {
        return Ok(None);
    }
    for r in &a.recipients {
        let (domain, local) = key_of(r);
        if w.warmup(domain, local)?.is_none() {
            return Ok(None);
        }
    }
    let sent_here = w.email_in_write(&a.marker)?.is_some_and(|e| {
        e.send_type == Some(SendType::Warmup) && e.summary.mailbox.eq_ignore_ascii_case(&a.from)
    });
    if !(sent_here || a.peer) {
        return Ok(None);
    }
    let mut template = a.email.clone();
    template.summary.folder = Folder::Warmup;
    let copies: Vec<(String, String)> =
        a.recipients.iter().map(|r| (new_id("em"), r.clone())).collect();
    w.store_copies(&template, &copies, &a.raw, None)?;
    // Landed: the message reached a partner's mailbox authenticated, so an inbox provider would
    // file it in the inbox. A local sender learns it here; a peer-bound message learns it from
    // the peer's reply.
    if sent_here && a.authenticated {
        bump_landed(w, &a.from)?;
    }
    if a.is_reply && a.authenticated {
        for parent in &a.parents {
            let Some(original_id) = w.email_for_message_id(parent)? else {
                continue;
            };
            if let Some(original) = w.email_in_write(&original_id)?
                && original.send_type == Some(SendType::Warmup)
            {
                let to = original.summary.to.first().cloned().unwrap_or_default();
                if !w.hosts_in_write(key_of(&to).0)? {
                    bump_landed(w, &original.summary.mailbox)?;
                }
            }
            break;
        }
    }
    let mut replies = 0;
    for (i, r) in a.recipients.iter().enumerate() {
        let (domain, local) = key_of(r);
        let Some(mut rec) = w.warmup(domain, local)? else {
            continue;
        };
        rec.roll(a.now);
        rec.received_today = rec.received_today.saturating_add(1);
        rec.received_total += 1;
        // Only conversation starters are answered, so two partners never loop.
        let answer = !a.is_reply
            && rec.can_send(a.now)
            && a.email.message_id.is_some()
            && rand::rng().random_bool(rec.reply_rate.clamp(0.0, 1.0));
        if answer {
            let display = w.mailbox_in_write(domain, local)?.and_then(|m| m.display_name);
            let sender = text::first_name(display.as_deref(), r);
            let (name, _) = split_display(&a.email.summary.from);
            let recipient = text::first_name(name.as_deref(), &a.from);
            let body = text::reply(&mut rand::rng(), &a.email.summary.subject, &sender, &recipient);
            let due = a.now + delays.get(i).copied().unwrap_or(0);
            let email = compose(
                r,
                display.as_deref(),
                &a.from,
                body,
                a.email.message_id.clone(),
                a.now,
                due,
            );
            w.enqueue(&email, due)?;
            rec.count_sent(&email.summary.id, true);
            replies += 1;
        }
        w.put_warmup(&rec)?;
    }
    Ok(copies.first().map(|(id, _)| (id.clone(), replies)))
}

fn bump_landed(w: &mut Wtx<'_>, mailbox: &str) -> Result<()> {
    let (domain, local) = key_of(mailbox);
    if let Some(mut rec) = w.warmup(domain, local)? {
        rec.landed_total += 1;
        w.put_warmup(&rec)?;
    }
    Ok(())
}
