//! FETCH: the items asked for, message by message, read from the store in chunks and written
//! out chunk by chunk, so a fetch of a large folder holds one chunk in memory. A BODY[...] or
//! RFC822 fetch (not .PEEK) marks the message \Seen, as RFC 9051 asks.

use std::collections::HashSet;

use imap_types::core::{IString, Literal, LiteralMode, NString, NString8, Tag};
use imap_types::datetime::DateTime;
use imap_types::extensions::binary::Literal8;
use imap_types::fetch::{MacroOrMessageDataItemNames, MessageDataItem, MessageDataItemName};
use imap_types::response::{Code, Data, Status, StatusKind};
use imap_types::sequence::SequenceSet;
use mail_parser::Message;

use super::binary::{Undecodable, binary};
use super::conn::{Conn, ConnError};
use super::envelope::envelope;
use super::message::CHUNK;
use super::message::{Loaded, load};
use super::names::nonzero;
use super::reply::INVALID_SET;
use super::reply::{bad, failed, flags_fetch, ok, status};
use super::section::{extract, header_block, text};
use super::session::Session;
use super::structure::{basic, body_structure};

/// The items asked for, each once, in the order first asked: `FLAGS FLAGS` answers one FLAGS,
/// and BODY.PEEK[s] beside BODY[s] (BINARY.PEEK[s] beside BINARY[s]) would answer BODY[s] twice,
/// so the peek goes.
fn unique(items: Vec<MessageDataItemName<'static>>) -> Vec<MessageDataItemName<'static>> {
    // The peeking twins of the items that mark \Seen.
    let twins: HashSet<_> = items
        .iter()
        .filter_map(|i| match i {
            MessageDataItemName::BodyExt { section, partial, peek: false } => {
                Some(MessageDataItemName::BodyExt {
                    section: section.clone(),
                    partial: *partial,
                    peek: true,
                })
            }
            MessageDataItemName::Binary { section, partial, peek: false } => {
                Some(MessageDataItemName::Binary {
                    section: section.clone(),
                    partial: *partial,
                    peek: true,
                })
            }
            _ => None,
        })
        .collect();
    let mut seen = HashSet::with_capacity(items.len());
    items.into_iter().filter(|i| !twins.contains(i) && seen.insert(i.clone())).collect()
}

/// Whether an item needs the message's bytes.
fn needs_bytes(item: &MessageDataItemName<'_>) -> bool {
    !matches!(
        item,
        MessageDataItemName::Flags | MessageDataItemName::Uid | MessageDataItemName::InternalDate
    )
}

/// Whether fetching the item marks the message \Seen.
fn marks_seen(item: &MessageDataItemName<'_>) -> bool {
    matches!(
        item,
        MessageDataItemName::BodyExt { peek: false, .. }
            | MessageDataItemName::Binary { peek: false, .. }
            | MessageDataItemName::Rfc822
            | MessageDataItemName::Rfc822Text
    )
}

fn literal(bytes: Vec<u8>) -> NString<'static> {
    let bytes = match Literal::try_from(bytes) {
        Ok(l) => return NString(Some(IString::Literal(l))),
        // NUL is the one byte a literal cannot carry.
        Err(_) => Vec::new(),
    };
    NString(Some(IString::Literal(Literal::unvalidated(bytes))))
}

/// The INTERNALDATE of a message stored at `ms`: IMAP's date-time has no fraction of a second,
/// and imap-types refuses one, so the milliseconds are cut off (never the item).
fn internal_date(ms: u64) -> Option<DateTime> {
    let seconds = i64::try_from(ms / 1000).ok()?;
    let at = chrono::DateTime::from_timestamp(seconds, 0)?;
    DateTime::try_from(at.fixed_offset()).ok()
}

impl Session {
    pub(super) async fn fetch(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        set: &SequenceSet,
        names: MacroOrMessageDataItemNames<'static>,
        uid: bool,
        changed_since: Option<u64>,
    ) -> Result<Status<'static>, ConnError> {
        let mut items = match names {
            MacroOrMessageDataItemNames::Macro(m) => {
                m.expand().iter().map(imap_types::ToStatic::to_static).collect()
            }
            MacroOrMessageDataItemNames::MessageDataItemNames(items) => items,
        };
        items = unique(items);
        if uid && !items.contains(&MessageDataItemName::Uid) {
            items.insert(0, MessageDataItemName::Uid);
        }
        let Some(view) = self.view.as_ref() else { return Ok(bad(tag, "select a folder first")) };
        if !uid && !view.names_messages(set) {
            return Ok(bad(tag, INVALID_SET));
        }
        let bytes = items.iter().any(needs_bytes);
        let seen = !view.read_only && items.iter().any(marks_seen);
        if seen && !items.contains(&MessageDataItemName::Flags) {
            items.push(MessageDataItemName::Flags);
        }
        // MODSEQ is told after the other items (`resync`), not rendered from the message.
        let modseq = super::resync::tells_modseq(view, &mut items, changed_since);
        let (mailbox, folder) = (view.mailbox.clone(), view.folder);
        let wanted: Vec<u32> = view.resolve(set, uid).iter().map(|p| view.uids[*p]).collect();
        for chunk in wanted.chunks(CHUNK) {
            let uids = chunk.to_vec();
            let mut loaded = match load(&self.deps.store, &mailbox, folder, uids, bytes).await {
                Ok(loaded) => loaded,
                Err(e) => return Ok(failed(tag, &e)),
            };
            if seen && let Err(e) = self.mark_seen(&mut loaded).await {
                return Ok(failed(tag, &e));
            }
            let Some(view) = self.view.as_mut() else { break };
            // A keyword another session set is told in FLAGS before a message shows it
            // (RFC 3501 7.2.6: the client learns the folder's flags there first).
            let mut new_keyword = false;
            for message in loaded.iter().filter(|_| items.contains(&MessageDataItemName::Flags)) {
                new_keyword |= view.learn(&message.entry.meta.flags);
            }
            if new_keyword {
                conn.enqueue_data(Data::Flags(view.flag_list()));
            }
            for message in &loaded {
                let Some(seq) = view.seq_of(message.entry.uid) else { continue };
                if !super::resync::changed(&message.entry.meta, changed_since) {
                    continue;
                }
                let recent = view.is_recent(message.entry.uid);
                let mut out = match render(message, &items, recent) {
                    Ok(out) => out,
                    Err(e) => return Ok(unknown_cte(tag, e)),
                };
                out.extend(modseq.then(|| super::condstore::modseq_item(&message.entry.meta)));
                if let Ok(items) = out.try_into() {
                    conn.enqueue_data(Data::Fetch { seq, items });
                }
            }
            conn.flush().await?;
        }
        Ok(ok(tag, "FETCH completed"))
    }

    async fn mark_seen(&self, loaded: &mut [Loaded]) -> crate::store::Result<()> {
        let Some(view) = self.view.as_ref() else { return Ok(()) };
        let mut writes = Vec::new();
        for l in loaded.iter_mut() {
            if !l.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Seen")) {
                l.entry.meta.flags.push("\\Seen".to_owned());
                writes.push((l.entry.id.clone(), l.entry.meta.flags.clone()));
            }
        }
        if writes.is_empty() {
            return Ok(());
        }
        let (m, f) = (view.mailbox.clone(), view.folder);
        self.deps
            .store
            .write(move |w| -> crate::store::Result<()> {
                writes
                    .into_iter()
                    .try_for_each(|(id, flags)| w.imap_store_flags(&m, f, &id, flags).map(|_| ()))
            })
            .await
    }
}

/// The NO of a BINARY fetch of a part that cannot be decoded (RFC 3516 4.3).
fn unknown_cte(tag: &Tag<'static>, e: Undecodable) -> Status<'static> {
    let text = match e {
        Undecodable::Unknown(cte) => format!("unknown content-transfer-encoding {cte}"),
        Undecodable::Corrupt => "the part does not decode".to_owned(),
    };
    status(tag, StatusKind::No, Some(Code::UnknownCte), &text)
}

/// A BINARY item's value: a literal, or a literal8 for bytes a literal cannot carry (NUL).
fn literal8(bytes: Vec<u8>) -> NString8<'static> {
    if bytes.contains(&0) {
        return NString8::Literal8(Literal8 { data: bytes.into(), mode: LiteralMode::Sync });
    }
    NString8::NString(literal(bytes))
}

/// The FETCH items of one message; a BINARY item of a part that cannot be decoded fails them.
fn render(
    message: &Loaded,
    names: &[MessageDataItemName<'static>],
    recent: bool,
) -> Result<Vec<MessageDataItem<'static>>, Undecodable> {
    let raw: &[u8] = message.raw.as_deref().map_or(&[], Vec::as_slice);
    // Bounded before parsing (`mime`): a stored message may nest without end.
    let bounded = names
        .iter()
        .any(|n| {
            !matches!(
                n,
                MessageDataItemName::Flags
                    | MessageDataItemName::Uid
                    | MessageDataItemName::InternalDate
                    | MessageDataItemName::Rfc822Size
                    | MessageDataItemName::Rfc822
            )
        })
        .then(|| crate::mime::bound(raw));
    let parsed: Option<Message<'_>> = bounded.as_ref().and_then(|b| b.parse());
    let meta = &message.entry.meta;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let item = match name {
            MessageDataItemName::Uid => MessageDataItem::Uid(nonzero(message.entry.uid)),
            MessageDataItemName::Flags => MessageDataItem::Flags(flags_fetch(&meta.flags, recent)),
            MessageDataItemName::InternalDate => match internal_date(meta.internal) {
                Some(d) => MessageDataItem::InternalDate(d),
                None => continue,
            },
            MessageDataItemName::Rfc822Size => MessageDataItem::Rfc822Size(raw.len() as u32),
            MessageDataItemName::Rfc822 => MessageDataItem::Rfc822(literal(raw.to_vec())),
            MessageDataItemName::Binary { section, partial, .. } => {
                let Some(p) = parsed.as_ref() else { continue };
                // imap-types has no origin for a BINARY item: a partial one is answered as
                // RFC 3516's grammar writes it, `BINARY[section]` without `<origin>`.
                let data = cut(binary(p, section)?, *partial);
                MessageDataItem::Binary { section: section.clone(), value: literal8(data) }
            }
            MessageDataItemName::BinarySize { section } => {
                let Some(p) = parsed.as_ref() else { continue };
                let size = binary(p, section)?.len() as u32;
                MessageDataItem::BinarySize { section: section.clone(), size }
            }
            _ => match parsed.as_ref() {
                Some(p) => match parsed_item(p, name) {
                    Some(item) => item,
                    None => continue,
                },
                None => continue,
            },
        };
        out.push(item);
    }
    Ok(out)
}

/// The `<start.length>` cut of `data`.
fn cut(mut data: Vec<u8>, partial: Option<(u32, std::num::NonZeroU32)>) -> Vec<u8> {
    if let Some((start, len)) = partial {
        let from = (start as usize).min(data.len());
        let to = from.saturating_add(len.get() as usize).min(data.len());
        data.truncate(to);
        data.drain(..from);
    }
    data
}

/// An item read from the parsed message.
fn parsed_item(
    m: &Message<'_>,
    name: &MessageDataItemName<'static>,
) -> Option<MessageDataItem<'static>> {
    Some(match name {
        MessageDataItemName::Envelope => MessageDataItem::Envelope(envelope(m)),
        MessageDataItemName::BodyStructure => MessageDataItem::BodyStructure(body_structure(m)),
        MessageDataItemName::Body => MessageDataItem::Body(basic(body_structure(m))),
        MessageDataItemName::Rfc822Header => {
            MessageDataItem::Rfc822Header(literal(header_block(m).to_vec()))
        }
        MessageDataItemName::Rfc822Text => MessageDataItem::Rfc822Text(literal(text(m).to_vec())),
        MessageDataItemName::BodyExt { section, partial, .. } => {
            let data = cut(extract(m, section.as_ref()), *partial);
            let origin = partial.map(|(start, _)| start);
            MessageDataItem::BodyExt { section: section.clone(), origin, data: literal(data) }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_asked_twice_are_answered_once() {
        use MessageDataItemName::{BodyExt, Flags, Uid};
        let body = |peek| BodyExt { section: None, partial: None, peek };
        let got = unique(vec![Flags, Uid, Flags, body(true), body(false), Uid, body(true)]);
        assert_eq!(got, vec![Flags, Uid, body(false)]);
        let bin = |peek| MessageDataItemName::Binary { section: vec![], partial: None, peek };
        assert_eq!(unique(vec![bin(true), bin(false), bin(true)]), vec![bin(false)]);
    }

    #[test]
    fn internal_dates_with_milliseconds_are_shown_to_the_second() {
        let at = 1_764_150_000_123;
        let date = internal_date(at).expect("a date"); // ok: test
        assert_eq!(date.as_ref().timestamp_millis(), 1_764_150_000_000);
    }
}
