//! SORT (RFC 5256) and SORT=DISPLAY (RFC 5957): the messages a search finds (`search`, with its
//! chunks and budget), ordered by the keys given, ties by sequence number. The keys are read
//! from each message's header on the thread that matched it (`sortable`); sorting the fields
//! of a folder is a comparison sort over what the folder holds.

use std::cmp::Ordering;
use std::num::NonZeroU32;

use imap_types::core::{Charset, Tag, Vec1};
use imap_types::extensions::sort::{SortCriterion, SortKey};
use imap_types::response::{Data, Status};
use imap_types::search::SearchKey;

use super::conn::{Conn, ConnError};
use super::reply::ok;
use super::session::Session;
use super::sortable::{Sortable, read};

impl Session {
    pub(super) async fn sort(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        order: &Vec1<SortCriterion>,
        charset: &Charset<'static>,
        criteria: &Vec1<SearchKey<'static>>,
        uid: bool,
    ) -> Result<Status<'static>, ConnError> {
        let mut found = match self.matching(tag, Some(charset), criteria.as_ref(), true, read).await
        {
            Ok(found) => found,
            Err(refused) => return Ok(refused),
        };
        sort(&mut found, order.as_ref());
        let numbers = found.iter().map(|s| if uid { s.uid } else { s.seq });
        conn.enqueue_data(Data::Sort(numbers.filter_map(NonZeroU32::new).collect(), None));
        Ok(ok(tag, "SORT completed"))
    }
}

/// Orders `messages` by `order`, then by sequence number.
pub fn sort(messages: &mut [Sortable], order: &[SortCriterion]) {
    messages.sort_by(|a, b| {
        order
            .iter()
            .map(|c| {
                let o = compare(a, b, &c.key);
                if c.reverse { o.reverse() } else { o }
            })
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.seq.cmp(&b.seq))
    });
}

fn compare(a: &Sortable, b: &Sortable, key: &SortKey) -> Ordering {
    match key {
        SortKey::Arrival => a.arrival.cmp(&b.arrival),
        SortKey::Cc => a.cc.cmp(&b.cc),
        SortKey::Date => a.sent.cmp(&b.sent),
        SortKey::From => a.from.cmp(&b.from),
        SortKey::Size => a.size.cmp(&b.size),
        SortKey::Subject => a.subject.cmp(&b.subject),
        SortKey::To => a.to.cmp(&b.to),
        SortKey::DisplayFrom => a.display_from.cmp(&b.display_from),
        SortKey::DisplayTo => a.display_to.cmp(&b.display_to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: u32, subject: &str, size: u64) -> Sortable {
        Sortable { seq, uid: seq * 10, subject: subject.into(), size, ..Sortable::default() }
    }

    fn by(key: SortKey, reverse: bool) -> SortCriterion {
        SortCriterion { reverse, key }
    }

    #[test]
    fn keys_chain_and_ties_go_by_sequence_number() {
        let mut m = vec![message(1, "B", 5), message(2, "A", 5), message(3, "B", 9)];
        sort(&mut m, &[by(SortKey::Subject, false)]);
        assert_eq!(m.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 1, 3]);
        sort(&mut m, &[by(SortKey::Subject, false), by(SortKey::Size, true)]);
        assert_eq!(m.iter().map(|s| s.seq).collect::<Vec<_>>(), [2, 3, 1]);
        sort(&mut m, &[by(SortKey::Size, true)]);
        assert_eq!(m.iter().map(|s| s.seq).collect::<Vec<_>>(), [3, 1, 2]);
        sort(&mut m, &[by(SortKey::Arrival, true)]);
        assert_eq!(m.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2, 3], "REVERSE keeps ties");
    }
}
