//! The folders as IMAP names them (INBOX, Sent, Drafts, Trash, with their SPECIAL-USE
//! attributes), and the commands about folders: LIST, STATUS, SELECT, EXAMINE, NAMESPACE,
//! and the refusals of the ones that would change the fixed set.

use std::num::NonZeroU32;

use imap_types::core::{Atom, IString, QuotedChar, Tag};
use imap_types::extensions::namespace::Namespace;
use imap_types::flag::{FlagNameAttribute, FlagPerm};
use imap_types::mailbox::{ListMailbox, Mailbox};
use imap_types::response::{Code, Data, Status, StatusKind};
use imap_types::status::{StatusDataItem, StatusDataItemName};

use super::conn::Conn;
use super::reply::{failed, no, ok, status};
use super::session::Session;
use super::view::View;
use crate::store::Folder;

const DELIMITER: char = '/';

pub fn name(folder: Folder) -> &'static str {
    match folder {
        Folder::Sent => "Sent",
        Folder::Drafts => "Drafts",
        Folder::Trash => "Trash",
        _ => "INBOX",
    }
}

fn special_use(folder: Folder) -> Option<&'static str> {
    match folder {
        Folder::Sent => Some("Sent"),
        Folder::Drafts => Some("Drafts"),
        Folder::Trash => Some("Trash"),
        _ => None,
    }
}

/// The folder a mailbox name names (INBOX in any case; the others also case-insensitively,
/// since clients guess the names of special folders).
pub fn folder(mailbox: &Mailbox<'_>) -> Option<Folder> {
    let name = match mailbox {
        Mailbox::Inbox => return Some(Folder::Inbox),
        Mailbox::Other(other) => String::from_utf8_lossy(other.as_ref()).into_owned(),
    };
    Folder::IMAP.into_iter().find(|f| name.eq_ignore_ascii_case(self::name(*f)))
}

fn mailbox_of(folder: Folder) -> Mailbox<'static> {
    match folder {
        Folder::Inbox => Mailbox::Inbox,
        f => Mailbox::try_from(name(f)).unwrap_or(Mailbox::Inbox),
    }
}

fn attribute(name: &'static str) -> FlagNameAttribute<'static> {
    FlagNameAttribute::from(Atom::unvalidated(name))
}

/// `*` matches anything, `%` anything but the delimiter (there is no hierarchy here).
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*' | b'%', rest)) => (0..=name.len()).any(|i| matches(rest, &name[i..])),
        Some((c, rest)) => {
            name.first().is_some_and(|n| n.eq_ignore_ascii_case(c)) && matches(rest, &name[1..])
        }
    }
}

impl Session {
    pub fn list(
        &self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        reference: &Mailbox<'_>,
        pattern: &ListMailbox<'_>,
    ) -> Status<'static> {
        let pattern: Vec<u8> = match pattern {
            ListMailbox::Token(t) => t.as_ref().to_vec(),
            ListMailbox::String(s) => s.as_ref().to_vec(),
        };
        let delimiter = QuotedChar::unvalidated(DELIMITER);
        if pattern.is_empty() {
            // The question "what is the delimiter".
            let root = Mailbox::try_from("").unwrap_or(Mailbox::Inbox);
            let items = vec![FlagNameAttribute::Noselect];
            conn.enqueue_data(Data::List { items, delimiter: Some(delimiter), mailbox: root });
            return ok(tag, "LIST completed");
        }
        let mut full = match reference {
            Mailbox::Inbox => b"INBOX".to_vec(),
            Mailbox::Other(o) => o.as_ref().to_vec(),
        };
        full.extend_from_slice(&pattern);
        for f in Folder::IMAP {
            if !matches(&full, name(f).as_bytes()) {
                continue;
            }
            let mut items = vec![attribute("HasNoChildren")];
            items.extend(special_use(f).map(attribute));
            conn.enqueue_data(Data::List {
                items,
                delimiter: Some(delimiter),
                mailbox: mailbox_of(f),
            });
        }
        ok(tag, "LIST completed")
    }

    pub fn namespace(&self, conn: &mut Conn, tag: &Tag<'static>) -> Status<'static> {
        let personal = Namespace {
            prefix: IString::try_from("").unwrap_or_else(|_| unreachable!()), // ok: empty quoted
            delimiter: Some(QuotedChar::unvalidated(DELIMITER)),
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
    ) -> Status<'static> {
        self.view = None;
        let Some(folder) = folder(mailbox) else { return no(tag, "[NONEXISTENT] no such folder") };
        let user = self.user.clone().unwrap_or_default();
        let mut view = match View::open(&self.deps.store, &user, folder, read_only).await {
            Ok(view) => view,
            Err(e) => return failed(tag, &e),
        };
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
        ];
        for code in codes {
            conn.enqueue(untagged_ok(code));
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
        let Some(folder) = folder(mailbox) else { return no(tag, "[NONEXISTENT] no such folder") };
        let user = self.user.clone().unwrap_or_default();
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
        let items: Vec<StatusDataItem> = names
            .iter()
            .filter_map(|n| match n {
                StatusDataItemName::Messages => {
                    Some(StatusDataItem::Messages(view.uids.len() as u32))
                }
                StatusDataItemName::Recent => {
                    let unseen_by_any = view.uids.iter().filter(|u| **u > view.state.seen_uid);
                    Some(StatusDataItem::Recent(unseen_by_any.count() as u32))
                }
                StatusDataItemName::UidNext => {
                    Some(StatusDataItem::UidNext(nonzero(view.state.uid_next)))
                }
                StatusDataItemName::UidValidity => {
                    Some(StatusDataItem::UidValidity(nonzero(view.state.uid_validity)))
                }
                StatusDataItemName::Unseen => Some(StatusDataItem::Unseen(unseen)),
                _ => None,
            })
            .collect();
        conn.enqueue_data(Data::Status { mailbox: mailbox_of(folder), items: items.into() });
        ok(tag, "STATUS completed")
    }
}

pub fn nonzero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

fn untagged_ok(code: Code<'static>) -> Status<'static> {
    Status::ok(None, Some(code), "ok").unwrap_or_else(|_| unreachable!()) // ok: constant text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_folder_names() {
        assert!(matches(b"*", b"Sent"));
        assert!(matches(b"%", b"INBOX"));
        assert!(matches(b"inbox", b"INBOX"));
        assert!(matches(b"S*", b"Sent"));
        assert!(!matches(b"S*", b"Trash"));
        assert!(!matches(b"Sent/*", b"Sent"));
    }
}
