//! The copies of a received message that no claimant took, as they are stored: one template,
//! a copy per reached mailbox, the mail of ours it answers or reports on, and the reply link
//! recorded when it is written.

use super::*;

/// The copies of a message nobody claimed, and what it says about mail we sent.
pub(super) struct Inbox {
    pub(super) template: Email,
    /// (email id, mailbox) of each copy.
    pub(super) copies: Vec<(String, String)>,
    /// The address that reached each copy's mailbox (`deliveredTo`), in the order of `copies`.
    pub(super) delivered: Vec<String>,
    pub(super) reports: Reports,
    /// The Message-IDs it answers.
    pub(super) parents: Vec<String>,
    /// What it is if it answers mail of ours.
    pub(super) answer: crate::store::ReplySeen,
    /// Outside targets and the alias or mailbox forwarding to each.
    pub(super) outside: Vec<(String, String)>,
    /// Bounces to our SRS0 addresses: the original sender and the address.
    pub(super) returns: Vec<(String, String)>,
}

impl Receiver {
    /// The inbox copies of a message nobody claimed, what it reports about mail we sent, and
    /// the Message-IDs it answers.
    pub(super) fn inbox(
        &self,
        envelope: &Envelope,
        seen: Inspected,
        verdict: &Verdict,
        id: &str,
        resolved: &Resolved,
    ) -> Inbox {
        let routed = self.route(&envelope.recipients, resolved);
        let Inspected {
            email: template,
            failures,
            complaint,
            referenced,
            unsubscribe_token,
            parents,
            answer,
        } = seen;
        let answer =
            crate::store::ReplySeen { class: answer.class, pause_until: answer.pause_until() };
        let unsubscribe_token = unsubscribe_token.filter(|_| routed.to_system);
        if routed.to_system
            && routed.mailboxes.is_empty()
            && complaint.is_none()
            && unsubscribe_token.is_none()
        {
            // The subject is left out: it may carry an unsubscribe token, which names a recipient.
            tracing::info!(from = %envelope.from,
                "mail to a system address (postmaster/abuse/unsubscribe) without a report; not stored");
        }
        let complaint = complaint.filter(|_| {
            let trusted = verdict.aligned() || verdict.authenticated_by(&self.feedback_senders);
            if !trusted {
                tracing::warn!(from = %envelope.from, ip = %envelope.ip,
                    "complaint report ignored: not authenticated for its From domain");
            }
            trusted
        });
        // One template, not a clone per mailbox: a large message would be held once per copy.
        let copies: Vec<(String, String)> = routed
            .mailboxes
            .iter()
            .enumerate()
            .map(|(i, (mailbox, _))| {
                (if i == 0 { id.to_owned() } else { new_id("em") }, mailbox.clone())
            })
            .collect();
        let delivered = routed.mailboxes.iter().map(|(_, to)| to.clone()).collect();
        let unsubscribe = unsubscribe_token
            .and_then(|t| self.tokens.open(crate::tracking::Kind::Unsubscribe, &t));
        let reports = Reports {
            bounce_ids: routed.bounce_ids,
            // A report that reached another address names its message only by Message-ID,
            // which is no secret: it counts only when its sender authenticated for its From
            // domain.
            referenced: if verdict.aligned() { referenced } else { Vec::new() },
            verdict: verdict.clone(),
            feedback_sender: verdict.authenticated_by(&self.feedback_senders),
            failures,
            complaint,
            unsubscribe,
        };
        Inbox {
            template,
            copies,
            delivered,
            reports,
            parents,
            answer,
            outside: routed.outside,
            returns: routed.returns,
        }
    }
}

/// The message of ours a received one answers, recorded as replied to.
pub(super) fn reply_link(
    w: &mut Wtx<'_>,
    parents: &[String],
    sender: &str,
    copies: &[(String, String)],
    answer: &crate::store::ReplySeen,
) -> Result<Option<String>> {
    let mut reply_of = None;
    for parent in parents {
        if let Some(original) = w.email_for_message_id(parent)? {
            reply_of = Some(original);
            break;
        }
    }
    if reply_of.is_none() {
        // No threading headers (or unknown ones): a message from a contact to the mailbox a
        // sequence wrote to them from answers that sequence all the same.
        for (_, mailbox) in copies {
            if let Some(sent) = w.sequence_mail_to(mailbox, sender)? {
                reply_of = Some(sent);
                break;
            }
        }
    }
    if let Some(original) = &reply_of {
        w.record_reply(original, answer)?;
    }
    Ok(reply_of)
}

/// Files each copy of an answer to mail of ours (`reply_of`) in the reply inbox, with the
/// classification the inbound path made (`GET /v1/replies`).
pub(super) fn file_replies(
    w: &mut Wtx<'_>,
    reply_of: Option<&str>,
    template: &Email,
    copies: &[(String, String)],
    answer: &crate::store::ReplySeen,
) -> Result<()> {
    let Some(original) = reply_of else { return Ok(()) };
    for (email_id, mailbox) in copies {
        let item = crate::store::ReplyAnswer {
            email_id,
            mailbox,
            from: &template.summary.from,
            subject: &template.summary.subject,
            received_at: template.summary.created_at,
        };
        w.file_reply(original, &item, answer.class)?;
    }
    Ok(())
}
