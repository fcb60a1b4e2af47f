//! What mailbox scripts send, and how it leaves. Answers (vacation, a reject notice) are
//! automatic mail: they go with the null envelope sender (RFC 3834 3.3, RFC 5230 5), so nothing
//! ever answers them, DKIM-signed by the mailbox's domain like all mail it sends. A redirect is
//! a forward made by the mailbox: an SRS0 envelope sender under its domain and an ARC set, so
//! SPF and DMARC still pass where it lands and a bounce goes back to the original sender.
//! Both are queued in the write that stores the message (sent if and only if it was taken).
//!
//! Also here: which header addresses a mailbox takes as its own for vacation (RFC 5230
//! `:addresses`): every address that leads to it as routing leads mail (itself, aliases naming
//! it, their `+tag` forms).

use super::forward::{Forward, Outgoing};
use super::{Envelope, Receiver, routing, sieve::REDIRECTED};
use crate::store::Email;

/// Header recipients looked at for vacation: more than this is a mass mailing anyway.
const MAX_NAMED: usize = 100;

/// The recipient addresses of `raw`'s To, Cc and Bcc fields, lower-cased, each once.
pub(super) fn header_recipients(raw: &[u8]) -> Vec<String> {
    let head_end = memchr::memmem::find(raw, b"\r\n\r\n").map_or(raw.len(), |at| at + 4);
    let Some(parsed) = mail_parser::MessageParser::new().parse_headers(&raw[..head_end]) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for field in [parsed.to(), parsed.cc(), parsed.bcc()].into_iter().flatten() {
        for address in field.iter().filter_map(|a| a.address()) {
            let lower = address.trim().to_ascii_lowercase();
            if out.len() < MAX_NAMED && lower.contains('@') && !out.contains(&lower) {
                out.push(lower);
            }
        }
    }
    out
}

impl Receiver {
    /// For each mailbox of `copies`, the addresses among `named` that lead to it.
    pub(super) async fn our_addresses(
        &self,
        named: Vec<String>,
        copies: &[(String, String)],
    ) -> Vec<Vec<String>> {
        let mailboxes: Vec<String> = copies.iter().map(|(_, m)| m.clone()).collect();
        let separator = self.subaddress.clone();
        let count = mailboxes.len();
        let found = self
            .store
            .read(move |r| -> crate::error::Result<Vec<Vec<String>>> {
                let mut leads = Vec::with_capacity(named.len());
                for address in &named {
                    let local = address.rsplit_once('@').map_or(address.as_str(), |(l, _)| l);
                    let domain = crate::address::domain_key(address);
                    let reached = if r.hosts(&domain)? {
                        routing::resolve(r, local, &domain, &separator)?
                            .map(|t| t.mailboxes)
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    leads.push(reached);
                }
                Ok(mailboxes
                    .iter()
                    .map(|m| {
                        let hit = |(_, reached): &(&String, &Vec<String>)| reached.contains(m);
                        named.iter().zip(&leads).filter(hit).map(|(a, _)| a.clone()).collect()
                    })
                    .collect())
            })
            .await;
        found.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the mailboxes' own addresses could not be read");
            vec![Vec::new(); count]
        })
    }

    /// The answers scripts made, as queue entries of their mailboxes with the null sender.
    pub(super) fn answers(&self, sends: Vec<(String, String, Vec<u8>)>, now: u64) -> Vec<Outgoing> {
        let mut out = Vec::with_capacity(sends.len());
        for (mailbox, to, message) in sends {
            match answer(&mailbox, &to, message, now) {
                Some(one) => out.push(one),
                None => tracing::warn!(%mailbox, "a Sieve answer could not be parsed; not sent"),
            }
        }
        out
    }

    /// The redirects scripts made, each a forward by its mailbox of the message as received
    /// (`full`, with `trace` bytes of our headers on top), marked so that the mailbox does
    /// not redirect it again when it comes back.
    pub(super) async fn redirected(
        &self,
        envelope: &Envelope,
        (full, trace): (&[u8], usize),
        template: &Email,
        redirects: &[(String, String)],
        now: u64,
    ) -> Vec<Outgoing> {
        let mut out = Vec::with_capacity(redirects.len());
        let trace = trace.min(full.len());
        for (mailbox, to) in redirects {
            let marker = format!("{REDIRECTED}: {mailbox}\r\n");
            let marked = [&full[..trace], marker.as_bytes(), &full[trace..]].concat();
            let one = [Forward { target: to, via: mailbox }];
            out.extend(self.forwards(envelope, (&marked, trace), template, &one, now).await);
        }
        out
    }
}

/// One answer of `mailbox` to `to` as a queue entry, with the null envelope sender.
fn answer(mailbox: &str, to: &str, message: Vec<u8>, now: u64) -> Option<Outgoing> {
    let domain = crate::address::domain_key(mailbox);
    let prepared = crate::mail::submitted::prepare(&message, &domain, now)?;
    let (mut email, raw) = prepared.into_email(mailbox.to_owned(), vec![to.to_owned()], now);
    // Automatic mail is never answered, bounces included (RFC 3834 3.3).
    email.envelope_from = Some(String::new());
    Some((email, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_recipients_are_the_to_cc_and_bcc_addresses_once_each() {
        let raw = b"From: a@x.test\r\nTo: Ann <Ann@X.test>, b@y.test\r\nCc: ann@x.test, \
                    c@z.test\r\nSubject: s\r\n\r\nTo: not@header.test\r\n";
        assert_eq!(header_recipients(raw), ["ann@x.test", "b@y.test", "c@z.test"]);
        assert!(header_recipients(b"Subject: none\r\n\r\nbody").is_empty());
    }

    #[test]
    fn header_recipients_are_bounded() {
        let many: Vec<String> = (0..500).map(|i| format!("u{i}@x.test")).collect();
        let raw = format!("To: {}\r\n\r\nbody", many.join(", "));
        assert_eq!(header_recipients(raw.as_bytes()).len(), MAX_NAMED);
    }

    #[test]
    fn an_answer_leaves_with_the_null_sender() {
        let message = b"From: <ada@alpha.test>\r\nTo: <bob@example.org>\r\nSubject: Away\r\n\
                        Auto-Submitted: auto-replied\r\n\r\nBack soon.\r\n"
            .to_vec();
        let (email, raw) =
            answer("ada@alpha.test", "bob@example.org", message, 1_000).expect("parsed"); // ok: test
        assert_eq!(email.envelope_from.as_deref(), Some(""));
        assert_eq!(email.summary.mailbox, "ada@alpha.test");
        assert!(String::from_utf8_lossy(&raw).contains("Auto-Submitted: auto-replied"));
    }
}
