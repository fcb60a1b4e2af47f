//! The commands about the folder list: LIST and LSUB, CREATE, DELETE, RENAME, SUBSCRIBE and
//! UNSUBSCRIBE. Folders are the store's (`store::folders`): the system folders with their
//! SPECIAL-USE attributes, and the user's, `/` between levels.

use std::collections::BTreeSet;

use imap_types::core::{Atom, QuotedChar, Tag};
use imap_types::flag::FlagNameAttribute;
use imap_types::mailbox::{ListMailbox, Mailbox};
use imap_types::response::{Code, CodeOther, Data, Status, StatusKind};

use super::conn::Conn;
use super::names::{decode, decode_pattern, encode};
use super::reply::{failed, ok, status};
use super::session::Session;
use crate::store::{DELIMITER, Discard, Error, FolderEntry};

fn attribute(name: &'static str) -> FlagNameAttribute<'static> {
    FlagNameAttribute::from(Atom::unvalidated(name))
}

fn code(name: &'static str) -> Code<'static> {
    Code::Other(CodeOther::unvalidated(name.as_bytes()))
}

/// A NO with one of RFC 5530's codes.
fn refused(tag: &Tag<'static>, what: &'static str, text: &str) -> Status<'static> {
    status(tag, StatusKind::No, Some(code(what)), text)
}

/// A store refusal as the NO it means; a fault as "try again".
fn answer(tag: &Tag<'static>, e: &Error) -> Status<'static> {
    match e {
        Error::NotFound(m) => refused(tag, "NONEXISTENT", m),
        Error::Conflict(m) => refused(tag, "ALREADYEXISTS", m),
        Error::Invalid { message, hint } if message.contains("at most") => {
            refused(tag, "LIMIT", &format!("{message}: {hint}"))
        }
        Error::Invalid { message, hint } => refused(tag, "CANNOT", &format!("{message}: {hint}")),
        e => failed(tag, e),
    }
}

/// `*` matches anything, `%` anything but the delimiter. INBOX, at the head of a name, matches
/// in any case (RFC 3501 5.1); the rest of a name matches case-sensitively.
pub fn matches(pattern: &str, name: &str) -> bool {
    let pattern = inbox_upper(pattern);
    let n = name.as_bytes();
    // reach[j]: the pattern so far matches the first j bytes of the name. One pass per pattern
    // byte keeps the work at pattern length times name length, whatever the wildcards.
    let mut reach = vec![false; n.len() + 1];
    reach[0] = true;
    for &c in pattern.as_bytes() {
        let mut next = vec![false; n.len() + 1];
        let mut on = false;
        for j in 0..=n.len() {
            match c {
                b'*' => {
                    on |= reach[j];
                    next[j] = on;
                }
                b'%' => {
                    on |= reach[j];
                    next[j] = on;
                    if n.get(j) == Some(&b'/') {
                        on = false;
                    }
                }
                _ => {
                    if j < n.len() && reach[j] && n[j] == c {
                        next[j + 1] = true;
                    }
                }
            }
        }
        reach = next;
    }
    reach[n.len()]
}

/// The longest LIST pattern taken (reference and pattern together): a folder name is at most
/// 200 bytes, so longer patterns can only be wildcards piled up to make matching slow.
pub const MAX_PATTERN: usize = 1024;

/// The pattern with a leading `inbox` (any case) written `INBOX`, when it stands for the whole
/// first level.
fn inbox_upper(pattern: &str) -> String {
    match pattern.get(..5) {
        Some(head) if head.eq_ignore_ascii_case("INBOX") => {
            let rest = &pattern[5..];
            if rest.is_empty() || rest.starts_with(DELIMITER) || rest.starts_with(['*', '%']) {
                return format!("INBOX{rest}");
            }
            pattern.to_owned()
        }
        _ => pattern.to_owned(),
    }
}

fn has_children(entries: &[FolderEntry], name: &str) -> bool {
    entries.iter().any(|e| e.name.strip_prefix(name).is_some_and(|r| r.starts_with(DELIMITER)))
}

fn pattern_of(list: &ListMailbox<'_>) -> Vec<u8> {
    match list {
        ListMailbox::Token(t) => t.as_ref().to_vec(),
        ListMailbox::String(s) => s.as_ref().to_vec(),
    }
}

impl Session {
    fn user(&self) -> String {
        self.user.clone().unwrap_or_default()
    }

    /// LIST or LSUB (answered with LSUB responses) of `reference` and `pattern` joined.
    pub async fn list(
        &self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        reference: &Mailbox<'_>,
        pattern: &ListMailbox<'_>,
        lsub: bool,
    ) -> Status<'static> {
        let pattern = decode_pattern(&pattern_of(pattern), self.utf8);
        let delimiter = Some(QuotedChar::unvalidated(DELIMITER));
        if pattern.is_empty() {
            if !lsub {
                // The question "what is the delimiter, and the root".
                let root = Mailbox::try_from("").unwrap_or(Mailbox::Inbox);
                let items = vec![FlagNameAttribute::Noselect];
                conn.enqueue_data(Data::List { items, delimiter, mailbox: root });
            }
            return ok(tag, if lsub { "LSUB completed" } else { "LIST completed" });
        }
        let reference = match reference {
            Mailbox::Inbox => "INBOX".to_owned(),
            other => decode(other, self.utf8).unwrap_or_default(),
        };
        let full = format!("{reference}{pattern}");
        if full.len() > MAX_PATTERN {
            return refused(tag, "LIMIT", "the pattern is too long");
        }
        let user = self.user();
        let found = self
            .deps
            .store
            .read(move |r| -> crate::store::Result<_> {
                let entries: Vec<FolderEntry> =
                    r.folders(&user)?.into_iter().filter(|e| e.folder.imap()).collect();
                Ok((entries, if lsub { r.subscriptions(&user)? } else { Vec::new() }))
            })
            .await;
        let (entries, subscribed) = match found {
            Ok(found) => found,
            Err(e) => return failed(tag, &e),
        };
        if lsub {
            self.lsub_lines(conn, &full, &entries, &subscribed);
            return ok(tag, "LSUB completed");
        }
        for e in entries.iter().filter(|e| matches(&full, &e.name)) {
            let children = has_children(&entries, &e.name);
            let mut items = vec![attribute(if children { "HasChildren" } else { "HasNoChildren" })];
            items.extend(e.folder.special_use().map(|s| attribute(s.trim_start_matches('\\'))));
            let mailbox = encode(&e.name, self.utf8);
            conn.enqueue_data(Data::List { items, delimiter, mailbox });
        }
        ok(tag, "LIST completed")
    }

    /// LSUB's lines: the subscribed names that match, and (RFC 3501 6.3.9) a level `%` stops at
    /// whose subfolders are subscribed but which is not, as `\Noselect`.
    fn lsub_lines(
        &self,
        conn: &mut Conn,
        full: &str,
        entries: &[FolderEntry],
        subscribed: &[String],
    ) {
        let delimiter = Some(QuotedChar::unvalidated(DELIMITER));
        let subscribed: BTreeSet<&str> = subscribed.iter().map(String::as_str).collect();
        let mut lines: Vec<(String, bool)> = Vec::new();
        for name in &subscribed {
            if matches(full, name) {
                lines.push(((*name).to_owned(), true));
                continue;
            }
            let levels = name.match_indices(DELIMITER).map(|(at, _)| &name[..at]);
            for parent in levels.filter(|p| !subscribed.contains(p) && matches(full, p)) {
                if !lines.iter().any(|(n, _)| n == parent) {
                    lines.push((parent.to_owned(), false));
                }
            }
        }
        for (name, selectable) in lines {
            let exists = entries.iter().any(|e| e.name == name);
            let items = match selectable && exists {
                true => Vec::new(),
                false => vec![FlagNameAttribute::Noselect],
            };
            let mailbox = encode(&name, self.utf8);
            conn.enqueue_data(Data::Lsub { items, delimiter, mailbox });
        }
    }

    /// The UTF-8 name of a mailbox argument, or the NO for one that is not a valid name.
    fn name_of(
        &self,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
    ) -> Result<String, Status<'static>> {
        let name = decode(mailbox, self.utf8)
            .ok_or_else(|| refused(tag, "CANNOT", "the name is not valid modified UTF-7"))?;
        crate::store::check_name(&name).map_err(|e| answer(tag, &e))
    }

    pub async fn create(&mut self, tag: &Tag<'static>, mailbox: &Mailbox<'_>) -> Status<'static> {
        // A trailing delimiter says the name will hold folders (RFC 3501 6.3.3); ours all can.
        let trimmed = match mailbox {
            Mailbox::Other(o) => {
                o.as_ref().strip_suffix(b"/").and_then(|t| Mailbox::try_from(t).ok())
            }
            Mailbox::Inbox => None,
        };
        let name = match self.name_of(tag, trimmed.as_ref().unwrap_or(mailbox)) {
            Ok(name) => name,
            Err(no) => return no,
        };
        if crate::store::system_named(&name).is_some() {
            return refused(tag, "ALREADYEXISTS", "a system folder has that name");
        }
        let (user, now) = (self.user(), crate::ids::now_ms());
        let made = self.deps.store.write(move |w| w.create_folder(&user, &name, false, now)).await;
        match made {
            Ok(_) => ok(tag, "CREATE completed"),
            Err(e) => answer(tag, &e),
        }
    }

    pub async fn delete(&mut self, tag: &Tag<'static>, mailbox: &Mailbox<'_>) -> Status<'static> {
        let name = match self.name_of(tag, mailbox) {
            Ok(name) => name,
            Err(no) => return no,
        };
        let (user, now) = (self.user(), crate::ids::now_ms());
        let deleted = self
            .deps
            .store
            .write(move |w| {
                let folder = w.folder_named(&user, &name)?;
                w.delete_folder(&user, &name, Discard::Expunge, false, now).map(|_| folder)
            })
            .await;
        match deleted {
            Ok(folder) => {
                if self.view.as_ref().is_some_and(|v| Some(v.folder) == folder) {
                    self.view = None;
                }
                ok(tag, "DELETE completed")
            }
            Err(e) => answer(tag, &e),
        }
    }

    pub async fn rename(
        &mut self,
        tag: &Tag<'static>,
        from: &Mailbox<'_>,
        to: &Mailbox<'_>,
    ) -> Status<'static> {
        let (from, to) = match (self.name_of(tag, from), self.name_of(tag, to)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(no), _) | (_, Err(no)) => return no,
        };
        let (user, now) = (self.user(), crate::ids::now_ms());
        let renamed = self.deps.store.write(move |w| w.rename_folder(&user, &from, &to, now)).await;
        match renamed {
            Ok(()) => ok(tag, "RENAME completed"),
            Err(e) => answer(tag, &e),
        }
    }

    pub async fn subscribe(
        &mut self,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
        on: bool,
    ) -> Status<'static> {
        let name = match self.name_of(tag, mailbox) {
            Ok(name) => name,
            Err(no) => return no,
        };
        let user = self.user();
        match self.deps.store.write(move |w| w.subscribe_folder(&user, &name, on)).await {
            Ok(()) if on => ok(tag, "SUBSCRIBE completed"),
            Ok(()) => ok(tag, "UNSUBSCRIBE completed"),
            Err(e) => answer(tag, &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_names_level_by_level() {
        assert!(matches("*", "Sent"));
        assert!(matches("%", "INBOX"));
        assert!(matches("inbox", "INBOX"));
        assert!(matches("inbox/%", "INBOX/Receipts"));
        assert!(matches("S*", "Sent"));
        assert!(!matches("S*", "Trash"));
        assert!(!matches("Sent/*", "Sent"));
        assert!(matches("*", "a/b/c"));
        assert!(!matches("%", "a/b"));
        assert!(matches("a/%", "a/b"));
        assert!(!matches("a/%", "a/b/c"));
        assert!(matches("a/%/c", "a/b/c"));
        assert!(!matches("sent", "Sent"));
        assert!(matches("%/%", "Archive/2024"));
    }
}
