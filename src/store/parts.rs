//! Attachments of mail we send. A message is rendered from its stored parts at each delivery
//! attempt, so the attachment bytes stay stored until the message is deleted. One send request
//! stores them once, as a blob, for all the messages it makes (each copy of a campaign refers to
//! the same blob); `SENT_PARTS_REFS` lists the messages using a blob and the blob goes with the
//! last of them, as raw received messages do (`raw`).

use super::kv::ReadableTable;

use super::error::Result;
use super::tables::*;
use super::{Rtx, Wtx};

/// The size of a `SENT_PARTS` piece: with its key it still fits a 1 MiB allocation.
const CHUNK: usize = (1 << 20) - 4096;

impl Wtx<'_> {
    /// Stores the attachments of one send request as `blob`; `share_sent_parts` links messages.
    pub fn put_sent_parts(&mut self, blob: &str, parts: &[Vec<u8>]) -> Result<()> {
        let mut table = self.tx.open_table(SENT_PARTS)?;
        for (index, part) in (0u32..).zip(parts) {
            if part.is_empty() {
                table.insert((blob, index, 0), [].as_slice())?;
            }
            for (n, piece) in (0u32..).zip(part.chunks(CHUNK)) {
                table.insert((blob, index, n), piece)?;
            }
        }
        Ok(())
    }

    /// Records that email `id` carries the attachments stored as `blob`.
    pub fn share_sent_parts(&mut self, id: &str, blob: &str) -> Result<()> {
        self.tx.open_table(SENT_PARTS_OF)?.insert(id, blob)?;
        self.tx.open_table(SENT_PARTS_REFS)?.insert((blob, id), ())?;
        Ok(())
    }

    /// Lets go of the attachments of email `id` (when the email is deleted); the blob goes when
    /// no other message uses it.
    pub(super) fn release_sent_parts(&mut self, id: &str) -> Result<()> {
        let blob = self.tx.open_table(SENT_PARTS_OF)?.remove(id)?.map(|v| v.value().to_owned());
        let Some(blob) = blob else {
            return Ok(());
        };
        let blob = blob.as_str();
        let mut refs = self.tx.open_table(SENT_PARTS_REFS)?;
        refs.remove((blob, id))?;
        let mut rest = refs.range((blob, "")..)?;
        let shared = rest.next().transpose()?.is_some_and(|(key, _)| key.value().0 == blob);
        if !shared {
            let all = (blob, 0, 0)..=(blob, u32::MAX, u32::MAX);
            self.tx.open_table(SENT_PARTS)?.retain_in(all, |_, _| false)?;
        }
        Ok(())
    }
}

impl Rtx {
    /// The attachment bytes of a message we send, in attachment order (empty when it has none).
    pub fn sent_parts(&self, id: &str) -> Result<Vec<Vec<u8>>> {
        let Some(blob) = self.tx.open_table(SENT_PARTS_OF)?.get(id)?.map(|v| v.value().to_owned())
        else {
            return Ok(Vec::new());
        };
        let table = self.tx.open_table(SENT_PARTS)?;
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let all = (blob.as_str(), 0, 0)..=(blob.as_str(), u32::MAX, u32::MAX);
        for entry in table.range(all)? {
            let (key, piece) = entry?;
            let index = key.value().1 as usize;
            if parts.len() <= index {
                parts.resize_with(index + 1, Vec::new);
            }
            parts[index].extend_from_slice(piece.value());
        }
        Ok(parts)
    }

    /// Attachment `index` of a message we send, if it has one there.
    pub fn sent_part(&self, id: &str, index: usize) -> Result<Option<Vec<u8>>> {
        Ok(self.sent_parts(id)?.into_iter().nth(index))
    }
}
