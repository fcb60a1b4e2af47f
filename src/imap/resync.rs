//! ENABLE (RFC 5161) and what CONDSTORE and QRESYNC (RFC 7162) add to the commands: a SELECT
//! that catches up (`QRESYNC (uidvalidity modseq [known-uids])`: VANISHED (EARLIER) for what
//! left the folder, FETCH for what changed), UID FETCH (CHANGEDSINCE n VANISHED), and the
//! answers of STORE (UNCHANGEDSINCE n). A catch-up reads the folder's change log and vanished
//! record from the client's mod-sequence on: it costs the changes, not the folder.

use imap_types::command::SelectParameter;
use imap_types::core::Tag;
use imap_types::extensions::enable::CapabilityEnable;
use imap_types::extensions::utf8::Utf8Kind;
use imap_types::fetch::{MessageDataItem, MessageDataItemName};
use imap_types::flag::StoreResponse;
use imap_types::response::{Data, Status};
use imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

use super::condstore::{modseq_item, modseq_of, vanished};
use super::conn::Conn;
use super::names::nonzero;
use super::reply::{flags_fetch, ok};
use super::session::Session;
use super::view::View;
use crate::store::ImapMeta;

/// UIDs a catch-up from before the vanished record's horizon looks through at most: past
/// it, the client is told its cache is too old in the usual way (it sees EXISTS and fetches).
const MAX_FALLBACK_UIDS: u32 = 1_000_000;

impl Session {
    /// ENABLE: CONDSTORE, QRESYNC (which implies CONDSTORE) and UTF8=ACCEPT; others are
    /// ignored, as RFC 5161 asks. `* ENABLED` lists what this command turned on.
    pub(super) fn enable(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        asked: &[CapabilityEnable<'static>],
    ) -> Status<'static> {
        let mut enabled = Vec::new();
        for cap in asked {
            let turned_on = match cap {
                CapabilityEnable::CondStore => !std::mem::replace(&mut self.condstore, true),
                CapabilityEnable::Utf8(Utf8Kind::Accept) => {
                    !std::mem::replace(&mut self.utf8, true)
                }
                CapabilityEnable::Other(_) if cap.to_string().eq_ignore_ascii_case("QRESYNC") => {
                    self.condstore = true;
                    !std::mem::replace(&mut self.qresync, true)
                }
                _ => false,
            };
            if turned_on {
                enabled.push(cap.clone());
            }
        }
        self.follow_modes();
        conn.enqueue_data(Data::Enabled { capabilities: enabled });
        ok(tag, "ENABLE completed")
    }

    /// Turns CONDSTORE on for a command that uses it (RFC 7162 3.1: a CONDSTORE enabling
    /// command), so FETCH responses with FLAGS carry MODSEQ from now on.
    pub(super) fn condstore_on(&mut self) {
        self.condstore = true;
        self.follow_modes();
    }

    /// Gives the selected folder's view the session's modes.
    pub(super) fn follow_modes(&mut self) {
        if let Some(view) = self.view.as_mut() {
            view.condstore = self.condstore;
            view.qresync = self.qresync;
        }
    }

    /// UID FETCH (CHANGEDSINCE n VANISHED): the UIDs of `set` that left the folder after `n`,
    /// as `VANISHED (EARLIER)`, before the FETCH responses.
    pub(super) async fn fetch_vanished(&self, conn: &mut Conn, set: &SequenceSet, since: u64) {
        let Some(view) = self.view.as_ref() else { return };
        let (m, f) = (view.mailbox.clone(), view.folder);
        let gone = self.deps.store.read_long(move |r| r.imap_vanished(&m, f, since)).await;
        let gone = match gone {
            Ok(Some(gone)) => gone,
            Ok(None) => absent(view, Some(set)),
            Err(e) => {
                tracing::warn!(error = %e, "imap: vanished record");
                return;
            }
        };
        let last = view.state.uid_next.saturating_sub(1);
        let asked: Vec<u32> = gone.into_iter().filter(|u| in_uid_set(set, *u, last)).collect();
        if let Some(data) = vanished(&asked, true) {
            conn.enqueue_data(data);
        }
    }
}

/// Whether a FETCH's responses carry MODSEQ: asked for, or CHANGEDSINCE given, or FLAGS
/// fetched once CONDSTORE is on (RFC 7162 3.1.4). Takes MODSEQ out of `items`: it is told
/// after the others, from the message's bookkeeping.
pub fn tells_modseq(
    view: &View,
    items: &mut Vec<MessageDataItemName<'static>>,
    changed_since: Option<u64>,
) -> bool {
    let asked = items.contains(&MessageDataItemName::ModSeq);
    items.retain(|i| *i != MessageDataItemName::ModSeq);
    let flags = items.contains(&MessageDataItemName::Flags);
    asked || changed_since.is_some() || (view.condstore && flags)
}

/// Whether a message passes a FETCH's CHANGEDSINCE (none given: every message does).
pub fn changed(meta: &ImapMeta, changed_since: Option<u64>) -> bool {
    changed_since.is_none_or(|n| modseq_of(meta) > n)
}

/// The QRESYNC parameter of a SELECT: (uidvalidity, mod-sequence, known UIDs).
pub fn qresync_of(params: &[SelectParameter]) -> Option<(u32, u64, Option<SequenceSet>)> {
    params.iter().find_map(|p| match p {
        SelectParameter::QResync { uid_validity, mod_sequence_value, known_uids, .. } => {
            Some((uid_validity.get(), mod_sequence_value.get(), known_uids.clone()))
        }
        SelectParameter::CondStore => None,
    })
}

/// What a SELECT (QRESYNC (...)) tells a client that last saw mod-sequence `since`: VANISHED
/// (EARLIER) for the UIDs (of `known`, when given) that left since, then a FETCH of flags and
/// mod-sequence for each message changed or arrived since. The sequence-match data is not
/// needed: the vanished record is exact back to its horizon.
pub async fn catch_up(
    store: &crate::store::Store,
    view: &View,
    since: u64,
    known: Option<&SequenceSet>,
) -> crate::store::Result<Vec<Data<'static>>> {
    let (m, f) = (view.mailbox.clone(), view.folder);
    let (gone, entries) = store
        .read_long(move |r| -> crate::store::Result<_> {
            let gone = r.imap_vanished(&m, f, since)?;
            let changed = r.imap_flag_changes(&m, f, since)?;
            Ok((gone, r.imap_entries(&m, f, &changed)?))
        })
        .await?;
    let gone = gone.unwrap_or_else(|| absent(view, known));
    let last = view.state.uid_next.saturating_sub(1);
    let gone: Vec<u32> = gone
        .into_iter()
        .filter(|u| view.seq_of(*u).is_none())
        .filter(|u| known.is_none_or(|set| in_uid_set(set, *u, last)))
        .collect();
    let mut out: Vec<Data<'static>> = vanished(&gone, true).into_iter().collect();
    let mut entries = entries;
    entries.sort_by_key(|e| e.uid);
    for e in entries {
        let Some(seq) = view.seq_of(e.uid) else { continue };
        let items = vec![
            MessageDataItem::Uid(nonzero(e.uid)),
            MessageDataItem::Flags(flags_fetch(&e.meta.flags, view.is_recent(e.uid))),
            modseq_item(&e.meta),
        ];
        if let Ok(items) = items.try_into() {
            out.push(Data::Fetch { seq, items });
        }
    }
    Ok(out)
}

/// The UIDs of `known` (every UID below UIDNEXT when not given) that are not in the folder:
/// what a catch-up from before the vanished record's horizon may answer (RFC 7162 3.2.5.1).
fn absent(view: &View, known: Option<&SequenceSet>) -> Vec<u32> {
    let last = view.state.uid_next.saturating_sub(1);
    let first = last.saturating_sub(MAX_FALLBACK_UIDS).max(1);
    (first..=last)
        .filter(|u| view.seq_of(*u).is_none())
        .filter(|u| known.is_none_or(|set| in_uid_set(set, *u, last)))
        .collect()
}

/// Whether `uid` is in the UID set (`*` standing for `last`).
fn in_uid_set(set: &SequenceSet, uid: u32, last: u32) -> bool {
    let value = |v: &SeqOrUid| match v {
        SeqOrUid::Value(n) => n.get(),
        SeqOrUid::Asterisk => last,
    };
    set.0.as_ref().iter().any(|s| match s {
        Sequence::Single(v) => value(v) == uid,
        Sequence::Range(a, b) => {
            let (a, b) = (value(a), value(b));
            a.min(b) <= uid && uid <= a.max(b)
        }
    })
}

/// The FETCH a STORE answers for one message it changed (UID, new flags, new mod-sequence):
/// FLAGS (with MODSEQ once CONDSTORE is on) unless .SILENT; with UNCHANGEDSINCE, the MODSEQ
/// is told even when silent (RFC 7162 3.1.3).
pub fn stored_fetch(
    view: &View,
    (uid, flags, modseq): (u32, &[String], u64),
    by_uid: bool,
    response: StoreResponse,
    unchanged_since: Option<u64>,
) -> Option<Vec<MessageDataItem<'static>>> {
    let silent = response == StoreResponse::Silent;
    if silent && unchanged_since.is_none() {
        return None;
    }
    let mut items = Vec::new();
    if !silent {
        items.push(MessageDataItem::Flags(flags_fetch(flags, view.is_recent(uid))));
    }
    if by_uid {
        items.push(MessageDataItem::Uid(nonzero(uid)));
    }
    if view.condstore || unchanged_since.is_some() {
        let meta = ImapMeta { modseq, ..Default::default() };
        items.push(modseq_item(&meta));
    }
    Some(items)
}
