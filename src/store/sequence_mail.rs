//! The latest sequence message each mailbox sent each contact: a message from that contact to
//! that mailbox counts as a reply to it even when the client left out the threading headers.

use super::kv::ReadableTable;

use super::Wtx;
use super::error::Result;
use super::tables::*;

impl Wtx<'_> {
    /// Notes that sequence message `id` went from `mailbox` to `contact`.
    pub fn note_sequence_mail(&mut self, mailbox: &str, contact: &str, id: &str) -> Result<()> {
        let (mailbox, contact) = (mailbox.to_ascii_lowercase(), contact.to_ascii_lowercase());
        let mut table = self.tx.open_table(SEQUENCE_MAIL)?;
        table.insert((mailbox.as_str(), contact.as_str()), id)?;
        Ok(())
    }

    /// The latest sequence message `mailbox` sent to `contact`.
    pub fn sequence_mail_to(&self, mailbox: &str, contact: &str) -> Result<Option<String>> {
        let (mailbox, contact) = (mailbox.to_ascii_lowercase(), contact.to_ascii_lowercase());
        let table = self.tx.open_table(SEQUENCE_MAIL)?;
        let found = table.get((mailbox.as_str(), contact.as_str()))?;
        Ok(found.map(|v| v.value().to_owned()))
    }
}
