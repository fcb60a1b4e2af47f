//! What the MX writes on top of a received message: its Received field and the
//! Authentication-Results of the checks it ran.

use mail_auth::MessageAuthenticator;

use super::{Envelope, Receiver, Verdict, auth, trace};

impl Receiver {
    /// The message with our Received and Authentication-Results fields on top, what its
    /// authentication proved, and the length of those two headers.
    pub(super) async fn stamp(
        &self,
        envelope: &Envelope,
        raw: Vec<u8>,
        id: &str,
        now: u64,
    ) -> (Vec<u8>, Verdict, usize) {
        let host = &self.host;
        let authenticator = MessageAuthenticator(self.dns.resolver().clone());
        let facts = auth::Envelope {
            ip: envelope.ip,
            helo: &envelope.helo,
            mail_from: &envelope.from,
            dmarc_reports: self.dmarc_interval.is_some(),
        };
        let (results, verdict) = auth::authenticate(&authenticator, facts, &raw, host).await;
        let received = format!(
            "Received: from {} ({}) by {host} with {} id {id}; {}\r\n",
            sanitize(&envelope.helo),
            envelope.ip,
            if envelope.tls { "ESMTPS" } else { "ESMTP" },
            rfc2822_date(now)
        );
        // Checked as sent (a signature may cover them), stored without fields in our name.
        let raw = trace::without_our_results(&raw, host);
        let mut full = Vec::with_capacity(received.len() + results.len() + raw.len());
        full.extend_from_slice(received.as_bytes());
        full.extend_from_slice(results.as_bytes());
        full.extend_from_slice(&raw);
        (full, verdict, received.len() + results.len())
    }
}

/// The HELO name as a Received field may carry it: printable ASCII, bounded.
fn sanitize(helo: &str) -> String {
    helo.chars().filter(|c| c.is_ascii_graphic()).take(255).collect()
}

pub(super) fn rfc2822_date(ms: u64) -> String {
    mail_builder::headers::date::Date::new((ms / 1000) as i64).to_rfc822()
}
