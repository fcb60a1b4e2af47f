//! What IMAP clients need beyond the emails themselves: per folder a UIDVALIDITY and the next
//! UID, per message its UID and flags. A folder's state is made on first use from the folder
//! index (UIDs in arrival order); from then on every change of the index (a message stored,
//! moved, deleted) updates it in the same transaction (`emails` calls the hooks below), so UIDs
//! stay stable across restarts and the API and IMAP always agree.

use super::kv::{Ahead, ReadableTable};
use serde::{Deserialize, Serialize};

use super::error::Result;
use super::tables::*;
use super::{Rtx, Wtx, decode, encode, get_json};

/// How many of a folder's latest changes keep their record of vanished UIDs: enough for a
/// client away for weeks of ordinary mail, bounded for a folder churned by a script.
pub const VANISHED_KEPT: u64 = 50_000;

/// How many keywords a folder remembers (RFC 3501 lets a server bound them; Dovecot's
/// default is about as many).
pub const FOLDER_KEYWORDS: usize = 256;

/// A folder's UID bookkeeping.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ImapFolder {
    pub uid_validity: u32,
    pub uid_next: u32,
    /// Bumped by every change of the folder's messages or their flags: a session compares it
    /// to know whether to look again.
    #[serde(default)]
    pub changes: u64,
    /// The highest UID a read-write SELECT has shown: the messages above it are \Recent for
    /// the next session that selects the folder (RFC 3501).
    #[serde(default)]
    pub seen_uid: u32,
    /// Every keyword a message of the folder has carried, in the order first set: what FLAGS
    /// lists. Kept with the folder, not gathered per session, so that all sessions list the
    /// same keywords even when one was set and cleared between two looks of a session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
}

impl ImapFolder {
    /// Adds the keywords of `flags` the folder has not carried yet (up to `FOLDER_KEYWORDS`).
    fn remember(&mut self, flags: &[String]) {
        for k in flags.iter().filter(|f| !f.starts_with('\\')) {
            let known = self.keywords.iter().any(|have| have.eq_ignore_ascii_case(k));
            if !known && self.keywords.len() < FOLDER_KEYWORDS {
                self.keywords.push(k.clone());
            }
        }
    }
}

/// A message's place and flags.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImapMeta {
    pub uid: u32,
    pub flags: Vec<String>,
    /// When the message arrived (ms): the INTERNALDATE.
    #[serde(default)]
    pub internal: u64,
    /// The folder change at which the message arrived or its flags last changed (its key in
    /// `IMAP_FLAG_LOG`): its CONDSTORE mod-sequence. 0 for a message numbered before
    /// mod-sequences were kept and untouched since (shown as 1, older than any change).
    #[serde(default)]
    pub modseq: u64,
}

/// Where a message is, as the hooks below need it (`emails` fills it from a summary).
pub(super) struct Place<'a> {
    pub mailbox: &'a str,
    /// The folder's code; `None` for a folder IMAP does not show.
    pub folder: Option<u8>,
    pub id: &'a str,
    pub at: u64,
    /// The flags a message entering this folder starts with.
    pub initial: &'static [&'static str],
}

/// A folder index entry, as far as numbering it needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Member {
    id: String,
    created_at: u64,
}

impl Wtx<'_> {
    /// Gives a message that entered a folder its next UID, when that folder has IMAP state
    /// (otherwise the state is made from the index on first use). Flags it had are kept.
    /// The keys `imap_added` reads, to be read ahead.
    pub(super) fn imap_added_ahead(ahead: &mut Ahead, s: &Place<'_>) {
        if let Some(code) = s.folder {
            ahead.key(IMAP_FOLDERS, (s.mailbox, code)).key(IMAP_MESSAGES, s.id);
        }
    }

    pub(super) fn imap_added(&mut self, s: &Place<'_>) -> Result<()> {
        let Some(code) = s.folder else { return Ok(()) };
        let key = (s.mailbox, code);
        let Some(mut state) = get_json::<_, ImapFolder>(self, IMAP_FOLDERS, key)? else {
            return Ok(());
        };
        let uid = state.uid_next;
        state.uid_next += 1;
        state.changes += 1;
        let mut metas = self.tx.open_table(IMAP_MESSAGES)?;
        let old = metas.get(s.id)?.map(|v| decode::<ImapMeta>(v.value())).transpose()?;
        let initial = || s.initial.iter().map(|f| (*f).to_owned()).collect();
        let flags: Vec<String> = old.map_or_else(initial, |m| m.flags);
        state.remember(&flags);
        self.tx.open_table(IMAP_FOLDERS)?.insert(key, encode(&state)?.as_slice())?;
        // An arrival is a change of the folder like a flag change: logged the same way, so
        // a resync reads one range for both.
        let meta = ImapMeta { uid, flags, internal: s.at, modseq: state.changes };
        metas.insert(s.id, encode(&meta)?.as_slice())?;
        let mut uids = self.tx.open_table(IMAP_UIDS)?;
        uids.insert((key.0, key.1, uid), s.id)?;
        self.tx.open_table(IMAP_FLAG_LOG)?.insert((key.0, key.1, state.changes), uid)?;
        self.imap_changed = true;
        Ok(())
    }

    /// Takes a message out of its folder's UIDs; `keep_flags` when it only moves.
    pub(super) fn imap_removed(&mut self, s: &Place<'_>, keep_flags: bool) -> Result<()> {
        let mut metas = self.tx.open_table(IMAP_MESSAGES)?;
        let meta = metas.get(s.id)?.map(|v| decode::<ImapMeta>(v.value())).transpose()?;
        let Some(meta) = meta else { return Ok(()) };
        if !keep_flags {
            metas.remove(s.id)?;
        }
        drop(metas);
        let Some(code) = s.folder else { return Ok(()) };
        if meta.modseq > 0 {
            self.tx.open_table(IMAP_FLAG_LOG)?.remove((s.mailbox, code, meta.modseq))?;
        }
        let removed = self.tx.open_table(IMAP_UIDS)?.remove((s.mailbox, code, meta.uid))?.is_some();
        if removed && let Some(change) = self.imap_touch(s.mailbox, code)? {
            self.imap_record_vanished(s.mailbox, code, change, meta.uid)?;
        }
        Ok(())
    }

    /// Records that `uid` left folder `code` at folder change `change` (QRESYNC's VANISHED),
    /// dropping the records older than the last `VANISHED_KEPT` changes: a client that
    /// resyncs from before them is answered from its known UIDs instead (RFC 7162 3.2.5.1).
    fn imap_record_vanished(
        &mut self,
        mailbox: &str,
        code: u8,
        change: u64,
        uid: u32,
    ) -> Result<()> {
        let mut table = self.tx.open_table(IMAP_VANISHED)?;
        table.insert((mailbox, code, change), uid)?;
        let horizon = change.saturating_sub(VANISHED_KEPT);
        if horizon > 0 {
            table.retain_in((mailbox, code, 0u64)..(mailbox, code, horizon), |_, _| false)?;
        }
        Ok(())
    }

    /// A message that changed folder: out of one, into the other, its flags kept.
    pub(super) fn imap_moved(&mut self, before: &Place<'_>, after: &Place<'_>) -> Result<()> {
        if before.folder != after.folder {
            self.imap_removed(before, true)?;
            self.imap_added(after)?;
        }
        Ok(())
    }

    /// Forgets a mailbox's folder states (its messages are being removed).
    pub(super) fn imap_forget(&mut self, mailbox: &str) -> Result<()> {
        let lo = (mailbox, 0u8, 0u32);
        let hi = (mailbox, u8::MAX, u32::MAX);
        self.tx.open_table(IMAP_UIDS)?.retain_in(lo..=hi, |_, _| false)?;
        let mut folders = self.tx.open_table(IMAP_FOLDERS)?;
        folders.retain_in((mailbox, 0u8)..=(mailbox, u8::MAX), |_, _| false)?;
        let mut log = self.tx.open_table(IMAP_FLAG_LOG)?;
        log.retain_in((mailbox, 0u8, 0u64)..=(mailbox, u8::MAX, u64::MAX), |_, _| false)?;
        drop(log);
        let mut gone = self.tx.open_table(IMAP_VANISHED)?;
        gone.retain_in((mailbox, 0u8, 0u64)..=(mailbox, u8::MAX, u64::MAX), |_, _| false)?;
        self.imap_changed = true;
        Ok(())
    }

    /// Forgets a message's flags (it is being removed with its mailbox).
    pub(super) fn imap_forget_message(&mut self, id: &str) -> Result<()> {
        self.tx.open_table(IMAP_MESSAGES)?.remove(id)?;
        Ok(())
    }

    /// Counts a change of a folder, so sessions that watch it look again; the change's number
    /// (none for a folder without IMAP state).
    pub(super) fn imap_touch(&mut self, mailbox: &str, code: u8) -> Result<Option<u64>> {
        let key = (mailbox, code);
        let mut change = None;
        if let Some(mut state) = get_json::<_, ImapFolder>(self, IMAP_FOLDERS, key)? {
            state.changes += 1;
            change = Some(state.changes);
            self.tx.open_table(IMAP_FOLDERS)?.insert(key, encode(&state)?.as_slice())?;
        }
        self.imap_changed = true;
        Ok(change)
    }

    /// Gives a folder just made its empty state, with `validity` as its UIDVALIDITY.
    pub(super) fn imap_made(&mut self, mailbox: &str, code: u8, validity: u32) -> Result<()> {
        self.imap_dropped(mailbox, code)?;
        let state = ImapFolder { uid_validity: validity, uid_next: 1, ..ImapFolder::default() };
        self.tx.open_table(IMAP_FOLDERS)?.insert((mailbox, code), encode(&state)?.as_slice())?;
        Ok(())
    }

    /// Forgets the state of a folder that is gone (its messages went before).
    pub(super) fn imap_dropped(&mut self, mailbox: &str, code: u8) -> Result<()> {
        let uids = (mailbox, code, 0u32)..=(mailbox, code, u32::MAX);
        self.tx.open_table(IMAP_UIDS)?.retain_in(uids, |_, _| false)?;
        let log = (mailbox, code, 0u64)..=(mailbox, code, u64::MAX);
        self.tx.open_table(IMAP_FLAG_LOG)?.retain_in(log.clone(), |_, _| false)?;
        self.tx.open_table(IMAP_VANISHED)?.retain_in(log, |_, _| false)?;
        self.tx.open_table(IMAP_FOLDERS)?.remove((mailbox, code))?;
        self.imap_changed = true;
        Ok(())
    }

    /// The folder's state, made now from the folder index when it has none yet (`initial`:
    /// the flags its messages start with).
    pub(super) fn imap_init(
        &mut self,
        mailbox: &str,
        code: u8,
        initial: &'static [&'static str],
        now: u64,
    ) -> Result<ImapFolder> {
        let key = (mailbox, code);
        if let Some(state) = get_json::<_, ImapFolder>(self, IMAP_FOLDERS, key)? {
            return Ok(state);
        }
        let mut members = Vec::new();
        {
            let index = self.tx.open_table(EMAIL_INDEX)?;
            let lo = (mailbox, code, 0u64, "");
            let hi = (mailbox, code + 1, 0u64, "");
            for entry in index.range(lo..hi)? {
                members.push(decode::<Member>(entry?.1.value())?);
            }
        }
        // Seconds since the epoch: a folder made again after its state was lost gets a larger
        // UIDVALIDITY, which tells clients to forget what they cached.
        let validity = u32::try_from(now / 1000).unwrap_or(u32::MAX).max(1);
        let state = ImapFolder { uid_validity: validity, uid_next: 1, ..ImapFolder::default() };
        self.tx.open_table(IMAP_FOLDERS)?.insert(key, encode(&state)?.as_slice())?;
        for m in &members {
            let place = Place { mailbox, folder: Some(code), id: &m.id, at: m.created_at, initial };
            self.imap_added(&place)?;
        }
        get_json(self, IMAP_FOLDERS, key).map(Option::unwrap_or_default)
    }

    /// Sets the flags of message `id` in folder `code`; whether it has IMAP state. The change
    /// is logged under the folder's new change number, so sessions watching it announce it.
    pub(super) fn imap_put_flags(
        &mut self,
        mailbox: &str,
        code: u8,
        id: &str,
        flags: Vec<String>,
    ) -> Result<bool> {
        let Some(mut meta) = get_json::<_, ImapMeta>(self, IMAP_MESSAGES, id)? else {
            return Ok(false);
        };
        let key = (mailbox, code);
        let state = get_json::<_, ImapFolder>(self, IMAP_FOLDERS, key)?;
        let here = self.tx.open_table(IMAP_UIDS)?.get((mailbox, code, meta.uid))?.is_some();
        if let Some(mut state) = state.filter(|_| here) {
            state.changes += 1;
            state.remember(&flags);
            self.tx.open_table(IMAP_FOLDERS)?.insert(key, encode(&state)?.as_slice())?;
            let mut log = self.tx.open_table(IMAP_FLAG_LOG)?;
            if meta.modseq > 0 {
                log.remove((mailbox, code, meta.modseq))?;
            }
            log.insert((mailbox, code, state.changes), meta.uid)?;
            meta.modseq = state.changes;
            self.imap_changed = true;
        }
        meta.flags = flags;
        self.tx.open_table(IMAP_MESSAGES)?.insert(id, encode(&meta)?.as_slice())?;
        Ok(true)
    }

    /// Marks every message of the folder up to `upto` as shown by a read-write SELECT; the
    /// highest UID shown before.
    pub(super) fn imap_claim_recent(&mut self, mailbox: &str, code: u8, upto: u32) -> Result<u32> {
        let key = (mailbox, code);
        let Some(mut state) = get_json::<_, ImapFolder>(self, IMAP_FOLDERS, key)? else {
            return Ok(upto);
        };
        let before = state.seen_uid;
        if upto > before {
            state.seen_uid = upto;
            self.tx.open_table(IMAP_FOLDERS)?.insert(key, encode(&state)?.as_slice())?;
        }
        Ok(before)
    }
}

/// A message as a session sees it.
#[derive(Debug, Clone)]
pub struct ImapEntry {
    pub uid: u32,
    pub id: String,
    pub meta: ImapMeta,
}

impl Rtx {
    pub(super) fn imap_state_of(&self, mailbox: &str, code: u8) -> Result<Option<ImapFolder>> {
        get_json(self, IMAP_FOLDERS, (mailbox, code))
    }

    /// The UIDs of a folder, ascending.
    pub(super) fn imap_uids_of(&self, mailbox: &str, code: u8) -> Result<Vec<u32>> {
        let table = self.tx.open_table(IMAP_UIDS)?;
        let lo = (mailbox, code, 0u32);
        let hi = (mailbox, code, u32::MAX);
        let mut out = Vec::new();
        for entry in table.range(lo..=hi)? {
            out.push(entry?.0.value().2);
        }
        Ok(out)
    }

    /// The messages with these UIDs (those still there), in the order given.
    pub(super) fn imap_entries_of(
        &self,
        mailbox: &str,
        code: u8,
        uids: &[u32],
    ) -> Result<Vec<ImapEntry>> {
        let table = self.tx.open_table(IMAP_UIDS)?;
        let metas = self.tx.open_table(IMAP_MESSAGES)?;
        let mut out = Vec::with_capacity(uids.len());
        for &uid in uids {
            let Some(id) = table.get((mailbox, code, uid))? else { continue };
            let id = id.value().to_owned();
            let Some(meta) = metas.get(id.as_str())? else { continue };
            let meta = decode::<ImapMeta>(meta.value())?;
            out.push(ImapEntry { uid, id, meta });
        }
        Ok(out)
    }

    /// The keywords (flags without a backslash) the messages of a folder carry, each once in
    /// the case first seen, at most `limit` of them: what SELECT lists in FLAGS. One pass over
    /// the folder, as reading its UIDs is.
    pub(super) fn imap_keywords_of(
        &self,
        mailbox: &str,
        code: u8,
        limit: usize,
    ) -> Result<Vec<String>> {
        let table = self.tx.open_table(IMAP_UIDS)?;
        let metas = self.tx.open_table(IMAP_MESSAGES)?;
        let mut out: Vec<String> = Vec::new();
        let mut lower = std::collections::HashSet::new();
        for entry in table.range((mailbox, code, 0u32)..=(mailbox, code, u32::MAX))? {
            let entry = entry?;
            let Some(meta) = metas.get(entry.1.value())? else { continue };
            let meta = decode::<ImapMeta>(meta.value())?;
            for flag in meta.flags.into_iter().filter(|f| !f.starts_with('\\')) {
                if out.len() < limit && lower.insert(flag.to_ascii_lowercase()) {
                    out.push(flag);
                }
            }
        }
        Ok(out)
    }

    /// The lowest UID of the folder whose message lacks `\\Seen`.
    pub(super) fn imap_first_unseen_of(&self, mailbox: &str, code: u8) -> Result<Option<u32>> {
        let table = self.tx.open_table(IMAP_UIDS)?;
        let metas = self.tx.open_table(IMAP_MESSAGES)?;
        for entry in table.range((mailbox, code, 0u32)..=(mailbox, code, u32::MAX))? {
            let entry = entry?;
            let Some(meta) = metas.get(entry.1.value())? else { continue };
            let meta = decode::<ImapMeta>(meta.value())?;
            if !meta.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Seen")) {
                return Ok(Some(entry.0.value().2));
            }
        }
        Ok(None)
    }

    /// The UIDs whose flags changed after folder change `since`, ascending by change.
    pub(super) fn imap_flag_changes_of(
        &self,
        mailbox: &str,
        code: u8,
        since: u64,
    ) -> Result<Vec<u32>> {
        let table = self.tx.open_table(IMAP_FLAG_LOG)?;
        let mut out = Vec::new();
        for entry in table.range((mailbox, code, since + 1)..=(mailbox, code, u64::MAX))? {
            out.push(entry?.1.value());
        }
        Ok(out)
    }

    /// The UIDs that left the folder after folder change `since`, ascending by change.
    pub(super) fn imap_vanished_of(&self, mailbox: &str, code: u8, since: u64) -> Result<Vec<u32>> {
        let table = self.tx.open_table(IMAP_VANISHED)?;
        let mut out = Vec::new();
        for entry in table.range((mailbox, code, since + 1)..=(mailbox, code, u64::MAX))? {
            out.push(entry?.1.value());
        }
        Ok(out)
    }

    /// The IMAP flags of message `id` (none before IMAP ever saw it).
    pub fn imap_flags(&self, id: &str) -> Result<Vec<String>> {
        Ok(get_json::<_, ImapMeta>(self, IMAP_MESSAGES, id)?.map(|m| m.flags).unwrap_or_default())
    }
}
