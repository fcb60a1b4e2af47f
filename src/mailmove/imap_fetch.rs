//! Importing from a running IMAP server: every folder LIST names (special-use ones mapped onto
//! ours, modified UTF-7 names decoded), each new message's bytes (BODY.PEEK[]), flags and
//! internal date. The session runs on a thread of its own with a one-thread runtime and hands
//! the messages over a short queue to the importer, which writes them as the other sources' are;
//! so memory holds a few messages, not a folder, and the store's writes never wait on the
//! network's reads nor the reverse.
//!
//! Per folder: EXAMINE (read-only: nothing changes at the source), `UID FETCH n:* (UID
//! RFC822.SIZE)` for the messages past the last UID copied before (the mark kept per folder,
//! with the folder's UIDVALIDITY), then the bodies in batches of UID ranges, a few batches in
//! flight at once. A message over the import's size limit is never fetched. After each batch the
//! mark moves on, so a broken run resumes where it stopped; each message's key (UIDVALIDITY and
//! UID) keeps a message from being stored twice either way.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use imap_next::client::Event;
use imap_next::imap_types::command::CommandBody;
use imap_next::imap_types::core::Vec1;
use imap_next::imap_types::fetch::{MessageDataItem, MessageDataItemName};
use imap_next::imap_types::flag::FlagFetch;
use imap_next::imap_types::mailbox::Mailbox;
use imap_next::imap_types::response::{Code, Data};
use tokio::sync::{mpsc, oneshot};

use super::imap::{Endpoint, ImapError, ImapSource, Session};
use super::import::{Importer, Incoming};
use crate::error::{Error, Result};

/// Messages waiting between the session and the importer.
const QUEUE: usize = 8;
/// Messages and bytes of one FETCH, and the FETCHes in flight.
const BATCH: usize = 200;
const BATCH_BYTES: u64 = 16 << 20;
const IN_FLIGHT: usize = 3;
/// The most folders and new messages per folder taken from one source.
const MAX_FOLDERS: usize = 10_000;
const MAX_NEW: usize = 10_000_000;

/// What the session hands the importer.
enum Item {
    /// A folder begins: make it, and answer with the mark stored under `mark`.
    Folder {
        name: String,
        mark: String,
        reply: oneshot::Sender<Option<Vec<u8>>>,
    },
    /// How many messages the folder will give.
    Expect {
        name: String,
        total: u64,
    },
    Message(Incoming),
    Fail {
        folder: String,
        reason: String,
    },
    /// What precedes is written: store `value` under `key`.
    Mark {
        key: String,
        value: Vec<u8>,
    },
}

/// Imports every folder of the IMAP server `source` names.
pub fn import_imap(importer: &mut Importer, source: &ImapSource) -> Result<()> {
    let at = Endpoint::parse(&source.url).map_err(|e| Error::invalid(e.to_string(), ""))?;
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let owned = source.clone();
    let session = std::thread::Builder::new()
        .name("imap-import".into())
        .spawn(move || -> std::result::Result<(), ImapError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(ImapError::Connect)?;
            runtime.block_on(walk(owned, at, tx))
        })
        .map_err(Error::from)?;
    let mut index = 0;
    while let Some(item) = rx.blocking_recv() {
        match item {
            Item::Folder { name, mark, reply } => {
                let _made = importer.folder(&name)?;
                importer.announce(&name, 0);
                // The session waits for this answer; if it is gone, the join below says why.
                let _ = reply.send(importer.read_mark(&mark)?);
            }
            Item::Expect { name, total } => importer.announce(&name, total),
            Item::Message(message) => {
                importer.offer(index, message)?;
                index += 1;
            }
            Item::Fail { folder, reason } => {
                importer.fail(index, &folder, reason)?;
                index += 1;
            }
            Item::Mark { key, value } => importer.mark(&key, &value)?,
        }
    }
    match session.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Error::Unavailable(e.to_string())),
        Err(_) => Err(Error::internal("the IMAP session thread panicked")),
    }
}

/// One folder of the source as LIST gave it.
struct SourceFolder {
    mailbox: Mailbox<'static>,
    /// The source's name, decoded, levels joined by `/`.
    name: String,
    ours: String,
}

async fn walk(source: ImapSource, at: Endpoint, tx: mpsc::Sender<Item>) -> Result<(), ImapError> {
    let mut session = Session::open(&source).await?;
    let list = CommandBody::list("", "*").map_err(|e| ImapError::Protocol(format!("{e:?}")))?;
    let (data, _) = session.run(list).await?;
    let folders: Vec<SourceFolder> =
        data.into_iter().filter_map(listed).take(MAX_FOLDERS).collect();
    let mut pace = Pace::new(source.rate);
    for folder in folders {
        let mark = format!("imap:{}@{}/{}", at.user, at.host, folder.name);
        let (reply, answer) = oneshot::channel();
        let item = Item::Folder { name: folder.ours.clone(), mark: mark.clone(), reply };
        if tx.send(item).await.is_err() {
            return Ok(()); // the importer stopped; it reports why
        }
        let last = answer.await.ok().flatten();
        let mut walk =
            FolderWalk { session: &mut session, tx: &tx, folder: &folder, mark, pace: &mut pace };
        if let Err(e) = walk.run(last).await {
            if !matches!(e, ImapError::Refused(_)) {
                return Err(e);
            }
            let reason = format!("folder {}: {e}", folder.name);
            let _ = tx.send(Item::Fail { folder: folder.ours.clone(), reason }).await;
        }
    }
    session.logout().await;
    Ok(())
}

/// A folder LIST names, unless it cannot be selected.
fn listed(data: Data<'static>) -> Option<SourceFolder> {
    let Data::List { items, delimiter, mailbox } = data else { return None };
    let attributes: Vec<String> = items.iter().map(|a| a.to_string()).collect();
    if attributes
        .iter()
        .any(|a| a.eq_ignore_ascii_case("\\Noselect") || a.eq_ignore_ascii_case("\\NonExistent"))
    {
        return None;
    }
    let raw = match &mailbox {
        Mailbox::Inbox => "INBOX".to_owned(),
        Mailbox::Other(other) => String::from_utf8_lossy(other.as_ref()).into_owned(),
    };
    let decoded = super::utf7::decode(&raw).unwrap_or(raw);
    let name = match delimiter.map(|d| d.inner()) {
        Some(d) if d != '/' => decoded.split(d).collect::<Vec<_>>().join("/"),
        _ => decoded,
    };
    let special = attributes.iter().find(|a| {
        ["\\sent", "\\drafts", "\\trash", "\\junk", "\\archive"]
            .contains(&a.to_ascii_lowercase().as_str())
    });
    let ours = super::our_folder_name(&name, special.map(String::as_str));
    Some(SourceFolder { mailbox, name, ours })
}

/// Keeps to at most `rate` messages a second, when one is set.
struct Pace {
    rate: Option<u32>,
    started: Instant,
    count: u32,
}

impl Pace {
    fn new(rate: Option<u32>) -> Pace {
        Pace { rate: rate.filter(|r| *r > 0), started: Instant::now(), count: 0 }
    }

    async fn step(&mut self) {
        let Some(rate) = self.rate else { return };
        self.count = self.count.saturating_add(1);
        let due = self.started + Duration::from_secs_f64(f64::from(self.count) / f64::from(rate));
        tokio::time::sleep_until(due.into()).await;
    }
}

struct FolderWalk<'a> {
    session: &'a mut Session,
    tx: &'a mpsc::Sender<Item>,
    folder: &'a SourceFolder,
    mark: String,
    pace: &'a mut Pace,
}

impl FolderWalk<'_> {
    async fn run(&mut self, mark: Option<Vec<u8>>) -> Result<(), ImapError> {
        let examine = CommandBody::examine(self.folder.mailbox.clone())
            .map_err(|e| ImapError::Protocol(format!("{e:?}")))?;
        let (data, codes) = self.session.run_with_codes(examine).await?;
        let validity = codes.iter().find_map(|c| match c {
            Code::UidValidity(v) => Some(v.get()),
            _ => None,
        });
        let exists = data.iter().find_map(|d| match d {
            Data::Exists(n) => Some(*n),
            _ => None,
        });
        let validity = validity.unwrap_or(0);
        let last = read_mark(mark.as_deref(), validity);
        let new = if exists.unwrap_or(0) == 0 { Vec::new() } else { self.sizes(last).await? };
        let total = new.len() as u64;
        let _ = self.tx.send(Item::Expect { name: self.folder.ours.clone(), total }).await;
        self.bodies(validity, &new).await
    }

    /// The UIDs past `last` and their sizes.
    async fn sizes(&mut self, last: u32) -> Result<Vec<(u32, u32)>, ImapError> {
        let set = format!("{}:*", last.saturating_add(1));
        let fetch = CommandBody::fetch(
            set.as_str(),
            vec![MessageDataItemName::Uid, MessageDataItemName::Rfc822Size],
            true,
        )
        .map_err(|e| ImapError::Protocol(format!("{e:?}")))?;
        let (data, _) = self.session.run(fetch).await?;
        let mut found: Vec<(u32, u32)> = data
            .into_iter()
            .filter_map(|d| match d {
                Data::Fetch { items, .. } => uid_and_size(&items),
                _ => None,
            })
            // `n:*` names the last message also when its UID is below n.
            .filter(|(uid, _)| *uid > last)
            .take(MAX_NEW)
            .collect();
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// Fetches the messages of `new` in batches, a few in flight, and hands them on.
    async fn bodies(&mut self, validity: u32, new: &[(u32, u32)]) -> Result<(), ImapError> {
        let mut batches = batches(new, self.folder, self.tx).await?.into_iter();
        let mut flight: VecDeque<(String, u32)> = VecDeque::new();
        loop {
            while flight.len() < IN_FLIGHT {
                let Some((set, top)) = batches.next() else { break };
                flight.push_back((self.session.send(body_fetch(&set)?)?, top));
            }
            let Some((tag, top)) = flight.front().cloned() else { return Ok(()) };
            match self.session.next().await? {
                Event::DataReceived { data: Data::Fetch { items, .. } } => {
                    self.pace.step().await;
                    let message = self.message(validity, items);
                    // A closed queue: the importer stopped, and reports why.
                    if let Some(message) = message
                        && self.tx.send(Item::Message(message)).await.is_err()
                    {
                        return Ok(());
                    }
                }
                Event::StatusReceived { status } => {
                    // Untagged statuses (an ALERT, say) pass; our batch's OK moves the mark.
                    let ended = super::imap::tagged(status, &tag)?.is_some();
                    if ended {
                        flight.pop_front();
                        let value = format!("{validity} {top}").into_bytes();
                        let _ = self.tx.send(Item::Mark { key: self.mark.clone(), value }).await;
                    }
                }
                Event::CommandRejected { status, .. } => {
                    return Err(ImapError::Refused(format!("{status:?}")));
                }
                _ => {}
            }
        }
    }

    fn message(&self, validity: u32, items: Vec1<MessageDataItem<'static>>) -> Option<Incoming> {
        let (mut uid, mut raw, mut flags, mut internal) = (None, None, Vec::new(), 0);
        for item in items.into_inner() {
            match item {
                MessageDataItem::Uid(u) => uid = Some(u.get()),
                MessageDataItem::BodyExt { section: None, data, .. } => {
                    raw = data.0.map(|s| s.into_inner().into_owned());
                }
                MessageDataItem::Flags(found) => {
                    flags = found
                        .iter()
                        .filter_map(|f| match f {
                            FlagFetch::Flag(flag) => Some(flag.to_string()),
                            FlagFetch::Recent => None,
                        })
                        .collect();
                }
                MessageDataItem::InternalDate(date) => {
                    internal = u64::try_from(date.as_ref().timestamp_millis()).unwrap_or(0);
                }
                _ => {}
            }
        }
        let (uid, raw) = (uid?, raw?);
        let key = format!("{}\n{validity}\n{uid}", self.mark);
        Some(Incoming { folder: self.folder.ours.clone(), raw, flags, internal, key: Some(key) })
    }
}

/// The last UID copied before, when the mark is for this UIDVALIDITY (a new one renumbers).
fn read_mark(mark: Option<&[u8]>, validity: u32) -> u32 {
    let text = mark.map(String::from_utf8_lossy).unwrap_or_default();
    let mut parts = text.split(' ');
    match (parts.next().map(str::parse::<u32>), parts.next().map(str::parse::<u32>)) {
        (Some(Ok(v)), Some(Ok(last))) if v == validity => last,
        _ => 0,
    }
}

fn uid_and_size(items: &Vec1<MessageDataItem<'static>>) -> Option<(u32, u32)> {
    let uid = items.as_ref().iter().find_map(|i| match i {
        MessageDataItem::Uid(u) => Some(u.get()),
        _ => None,
    })?;
    let size = items.as_ref().iter().find_map(|i| match i {
        MessageDataItem::Rfc822Size(s) => Some(*s),
        _ => None,
    });
    Some((uid, size.unwrap_or(0)))
}

/// The UID sets of the batches (ranges of consecutive UIDs), each with its highest UID; the
/// messages over the size limit are reported failed and left out.
async fn batches(
    new: &[(u32, u32)],
    folder: &SourceFolder,
    tx: &mpsc::Sender<Item>,
) -> Result<Vec<(String, u32)>, ImapError> {
    let mut out = Vec::new();
    let (mut uids, mut bytes) = (Vec::new(), 0u64);
    for &(uid, size) in new {
        if size as usize > super::MAX_MESSAGE {
            let reason = format!(
                "{} UID {uid}: {size} bytes is over the import limit of {} bytes",
                folder.name,
                super::MAX_MESSAGE
            );
            let _ = tx.send(Item::Fail { folder: folder.ours.clone(), reason }).await;
            continue;
        }
        if !uids.is_empty() && (uids.len() >= BATCH || bytes + u64::from(size) > BATCH_BYTES) {
            out.push(uid_set(&std::mem::take(&mut uids)));
            bytes = 0;
        }
        uids.push(uid);
        bytes += u64::from(size);
    }
    if !uids.is_empty() {
        out.push(uid_set(&uids));
    }
    Ok(out)
}

/// `1:3,7,9:10` for sorted UIDs, with the highest.
fn uid_set(uids: &[u32]) -> (String, u32) {
    let mut set = String::new();
    let mut at = 0;
    while at < uids.len() {
        let start = uids[at];
        let mut end = start;
        while at + 1 < uids.len() && uids[at + 1] == end + 1 {
            at += 1;
            end = uids[at];
        }
        if !set.is_empty() {
            set.push(',');
        }
        set.push_str(&if start == end { start.to_string() } else { format!("{start}:{end}") });
        at += 1;
    }
    (set, uids.last().copied().unwrap_or(0))
}

fn body_fetch(set: &str) -> Result<CommandBody<'static>, ImapError> {
    let items = vec![
        MessageDataItemName::Uid,
        MessageDataItemName::Flags,
        MessageDataItemName::InternalDate,
        MessageDataItemName::BodyExt { section: None, partial: None, peek: true },
    ];
    CommandBody::fetch(set, items, true).map_err(|e| ImapError::Protocol(format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_sets_join_runs_into_ranges() {
        assert_eq!(uid_set(&[1, 2, 3, 7, 9, 10]), ("1:3,7,9:10".to_owned(), 10));
        assert_eq!(uid_set(&[5]), ("5".to_owned(), 5));
    }

    #[test]
    fn a_mark_counts_only_for_its_uidvalidity() {
        assert_eq!(read_mark(Some(b"17 420"), 17), 420);
        assert_eq!(read_mark(Some(b"16 420"), 17), 0);
        assert_eq!(read_mark(Some(b"junk"), 17), 0);
        assert_eq!(read_mark(None, 17), 0);
    }
}
