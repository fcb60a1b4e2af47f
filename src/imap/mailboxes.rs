//! The commands that open or look into one folder: SELECT, EXAMINE, STATUS; and NAMESPACE.

use imap_types::command::SelectParameter;
use imap_types::core::{IString, QuotedChar, Tag};
use imap_types::extensions::namespace::Namespace;
use imap_types::flag::FlagPerm;
use imap_types::mailbox::Mailbox;
use imap_types::response::{Code, Data, Status, StatusKind};
use imap_types::status::{StatusDataItem, StatusDataItemName};

use super::conn::Conn;
use super::message::{CHUNK, load};
use super::names::{nonzero, resolve};
use super::reply::{failed, ok, status};
use super::session::Session;
use super::view::View;

impl Session {
    pub fn namespace(&self, conn: &mut Conn, tag: &Tag<'static>) -> Status<'static> {
        let personal = Namespace {
            prefix: IString::try_from("").unwrap_or_else(|_| unreachable!()), // ok: empty quoted
            delimiter: Some(QuotedChar::unvalidated(crate::store::DELIMITER)),
            extensions: Vec::new(),
        };
        conn.enqueue_data(Data::Namespace {
            personal: vec![personal],
            other: vec![],
            shared: vec![],
        });
        ok(tag, "NAMESPACE completed")
    }

    pub async fn select(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
        read_only: bool,
        params: &[SelectParameter],
    ) -> Status<'static> {
        // RFC 7162 3.2.11: what follows is about the folder selected now.
        if self.view.take().is_some() {
            conn.enqueue(untagged_ok(Code::Closed));
        }
        let qresync = super::resync::qresync_of(params);
        if qresync.is_some() && !self.qresync {
            return super::reply::bad(tag, "ENABLE QRESYNC first");
        }
        if !params.is_empty() {
            self.condstore_on();
        }
        let user = self.user.clone().unwrap_or_default();
        let folder = match resolve(&self.deps.store, &user, mailbox, self.utf8).await {
            Ok(Some(folder)) => folder,
            Ok(None) => return nonexistent(tag),
            Err(e) => return failed(tag, &e),
        };
        let mut view = match View::open(&self.deps.store, &user, folder, read_only).await {
            Ok(view) => view,
            Err(e) => return failed(tag, &e),
        };
        (view.condstore, view.qresync) = (self.condstore, self.qresync);
        if let Err(e) = view.read_keywords(&self.deps.store).await {
            return failed(tag, &e);
        }
        let flags = view.flag_list();
        conn.enqueue_data(Data::Flags(flags.clone()));
        conn.enqueue_data(Data::Exists(view.uids.len() as u32));
        conn.enqueue_data(Data::Recent(view.recent.len() as u32));
        let mut perm: Vec<FlagPerm<'static>> = flags.into_iter().map(FlagPerm::Flag).collect();
        perm.push(FlagPerm::Asterisk);
        let codes = [
            Code::UidValidity(nonzero(view.state.uid_validity)),
            Code::UidNext(nonzero(view.state.uid_next)),
            Code::PermanentFlags(if read_only { Vec::new() } else { perm }),
            Code::HighestModSeq(super::condstore::highest(view.state.changes)),
        ];
        for code in codes {
            conn.enqueue(untagged_ok(code));
        }
        // IMAP4rev1 clients learn the first unseen message here (RFC 3501 6.3.1).
        let (m, f) = (view.mailbox.clone(), view.folder);
        match self.deps.store.read_long(move |r| r.imap_first_unseen(&m, f)).await {
            Ok(Some(uid)) => {
                if let Ok(at) = view.uids.binary_search(&uid) {
                    conn.enqueue(untagged_ok(Code::Unseen(nonzero(at as u32 + 1))));
                }
            }
            Ok(None) => {}
            Err(e) => return failed(tag, &e),
        }
        // QRESYNC: what changed since the client's mod-sequence, when its UIDs still hold.
        if let Some((_, since, known)) = qresync.filter(|q| q.0 == view.state.uid_validity) {
            match super::resync::catch_up(&self.deps.store, &view, since, known.as_ref()).await {
                Ok(news) => news.into_iter().for_each(|d| conn.enqueue_data(d)),
                Err(e) => return failed(tag, &e),
            }
        }
        self.view = Some(view);
        let (code, text) = if read_only {
            (Code::ReadOnly, "EXAMINE completed")
        } else {
            (Code::ReadWrite, "SELECT completed")
        };
        status(tag, StatusKind::Ok, Some(code), text)
    }

    pub async fn status_of(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
        names: &[StatusDataItemName],
    ) -> Status<'static> {
        let user = self.user.clone().unwrap_or_default();
        let folder = match resolve(&self.deps.store, &user, mailbox, self.utf8).await {
            Ok(Some(folder)) => folder,
            Ok(None) => return nonexistent(tag),
            Err(e) => return failed(tag, &e),
        };
        let view = match View::open(&self.deps.store, &user, folder, true).await {
            Ok(view) => view,
            Err(e) => return failed(tag, &e),
        };
        let unseen = match names.contains(&StatusDataItemName::Unseen) {
            true => match super::search::count_unseen(&self.deps.store, &view).await {
                Ok(n) => n,
                Err(e) => return failed(tag, &e),
            },
            false => 0,
        };
        let bytes = names.iter().any(|n| COUNTED[0..2].contains(n));
        let counts = match names.iter().any(|n| COUNTED.contains(n)) {
            true => match counts(&self.deps.store, &view, bytes).await {
                Ok(counts) => counts,
                Err(e) => return failed(tag, &e),
            },
            false => Counts::default(),
        };
        let items: Vec<StatusDataItem> = names
            .iter()
            .map(|n| match n {
                StatusDataItemName::Messages => StatusDataItem::Messages(view.uids.len() as u32),
                StatusDataItemName::Recent => {
                    let unseen_by_any = view.uids.iter().filter(|u| **u > view.state.seen_uid);
                    StatusDataItem::Recent(unseen_by_any.count() as u32)
                }
                StatusDataItemName::UidNext => {
                    StatusDataItem::UidNext(nonzero(view.state.uid_next))
                }
                StatusDataItemName::UidValidity => {
                    StatusDataItem::UidValidity(nonzero(view.state.uid_validity))
                }
                StatusDataItemName::Unseen => StatusDataItem::Unseen(unseen),
                StatusDataItemName::HighestModSeq => {
                    StatusDataItem::HighestModSeq(view.state.changes)
                }
                StatusDataItemName::Size => StatusDataItem::Size(counts.size),
                StatusDataItemName::Deleted => StatusDataItem::Deleted(counts.deleted),
                StatusDataItemName::DeletedStorage => {
                    StatusDataItem::DeletedStorage(counts.deleted_size)
                }
            })
            .collect();
        let mailbox = imap_types::ToStatic::to_static(mailbox);
        conn.enqueue_data(Data::Status { mailbox, items: items.into() });
        ok(tag, "STATUS completed")
    }
}

/// The STATUS items read from every message of the folder.
/// The first two need the messages' bytes.
const COUNTED: [StatusDataItemName; 3] =
    [StatusDataItemName::Size, StatusDataItemName::DeletedStorage, StatusDataItemName::Deleted];

/// What STATUS SIZE (RFC 8438), DELETED and DELETED-STORAGE (RFC 9051, RFC 9208) count.
#[derive(Default)]
struct Counts {
    /// The messages' bytes as RFC822.SIZE counts them.
    size: u64,
    /// The messages marked \Deleted.
    deleted: u32,
    /// Their bytes.
    deleted_size: u64,
}

/// The counts of a folder, chunk by chunk; the messages' bytes are read only when `bytes`.
async fn counts(
    store: &crate::store::Store,
    view: &View,
    bytes: bool,
) -> crate::store::Result<Counts> {
    let mut counts = Counts::default();
    for chunk in view.uids.chunks(CHUNK) {
        let loaded = load(store, &view.mailbox, view.folder, chunk.to_vec(), bytes).await?;
        for l in &loaded {
            let size = l.raw.as_ref().map_or(0, |r| r.len() as u64);
            counts.size = counts.size.saturating_add(size);
            if l.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Deleted")) {
                counts.deleted += 1;
                counts.deleted_size = counts.deleted_size.saturating_add(size);
            }
        }
    }
    Ok(counts)
}

/// The NO for a name that names no folder.
pub fn nonexistent(tag: &Tag<'static>) -> Status<'static> {
    let code = Code::Other(imap_types::response::CodeOther::unvalidated(b"NONEXISTENT".as_slice()));
    status(tag, StatusKind::No, Some(code), "no such folder")
}

fn untagged_ok(code: Code<'static>) -> Status<'static> {
    Status::ok(None, Some(code), "ok").unwrap_or_else(|_| unreachable!()) // ok: constant text
}
