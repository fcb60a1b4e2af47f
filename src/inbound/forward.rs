//! Passing received mail on to outside addresses (alias targets, mailbox `forwardTo`): the
//! message keeps its body and the sender's DKIM signature, gets our Received header, a loop
//! marker and an ARC set (RFC 8617) sealed with the forwarding domain's key, and is queued with
//! an SRS0 envelope sender under that domain, so SPF checks us and bounces come back to us.
//! Bounces that reach an SRS0 address of ours go on to the original sender. Spam is not
//! forwarded, and mail that has gone round too often is refused.

use mail_auth::spf::verify::SpfParameters;
use mail_auth::{AuthenticatedMessage, AuthenticationResults, MessageAuthenticator};

use super::{Envelope, Receiver, srs};
use crate::error::Result;
use crate::mail::outbound::Outbound;
use crate::store::{Email, SendType, SpamFilter};

/// The header a forward of ours carries, naming the address that forwarded it.
pub const LOOP_HEADER: &str = "X-Edgemail-Loop";

/// More `Received` headers than this and a message is taken to be looping (RFC 5321 6.3 asks
/// for a limit; 25 is what other servers use).
const MAX_RECEIVED: usize = 25;

/// The reply to a message that has gone round (RFC 3463 X.4.6: routing loop detected).
pub const LOOPING: &str =
    "554 5.4.6 routing loop detected: the message has been forwarded too often\r\n";

/// Whether `raw` (as received) is looping: more than `MAX_RECEIVED` Received headers, or our
/// loop marker naming an address of a domain it is now sent to again.
pub(super) fn looping(raw: &[u8], recipients: &[String]) -> bool {
    let mut received = 0;
    for (name, value) in header_fields(raw) {
        if name.eq_ignore_ascii_case("Received") {
            received += 1;
        } else if name.eq_ignore_ascii_case(LOOP_HEADER) {
            let marked = crate::address::domain_key(value.trim());
            if recipients.iter().any(|r| crate::address::domain_key(r) == marked) {
                return true;
            }
        }
    }
    received > MAX_RECEIVED
}

/// The header fields of a message, unfolded only as far as a name and its first line.
fn header_fields(raw: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(raw.len());
    let head = std::str::from_utf8(&raw[..end]).unwrap_or("");
    head.split("\r\n")
        .filter(|line| !line.starts_with([' ', '\t']))
        .filter_map(|line| line.split_once(':'))
}

/// A message to queue and the bytes it goes out as.
pub(super) type Outgoing = (Email, Vec<u8>);

/// What to send where: one outside target and the alias or mailbox that forwards to it.
pub(super) struct Forward<'a> {
    pub target: &'a str,
    pub via: &'a str,
}

impl Receiver {
    /// Whether the filter calls the message spam for forwarding by `via`: a mailbox's own
    /// filter, an alias's with the default settings.
    pub(super) async fn spam_for_forwarding(
        &self,
        envelope: &Envelope,
        verdict: &super::auth::Verdict,
        features: Option<&crate::junk::Features>,
        via: &str,
        forced: Option<&str>,
    ) -> Result<bool> {
        if forced.is_some() {
            return Ok(true);
        }
        let evidence = self.filter.evidence(&self.dns, envelope.ip, verdict, false).await;
        let (local, domain) = via.rsplit_once('@').unwrap_or((via, ""));
        let (local, domain) = (local.to_owned(), domain.to_owned());
        let found = self.store.read(move |r| r.mailbox(&domain, &local)).await?;
        let settings = found.and_then(|m| m.spam_filter).unwrap_or(SpamFilter::default());
        let found =
            self.filter.judge(&self.store, via, settings, features, &evidence, None).await?;
        Ok(found.spam.is_some_and(|s| s.verdict == "spam"))
    }

    /// The messages to queue for `forwards`: `full` (our trace headers, `trace` bytes, on top
    /// of the message as received) sealed for each, with its SRS sender.
    pub(super) async fn forwards(
        &self,
        envelope: &Envelope,
        (full, trace): (&[u8], usize),
        template: &Email,
        forwards: &[Forward<'_>],
        now: u64,
    ) -> Vec<Outgoing> {
        // Our Received header is the first line; our Authentication-Results stays behind (the
        // ARC set carries what we found).
        let received_end = full.windows(2).position(|w| w == b"\r\n").map_or(0, |at| at + 2);
        let (received, original) =
            (&full[..received_end.min(trace)], &full[trace.min(full.len())..]);
        let mut emails = Vec::new();
        for f in forwards {
            let domain = crate::address::domain_key(f.via);
            let marked =
                [format!("{LOOP_HEADER}: {}\r\n", f.via).as_bytes(), received, original].concat();
            let sealed = match self.sealed(envelope, &domain, &marked).await {
                Ok(sealed) => sealed,
                Err(e) => {
                    // Still forwarded: without a seal it is what forwarding was before ARC.
                    tracing::warn!(error = %e, via = f.via, "forwarding without an ARC seal");
                    marked
                }
            };
            let sender = if envelope.from.is_empty() {
                String::new()
            } else {
                srs::encode(&self.srs, &envelope.from, &domain, now).unwrap_or_default()
            };
            emails.push((self.outbound(template, f.via, f.target, sender, now), sealed));
            tracing::info!(via = f.via, target = f.target, "message forwarded");
        }
        emails
    }

    /// The messages that pass a bounce that reached an SRS0 address of ours on to the original
    /// sender it names (`returns`: that sender and the SRS0 address), with the null sender (a
    /// bounce is never answered).
    pub(super) fn pass_back(
        &self,
        (full, trace): (&[u8], usize),
        template: &Email,
        returns: &[(String, String)],
        now: u64,
    ) -> Vec<Outgoing> {
        let received_end = full.windows(2).position(|w| w == b"\r\n").map_or(0, |at| at + 2);
        let (received, original) =
            (&full[..received_end.min(trace)], &full[trace.min(full.len())..]);
        let raw = [received, original].concat();
        let mut emails = Vec::new();
        for (original_sender, srs_address) in returns {
            let via = format!("postmaster@{}", crate::address::domain_key(srs_address));
            let email = self.outbound(template, &via, original_sender, String::new(), now);
            emails.push((email, raw.clone()));
            tracing::info!(to = %original_sender, "bounce of a forward passed back");
        }
        emails
    }

    fn outbound(
        &self,
        template: &Email,
        via: &str,
        target: &str,
        sender: String,
        now: u64,
    ) -> Email {
        let mut email = Outbound {
            kind: SendType::Transactional,
            mailbox: via.to_owned(),
            from: template.summary.from.clone(),
            to: vec![target.to_owned()],
            subject: template.summary.subject.clone(),
            text: template.text.clone().unwrap_or_default(),
            html: None,
            in_reply_to: None,
            batch_id: None,
            sequence: None,
            scheduled_at: None,
            due: now,
            now,
        }
        .into_email();
        // The message keeps its own Message-ID; ours would name nothing that was sent.
        email.message_id = None;
        email.envelope_from = Some(sender);
        email
    }

    /// `message` with an ARC set of `domain` on top.
    async fn sealed(&self, envelope: &Envelope, domain: &str, message: &[u8]) -> Result<Vec<u8>> {
        let name = domain.to_owned();
        let found = self.store.read(move |r| r.domain(&name)).await?;
        let domain = found.ok_or_else(|| crate::error::Error::not_found("domain"))?;
        let parsed = AuthenticatedMessage::parse(message).ok_or_else(|| {
            crate::error::Error::internal("the forwarded message cannot be parsed")
        })?;
        let authenticator = MessageAuthenticator(self.dns.resolver().clone());
        let helo = if envelope.helo.is_empty() { "unknown" } else { envelope.helo.as_str() };
        let dkim = authenticator.verify_dkim(&parsed).await;
        let chain = authenticator.verify_arc(&parsed).await;
        let spf = authenticator
            .verify_spf(SpfParameters::verify_mail_from(
                envelope.ip,
                helo,
                &self.host,
                &envelope.from,
            ))
            .await;
        let results = AuthenticationResults::new(&self.host)
            .with_dkim_results(&dkim, parsed.from())
            .with_spf_mailfrom_result(&spf, envelope.ip, &envelope.from, helo)
            .with_arc_result(&chain, envelope.ip);
        let headers = crate::mail::arc::seal(&domain, &parsed, &results, &chain)?;
        Ok([headers.as_bytes(), message].concat())
    }
}
