//! What the SMTP server asks of the mail system behind it, and the answer the inbound path gives.

use std::future::Future;

use super::session::{Envelope, TEMPORARY_FAILURE};

/// The two questions a session cannot answer itself. Replies are complete SMTP reply lines,
/// CRLF included.
pub trait Intake: Send + Sync + 'static {
    /// `Ok` when `address` is ours to receive; otherwise the reply that refuses it (a 5xx is
    /// counted against the client, a 4xx is not).
    fn check_recipient(&self, address: &str) -> impl Future<Output = Result<(), String>> + Send;

    /// Takes a message whose recipients all passed `check_recipient`; the reply to its DATA.
    fn take_message(
        &self,
        envelope: Envelope,
        message: Vec<u8>,
    ) -> impl Future<Output = String> + Send;
}

impl Intake for crate::inbound::Receiver {
    async fn check_recipient(&self, address: &str) -> Result<(), String> {
        crate::inbound::Receiver::check_recipient(self, address).await
    }

    async fn take_message(&self, envelope: Envelope, message: Vec<u8>) -> String {
        let envelope = crate::inbound::Envelope {
            ip: envelope.ip,
            helo: envelope.helo,
            from: envelope.from,
            recipients: envelope.recipients,
            tls: envelope.tls,
        };
        let answer = match self.accept(envelope, message).await {
            Ok(id) => format!("250 2.0.0 queued as {id}\r\n"),
            Err(crate::error::Error::StorageUnavailable(e)) => {
                tracing::warn!(error = %e, "inbound message refused: the store takes no writes");
                crate::inbound::STORAGE_FULL.into()
            }
            Err(e) => {
                tracing::error!(error = %e, "inbound message not stored");
                TEMPORARY_FAILURE.into()
            }
        };
        let result = match answer.as_bytes().first() {
            Some(b'2') => "accepted",
            Some(b'4') => "deferred",
            _ => "rejected",
        };
        crate::metrics::inbound_message(result);
        answer
    }
}
