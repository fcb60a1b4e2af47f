//! The mail system behind SMTP submission (the `Submission` policy of the one SMTP session):
//! logins against the mailboxes' app passwords, the sender bound to the mailbox logged in as,
//! recipients screened as the send API screens them, and accepted mail stored as the mailbox's
//! sent mail and queued durably before the 250. It is then delivered like any transactional
//! email, sent as the client wrote it and DKIM-signed by the queue.

use std::net::IpAddr;
use std::sync::Arc;

use crate::credentials::{Login, Logins};
use crate::dns::Dns;
use crate::ids::now_ms;
use crate::smtp::Intake;
use crate::smtp::session::{Envelope, TEMPORARY_FAILURE};
use crate::store::Store;
use crate::wake::Wake;

pub struct Submitter {
    pub store: Arc<Store>,
    pub dns: Arc<Dns>,
    /// Wakes the delivery queue.
    pub queue: Wake,
    pub logins: Arc<Logins>,
}

const NOT_LOGGED_IN: &str = "530 5.7.0 authentication required\r\n";

impl Intake for Submitter {
    async fn check_recipient(&self, login: Option<&str>, address: &str) -> Result<(), String> {
        let Some(login) = login else { return Err(NOT_LOGGED_IN.into()) };
        let domain = login.rsplit_once('@').map_or("", |(_, d)| d);
        let screened =
            crate::screening::screen(&self.store, &self.dns, domain, &[address.to_owned()])
                .await
                .map_err(|e| {
                tracing::error!(error = %e, "screening a submitted recipient");
                TEMPORARY_FAILURE.to_owned()
            })?;
        match screened.blocked.first() {
            None => Ok(()),
            Some(b) if b.reason == "invalid_address" => {
                Err(format!("553 5.1.3 {}: {}\r\n", b.reason, one_line(&b.message)))
            }
            Some(b) => Err(format!("550 5.7.1 {}: {}\r\n", b.reason, one_line(&b.message))),
        }
    }

    async fn log_in(&self, ip: IpAddr, user: &str, password: &str) -> Login {
        self.logins.check(ip, user, password).await
    }

    async fn take_message(&self, envelope: Envelope, message: Vec<u8>) -> String {
        match self.accept(envelope, message).await {
            Ok(id) => format!("250 2.0.0 queued as {id}\r\n"),
            Err(reply) => reply,
        }
    }
}

impl Submitter {
    /// Stores and queues a submitted message; the id, or the reply that refuses it.
    async fn accept(&self, envelope: Envelope, message: Vec<u8>) -> Result<String, String> {
        let login = envelope.login.ok_or_else(|| NOT_LOGGED_IN.to_owned())?;
        if let Err(e) = crate::mail::submitted::check_sender(&message, &login) {
            return Err(format!("553 5.7.1 {e} ({login})\r\n"));
        }
        let now = now_ms();
        let domain = login.rsplit_once('@').map_or("", |(_, d)| d).to_owned();
        let prepared = crate::mail::submitted::prepare(&message, &domain, now)
            .ok_or_else(|| "554 5.6.0 the message cannot be parsed\r\n".to_owned())?;
        let (email, raw) = prepared.into_email(login, envelope.recipients, now);
        let id = email.summary.id.clone();
        self.store.write(move |w| w.enqueue_submitted(&email, &raw, now)).await.map_err(
            |e: crate::store::Error| {
                tracing::error!(error = %e, "storing a submitted message");
                TEMPORARY_FAILURE.to_owned()
            },
        )?;
        self.queue.wake();
        tracing::info!(email = %id, "submitted message queued");
        Ok(id)
    }
}

/// Text fit for one reply line.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(300).collect()
}
