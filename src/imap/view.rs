//! The selected folder as one session sees it: its UIDs in order (message sequence number n is
//! the n-th), which only change when the session tells the client (EXPUNGE, EXISTS). Only the
//! UIDs are held; messages are read from the store in chunks when asked for.

use std::num::NonZeroU32;

use imap_types::response::Data;
use imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

use imap_types::fetch::MessageDataItem;
use imap_types::flag::Flag;

use super::condstore::{modseq_item, vanished};
use super::names::nonzero;
use super::reply::{flag, flags_fetch};
use crate::store::{Folder, ImapEntry, ImapFolder, Store};

pub struct View {
    pub mailbox: String,
    pub folder: Folder,
    pub read_only: bool,
    pub state: ImapFolder,
    /// UIDs ascending; index + 1 is the message sequence number.
    pub uids: Vec<u32>,
    /// The UIDs that are \Recent for this session, ascending.
    pub recent: Vec<u32>,
    /// The keywords the folder's messages carry, as FLAGS told the client: it grows as new
    /// ones are seen, and a new one means a new FLAGS response.
    pub keywords: Vec<String>,
    /// CONDSTORE is on: a FETCH that tells flags tells the MODSEQ too.
    pub condstore: bool,
    /// QRESYNC is on: expunges are told as `VANISHED uids`, not `n EXPUNGE`.
    pub qresync: bool,
}

/// Keywords a FLAGS response lists at most; more can still be set (PERMANENTFLAGS has `\*`).
const MAX_KEYWORDS: usize = 256;

impl View {
    pub async fn open(
        store: &Store,
        mailbox: &str,
        folder: Folder,
        read_only: bool,
    ) -> crate::store::Result<View> {
        let now = crate::ids::now_ms();
        let m = mailbox.to_owned();
        let (state, before) =
            store.write(move |w| w.imap_select(&m, folder, now, !read_only)).await?;
        let m = mailbox.to_owned();
        let uids = store.read_long(move |r| r.imap_uids(&m, folder)).await?;
        // A read-write SELECT claimed up to the last UID it saw; mail that arrived before the
        // UIDs were read is claimed now, unless another session took it first (\Recent shows in
        // one session only).
        let claimed = if read_only { u32::MAX } else { state.seen_uid };
        let mut recent: Vec<u32> =
            uids.iter().copied().filter(|u| *u > before && *u <= claimed).collect();
        if let Some(&last) = uids.last().filter(|last| **last > claimed) {
            let m = mailbox.to_owned();
            let taken = store.write(move |w| w.imap_take_recent(&m, folder, last)).await?;
            recent.extend(uids.iter().copied().filter(|u| *u > taken.max(claimed)));
        }
        let mailbox = mailbox.to_owned();
        let keywords = Vec::new();
        let (condstore, qresync) = (false, false);
        Ok(View { mailbox, folder, read_only, state, uids, recent, keywords, condstore, qresync })
    }

    /// Reads the keywords the folder's messages carry, for the FLAGS of a SELECT (a pass over
    /// the folder that STATUS has no need of).
    pub async fn read_keywords(&mut self, store: &Store) -> crate::store::Result<()> {
        let (m, f) = (self.mailbox.clone(), self.folder);
        let found = store.read_long(move |r| r.imap_keywords(&m, f, MAX_KEYWORDS)).await?;
        // The folder's own list first (keywords set once, even if no message has them now),
        // then any a message carries from before the folder kept that list.
        self.keywords.clear();
        let kept = self.state.keywords.clone();
        self.learn(&kept);
        self.learn(&found);
        Ok(())
    }

    /// The flags FLAGS lists: the system flags, then the keywords in use.
    pub fn flag_list(&self) -> Vec<Flag<'static>> {
        let mut flags = vec![Flag::Answered, Flag::Flagged, Flag::Deleted, Flag::Seen, Flag::Draft];
        flags.extend(self.keywords.iter().filter_map(|k| flag(k)));
        flags
    }

    /// Takes note of the keywords in `flags`; whether any was new (the client is then told
    /// with a new FLAGS response).
    pub fn learn(&mut self, flags: &[String]) -> bool {
        let mut new = false;
        for k in flags.iter().filter(|f| !f.starts_with('\\')) {
            let known = self.keywords.iter().any(|have| have.eq_ignore_ascii_case(k));
            if !known && self.keywords.len() < MAX_KEYWORDS && flag(k).is_some() {
                self.keywords.push(k.clone());
                new = true;
            }
        }
        new
    }

    pub fn is_recent(&self, uid: u32) -> bool {
        self.recent.binary_search(&uid).is_ok()
    }

    /// Brings the view up to date; the untagged EXPUNGE, EXISTS, RECENT and FETCH (FLAGS)
    /// responses that tell it.
    pub async fn sync(&mut self, store: &Store) -> crate::store::Result<Vec<Data<'static>>> {
        let (m, f, since) = (self.mailbox.clone(), self.folder, self.state.changes);
        let news = store
            .read_long(move |r| -> crate::store::Result<_> {
                let Some(state) = r.imap_state(&m, f)? else { return Ok(None) };
                if state.changes == since {
                    return Ok(None);
                }
                let uids = r.imap_uids(&m, f)?;
                let flagged = r.imap_flag_changes(&m, f, since)?;
                let entries = r.imap_entries(&m, f, &flagged)?;
                Ok(Some((state, uids, entries)))
            })
            .await?;
        let Some((state, now, entries)) = news else { return Ok(Vec::new()) };
        let arrived = self.arrivals(&now);
        let fresh = arrived.clone();
        self.state = state;
        let mut out = self.adopt(now);
        if let Some(&last) = arrived.last() {
            let taken = match self.read_only {
                true => self.state.seen_uid,
                false => {
                    let (m, f) = (self.mailbox.clone(), self.folder);
                    store.write(move |w| w.imap_take_recent(&m, f, last)).await?
                }
            };
            self.recent.extend(arrived.into_iter().filter(|u| *u > taken));
            let recent = self.uids.iter().filter(|u| self.is_recent(**u)).count();
            out.push(Data::Recent(recent as u32));
        }
        // The folder's keyword list, not only the flags of the changed messages: a keyword
        // set and cleared again since the last look is still one the folder has had, and
        // every session lists the same (imaptest's checkpoints compare them).
        let kept = self.state.keywords.clone();
        let mut new = self.learn(&kept);
        for e in &entries {
            new |= self.learn(&e.meta.flags);
        }
        if new {
            out.push(Data::Flags(self.flag_list()));
        }
        // Arrivals are logged as changes too (their mod-sequence), but EXISTS told them.
        let told = |e: &&ImapEntry| fresh.binary_search(&e.uid).is_err();
        let fetches: Vec<_> =
            entries.iter().filter(told).filter_map(|e| self.flags_of(e)).collect();
        out.extend(fetches);
        Ok(out)
    }

    /// The UIDs of `now` this view has not shown yet, ascending.
    fn arrivals(&self, now: &[u32]) -> Vec<u32> {
        let last = self.uids.last().copied().unwrap_or(0);
        now.iter().copied().filter(|u| *u > last || self.uids.binary_search(u).is_err()).collect()
    }

    /// The unsolicited FETCH that tells a message's flags, when it is in the view.
    fn flags_of(&self, entry: &ImapEntry) -> Option<Data<'static>> {
        let seq = self.seq_of(entry.uid)?;
        let flags = flags_fetch(&entry.meta.flags, self.is_recent(entry.uid));
        let mut items =
            vec![MessageDataItem::Flags(flags), MessageDataItem::Uid(nonzero(entry.uid))];
        if self.condstore {
            items.push(modseq_item(&entry.meta));
        }
        Some(Data::Fetch { seq, items: items.try_into().ok()? })
    }

    /// Replaces the UIDs with `now`; the responses announcing the difference.
    pub fn adopt(&mut self, now: Vec<u32>) -> Vec<Data<'static>> {
        let gone: Vec<u32> =
            self.uids.iter().copied().filter(|u| now.binary_search(u).is_err()).collect();
        let grew = now.iter().any(|u| self.uids.binary_search(u).is_err());
        let shrank = !gone.is_empty();
        let mut out = self.forget(&gone);
        self.uids = now;
        if grew || shrank {
            out.push(Data::Exists(self.uids.len() as u32));
        }
        out
    }

    /// The positions (0-based) a sequence set names, ascending, without repeats. With `uid`
    /// the set holds UIDs (those not there are skipped), else sequence numbers.
    pub fn resolve(&self, set: &SequenceSet, uid: bool) -> Vec<usize> {
        let mut out = Vec::new();
        let len = self.uids.len();
        if len == 0 {
            return out;
        }
        let largest = if uid { self.uids[len - 1] } else { len as u32 };
        let value = |v: &SeqOrUid| match v {
            SeqOrUid::Value(n) => n.get(),
            SeqOrUid::Asterisk => largest,
        };
        for seq in set.0.as_ref() {
            let (a, b) = match seq {
                Sequence::Single(v) => (value(v), value(v)),
                Sequence::Range(x, y) => (value(x).min(value(y)), value(x).max(value(y))),
            };
            if uid {
                let lo = self.uids.partition_point(|u| *u < a);
                let hi = self.uids.partition_point(|u| *u <= b);
                out.extend(lo..hi);
            } else {
                let hi = (b as usize).min(len);
                out.extend((a as usize).saturating_sub(1)..hi);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether every message sequence number of `set` names a message: a number past the last
    /// one is an error (RFC 9051 6.4.4; Dovecot answers BAD), and `*` is the last message, so in
    /// an empty folder it names none. UID sets are never wrong (UIDs not there are skipped).
    pub fn names_messages(&self, set: &SequenceSet) -> bool {
        let len = self.uids.len() as u32;
        let known = |v: &SeqOrUid| match v {
            SeqOrUid::Value(n) => n.get() <= len,
            SeqOrUid::Asterisk => len > 0,
        };
        set.0.as_ref().iter().all(|seq| match seq {
            Sequence::Single(v) => known(v),
            Sequence::Range(x, y) => known(x) && known(y),
        })
    }

    /// Drops `gone` (UIDs that left the folder); the responses that tell it: EXPUNGE by
    /// sequence number, highest first (so the numbers of those still to come hold), or one
    /// VANISHED with the UIDs once QRESYNC is on (RFC 7162 3.2.10).
    pub fn forget(&mut self, gone: &[u32]) -> Vec<Data<'static>> {
        let mut seqs: Vec<NonZeroU32> = gone.iter().filter_map(|u| self.seq_of(*u)).collect();
        seqs.sort_unstable_by(|a, b| b.cmp(a));
        let here: Vec<u32> = gone.iter().copied().filter(|u| self.seq_of(*u).is_some()).collect();
        let gone: std::collections::HashSet<u32> = gone.iter().copied().collect();
        self.uids.retain(|u| !gone.contains(u));
        if self.qresync {
            return vanished(&here, false).into_iter().collect();
        }
        seqs.into_iter().map(Data::Expunge).collect()
    }

    pub fn seq_of(&self, uid: u32) -> Option<NonZeroU32> {
        let at = self.uids.binary_search(&uid).ok()?;
        NonZeroU32::new(at as u32 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(uids: Vec<u32>) -> View {
        View {
            mailbox: "a@x.test".into(),
            folder: Folder::Inbox,
            read_only: false,
            state: ImapFolder::default(),
            uids,
            recent: Vec::new(),
            keywords: Vec::new(),
            condstore: false,
            qresync: false,
        }
    }

    #[test]
    fn sets_resolve_by_sequence_number_and_by_uid() {
        let v = view(vec![3, 5, 9, 10]);
        let set = |s: &str| SequenceSet::try_from(s).expect("set"); // ok: test
        assert_eq!(v.resolve(&set("1:2,4"), false), vec![0, 1, 3]);
        assert_eq!(v.resolve(&set("*"), false), vec![3]);
        assert_eq!(v.resolve(&set("4:*"), true), vec![1, 2, 3]);
        assert_eq!(v.resolve(&set("6:8"), true), Vec::<usize>::new());
        assert_eq!(v.resolve(&set("20:*"), true), vec![3], "a range with * holds the last");
        assert_eq!(v.resolve(&set("9:100"), false), Vec::<usize>::new());
    }

    #[test]
    fn sequence_numbers_past_the_last_message_name_none() {
        let set = |s: &str| SequenceSet::try_from(s).expect("set"); // ok: test
        let v = view(vec![3, 5]);
        assert!(v.names_messages(&set("1:2,*")) && v.names_messages(&set("2:*")));
        assert!(!v.names_messages(&set("3")) && !v.names_messages(&set("1:3")));
        assert!(!v.names_messages(&set("3:*")), "3:* is 2:3");
        assert!(!view(Vec::new()).names_messages(&set("1:*")));
        assert!(!view(Vec::new()).names_messages(&set("*")));
    }

    #[test]
    fn adopting_new_uids_announces_expunges_highest_first_then_exists() {
        let mut v = view(vec![1, 2, 3, 4]);
        let out = v.adopt(vec![1, 3, 5]);
        let text = format!("{out:?}");
        assert_eq!(out.len(), 3, "{text}");
        assert!(matches!(out[0], Data::Expunge(n) if n.get() == 4), "{text}");
        assert!(matches!(out[1], Data::Expunge(n) if n.get() == 2), "{text}");
        assert!(matches!(out[2], Data::Exists(3)), "{text}");
    }
}
