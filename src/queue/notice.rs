//! Telling a mail client's user that their message failed: when an attempt ends recipients of
//! a message submitted over SMTP submission as failed (refused for good, or given up after
//! retrying), a delivery status notification (RFC 3464, `mail::dsn`) goes into the sending
//! mailbox's INBOX, as any mail host returns undeliverable mail to its sender. It is filed by
//! the receiving side (`Local::file_report`) in the same write that commits the attempt, so a
//! crash can neither lose it nor file it twice.
//!
//! Only submitted mail gets one: a person at a mail client has no other way to learn of the
//! failure. Mail sent through the API (transactional sends, campaigns and sequences) is followed
//! by programs, which have the email's status and the `email.bounced` / `email.failed` events;
//! filling the sending mailbox's inbox with a report per failed receipt or campaign recipient
//! would only bury its real mail. Warmup mail never has a report. No report is written about a
//! report or any other automatic message (`dsn::is_automatic`).

use super::Deps;
use super::local::Commit;
use crate::ids::new_id;
use crate::mail::dsn::{self, Failed};
use crate::store::{Email, Outcome};

/// The commit that files a report of the failures among `outcomes` in the sender's inbox;
/// `None` when there is nothing to report or no one to report it to. `submitted` tells a
/// message a mail client submitted; `message` is what was sent.
pub fn prepare(
    app: &Deps,
    email: &Email,
    submitted: bool,
    message: &[u8],
    outcomes: &[(String, Outcome)],
) -> Option<Commit> {
    if !submitted {
        return None;
    }
    let failed: Vec<Failed<'_>> = outcomes
        .iter()
        .filter_map(|(recipient, outcome)| match outcome {
            Outcome::Bounced(reply) => Some(Failed { recipient, reply, gave_up: false }),
            Outcome::Failed(reply) => Some(Failed { recipient, reply, gave_up: true }),
            Outcome::Delivered(_) | Outcome::Deferred(_) => None,
        })
        .collect();
    if failed.is_empty() || dsn::is_automatic(message) {
        return None;
    }
    let local = app.queue.local.get()?;
    let host = &app.queue.host;
    let message_id = crate::mail::build::message_id(&new_id("dsn"), host);
    let report = dsn::Report {
        reporting_mta: host,
        to: &email.summary.mailbox,
        message_id: &message_id,
        original: message,
        subject: &email.summary.subject,
        arrival_ms: email.summary.created_at,
        now_ms: crate::ids::now_ms(),
        failed: &failed,
    };
    match dsn::build(&report) {
        Ok(bytes) => {
            tracing::info!(email = %email.summary.id, mailbox = %email.summary.mailbox,
                recipients = failed.len(), "delivery report for the sender's inbox");
            local.file_report(&email.summary.mailbox, bytes)
        }
        Err(e) => {
            tracing::error!(email = %email.summary.id, error = %e, "delivery report not built");
            None
        }
    }
}
