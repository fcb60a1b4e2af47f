//! What a received message reports about mail we sent (DSNs, complaints, unsubscribes), screened
//! for trust, and acted on inside the write that stores the message.

use crate::error::Result;
use crate::store::{Email, Wtx};

use super::auth::Verdict;
use super::report;

/// What a received message reports about mail we sent, already screened for trust.
#[derive(Clone)]
pub(super) struct Reports {
    pub(super) bounce_ids: Vec<(String, usize)>,
    pub(super) referenced: Vec<String>,
    pub(super) failures: Vec<report::Failure>,
    pub(super) complaint: Option<String>,
    pub(super) unsubscribe: Option<Vec<String>>,
    pub(super) verdict: Verdict,
    /// The report authenticated as one of `smtp.feedback_senders`.
    pub(super) feedback_sender: bool,
}

/// Which recipients of a message a report may speak for.
enum Scope {
    /// Named by a verified bounce address: that recipient alone.
    Recipient(usize),
    /// Named by Message-ID, which every recipient has seen.
    Referenced,
}

impl Reports {
    /// Acts on the reports inside the write that stores the message. Bounces and complaints
    /// touch only addresses that were recipients of the message they name.
    pub(super) fn apply(self, w: &mut Wtx<'_>, now: u64) -> Result<()> {
        let mut targets: Vec<(String, Scope)> =
            self.bounce_ids.iter().map(|(id, n)| (id.clone(), Scope::Recipient(*n))).collect();
        for mid in &self.referenced {
            if let Some(found) = w.email_for_message_id(mid)? {
                targets.push((found, Scope::Referenced));
            }
        }
        for (target, scope) in &targets {
            let Some(email) = w.email_in_write(target)? else { continue };
            for failure in &self.failures {
                if self.speaks_for(&email, scope, &failure.recipient, false) {
                    w.record_bounce(target, &failure.recipient, &failure.reason, now)?;
                    tracing::info!(
                        target: "edgemail::delivery",
                        event = "bounce",
                        source = "dsn",
                        email_id = %target,
                        recipient = %failure.recipient,
                        smtp_response = %failure.reason,
                        "late bounce"
                    );
                }
            }
            if let Some(recipient) = &self.complaint
                && self.speaks_for(&email, scope, recipient, true)
            {
                w.record_complaint(target, recipient, now)?;
            }
        }
        if let Some(fields) = &self.unsubscribe
            && let [id, recipient, ..] = fields.as_slice()
        {
            w.record_unsubscribe(id, recipient, "mailto", now)?;
        }
        Ok(())
    }

    /// Whether the report may act for `recipient` of `email`. Through a bounce address, only
    /// for the recipient it was issued for. Through a Message-ID (known to every recipient) a
    /// report about a one-recipient message may; for a message with several, only a report
    /// authenticated by the recipient's own domain (or, for complaints, a configured feedback
    /// loop), so one recipient cannot have the others suppressed.
    fn speaks_for(&self, email: &Email, scope: &Scope, recipient: &str, complaint: bool) -> bool {
        match scope {
            Scope::Recipient(n) => email
                .deliveries
                .get(*n)
                .is_some_and(|d| d.recipient.eq_ignore_ascii_case(recipient)),
            Scope::Referenced if email.deliveries.len() <= 1 => true,
            Scope::Referenced => {
                let domain = recipient.rsplit_once('@').map_or("", |(_, d)| d);
                self.verdict.authenticated_by(&[domain.to_ascii_lowercase()])
                    || (complaint && self.feedback_sender)
            }
        }
    }
}
