//! Reports this server writes to a hosted mailbox about its own mail (the DSN of a message a
//! mail client submitted that could not be delivered; see `queue::notice`), filed in the
//! mailbox's inbox the way received mail is: parsed like any arrival, with a Received field
//! and stored through the same path, so the API lists it, IMAP IDLE announces it and
//! `email.received` reports it. It is ours, so nothing is authenticated, no claimant is asked
//! and what it reports is not acted on again (the attempt that wrote it already recorded the
//! failures).

use crate::ids::{new_id, now_ms};
use crate::queue::local::Commit;
use crate::store::{Prepared, Wtx};

use super::{Receiver, inspect, rfc2822_date};

/// Our own report: no signature was checked, and none needed checking.
const AUTH: [&str; 3] = ["none", "none", "none"];

impl Receiver {
    /// The commit that files `report` in the inbox of `mailbox` (lower-cased); `None` when the
    /// report cannot be parsed (never, for what `mail::dsn` builds).
    pub(super) fn file_report_for(&self, mailbox: &str, report: Vec<u8>) -> Option<Commit> {
        let id = new_id("em");
        let now = now_ms();
        let received = format!(
            "Received: by {} (delivery report) id {id}; {}\r\n",
            self.host,
            rfc2822_date(now)
        );
        let full = [received.as_bytes(), &report].concat();
        let seen = inspect(&full, now)?;
        let copies = vec![(id, mailbox.to_owned())];
        let prepared = Prepared::of(&full, 1);
        let template = seen.email;
        let mailbox = mailbox.to_owned();
        Some(std::sync::Arc::new(move |w: &mut Wtx<'_>| -> crate::error::Result<()> {
            // Deleted meanwhile: nobody is left to tell.
            if !w.mailbox_exists(&mailbox)? {
                return Ok(());
            }
            w.store_copies(&template, &copies, &full, Some(prepared.clone()))?;
            w.emit_received(&template, &copies, AUTH)?;
            Ok(())
        }))
    }
}
