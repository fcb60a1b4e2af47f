//! The commands that change the store: STORE (flags), EXPUNGE, COPY, MOVE and APPEND. Each
//! works through the selected folder in chunks, one store write per chunk.

use imap_types::core::{Tag, Vec1};
use imap_types::datetime::DateTime;
use imap_types::extensions::binary::LiteralOrLiteral8;
use imap_types::extensions::uidplus::{UidElement, UidSet};
use imap_types::flag::{Flag, StoreResponse, StoreType};
use imap_types::mailbox::Mailbox;
use imap_types::response::{Code, Data, Status, StatusKind};
use imap_types::sequence::SequenceSet;

use super::conn::Conn;
use super::message::CHUNK;
use super::message::{appended, load};
use super::names::{nonzero, resolve};
use super::reply::INVALID_SET;
use super::reply::{bad, failed, no, ok, over_quota, status, storable};
use super::resync::stored_fetch;
use super::session::Session;
use crate::inbound::learn;
use crate::store::{Folder, SentCopy};

/// The flags after a STORE of `kind` with `given`.
fn apply(current: &[String], kind: StoreType, given: &[String]) -> Vec<String> {
    let has = |list: &[String], f: &str| list.iter().any(|x| x.eq_ignore_ascii_case(f));
    match kind {
        StoreType::Replace => given.to_vec(),
        StoreType::Add => {
            let mut out = current.to_vec();
            out.extend(given.iter().filter(|f| !has(current, f)).cloned());
            out
        }
        StoreType::Remove => current.iter().filter(|f| !has(given, f)).cloned().collect(),
    }
}

impl Session {
    pub(super) async fn store_flags(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        set: &SequenceSet,
        (kind, response, unchanged_since): (StoreType, StoreResponse, Option<u64>),
        flags: &[Flag<'static>],
        uid: bool,
    ) -> Status<'static> {
        let Some(view) = self.view.as_mut() else { return bad(tag, "select a folder first") };
        if view.read_only {
            return no(tag, "the folder is read-only (EXAMINE)");
        }
        if !uid && !view.names_messages(set) {
            return bad(tag, INVALID_SET);
        }
        let given = storable(flags);
        // A keyword new to the folder is announced before the messages that carry it.
        if kind != StoreType::Remove && view.learn(&given) {
            conn.enqueue_data(Data::Flags(view.flag_list()));
        }
        let (mailbox, f) = (view.mailbox.clone(), view.folder);
        let positions = view.resolve(set, uid);
        let mut modified = Vec::new();
        for chunk in positions.chunks(CHUNK) {
            let uids: Vec<u32> = chunk.iter().map(|p| view.uids[*p]).collect();
            let loaded = match load(&self.deps.store, &mailbox, f, uids, false).await {
                Ok(loaded) => loaded,
                Err(e) => return failed(tag, &e),
            };
            let changes: Vec<(String, u32, Vec<String>)> = loaded
                .into_iter()
                .map(|l| {
                    let flags = apply(&l.entry.meta.flags, kind, &given);
                    (l.entry.id, l.entry.uid, flags)
                })
                .collect();
            let (m, writes) = (mailbox.clone(), changes.clone());
            let written = self
                .deps
                .store
                .write(move |w| -> crate::store::Result<Vec<Option<u64>>> {
                    let since = unchanged_since;
                    let set = |(id, _, flags): (String, u32, Vec<String>)| {
                        w.imap_store_flags_if(&m, f, &id, flags, since)
                    };
                    writes.into_iter().map(set).collect()
                })
                .await;
            let modseqs = match written {
                Ok(modseqs) => modseqs,
                Err(e) => return failed(tag, &e),
            };
            // Keywords another session set, shown now, are told in FLAGS first.
            let mut new_keyword = false;
            for (_, _, flags) in &changes {
                new_keyword |= view.learn(flags);
            }
            if new_keyword {
                conn.enqueue_data(Data::Flags(view.flag_list()));
            }
            for ((_, u, flags), modseq) in changes.into_iter().zip(modseqs) {
                let Some(seq) = view.seq_of(u) else { continue };
                let Some(modseq) = modseq else {
                    // Changed since the client looked (UNCHANGEDSINCE): left as it is.
                    if unchanged_since.is_some() {
                        modified.push(if uid { u } else { seq.get() });
                    }
                    continue;
                };
                let shown = stored_fetch(view, (u, &flags, modseq), uid, response, unchanged_since);
                if let Some(items) = shown.and_then(|items| items.try_into().ok()) {
                    conn.enqueue_data(Data::Fetch { seq, items });
                }
            }
        }
        match super::condstore::uid_set(&modified) {
            Some(set) => {
                status(tag, StatusKind::Ok, Some(Code::Modified(set)), "conditional STORE")
            }
            None => ok(tag, "STORE completed"),
        }
    }

    /// Removes the messages marked \Deleted (of `only`, for UID EXPUNGE); the responses that
    /// announce it (EXPUNGE highest first, or VANISHED).
    pub(super) async fn expunge_marked(
        &mut self,
        only: Option<&SequenceSet>,
    ) -> crate::store::Result<Vec<Data<'static>>> {
        let Some(view) = self.view.as_mut() else { return Ok(Vec::new()) };
        let positions = match only {
            Some(set) => view.resolve(set, true),
            None => (0..view.uids.len()).collect(),
        };
        let mut doomed = Vec::new();
        for chunk in positions.chunks(CHUNK) {
            let uids: Vec<u32> = chunk.iter().map(|p| view.uids[*p]).collect();
            let loaded = load(&self.deps.store, &view.mailbox, view.folder, uids, false).await?;
            doomed.extend(
                loaded
                    .into_iter()
                    .filter(|l| {
                        l.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Deleted"))
                    })
                    .map(|l| (l.entry.id, l.entry.uid)),
            );
        }
        let mut gone = Vec::new();
        for chunk in doomed.chunks(CHUNK) {
            let (m, ids) = (view.mailbox.clone(), chunk.to_vec());
            let now = crate::ids::now_ms();
            self.deps
                .store
                .write(move |w| -> crate::store::Result<()> {
                    ids.iter().try_for_each(|(id, _)| w.imap_expunge(&m, id, now))
                })
                .await?;
            gone.extend(chunk.iter().map(|(_, uid)| *uid));
        }
        Ok(view.forget(&gone))
    }

    pub(super) async fn expunge(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        only: Option<&SequenceSet>,
    ) -> Status<'static> {
        if self.view.as_ref().is_some_and(|v| v.read_only) {
            return no(tag, "the folder is read-only (EXAMINE)");
        }
        match self.expunge_marked(only).await {
            Ok(seqs) => {
                seqs.into_iter().for_each(|d| conn.enqueue_data(d));
                // Then what other sessions removed, by the numbers the client now knows: a
                // client that expunges expects its view to be current when this completes.
                self.announce(conn).await;
                ok(tag, "EXPUNGE completed")
            }
            Err(e) => failed(tag, &e),
        }
    }

    /// The folder COPY, MOVE or APPEND puts mail into, or the NO (`[TRYCREATE]` for a name
    /// that names none, so the client may CREATE it and try again).
    async fn target(
        &self,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
    ) -> Result<Folder, Status<'static>> {
        let user = self.user.clone().unwrap_or_default();
        match resolve(&self.deps.store, &user, mailbox, self.utf8).await {
            Ok(Some(folder)) => Ok(folder),
            Ok(None) => Err(status(tag, StatusKind::No, Some(Code::TryCreate), "no such folder")),
            Err(e) => Err(failed(tag, &e)),
        }
    }

    /// COPY, or MOVE when `moving`.
    pub(super) async fn transfer(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        set: &SequenceSet,
        target: &Mailbox<'_>,
        uid: bool,
        moving: bool,
    ) -> Status<'static> {
        let to = match self.target(tag, target).await {
            Ok(to) => to,
            Err(no) => return no,
        };
        let Some(view) = self.view.as_ref() else { return bad(tag, "select a folder first") };
        if moving && view.read_only {
            return no(tag, "the folder is read-only (EXAMINE)");
        }
        if !uid && !view.names_messages(set) {
            return bad(tag, INVALID_SET);
        }
        let positions = view.resolve(set, uid);
        // A MOVE to the selected folder itself gives the messages new UIDs (RFC 6851 3.3).
        let result = if moving {
            self.move_to(&positions, to).await.map(|(seqs, code)| {
                // RFC 6851: the COPYUID of a MOVE comes untagged, before the expunges.
                if let Some(code) = code
                    && let Ok(line) = Status::ok(None, Some(code), "moved")
                {
                    conn.enqueue(line);
                }
                seqs.into_iter().for_each(|d| conn.enqueue_data(d));
                None
            })
        } else {
            match self.copy_to(&positions, to).await {
                Ok(None) => return over_quota(tag),
                done => done.map(Option::flatten),
            }
        };
        let code = match result {
            Ok(code) => code,
            Err(e) => return failed(tag, &e),
        };
        if self.view.as_ref().is_some_and(|v| v.folder == to) {
            self.announce(conn).await;
        }
        status(tag, StatusKind::Ok, code, if moving { "MOVE completed" } else { "COPY completed" })
    }

    /// Moves the messages at `positions` to `to`: the responses that tell they left here,
    /// and the COPYUID of the move.
    async fn move_to(
        &mut self,
        positions: &[usize],
        to: Folder,
    ) -> crate::store::Result<(Vec<Data<'static>>, Option<Code<'static>>)> {
        let Some(view) = self.view.as_mut() else { return Ok((Vec::new(), None)) };
        let mut moved = Vec::new();
        let mut pairs = Vec::new();
        let mut validity = 0;
        let mut lessons = Vec::new();
        for chunk in positions.chunks(CHUNK) {
            let uids: Vec<u32> = chunk.iter().map(|p| view.uids[*p]).collect();
            let loaded = load(&self.deps.store, &view.mailbox, view.folder, uids, false).await?;
            let m = view.mailbox.clone();
            let items: Vec<(u32, String)> =
                loaded.iter().map(|l| (l.entry.uid, l.entry.id.clone())).collect();
            lessons.extend(items.iter().map(|(_, id)| id.clone()));
            let now = crate::ids::now_ms();
            let (v, done) = self
                .deps
                .store
                .write(move |w| -> crate::store::Result<_> {
                    let validity = w.imap_open(&m, to, now)?.uid_validity;
                    let mut done = Vec::with_capacity(items.len());
                    for (uid, id) in &items {
                        done.push((*uid, w.imap_move(&m, id, to, now)?));
                    }
                    Ok((validity, done))
                })
                .await?;
            validity = v;
            moved.extend(done.iter().map(|(from, _)| *from));
            pairs.extend(done);
        }
        let from = view.folder;
        let answer = (view.forget(&moved), copy_uid(validity, &pairs));
        learn::moved(&self.deps.store, &self.deps.junk, &lessons, from, to).await;
        Ok(answer)
    }

    /// Copies the messages at `positions` to `to`; the COPYUID of the copy, `None` when the
    /// mailbox's quota has no room for them (checked chunk by chunk, as each is written).
    async fn copy_to(
        &mut self,
        positions: &[usize],
        to: Folder,
    ) -> crate::store::Result<Option<Option<Code<'static>>>> {
        let Some(view) = self.view.as_ref() else { return Ok(Some(None)) };
        let quota = self.deps.quota_bytes;
        let mut pairs = Vec::new();
        let mut validity = 0;
        // A copy into Junk (clients without MOVE copy, then expunge) teaches as a move does;
        // the lesson is recorded on the original.
        let mut lessons = Vec::new();
        for chunk in positions.chunks(CHUNK) {
            let uids: Vec<u32> = chunk.iter().map(|p| view.uids[*p]).collect();
            let loaded = load(&self.deps.store, &view.mailbox, view.folder, uids, true).await?;
            lessons.extend(loaded.iter().map(|l| l.entry.id.clone()));
            let copies: Vec<_> = loaded
                .into_iter()
                .filter_map(|l| {
                    let raw = l.raw?;
                    let email = appended(&raw, &view.mailbox, to, l.entry.meta.internal)?;
                    Some((l.entry.uid, email, raw, l.entry.meta.flags))
                })
                .collect();
            let now = crate::ids::now_ms();
            let m = view.mailbox.clone();
            let written = self
                .deps
                .store
                .write(move |w| -> crate::store::Result<_> {
                    if !w.has_room(&m, copies.iter().map(|c| c.1.summary.size).sum(), quota)? {
                        return Ok(None);
                    }
                    let validity = w.imap_open(&m, to, now)?.uid_validity;
                    let mut done = Vec::with_capacity(copies.len());
                    for (uid, email, raw, flags) in &copies {
                        done.push((*uid, w.imap_append(email, raw, flags.clone(), now)?));
                    }
                    Ok(Some((validity, done)))
                })
                .await?;
            let Some((v, done)) = written else { return Ok(None) };
            validity = v;
            pairs.extend(done);
        }
        learn::moved(&self.deps.store, &self.deps.junk, &lessons, view.folder, to).await;
        Ok(Some(copy_uid(validity, &pairs)))
    }

    pub(super) async fn append(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
        flags: Vec<Flag<'static>>,
        date: Option<DateTime>,
        message: LiteralOrLiteral8<'static>,
    ) -> Status<'static> {
        let to = match self.target(tag, mailbox).await {
            Ok(to) => to,
            Err(no) => return no,
        };
        let raw = match message {
            LiteralOrLiteral8::Literal(l) => l.data().to_vec(),
            // A part holding NUL is stored in base64 (RFC 3516 4.4 lets the server).
            LiteralOrLiteral8::Literal8(l) => {
                let data = l.data.into_owned();
                super::binary::storable(&data).unwrap_or(data)
            }
        };
        let now = crate::ids::now_ms();
        let at = date.map_or(now, |d| d.as_ref().timestamp_millis().max(0) as u64);
        let user = self.user.clone().unwrap_or_default();
        let Some(email) = appended(&raw, &user, to, at) else {
            return no(tag, "the message cannot be parsed");
        };
        let flags = storable(&flags);
        let quota = self.deps.quota_bytes;
        // Clients that save their own copy of what they just sent through us (Thunderbird,
        // Apple Mail) would leave two in Sent: the copy we keep is the one that stays.
        let sent_message = email.message_id.clone().filter(|_| to == Folder::Sent);
        let appended = self
            .deps
            .store
            .write(move |w| -> crate::store::Result<_> {
                let mailbox = &email.summary.mailbox;
                let kept = match &sent_message {
                    Some(message_id) => w.imap_sent_copy(mailbox, message_id, now)?,
                    None => SentCopy::Absent,
                };
                let uid = match kept {
                    SentCopy::InSent(uid) => Some(uid),
                    SentCopy::OnItsWay => None,
                    SentCopy::Absent => {
                        if !w.has_room(mailbox, email.summary.size, quota)? {
                            return Ok(None);
                        }
                        Some(w.imap_append(&email, &raw, flags, now)?)
                    }
                };
                let state = w.imap_open(mailbox, to, now)?;
                Ok(Some((uid, state.uid_validity)))
            })
            .await;
        let (uid, validity) = match appended {
            Ok(Some(done)) => done,
            Ok(None) => return over_quota(tag),
            Err(e) => return failed(tag, &e),
        };
        if self.view.as_ref().is_some_and(|v| v.folder == to) {
            self.announce(conn).await;
        }
        // No UID yet for a copy still on its way (it gets one in Sent once delivered).
        let code =
            uid.map(|uid| Code::AppendUid { uid_validity: nonzero(validity), uid: nonzero(uid) });
        status(tag, StatusKind::Ok, code, "APPEND completed")
    }
}

/// The COPYUID code (RFC 4315) of source and destination UIDs, in order; `None` when nothing
/// was copied.
fn copy_uid(validity: u32, pairs: &[(u32, u32)]) -> Option<Code<'static>> {
    // Runs of consecutive UIDs as ranges: both lists ascend, so the sets still pair up.
    let set = |uids: Vec<u32>| -> Option<UidSet> {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for u in uids {
            match runs.last_mut() {
                Some((_, end)) if *end + 1 == u => *end = u,
                _ => runs.push((u, u)),
            }
        }
        let elements: Vec<UidElement> = runs
            .into_iter()
            .map(|(a, b)| match a == b {
                true => UidElement::Single(nonzero(a)),
                false => UidElement::Range(nonzero(a), nonzero(b)),
            })
            .collect();
        Vec1::try_from(elements).ok().map(UidSet)
    };
    let source = set(pairs.iter().map(|p| p.0).collect())?;
    let destination = set(pairs.iter().map(|p| p.1).collect())?;
    Some(Code::CopyUid { uid_validity: nonzero(validity), source, destination })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_kinds_replace_add_and_remove_without_duplicates() {
        let cur = vec!["\\Seen".to_owned(), "work".to_owned()];
        let given = vec!["\\seen".to_owned(), "\\Flagged".to_owned()];
        assert_eq!(apply(&cur, StoreType::Add, &given), vec!["\\Seen", "work", "\\Flagged"]);
        assert_eq!(apply(&cur, StoreType::Remove, &given), vec!["work"]);
        assert_eq!(apply(&cur, StoreType::Replace, &given), given);
    }
}
