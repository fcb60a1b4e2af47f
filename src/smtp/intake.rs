//! What the SMTP server asks of the mail system behind it, and the answer the inbound path gives.

use std::future::Future;
use std::net::IpAddr;

use super::session::{Envelope, TEMPORARY_FAILURE};
use crate::credentials::Login;

/// The questions a session cannot answer itself. Replies are complete SMTP reply lines, CRLF
/// included.
pub trait Intake: Send + Sync + 'static {
    /// `Ok` when `address` may be a recipient (for the MX: it is ours to receive; for
    /// submission, of the mailbox `login`: it passes screening); otherwise the reply that refuses
    /// it (a 5xx is counted against the client, a 4xx is not).
    fn check_recipient(
        &self,
        login: Option<&str>,
        address: &str,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// `check_recipient` for a message whose sender declared its size (MAIL FROM SIZE=, 0 when
    /// not): the MX also refuses a recipient whose mailbox it would overfill.
    fn check_recipient_sized(
        &self,
        login: Option<&str>,
        address: &str,
        size: u64,
    ) -> impl Future<Output = Result<(), String>> + Send {
        let _ = size;
        self.check_recipient(login, address)
    }

    /// A login (submission only; the MX never asks): the mailbox it logs in as, or why not.
    fn log_in(&self, ip: IpAddr, user: &str, password: &str) -> impl Future<Output = Login> + Send {
        let _ = (ip, user, password);
        async { Login::Refused }
    }

    /// Takes a message whose recipients all passed `check_recipient`; the reply to its DATA.
    fn take_message(
        &self,
        envelope: Envelope,
        message: Vec<u8>,
    ) -> impl Future<Output = String> + Send;
}

impl Intake for crate::inbound::Receiver {
    async fn check_recipient(&self, _login: Option<&str>, address: &str) -> Result<(), String> {
        crate::inbound::Receiver::check_recipient(self, address).await
    }

    async fn check_recipient_sized(
        &self,
        _login: Option<&str>,
        address: &str,
        size: u64,
    ) -> Result<(), String> {
        self.check_recipient_of(address, size).await
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
            Ok(crate::inbound::Accepted::Stored(id)) => format!("250 2.0.0 queued as {id}\r\n"),
            Ok(crate::inbound::Accepted::OverQuota) => crate::inbound::MAILBOX_FULL.into(),
            Ok(crate::inbound::Accepted::Refused(reply)) => reply.into(),
            Ok(crate::inbound::Accepted::Rejected(reply)) => reply,
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
