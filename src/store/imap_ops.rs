//! What an IMAP session does to the store, in terms of folders: opening a folder's UID state,
//! reading a folder in UID order, flags, and the changes IMAP makes (APPEND, COPY, MOVE,
//! EXPUNGE), each one transaction that keeps the emails, their index and the UIDs together.
//! Also the copy of sent mail a client APPENDs to Sent after sending it through us, which the
//! mailbox already holds (`imap_sent_copy`).

use super::emails::{Email, Folder};
use super::error::{Error, Result};
use super::imap::{ImapEntry, ImapFolder};
use super::status::SendType;
use super::tables::*;
use super::{Rtx, Wtx};

/// How long after sending a message a client's APPEND of it to Sent is taken for its own copy
/// of what we already keep (clients append right after the 250; later, it is a deliberate act).
pub const SENT_COPY_WINDOW_MS: u64 = 10 * 60 * 1000;

/// What the mailbox already holds of a message a client APPENDs to Sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentCopy {
    /// Nothing (or nothing recent): the APPEND stores the message.
    Absent,
    /// The message it sent, in Sent under this UID.
    InSent(u32),
    /// The message it sent, still being delivered (the outbox, which IMAP does not show); it
    /// moves to Sent once every recipient has a final status.
    OnItsWay,
}

impl Wtx<'_> {
    /// The folder's UID state, made from the folder's messages on first use.
    pub fn imap_open(&mut self, mailbox: &str, folder: Folder, now: u64) -> Result<ImapFolder> {
        if folder.is_user() {
            // A user folder's state is made with the folder: none means it was deleted since
            // its name was looked up, and nothing may be filed under its code.
            let state = super::get_json(self, IMAP_FOLDERS, (mailbox, folder.code()))?;
            return state.ok_or_else(|| Error::NotFound("folder not found".into()));
        }
        self.imap_init(mailbox, folder.code(), folder.initial_flags(), now)
    }

    /// A SELECT's view of the folder: its state, and the highest UID shown before (the
    /// messages above it are \Recent for this session). A read-write SELECT (`claim`) takes
    /// them; EXAMINE and STATUS only look.
    pub fn imap_select(
        &mut self,
        mailbox: &str,
        folder: Folder,
        now: u64,
        claim: bool,
    ) -> Result<(ImapFolder, u32)> {
        let state = self.imap_open(mailbox, folder, now)?;
        if !claim {
            let seen = state.seen_uid;
            return Ok((state, seen));
        }
        let last = state.uid_next.saturating_sub(1);
        let before = self.imap_claim_recent(mailbox, folder.code(), last)?;
        Ok((ImapFolder { seen_uid: last.max(before), ..state }, before))
    }

    /// Takes the messages up to `upto` as \Recent for the session that asks, unless another
    /// took them first; the highest UID taken before.
    pub fn imap_take_recent(&mut self, mailbox: &str, folder: Folder, upto: u32) -> Result<u32> {
        self.imap_claim_recent(mailbox, folder.code(), upto)
    }

    /// Sets the flags a message is delivered with (Sieve's imap4flags). A folder no client has
    /// opened yet has no UID state, and flags are kept only beside a UID: the state is made
    /// first, as SELECT would make it, so the flags are not dropped. False when the message is
    /// not in that folder.
    pub fn imap_deliver_flags(
        &mut self,
        mailbox: &str,
        folder: Folder,
        id: &str,
        flags: Vec<String>,
        now: u64,
    ) -> Result<bool> {
        match self.imap_open(mailbox, folder, now) {
            Ok(_) => self.imap_put_flags(mailbox, folder.code(), id, flags),
            // A user folder deleted since delivery chose it: the message is not there either.
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sets a message's flags; false when it is not in that folder.
    pub fn imap_store_flags(
        &mut self,
        mailbox: &str,
        folder: Folder,
        id: &str,
        flags: Vec<String>,
    ) -> Result<bool> {
        self.imap_put_flags(mailbox, folder.code(), id, flags)
    }

    /// Sets a message's flags unless they changed after mod-sequence `unchanged_since` (STORE
    /// UNCHANGEDSINCE, RFC 7162 3.1.3: checked in the write, so no other change slips in
    /// between); the message's new mod-sequence, `Ok(None)` when it had changed or is not in
    /// that folder.
    pub fn imap_store_flags_if(
        &mut self,
        mailbox: &str,
        folder: Folder,
        id: &str,
        flags: Vec<String>,
        unchanged_since: Option<u64>,
    ) -> Result<Option<u64>> {
        let meta = super::get_json::<_, super::imap::ImapMeta>(self, IMAP_MESSAGES, id)?;
        let Some(meta) = meta else { return Ok(None) };
        if unchanged_since.is_some_and(|n| meta.modseq.max(1) > n) {
            return Ok(None);
        }
        if !self.imap_put_flags(mailbox, folder.code(), id, flags)? {
            return Ok(None);
        }
        let meta = super::get_json::<_, super::imap::ImapMeta>(self, IMAP_MESSAGES, id)?;
        Ok(meta.map(|m| m.modseq))
    }

    /// Moves message `id` of `mailbox` to `to` (flags kept); its new UID there.
    pub fn imap_move(&mut self, mailbox: &str, id: &str, to: Folder, now: u64) -> Result<u32> {
        self.imap_open(mailbox, to, now)?;
        let email = self.load_email(id)?.filter(|e| e.summary.mailbox == mailbox);
        let Some(mut email) = email else { return Err(Error::not_found("email")) };
        if email.summary.folder == to {
            self.renumber_email(&email.summary)?;
            return self.imap_uid(id);
        }
        let before = email.summary.clone();
        email.summary.folder = to;
        self.replace_email(&before, &email)?;
        self.imap_uid(id)
    }

    /// Removes message `id` of `mailbox` for good (EXPUNGE), as a delete from the trash does.
    pub fn imap_expunge(&mut self, mailbox: &str, id: &str, now: u64) -> Result<()> {
        let Some(email) = self.load_email(id)?.filter(|e| e.summary.mailbox == mailbox) else {
            return Ok(());
        };
        if email.summary.folder != Folder::Trash {
            self.imap_move(mailbox, id, Folder::Trash, now)?;
        }
        let domain = email.domain().to_owned();
        self.delete_email(&domain, id)?;
        Ok(())
    }

    /// Stores `raw` exactly as given as a new message of `email.summary.mailbox` in its folder,
    /// with `flags`; its UID.
    pub fn imap_append(
        &mut self,
        email: &Email,
        raw: &[u8],
        flags: Vec<String>,
        now: u64,
    ) -> Result<u32> {
        let (mailbox, folder) = (email.summary.mailbox.clone(), email.summary.folder);
        self.imap_open(&mailbox, folder, now)?;
        let id = email.summary.id.clone();
        self.store_copies(email, &[(id.clone(), mailbox.clone())], raw, None)?;
        self.imap_put_flags(&mailbox, folder.code(), &id, flags)?;
        self.imap_uid(&id)
    }

    /// Keeps `raw` as the message bytes of email `id` when it has none (mail sent through the
    /// API is rendered once for IMAP; from then on its size and bytes never change).
    pub fn imap_keep_rendered(&mut self, id: &str, raw: &[u8]) -> Result<()> {
        if self.has_raw(id)? || self.load_email(id)?.is_none() {
            return Ok(());
        }
        let blob = crate::ids::new_id("raw");
        self.put_raw(&blob, raw)?;
        self.share_raw(id, &blob, false)
    }

    /// Whether `mailbox` itself sent, within `SENT_COPY_WINDOW_MS` of `now`, the message with
    /// `message_id` (`<...>`, as stored) and still keeps it as sent mail. Found through the
    /// Message-ID index of what we sent (one read), so an APPEND of any other message costs
    /// next to nothing. A copy moved elsewhere (Trash, Drafts) is not one: the APPEND stores
    /// the message again, as the client asked.
    pub fn imap_sent_copy(
        &mut self,
        mailbox: &str,
        message_id: &str,
        now: u64,
    ) -> Result<SentCopy> {
        let Some(id) = self.email_for_message_id(message_id)? else {
            return Ok(SentCopy::Absent);
        };
        let Some(email) = self.load_email(&id)? else { return Ok(SentCopy::Absent) };
        let recent = now.saturating_sub(email.summary.created_at) <= SENT_COPY_WINDOW_MS;
        let sent_by_it = email.summary.mailbox == mailbox
            && email.send_type == Some(SendType::Transactional)
            && email.message_id.as_deref() == Some(message_id);
        if !recent || !sent_by_it {
            return Ok(SentCopy::Absent);
        }
        Ok(match email.summary.folder {
            Folder::Sent => {
                self.imap_open(mailbox, Folder::Sent, now)?;
                SentCopy::InSent(self.imap_uid(&id)?)
            }
            Folder::Outbox => SentCopy::OnItsWay,
            _ => SentCopy::Absent,
        })
    }

    fn imap_uid(&self, id: &str) -> Result<u32> {
        let meta = super::get_json::<_, super::imap::ImapMeta>(self, IMAP_MESSAGES, id)?;
        meta.map(|m| m.uid).ok_or_else(|| Error::internal(format!("no UID for {id}")))
    }
}

impl Rtx {
    pub fn imap_state(&self, mailbox: &str, folder: Folder) -> Result<Option<ImapFolder>> {
        self.imap_state_of(mailbox, folder.code())
    }

    /// The UIDs of a folder, ascending.
    pub fn imap_uids(&self, mailbox: &str, folder: Folder) -> Result<Vec<u32>> {
        self.imap_uids_of(mailbox, folder.code())
    }

    /// The keywords the folder's messages carry (at most `limit`).
    pub fn imap_keywords(
        &self,
        mailbox: &str,
        folder: Folder,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.imap_keywords_of(mailbox, folder.code(), limit)
    }

    /// The lowest UID without `\\Seen` (SELECT's `[UNSEEN]`).
    pub fn imap_first_unseen(&self, mailbox: &str, folder: Folder) -> Result<Option<u32>> {
        self.imap_first_unseen_of(mailbox, folder.code())
    }

    /// The UIDs whose flags changed after folder change `since`.
    pub fn imap_flag_changes(&self, mailbox: &str, folder: Folder, since: u64) -> Result<Vec<u32>> {
        self.imap_flag_changes_of(mailbox, folder.code(), since)
    }

    /// The UIDs that left the folder after folder change `since` (expunged or moved out),
    /// ascending by change; `None` when records that old are pruned (the caller then works
    /// from the UIDs the client knows, RFC 7162 3.2.5.1).
    pub fn imap_vanished(
        &self,
        mailbox: &str,
        folder: Folder,
        since: u64,
    ) -> Result<Option<Vec<u32>>> {
        let Some(state) = self.imap_state_of(mailbox, folder.code())? else { return Ok(None) };
        if since < state.changes.saturating_sub(super::imap::VANISHED_KEPT) {
            return Ok(None);
        }
        self.imap_vanished_of(mailbox, folder.code(), since).map(Some)
    }

    /// The messages with these UIDs that are still in the folder.
    pub fn imap_entries(
        &self,
        mailbox: &str,
        folder: Folder,
        uids: &[u32],
    ) -> Result<Vec<ImapEntry>> {
        self.imap_entries_of(mailbox, folder.code(), uids)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    fn sent(id: &str, mailbox: &str, message_id: &str, at: u64) -> Email {
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = mailbox.into();
        e.summary.folder = Folder::Outbox;
        e.summary.created_at = at;
        e.message_id = Some(message_id.into());
        e.send_type = Some(SendType::Transactional);
        e
    }

    fn copy(store: &Store, mailbox: &str, message_id: &str, now: u64) -> SentCopy {
        let (mailbox, message_id) = (mailbox.to_owned(), message_id.to_owned());
        store.write_blocking(move |w| w.imap_sent_copy(&mailbox, &message_id, now)).expect("look") // ok: test
    }

    #[test]
    fn a_message_the_mailbox_just_sent_is_found_by_its_message_id_in_outbox_then_sent() {
        let dir = std::env::temp_dir().join(format!("edgemail-sent-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let at = 1_800_000_000_000;
        store
            .write_blocking(move |w| -> Result<_> {
                w.enqueue(&sent("em_a", "m@x.test", "<a@x.test>", at), at)?;
                w.enqueue(&sent("em_old", "m@x.test", "<old@x.test>", at - 3_600_000), at)
            })
            .expect("seed"); // ok: test
        assert_eq!(copy(&store, "m@x.test", "<a@x.test>", at + 1000), SentCopy::OnItsWay);
        assert_eq!(copy(&store, "m@x.test", "<nope@x.test>", at), SentCopy::Absent);
        assert_eq!(copy(&store, "n@x.test", "<a@x.test>", at), SentCopy::Absent, "another mailbox");
        assert_eq!(copy(&store, "m@x.test", "<old@x.test>", at), SentCopy::Absent, "too old");
        let late = at + SENT_COPY_WINDOW_MS + 1;
        assert_eq!(copy(&store, "m@x.test", "<a@x.test>", late), SentCopy::Absent, "too late");

        // Delivered: in Sent, under the UID IMAP shows it with.
        let uid = store
            .write_blocking(move |w| w.imap_move("m@x.test", "em_a", Folder::Sent, at))
            .expect("move"); // ok: test
        assert_eq!(copy(&store, "m@x.test", "<a@x.test>", at + 2000), SentCopy::InSent(uid));
        let uids = store.read_blocking(|r| r.imap_uids("m@x.test", Folder::Sent)).expect("uids"); // ok: test
        assert_eq!(uids, [uid]);

        // Moved away by its owner: an APPEND of it is a new message.
        store
            .write_blocking(move |w| w.imap_move("m@x.test", "em_a", Folder::Trash, at))
            .expect("trash"); // ok: test
        assert_eq!(copy(&store, "m@x.test", "<a@x.test>", at + 3000), SentCopy::Absent);
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    fn received(id: &str, mailbox: &str, at: u64) -> Email {
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = mailbox.into();
        e.summary.folder = Folder::Inbox;
        e.summary.created_at = at;
        e
    }

    #[test]
    fn expunges_and_moves_out_are_recorded_as_vanished_and_read_by_change() {
        let dir = std::env::temp_dir().join(format!("edgemail-vanished-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let (m, at) = ("m@x.test", 1_800_000_000_000);
        let raw = b"Subject: hi\r\n\r\nbody\r\n";
        let uids = store
            .write_blocking(move |w| -> Result<Vec<u32>> {
                ["em_1", "em_2", "em_3", "em_4"]
                    .iter()
                    .map(|id| w.imap_append(&received(id, m, at), raw, Vec::new(), at))
                    .collect()
            })
            .expect("append"); // ok: test
        let state = store.read_blocking(move |r| r.imap_state(m, Folder::Inbox)).expect("state"); // ok: test
        let since = state.expect("state").changes; // ok: test
        let entries = store
            .read_blocking({
                let ends = [uids[0], uids[3]];
                move |r| r.imap_entries(m, Folder::Inbox, &ends)
            })
            .expect("entries"); // ok: test
        assert!(entries.iter().all(|e| e.meta.modseq > 0), "every message has a mod-sequence");
        assert!(entries[0].meta.modseq < entries[1].meta.modseq, "in order of arrival");

        store
            .write_blocking(move |w| -> Result<()> {
                w.imap_expunge(m, "em_1", at)?;
                w.imap_move(m, "em_2", Folder::Trash, at)?;
                w.imap_store_flags(m, Folder::Inbox, "em_3", vec!["\\Seen".into()])?;
                Ok(())
            })
            .expect("changes"); // ok: test
        let gone =
            store.read_blocking(move |r| r.imap_vanished(m, Folder::Inbox, since)).expect("read"); // ok: test
        assert_eq!(gone, Some(vec![uids[0], uids[1]]));
        let none = store
            .read_blocking(move |r| r.imap_vanished(m, Folder::Inbox, since + 3))
            .expect("read"); // ok: test
        assert_eq!(none, Some(Vec::new()), "nothing vanished after the last change");
        let flagged = store
            .read_blocking(move |r| r.imap_flag_changes(m, Folder::Inbox, since))
            .expect("read"); // ok: test
        assert_eq!(flagged, [uids[2]]);
        let state = store.read_blocking(move |r| r.imap_state(m, Folder::Inbox)).expect("state"); // ok: test
        assert_eq!(state.expect("state").changes, since + 3, "HIGHESTMODSEQ counts each change"); // ok: test

        // A folder that goes takes its record with it.
        store.write_blocking(move |w| w.imap_forget(m)).expect("forget"); // ok: test
        let after = store
            .read_blocking(move |r| r.imap_vanished_of(m, Folder::Inbox.code(), 0))
            .expect("read"); // ok: test
        assert!(after.is_empty());
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_folder_keeps_every_keyword_set_in_it_even_once_cleared() {
        let dir = std::env::temp_dir().join(format!("edgemail-keywords-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let (m, at) = ("m@x.test", 1_800_000_000_000);
        let raw = b"Subject: hi\r\n\r\nbody\r\n";
        let arrived = vec!["$Arrived".to_owned(), "\\Seen".to_owned()];
        store
            .write_blocking(move |w| w.imap_append(&received("em_1", m, at), raw, arrived, at))
            .expect("append"); // ok: test
        store
            .write_blocking(move |w| -> Result<()> {
                let set = |flags: &[&str]| flags.iter().map(|f| (*f).to_owned()).collect();
                w.imap_store_flags(m, Folder::Inbox, "em_1", set(&["$Label2", "$label2"]))?;
                w.imap_store_flags(m, Folder::Inbox, "em_1", set(&["\\Flagged"]))?;
                Ok(())
            })
            .expect("flags"); // ok: test
        let state = store.read_blocking(move |r| r.imap_state(m, Folder::Inbox)).expect("state"); // ok: test
        let kept = state.expect("state").keywords; // ok: test
        assert_eq!(kept, ["$Arrived", "$Label2"], "once each, no system flags, none forgotten");
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
