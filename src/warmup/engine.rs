//! The warmup engine: every `warmup.tick` it settles the deliveries of sent warmup mail, prunes
//! warmup mail past `warmup.keep`, and starts a conversation for each mailbox whose next send is
//! due and that has quota left today.

use std::sync::Arc;

use rand::RngExt;

use super::{compose, key_of, partner, text};
use crate::config::Warmup as Settings;
use crate::error::Result;
use crate::ids::now_ms;
use crate::shutdown::Shutdown;
use crate::store::{MessageStatus, Store, Warmup};
use crate::wake::Wake;

/// What the warmup engine works with.
pub struct Deps {
    pub store: Arc<Store>,
    /// Wakes the delivery queue when a round queued mail.
    pub queue: Wake,
    pub config: Settings,
    /// Rounds run on the leading node only.
    pub node: Arc<crate::cluster::Node>,
}

/// Runs the engine every `warmup.tick` until shutdown.
pub async fn run(app: Arc<Deps>, mut shutdown: Shutdown) {
    let mut every = tokio::time::interval(app.config.tick);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = shutdown.wait() => break,
        }
        if !app.node.leads() {
            continue;
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
    settled: Vec<(String, Option<MessageStatus>)>,
    /// Whether stored warmup mail is older than `warmup.keep`.
    prune: bool,
    /// Partners this mailbox's domain has suppressed (a bounce, complaint or unsubscribe).
    suppressed: Vec<String>,
}

/// Old warmup mail deleted per mailbox and round, so one write stays small.
const PRUNE_BATCH: usize = 200;

/// One round: counts finished deliveries, deletes warmup mail past `warmup.keep`, and starts a
/// conversation for every mailbox whose next send is due and that has quota left today.
async fn tick(app: &Deps) -> Result<()> {
    let now = now_ms();
    let cutoff = now.saturating_sub(app.config.keep.as_millis() as u64);
    let seen = look(app, cutoff).await?;
    let local: Vec<String> =
        seen.iter().filter(|s| s.record.enabled).map(|s| s.record.mailbox.clone()).collect();
    for seen in seen {
        round(app, seen, &local, now, cutoff).await?;
    }
    Ok(())
}

/// Every enrolled mailbox as a round starts: settled deliveries, whether to prune, and the
/// partners its domain has suppressed.
async fn look(app: &Deps, cutoff: u64) -> Result<Vec<Seen>> {
    let peers = app.config.peers.clone();
    app.store
        .read(move |r| {
            let mut out: Vec<Seen> = Vec::new();
            for record in r.all_warmups()? {
                let (domain, local) = key_of(&record.mailbox);
                let display_name = r.mailbox(domain, local)?.and_then(|m| m.display_name);
                let mut settled = Vec::new();
                for id in &record.pending {
                    match r.email_by_id(id)? {
                        Some(e) if e.summary.status.is_final() => {
                            settled.push((id.clone(), Some(e.summary.status)))
                        }
                        Some(_) => {}
                        None => settled.push((id.clone(), None)),
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
        .await
}

/// One mailbox's part of a round, in one write.
async fn round(app: &Deps, seen: Seen, local: &[String], now: u64, cutoff: u64) -> Result<()> {
    let Seen { record, display_name, settled, prune, suppressed } = seen;
    let spread = app.config.spread.as_millis() as u64;
    let mut due = record.clone();
    due.roll(now);
    let candidate = if due.can_send(now) && now >= due.next_send_at {
        partner(&record.mailbox, local, &app.config.peers, &suppressed).map(|to| {
            let mut rng = rand::rng();
            let sender = text::first_name(display_name.as_deref(), &record.mailbox);
            let body = text::message(&mut rng, &sender, &text::first_name(None, &to));
            compose(&record.mailbox, display_name.as_deref(), &to, body, None, now, now)
        })
    } else {
        None
    };
    if candidate.is_none() && settled.is_empty() && !prune {
        return Ok(());
    }
    let jitter = rand::rng().random_range(0.5..1.5);
    let mailbox = record.mailbox.clone();
    let sent = app
        .store
        .write(move |w| -> Result<_> {
            let (domain, local) = key_of(&mailbox);
            let Some(mut rec) = w.warmup(domain, local)? else {
                return Ok(false);
            };
            if prune {
                w.prune_warmup_mail(&mailbox, cutoff, PRUNE_BATCH)?;
            }
            rec.roll(now);
            for (id, status) in &settled {
                rec.settle(id, *status);
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
    Ok(())
}
