//! Received mail: a stored email per recipient mailbox, sharing one raw message (see `raw`).
//!
//! The decoded text, HTML and headers of a message are about as big as the message, so a copy
//! is stored without them and reads decode them again from the raw message
//! (`emails::fill_bodies`, with the mail-parser calls of inbound delivery, on the bytes it
//! parsed), so a reader sees the same email. Keeping them would more than double what a message
//! takes on disk, for every message, while parsing a message of a few kilobytes on the rare read
//! of one costs microseconds. A message to one mailbox keeps its raw bytes in the copy's
//! document (`email_doc`) up to `INLINE_LIMIT`; one to several, or a larger one, is a blob.

use super::Wtx;
use super::email_doc::{InlineRaw, KeptRaw, deflate};
use super::emails::Email;
use super::error::Result;
use super::events::{EventType, received_data};

/// The largest raw message kept in its copy's document. Moving a copy rewrites its document, and
/// past a page or two sharing a page with it saves nothing.
const INLINE_LIMIT: usize = 64 * 1024;

/// The form a received message takes in its copy's document, worked out before the write
/// (`Prepared::of`): deflating then runs beside other sessions rather than on the writer thread,
/// which every write waits on.
#[derive(Clone)]
pub struct Prepared(Option<KeptRaw>);

impl Prepared {
    /// For `raw` going to `copies` mailboxes.
    pub fn of(raw: &[u8], copies: usize) -> Prepared {
        Prepared(if copies == 1 && raw.len() <= INLINE_LIMIT { deflate(raw) } else { None })
    }
}

impl Wtx<'_> {
    /// Stores a copy of `template` per `(id, mailbox)` and, once for all of them, the raw
    /// message. Each copy is written from `template` without first being cloned, so a large
    /// message's bodies exist once in memory however many mailboxes it goes to. `prepared`, when
    /// given, is `Prepared::of(raw, copies.len())`.
    pub fn store_copies(
        &mut self,
        template: &Email,
        copies: &[(String, String)],
        raw: &[u8],
        prepared: Option<Prepared>,
    ) -> Result<()> {
        self.store_copies_to(template, copies, &[], raw, prepared)
    }

    /// `store_copies`, each copy with its own `deliveredTo` (`delivered`, in the order of
    /// `copies`; a copy without one keeps the template's): copies reached through different
    /// addresses still share one raw message.
    pub fn store_copies_to(
        &mut self,
        template: &Email,
        copies: &[(String, String)],
        delivered: &[String],
        raw: &[u8],
        prepared: Option<Prepared>,
    ) -> Result<()> {
        if copies.is_empty() {
            return Ok(());
        }
        let mut doc = without_bodies(template);
        let address_of = |i: usize| delivered.get(i).cloned().or(template.delivered_to.clone());
        if let [(id, mailbox)] = copies
            && raw.len() <= INLINE_LIMIT
        {
            doc.summary.id.clone_from(id);
            doc.summary.mailbox.clone_from(mailbox);
            doc.delivered_to = address_of(0);
            let Prepared(deflated) = prepared.unwrap_or_else(|| Prepared::of(raw, 1));
            let inline = deflated.as_ref().map_or(InlineRaw::Plain(raw), KeptRaw::as_inline);
            return self.insert_email_with(&doc, Some(inline));
        }
        let blob = crate::ids::new_id("raw");
        for (i, (id, mailbox)) in copies.iter().enumerate() {
            doc.summary.id.clone_from(id);
            doc.summary.mailbox.clone_from(mailbox);
            doc.delivered_to = address_of(i);
            self.insert_email(&doc)?;
            self.share_raw(id, &blob, true)?;
        }
        self.put_raw(&blob, raw)
    }
}

impl Wtx<'_> {
    /// Reports each copy stored by `store_copies` as `email.received` to its mailbox's domain;
    /// `auth` holds the SPF, DKIM and DMARC results.
    pub fn emit_received(
        &mut self,
        template: &Email,
        copies: &[(String, String)],
        auth: [&str; 3],
    ) -> Result<()> {
        for (id, mailbox) in copies {
            let domain = mailbox.rsplit_once('@').map_or("", |(_, d)| d);
            if template.summary.folder.is_hidden() {
                continue;
            }
            self.emit(domain, EventType::EmailReceived, || {
                received_data(template, id, mailbox, auth)
            })?;
        }
        Ok(())
    }
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
        variant: e.variant,
        step: e.step,
        tracking: e.tracking,
        bcc: e.bcc.clone(),
        tags: e.tags.clone(),
        metadata: e.metadata.clone(),
        spam: e.spam.clone(),
        delivered_to: e.delivered_to.clone(),
        envelope_from: e.envelope_from.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::kv::ReadableTable;

    use super::super::emails::fill_bodies;
    use super::super::tables::*;
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
            .read_blocking(|r| -> Result<_> {
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

    /// Copies made by `copies` differ only in id and mailbox, as `store_copies` expects.
    fn store_all(w: &mut Wtx<'_>, copies: &[Email], raw: &[u8]) -> Result<()> {
        let pairs: Vec<(String, String)> =
            copies.iter().map(|c| (c.summary.id.clone(), c.summary.mailbox.clone())).collect();
        w.store_copies(&copies[0], &pairs, raw, None)
    }

    fn remove(store: &Store, id: &str) {
        let id = id.to_owned();
        store
            .write_blocking(move |w| -> Result<_> {
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
        store.write_blocking(move |w| store_all(w, &copies, &shared)).expect("store"); // ok: test
        // Counted in the tables: at this size the file grows in steps of whole regions.
        let (blobs, blob_bytes, refs, doc_bytes, legacy) = footprint(&store);
        assert_eq!((blobs, blob_bytes, refs, legacy), (1, raw.len(), 5, 0));
        assert!(doc_bytes < 5 * 2048, "the documents repeat the bodies: {doc_bytes} bytes");
        let check = |ids: Vec<String>| {
            let (raw, expected) = (raw.clone(), expected.clone());
            store
                .read_blocking(move |r| -> Result<_> {
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

    /// Checks that every copy reads back as the email it was stored from, with its raw message.
    fn reads_back(store: &Store, ids: &[String], raw: &[u8], expected: &Email) {
        let (ids, raw, expected) = (ids.to_vec(), raw.to_vec(), expected.clone());
        store
            .read_blocking(move |r| -> Result<_> {
                for id in &ids {
                    assert_eq!(r.raw_message(id)?.as_deref(), Some(raw.as_slice()));
                    let email = r.email("x.test", id)?.expect("stored"); // ok: test
                    let mut want = expected.clone();
                    want.summary.id.clone_from(id);
                    want.summary.mailbox.clone_from(&email.summary.mailbox);
                    let json = |e: &Email| serde_json::to_string(e).unwrap_or_default();
                    assert_eq!(json(&email), json(&want));
                }
                Ok(())
            })
            .expect("read"); // ok: test
    }

    #[test]
    fn a_small_message_to_one_mailbox_is_one_entry_and_old_copies_read_and_delete_as_before() {
        let (store, dir) = temp_store("raw-small");
        let raw = message(2000);
        let one = copies(&raw, 1, Folder::Inbox);
        let (id, expected) = (one[0].summary.id.clone(), one[0].clone());
        let shared = raw.clone();
        store.write_blocking(move |w| store_all(w, &one, &shared)).expect("store"); // ok: test
        let (_, _, _, doc_bytes, _) = footprint(&store);
        assert_eq!(footprint(&store), (0, 0, 0, doc_bytes, 0), "no blob, no references");
        assert!(doc_bytes < raw.len() + 1024, "the bodies are not kept: {doc_bytes} bytes");
        reads_back(&store, std::slice::from_ref(&id), &raw, &expected);
        let moved = id.clone();
        store
            .write_blocking(move |w| w.imap_move("m0@x.test", &moved, Folder::Sent, 1))
            .expect("move"); // ok: test
        let mut sent = expected.clone();
        sent.summary.folder = Folder::Sent;
        reads_back(&store, std::slice::from_ref(&id), &raw, &sent);

        // Two copies share a blob, their documents without bodies.
        let two = copies(&raw, 2, Folder::Inbox);
        let ids: Vec<String> = two.iter().map(|c| c.summary.id.clone()).collect();
        let shared = raw.clone();
        store.write_blocking(move |w| store_all(w, &two, &shared)).expect("store"); // ok: test
        let (blobs, blob_bytes, refs, _, _) = footprint(&store);
        assert_eq!((blobs, blob_bytes, refs), (1, raw.len(), 2));
        reads_back(&store, &ids, &raw, &expected);

        // A copy stored by a release before blobs: its raw message under its own id in `RAW`,
        // and its document plain JSON with its bodies.
        let mut old = copies(&raw, 1, Folder::Inbox).remove(0);
        old.summary.id = "em_old".into();
        let legacy = raw.clone();
        store
            .write_blocking(move |w| -> Result<_> {
                w.insert_email(&old)?;
                let doc = serde_json::to_vec(&old)?;
                w.tx.open_table(EMAILS)?.insert("em_old", doc.as_slice())?;
                w.tx.open_table(RAW)?.insert("em_old", legacy.as_slice())?;
                Ok(())
            })
            .expect("seed"); // ok: test
        reads_back(&store, &["em_old".to_owned()], &raw, &expected);
        assert_eq!(footprint(&store), (1, raw.len(), 2, footprint(&store).3, 1));
        remove(&store, "em_old");
        assert_eq!(footprint(&store).4, 0, "the old raw message went with its email");
        assert_eq!(footprint(&store).0, 1, "and the blob of the others stayed");
        for id in ids.iter().chain([&id]) {
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
        store.write_blocking(move |w| store_all(w, &warm, &raw)).expect("store"); // ok: test
        assert_eq!(footprint(&store).0, 1);
        let pruned = store
            .write_blocking(|w| -> Result<_> {
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
