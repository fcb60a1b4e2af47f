//! The sending engine: every `warmup.tick`, settles finished deliveries, prunes old warmup mail
//! and starts a conversation for each mailbox that is due and has quota left today.

use rand::RngExt;

use super::{compose, key_of, text};
use crate::app::App;
use crate::error::Result;
use crate::ids::now_ms;
use crate::shutdown::Shutdown;
use crate::store::{Warmup, is_final};

/// Runs the engine every `warmup.tick` until shutdown.
pub async fn run(app: App, mut shutdown: Shutdown) {
    let mut every = tokio::time::interval(app.config.warmup.tick);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = shutdown.wait() => break,
        }
        if let Err(e) = tick(&app).await {
            tracing::warn!(error = %e, "warmup round failed; next round retries");
        }
    }
}

/// One mailbox as the engine sees it at the start of a round.
struct Seen {
    record: Warmup,
    display_name: Option<String>,
    /// Sent messages whose delivery became final: `(email id, status)`.
    settled: Vec<(String, String)>,
    /// Whether stored warmup mail is older than `warmup.keep`.
    prune: bool,
    /// Partners this mailbox's domain has suppressed (a bounce, complaint or unsubscribe).
    suppressed: Vec<String>,
}

/// Old warmup mail deleted per mailbox and round, so one write stays small.
const PRUNE_BATCH: usize = 200;

/// One round: counts finished deliveries, deletes warmup mail past `warmup.keep`, and starts a
/// conversation for every mailbox whose next send is due and that has quota left today.
async fn tick(app: &App) -> Result<()> {
    let now = now_ms();
    let cutoff = now.saturating_sub(app.config.warmup.keep.as_millis() as u64);
    let peers = app.config.warmup.peers.clone();
    let seen = app
        .store
        .read(move |r| {
            let mut out: Vec<Seen> = Vec::new();
            for record in r.all_warmups()? {
                let (domain, local) = key_of(&record.mailbox);
                let display_name = r.mailbox(domain, local)?.and_then(|m| m.display_name);
                let mut settled = Vec::new();
                for id in &record.pending {
                    match r.email_by_id(id)? {
                        Some(e) if is_final(&e.summary.status) => {
                            settled.push((id.clone(), e.summary.status.clone()))
                        }
                        Some(_) => {}
                        None => settled.push((id.clone(), "gone".into())),
                    }
                }
                let prune = r.oldest_warmup_mail(&record.mailbox)?.is_some_and(|at| at < cutoff);
                out.push(Seen { record, display_name, settled, prune, suppressed: Vec::new() });
            }
            let enabled: Vec<String> =
                out.iter().filter(|s| s.record.enabled).map(|s| s.record.mailbox.clone()).collect();
            for s in out.iter_mut() {
                let (domain, _) = key_of(&s.record.mailbox);
                for candidate in enabled.iter().chain(peers.iter()) {
                    if r.suppression(domain, candidate)?.is_some() {
                        s.suppressed.push(candidate.clone());
                    }
                }
            }
            Ok(out)
        })
        .await?;
    let local: Vec<String> =
        seen.iter().filter(|s| s.record.enabled).map(|s| s.record.mailbox.clone()).collect();
    let spread = app.config.warmup.spread.as_millis() as u64;
    for Seen { record, display_name, settled, prune, suppressed } in seen {
        let mut due = record.clone();
        due.roll(now);
        let candidate = if due.can_send(now) && now >= due.next_send_at {
            partner(&record.mailbox, &local, &app.config.warmup.peers, &suppressed).map(|to| {
                let mut rng = rand::rng();
                let sender = text::first_name(display_name.as_deref(), &record.mailbox);
                let body = text::message(&mut rng, &sender, &text::first_name(None, &to));
                compose(&record.mailbox, display_name.as_deref(), &to, body, None, now, now)
            })
        } else {
            None
        };
        if candidate.is_none() && settled.is_empty() && !prune {
            continue;
        }
        let jitter = rand::rng().random_range(0.5..1.5);
        let mailbox = record.mailbox.clone();
        let sent = app
            .store
            .write(move |w| {
                let (domain, local) = key_of(&mailbox);
                let Some(mut rec) = w.warmup(domain, local)? else {
                    return Ok(false);
                };
                if prune {
                    w.prune_warmup_mail(&mailbox, cutoff, PRUNE_BATCH)?;
                }
                rec.roll(now);
                for (id, status) in &settled {
                    rec.settle(id, status);
                }
                let mut sent = false;
                // Checked again here: a DELETE or another round may have come first.
                if let Some(email) = candidate
                    && rec.can_send(now)
                    && now >= rec.next_send_at
                {
                    w.enqueue(&email, now)?;
                    rec.count_sent(&email.summary.id, false);
                    let gap = spread as f64 / f64::from(rec.limit(now).max(1)) * jitter;
                    rec.next_send_at = now + gap as u64;
                    sent = true;
                }
                w.put_warmup(&rec)?;
                Ok(sent)
            })
            .await?;
        if sent {
            tracing::debug!(mailbox = %record.mailbox, "warmup message queued");
            app.queue.wake();
        }
    }
    Ok(())
}

/// A random partner for `mailbox`: another enabled local warmup mailbox or a configured peer,
/// never one its domain has suppressed (warmup must not hammer an address that bounced).
fn partner(
    mailbox: &str,
    local: &[String],
    peers: &[String],
    suppressed: &[String],
) -> Option<String> {
    let candidates: Vec<&String> = local
        .iter()
        .chain(peers.iter())
        .filter(|a| a.as_str() != mailbox && !suppressed.iter().any(|s| s.eq_ignore_ascii_case(a)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let at = rand::rng().random_range(0..candidates.len());
    candidates.get(at).map(|s| (*s).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partners_exclude_the_mailbox_itself_and_suppressed_addresses() {
        let local = vec!["a@x.test".to_owned(), "b@x.test".to_owned()];
        for _ in 0..20 {
            assert_eq!(partner("a@x.test", &local, &[], &[]).as_deref(), Some("b@x.test"));
        }
        assert_eq!(partner("a@x.test", &local[..1], &[], &[]), None);
        let peers = vec!["p@peer.test".to_owned()];
        assert_eq!(partner("a@x.test", &local[..1], &peers, &[]).as_deref(), Some("p@peer.test"));
        let suppressed = vec!["P@peer.test".to_owned()];
        for _ in 0..20 {
            assert_eq!(
                partner("a@x.test", &local, &peers, &suppressed).as_deref(),
                Some("b@x.test")
            );
        }
        assert_eq!(partner("a@x.test", &local[..1], &peers, &suppressed), None);
    }
}
