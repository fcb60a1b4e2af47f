//! Received mail: a stored email per recipient mailbox, and the raw message kept once for all of
//! them.
//!
//! A message delivered to N hosted mailboxes becomes N emails, because each mailbox reads, moves
//! and deletes its copy on its own, but its raw message is one blob in `RAW_BLOBS`. `RAW_REFS`
//! lists the copies sharing a blob and the blob goes with the last of them: a set rather than a
//! counter, so releasing a copy twice cannot take a blob from under another. Which blob a copy
//! uses is recorded beside it in `RAW_OF`, not in `Email`: `Email` is also what the API answers,
//! so the reference stays out of the API by construction, and none of the code that builds an
//! `Email` has to know about it. Copies stored before blobs existed have no `RAW_OF` entry and
//! their raw message under their own id in `RAW`; both are read and deleted alike, so old files
//! need no migration.
//!
//! The decoded text, HTML and headers of a large message are about as big as the message, so
//! repeating them in every copy's document would undo the sharing. Past `INLINE_LIMIT` bytes a
//! copy is stored without them and reads decode them again from the blob (`fill_bodies`, with
//! the mail-parser calls of inbound delivery, on the bytes it parsed), so a reader sees the same
//! email. Smaller messages keep them inline: decoding on every read would cost more than the few
//! kilobytes it saves.

use std::borrow::Cow;

use mail_parser::MessageParser;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::{Email, Header};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};
use crate::error::{Error, Result};

/// Decoded bodies and headers larger than this (together) are not kept in a copy's document.
const INLINE_LIMIT: usize = 64 * 1024;

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
}

impl Wtx<'_> {
    /// Stores each copy (one per recipient mailbox) and, once for all of them, the raw message.
    pub fn store_received(&mut self, copies: &[Email], raw: &[u8]) -> Result<()> {
        if copies.is_empty() {
            return Ok(());
        }
        let blob = crate::ids::new_id("raw");
        for email in copies {
            let bodies_in_blob = decoded_len(email) > INLINE_LIMIT;
            if bodies_in_blob {
                self.insert_email(&without_bodies(email))?;
            } else {
                self.insert_email(email)?;
            }
            let id = email.summary.id.as_str();
            let link = RawRef { blob: blob.clone(), bodies_in_blob };
            self.tx.open_table(RAW_OF)?.insert(id, encode(&link)?.as_slice())?;
            self.tx.open_table(RAW_REFS)?.insert((blob.as_str(), id), ())?;
        }
        let mut blobs = self.tx.open_table(RAW_BLOBS)?;
        for (n, piece) in (0u32..).zip(raw.chunks(CHUNK)) {
            blobs.insert((blob.as_str(), n), piece)?;
        }
        Ok(())
    }

    /// `store_received` for copies that differ only in id and mailbox: each is written from
    /// `template` without first being cloned, so a large message's bodies exist once in memory
    /// however many mailboxes it goes to.
    pub fn store_copies(
        &mut self,
        template: &Email,
        copies: &[(String, String)],
        raw: &[u8],
    ) -> Result<()> {
        if copies.is_empty() {
            return Ok(());
        }
        let blob = crate::ids::new_id("raw");
        let bodies_in_blob = decoded_len(template) > INLINE_LIMIT;
        let mut doc = if bodies_in_blob { without_bodies(template) } else { template.clone() };
        for (id, mailbox) in copies {
            doc.summary.id.clone_from(id);
            doc.summary.mailbox.clone_from(mailbox);
            self.insert_email(&doc)?;
            let link = RawRef { blob: blob.clone(), bodies_in_blob };
            self.tx.open_table(RAW_OF)?.insert(id.as_str(), encode(&link)?.as_slice())?;
            self.tx.open_table(RAW_REFS)?.insert((blob.as_str(), id.as_str()), ())?;
        }
        let mut blobs = self.tx.open_table(RAW_BLOBS)?;
        for (n, piece) in (0u32..).zip(raw.chunks(CHUNK)) {
            blobs.insert((blob.as_str(), n), piece)?;
        }
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

impl Rtx {
    pub fn raw_message(&self, id: &str) -> Result<Option<Vec<u8>>> {
        match self.raw_ref(id)? {
            Some(link) => self.blob(&link.blob),
            None => {
                let table = self.tx.open_table(RAW)?;
                let found = table.get(id)?;
                Ok(found.map(|v| v.value().to_vec()))
            }
        }
    }

    /// Whether `domain` is hosted here.
    pub fn hosts(&self, domain: &str) -> Result<bool> {
        Ok(self.tx.open_table(DOMAINS)?.get(domain)?.is_some())
    }

    /// Puts back the bodies and headers a large received copy was stored without.
    pub(super) fn complete(&self, email: &mut Email) -> Result<()> {
        let Some(link) = self.raw_ref(&email.summary.id)?.filter(|l| l.bodies_in_blob) else {
            return Ok(());
        };
        let raw = self.blob(&link.blob)?.ok_or_else(|| {
            Error::internal(format!("the raw message of email {} is missing", email.summary.id))
        })?;
        fill_bodies(email, &raw);
        Ok(())
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

/// The text, HTML and headers of a received message, decoded as inbound delivery decodes them
/// (the inbound parser, `inspect`), so a copy stored without them reads back the same.
fn fill_bodies(email: &mut Email, raw: &[u8]) {
    let Some(message) = MessageParser::default().parse(raw) else {
        return;
    };
    email.text = message.body_text(0).map(Cow::into_owned);
    email.html = message.body_html(0).map(Cow::into_owned);
    email.headers = message
        .headers_raw()
        .map(|(name, value)| Header { name: name.to_owned(), value: value.trim().to_owned() })
        .collect();
}

fn decoded_len(email: &Email) -> usize {
    let headers: usize = email.headers.iter().map(|h| h.name.len() + h.value.len()).sum();
    headers
        + email.text.as_ref().map_or(0, String::len)
        + email.html.as_ref().map_or(0, String::len)
}

/// The email without what `fill_bodies` restores, made without copying that. Every field is
/// named so that a new one is a compile error here rather than silently dropped.
fn without_bodies(e: &Email) -> Email {
    Email {
        summary: e.summary.clone(),
        cc: e.cc.clone(),
        reply_to: e.reply_to.clone(),
        message_id: e.message_id.clone(),
        in_reply_to: e.in_reply_to.clone(),
        headers: Vec::new(),
        text: None,
        html: None,
        attachments: e.attachments.clone(),
        deliveries: e.deliveries.clone(),
        send_type: e.send_type,
        batch_id: e.batch_id.clone(),
        scheduled_at: e.scheduled_at,
        next_attempt_at: e.next_attempt_at,
        in_reply_to_id: e.in_reply_to_id.clone(),
        sequence_id: e.sequence_id.clone(),
        enrollment_id: e.enrollment_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use redb::ReadableTableMetadata;

    use super::super::{Folder, Store};
    use super::*;

    fn message(body_len: usize) -> Vec<u8> {
        let mut m = b"Received: from a.test by mx.test; Thu, 1 Jan 2026 00:00:00 +0000\r\n\
            Authentication-Results: mx.test; dkim=none\r\nFrom: Ada <ada@a.test>\r\n\
            To: m0@x.test\r\nSubject: Report\r\nContent-Type: text/plain\r\n\r\n"
            .to_vec();
        while m.len() < body_len {
            m.extend_from_slice(format!("line {} of the report\r\n", m.len()).as_bytes());
        }
        m
    }

    /// One copy per mailbox `m0@x.test`, `m1@x.test`..., decoded as inbound delivery does.
    fn copies(raw: &[u8], n: usize, folder: Folder) -> Vec<Email> {
        let mut template = Email::default();
        fill_bodies(&mut template, raw);
        template.summary.folder = folder;
        template.summary.subject = "Report".into();
        (0..n)
            .map(|i| {
                let mut copy = template.clone();
                copy.summary.id = crate::ids::new_id("em");
                copy.summary.mailbox = format!("m{i}@x.test");
                copy
            })
            .collect()
    }

    /// (blobs, bytes in blobs, references, bytes in email documents, legacy raw messages)
    fn footprint(store: &Store) -> (u64, usize, u64, usize, u64) {
        store
            .read_blocking(|r| {
                let mut blob_bytes = 0;
                let mut blobs = std::collections::HashSet::new();
                for entry in r.tx.open_table(RAW_BLOBS)?.iter()? {
                    let (key, value) = entry?;
                    blobs.insert(key.value().0.to_owned());
                    blob_bytes += value.value().len();
                }
                let mut doc_bytes = 0;
                for entry in r.tx.open_table(EMAILS)?.iter()? {
                    doc_bytes += entry?.1.value().len();
                }
                let refs = r.tx.open_table(RAW_REFS)?.len()?;
                assert_eq!(refs, r.tx.open_table(RAW_OF)?.len()?);
                let blobs = blobs.len() as u64;
                Ok((blobs, blob_bytes, refs, doc_bytes, r.tx.open_table(RAW)?.len()?))
            })
            .expect("read") // ok: test
    }

    fn temp_store(tag: &str) -> (Store, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("edgemail-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (Store::open(&dir).expect("open"), dir) // ok: test
    }

    fn remove(store: &Store, id: &str) {
        let id = id.to_owned();
        store
            .write_blocking(move |w| {
                assert_eq!(w.delete_email("x.test", &id)?, super::super::Deleted::MovedToTrash);
                assert_eq!(w.delete_email("x.test", &id)?, super::super::Deleted::Removed);
                Ok(())
            })
            .expect("delete"); // ok: test
    }

    #[test]
    fn a_message_to_five_mailboxes_is_stored_once_and_goes_with_its_last_copy() {
        let (store, dir) = temp_store("raw-once");
        let raw = message(3 << 20);
        let copies = copies(&raw, 5, Folder::Inbox);
        let ids: Vec<String> = copies.iter().map(|c| c.summary.id.clone()).collect();
        let expected = copies[0].clone();
        let shared = raw.clone();
        store.write_blocking(move |w| w.store_received(&copies, &shared)).expect("store"); // ok: test
        // Counted in the tables: at this size the file grows in steps of whole regions.
        let (blobs, blob_bytes, refs, doc_bytes, legacy) = footprint(&store);
        assert_eq!((blobs, blob_bytes, refs, legacy), (1, raw.len(), 5, 0));
        assert!(doc_bytes < 5 * 2048, "the documents repeat the bodies: {doc_bytes} bytes");
        let check = |ids: Vec<String>| {
            let (raw, expected) = (raw.clone(), expected.clone());
            store
                .read_blocking(move |r| {
                    for id in &ids {
                        assert_eq!(r.raw_message(id)?.as_deref(), Some(raw.as_slice()));
                        let email = r.email("x.test", id)?.expect("stored"); // ok: test
                        assert_eq!(email.text, expected.text);
                        assert_eq!(email.html, expected.html);
                        let headers = |e: &Email| serde_json::to_string(&e.headers).ok();
                        assert_eq!(headers(&email), headers(&expected));
                        assert_eq!(email.headers.len(), 6);
                        let by_id = r.email_by_id(id)?.expect("stored"); // ok: test
                        assert_eq!(by_id.text, expected.text);
                    }
                    Ok(())
                })
                .expect("read"); // ok: test
        };
        check(ids.clone());

        for id in &ids[..4] {
            remove(&store, id);
        }
        assert_eq!(footprint(&store).0, 1, "the fifth copy still uses the blob");
        assert_eq!(footprint(&store).2, 1);
        check(ids[4..].to_vec());

        let n = store.write_blocking(|w| w.delete_mailbox_contents("m4@x.test")).expect("x"); // ok: test
        assert_eq!(n, 1);
        assert_eq!(footprint(&store), (0, 0, 0, 0, 0));
        let last = ids[4].clone();
        assert_eq!(store.read_blocking(move |r| r.raw_message(&last)).expect("read"), None); // ok: test
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn small_messages_keep_their_bodies_inline_and_old_copies_read_and_delete_as_before() {
        let (store, dir) = temp_store("raw-small");
        let raw = message(2000);
        let small = copies(&raw, 2, Folder::Inbox);
        let ids: Vec<String> = small.iter().map(|c| c.summary.id.clone()).collect();
        let shared = raw.clone();
        store.write_blocking(move |w| w.store_received(&small, &shared)).expect("store"); // ok: test
        let (_, _, _, doc_bytes, _) = footprint(&store);
        assert!(doc_bytes > 2 * raw.len(), "small copies carry their bodies: {doc_bytes} bytes");

        // A copy stored by a release before blobs: its raw message under its own id.
        let mut old = copies(&raw, 1, Folder::Inbox).remove(0);
        old.summary.id = "em_old".into();
        let legacy = raw.clone();
        store
            .write_blocking(move |w| {
                w.insert_email(&old)?;
                w.tx.open_table(RAW)?.insert("em_old", legacy.as_slice())?;
                Ok(())
            })
            .expect("seed"); // ok: test
        let found = store.read_blocking(|r| r.raw_message("em_old")).expect("read"); // ok: test
        assert_eq!(found.as_deref(), Some(raw.as_slice()));
        assert_eq!(footprint(&store), (1, raw.len(), 2, footprint(&store).3, 1));
        remove(&store, "em_old");
        assert_eq!(footprint(&store).4, 0, "the old raw message went with its email");
        assert_eq!(footprint(&store).0, 1, "and the blob of the others stayed");
        for id in &ids {
            remove(&store, id);
        }
        assert_eq!(footprint(&store), (0, 0, 0, 0, 0));
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn pruned_warmup_copies_release_their_blob() {
        let (store, dir) = temp_store("raw-warmup");
        let raw = message(100 << 10);
        let warm = copies(&raw, 2, Folder::Warmup);
        store.write_blocking(move |w| w.store_received(&warm, &raw)).expect("store"); // ok: test
        assert_eq!(footprint(&store).0, 1);
        let pruned = store
            .write_blocking(|w| {
                Ok(w.prune_warmup_mail("m0@x.test", u64::MAX, 10)?
                    + w.prune_warmup_mail("m1@x.test", u64::MAX, 10)?)
            })
            .expect("prune"); // ok: test
        assert_eq!(pruned, 2);
        assert_eq!(footprint(&store), (0, 0, 0, 0, 0));
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
