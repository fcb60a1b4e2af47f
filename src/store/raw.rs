//! Raw messages as received, kept once for all the copies they were delivered as.
//!
//! A message delivered to N hosted mailboxes becomes N emails, because each mailbox reads, moves
//! and deletes its copy on its own, but its raw message is one blob in `RAW_BLOBS`. `RAW_REFS`
//! lists the copies sharing a blob and the blob goes with the last of them: a set rather than a
//! counter, so releasing a copy twice cannot take a blob from under another. Which blob a copy
//! uses is recorded beside it in `RAW_OF`, not in `Email`: `Email` is also what the API answers,
//! so the reference stays out of the API by construction, and none of the code that builds an
//! `Email` has to know about it. A message received as one copy (the usual case, unless it is
//! large) needs none of the three: its raw bytes follow its document (`email_doc`) and go with
//! it. Copies stored before blobs existed have no `RAW_OF` entry and their raw message under their
//! own id in `RAW`; all are read and deleted alike, so old files need no migration.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::email_doc::inline_raw;
use super::error::{Error, Result};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};

/// The size of a `RAW_BLOBS` piece: with its key and the leaf's header it still fits a 1 MiB
/// allocation.
const CHUNK: usize = (1 << 20) - 4096;

/// Where a received copy's raw message is, in `RAW_OF`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRef {
    blob: String,
    /// The copy's document has no text, HTML or headers: they are decoded from the blob.
    #[serde(default)]
    bodies_in_blob: bool,
    /// An outbound message a mail client submitted: the blob is what is sent (signed), rather
    /// than MIME built from the document.
    #[serde(default)]
    submitted: bool,
}

impl Wtx<'_> {
    /// Stores `raw` as the blob `blob`, for the copies `share_raw` links to it.
    pub(super) fn put_raw(&mut self, blob: &str, raw: &[u8]) -> Result<()> {
        let mut blobs = self.tx.open_table(RAW_BLOBS)?;
        for (n, piece) in (0u32..).zip(raw.chunks(CHUNK)) {
            blobs.insert((blob, n), piece)?;
        }
        Ok(())
    }

    /// Records that email `id` is a copy of the raw message `blob`.
    pub(super) fn share_raw(&mut self, id: &str, blob: &str, bodies_in_blob: bool) -> Result<()> {
        let link = RawRef { blob: blob.to_owned(), bodies_in_blob, submitted: false };
        self.tx.open_table(RAW_OF)?.insert(id, encode(&link)?.as_slice())?;
        self.tx.open_table(RAW_REFS)?.insert((blob, id), ())?;
        Ok(())
    }

    /// Keeps the message a mail client submitted as email `id`, to be sent as it is.
    pub(super) fn keep_submitted(&mut self, id: &str, raw: &[u8]) -> Result<()> {
        self.put_raw(id, raw)?;
        let link = RawRef { blob: id.to_owned(), bodies_in_blob: false, submitted: true };
        self.tx.open_table(RAW_OF)?.insert(id, encode(&link)?.as_slice())?;
        self.tx.open_table(RAW_REFS)?.insert((id, id), ())?;
        Ok(())
    }

    /// Lets go of the raw message of email `id` (when the email is deleted); the blob goes when
    /// no other copy uses it.
    pub(super) fn release_raw(&mut self, id: &str) -> Result<()> {
        let link = self.tx.open_table(RAW_OF)?.remove(id)?.map(|v| decode::<RawRef>(v.value()));
        let Some(link) = link.transpose()? else {
            self.tx.open_table(RAW)?.remove(id)?;
            return Ok(());
        };
        let blob = link.blob.as_str();
        let mut refs = self.tx.open_table(RAW_REFS)?;
        refs.remove((blob, id))?;
        let mut rest = refs.range((blob, "")..)?;
        let shared = rest.next().transpose()?.is_some_and(|(key, _)| key.value().0 == blob);
        if !shared {
            self.tx.open_table(RAW_BLOBS)?.retain_in((blob, 0)..=(blob, u32::MAX), |_, _| false)?;
        }
        Ok(())
    }
}

impl Wtx<'_> {
    /// Whether email `id` has its message bytes stored, in any of the ways above.
    pub(super) fn has_raw(&self, id: &str) -> Result<bool> {
        let emails = self.tx.open_table(EMAILS)?;
        let doc = emails.get(id)?;
        Ok(doc.map(|v| inline_raw(v.value()).map(|r| r.is_some())).transpose()? == Some(true)
            || self.tx.open_table(RAW_OF)?.get(id)?.is_some()
            || self.tx.open_table(RAW)?.get(id)?.is_some())
    }
}

impl Rtx {
    pub fn raw_message(&self, id: &str) -> Result<Option<Vec<u8>>> {
        if let Some(link) = self.raw_ref(id)? {
            return self.blob(&link.blob);
        }
        let emails = self.tx.open_table(EMAILS)?;
        if let Some(doc) = emails.get(id)?
            && let Some(raw) = inline_raw(doc.value())?
        {
            return Ok(Some(raw.to_vec()?));
        }
        let table = self.tx.open_table(RAW)?;
        let found = table.get(id)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    /// The message a mail client submitted as email `id`, when it was submitted.
    pub fn submitted_raw(&self, id: &str) -> Result<Option<Vec<u8>>> {
        match self.raw_ref(id)?.filter(|l| l.submitted) {
            Some(link) => self.blob(&link.blob),
            None => Ok(None),
        }
    }

    /// The raw message of email `id` when the copy was stored without its bodies, which are then
    /// decoded from it.
    pub(super) fn raw_bodies(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let Some(link) = self.raw_ref(id)?.filter(|l| l.bodies_in_blob) else {
            return Ok(None);
        };
        let raw = self
            .blob(&link.blob)?
            .ok_or_else(|| Error::internal(format!("the raw message of email {id} is missing")))?;
        Ok(Some(raw))
    }

    fn blob(&self, blob: &str) -> Result<Option<Vec<u8>>> {
        let table = self.tx.open_table(RAW_BLOBS)?;
        let mut raw = Vec::new();
        let mut found = false;
        for entry in table.range((blob, 0)..=(blob, u32::MAX))? {
            raw.extend_from_slice(entry?.1.value());
            found = true;
        }
        Ok(found.then_some(raw))
    }

    fn raw_ref(&self, id: &str) -> Result<Option<RawRef>> {
        let table = self.tx.open_table(RAW_OF)?;
        let found = table.get(id)?;
        found.map(|v| decode(v.value())).transpose()
    }
}
