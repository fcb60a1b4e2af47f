//! What an IMAP session does to the store, in terms of folders: opening a folder's UID state,
//! reading a folder in UID order, flags, and the changes IMAP makes (APPEND, COPY, MOVE,
//! EXPUNGE), each one transaction that keeps the emails, their index and the UIDs together.

use super::emails::{Email, Folder};
use super::error::{Error, Result};
use super::imap::{ImapEntry, ImapFolder};
use super::tables::*;
use super::{Rtx, Wtx};

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
            return Ok((state, state.seen_uid));
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
