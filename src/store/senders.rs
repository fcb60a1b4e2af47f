//! Each mailbox's history with the addresses it corresponds with: how often it wrote to an
//! address, and how many messages from it its user kept (trained as ham) or threw out (trained
//! as spam). The spam filter reads it as evidence, as mox does: mail from people a mailbox
//! writes to, or keeps, is rarely spam, and a sender its user junked stays suspect.

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::{Ahead, ReadableTable};
use super::tables::SENDER_HISTORY;
use super::{Rtx, Wtx, decode, encode};

/// Recipients of one sent message whose history is kept: more than this is a list mailing,
/// and one row per reader of it would make the table a copy of the list.
const RECIPIENTS_KEPT: usize = 50;

/// A mailbox's history with one address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderHistory {
    /// Messages the mailbox sent to the address.
    #[serde(default)]
    pub wrote: u32,
    /// Messages from the address trained as ham / as spam (a retraining moves one over).
    #[serde(default)]
    pub ham: u32,
    #[serde(default)]
    pub spam: u32,
}

/// The key an address is kept under: the bare address, lower-cased.
fn key(address: &str) -> String {
    crate::address::bare(address).to_lowercase()
}

impl Wtx<'_> {
    /// The histories `note_written` reads, to be read ahead.
    pub(super) fn written_ahead(ahead: &mut Ahead, mailbox: &str, recipients: &[String]) {
        for to in recipients.iter().take(RECIPIENTS_KEPT) {
            ahead.key(SENDER_HISTORY, (mailbox, key(to).as_str()));
        }
    }

    /// Records that `mailbox` wrote to each of `recipients` (up to `RECIPIENTS_KEPT`).
    pub(super) fn note_written(&mut self, mailbox: &str, recipients: &[String]) -> Result<()> {
        let mut table = self.tx.open_table(SENDER_HISTORY)?;
        for to in recipients.iter().take(RECIPIENTS_KEPT) {
            let to = key(to);
            if to.is_empty() || to == mailbox {
                continue;
            }
            let found = table.get((mailbox, to.as_str()))?.map(|v| decode(v.value()));
            let mut history: SenderHistory = found.transpose()?.unwrap_or_default();
            history.wrote = history.wrote.saturating_add(1);
            table.insert((mailbox, to.as_str()), encode(&history)?.as_slice())?;
        }
        Ok(())
    }

    /// Records that a message from `sender` to `mailbox` was trained as spam (or ham), having
    /// taught `was` before (taken back first).
    pub(super) fn note_trained(
        &mut self,
        mailbox: &str,
        sender: &str,
        spam: bool,
        was: Option<bool>,
    ) -> Result<()> {
        let sender = key(sender);
        if sender.is_empty() || was == Some(spam) {
            return Ok(());
        }
        let mut table = self.tx.open_table(SENDER_HISTORY)?;
        let found = table.get((mailbox, sender.as_str()))?.map(|v| decode(v.value()));
        let mut history: SenderHistory = found.transpose()?.unwrap_or_default();
        match was {
            Some(true) => history.spam = history.spam.saturating_sub(1),
            Some(false) => history.ham = history.ham.saturating_sub(1),
            None => {}
        }
        if spam {
            history.spam = history.spam.saturating_add(1);
        } else {
            history.ham = history.ham.saturating_add(1);
        }
        table.insert((mailbox, sender.as_str()), encode(&history)?.as_slice())?;
        Ok(())
    }

    /// Forgets the history of a removed mailbox.
    pub(super) fn forget_senders(&mut self, mailbox: &str) -> Result<()> {
        super::scan::drain_domain(&mut self.tx.open_table(SENDER_HISTORY)?, mailbox)?;
        Ok(())
    }
}

impl Rtx {
    /// What `mailbox` has had to do with `address`, when anything.
    pub fn sender_history(&self, mailbox: &str, address: &str) -> Result<Option<SenderHistory>> {
        let address = key(address);
        let table = self.tx.open_table(SENDER_HISTORY)?;
        let found = table.get((mailbox, address.as_str()))?;
        found.map(|v| decode(v.value())).transpose()
    }
}
