//! The pieces of CONDSTORE and QRESYNC (RFC 7162) every command shares: a message's
//! mod-sequence as the client sees it, and UID sets as VANISHED and `[MODIFIED]` carry them.
//! The commands themselves are in `resync`.

use std::num::{NonZeroU32, NonZeroU64};

use imap_types::core::Vec1;
use imap_types::fetch::MessageDataItem;
use imap_types::response::Data;
use imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

use crate::store::ImapMeta;

/// The mod-sequence of a message: the folder change at which it arrived or its flags last
/// changed. A message untouched since before mod-sequences were kept has 0 stored, and is
/// shown as 1, older than any change a client can have seen.
pub fn modseq_of(meta: &ImapMeta) -> u64 {
    meta.modseq.max(1)
}

/// The MODSEQ item of a FETCH response.
pub fn modseq_item(meta: &ImapMeta) -> MessageDataItem<'static> {
    MessageDataItem::ModSeq(highest(modseq_of(meta)))
}

/// A mod-sequence as the protocol carries it (at least 1: RFC 7162 has no mod-sequence 0);
/// a folder's HIGHESTMODSEQ is its change counter.
pub fn highest(changes: u64) -> NonZeroU64 {
    NonZeroU64::new(changes).unwrap_or(NonZeroU64::MIN)
}

/// `uids` (any order, repeats allowed) as a compact set of ranges; none when empty.
pub fn uid_set(uids: &[u32]) -> Option<SequenceSet> {
    let mut sorted: Vec<u32> = uids.iter().copied().filter(|u| *u > 0).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<Sequence> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        i += 1;
        let (a, b) = (NonZeroU32::new(start)?, NonZeroU32::new(end)?);
        out.push(match a == b {
            true => Sequence::Single(SeqOrUid::Value(a)),
            false => Sequence::Range(SeqOrUid::Value(a), SeqOrUid::Value(b)),
        });
    }
    Vec1::try_from(out).ok().map(SequenceSet)
}

/// `* VANISHED [(EARLIER)] uids`, when any.
pub fn vanished(uids: &[u32], earlier: bool) -> Option<Data<'static>> {
    uid_set(uids).map(|known_uids| Data::Vanished { earlier, known_uids })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_sets_are_written_as_ranges() {
        let set = uid_set(&[9, 3, 4, 5, 7, 4]).expect("a set"); // ok: test
        assert_eq!(set, SequenceSet::try_from("3:5,7,9").expect("set")); // ok: test
        assert!(uid_set(&[]).is_none());
    }
}
