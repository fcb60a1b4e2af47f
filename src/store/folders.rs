//! The folders a mailbox's user makes, beside the system folders every mailbox has: their names
//! (UTF-8, `/` between levels), the code each is stored under, the IMAP subscriptions, and what
//! creating, renaming and deleting one does to its mail. A folder's mail is filed under its code
//! (`Folder::User`), so a rename rewrites this one document and no message.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::folder::{Folder, USER_CODES};
use super::imap::ImapMeta;
use super::kv::ReadableTable;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode, get_json};

/// The longest folder name, in bytes of UTF-8.
pub const MAX_NAME: usize = 200;
/// How many names one mailbox may subscribe to (existing or not, as IMAP allows).
const MAX_SUBSCRIPTIONS: usize = 1000;
pub const DELIMITER: char = '/';

/// The folders a mailbox's user made, and its subscriptions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
struct Registry {
    made: Vec<Made>,
    /// `None` until the first SUBSCRIBE or UNSUBSCRIBE: then every system folder IMAP shows.
    subscribed: Option<BTreeSet<String>>,
    /// The UIDVALIDITY the last folder made got: the next one gets more, so a name deleted and
    /// made again within a second still tells clients to forget what they cached.
    validity: u32,
    /// The code the last folder made got: codes are handed out in turn, so a deleted folder's
    /// code is not given again while a session may still have it selected.
    last_code: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Made {
    code: u8,
    name: String,
}

/// A folder as lists show it: system folders first, then the user's by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderEntry {
    pub folder: Folder,
    /// The IMAP name (`INBOX`, `Sent`, or the user's name).
    pub name: String,
}

/// What deleting a folder does to its mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    /// Removed for good, as IMAP's DELETE does.
    Expunge,
    /// Moved to the trash, as the API's delete does.
    ToTrash,
}

/// The system folder a name means: IMAP's names (`INBOX`, `Sent`) and the API's (`inbox`), in
/// any case, since clients guess the names of special folders.
pub fn system_named(name: &str) -> Option<Folder> {
    Folder::ALL.into_iter().find(|f| {
        f.imap_name().eq_ignore_ascii_case(name) || f.system_name().is_some_and(|s| s == name)
    })
}

/// The names no user folder may take (every system folder's, warmup's too, in any case).
fn reserved(name: &str) -> bool {
    system_named(name).is_some() || name.eq_ignore_ascii_case(Folder::Warmup.imap_name())
}

/// A folder name checked, with a system folder's name at its head written as that folder's
/// (`inbox/x` is `INBOX/x`).
pub fn check_name(name: &str) -> Result<String> {
    let hint = "a folder name is 1-200 bytes of UTF-8 without control characters, `*` or `%`, \
                its levels separated by single `/`";
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(Error::invalid(format!("folder name of {} bytes", name.len()), hint));
    }
    if let Some(c) = name.chars().find(|c| c.is_control() || matches!(c, '*' | '%')) {
        return Err(Error::invalid(format!("folder name with {c:?}"), hint));
    }
    let mut levels: Vec<&str> = name.split(DELIMITER).collect();
    if levels.iter().any(|l| l.is_empty() || *l == "." || *l == "..") {
        return Err(Error::invalid(format!("folder name {name:?} has an empty level"), hint));
    }
    if let Some(system) = system_named(levels[0]) {
        levels[0] = system.imap_name();
    }
    Ok(levels.join("/"))
}

/// The parents of a name, the outermost first (`a`, `a/b` for `a/b/c`).
fn parents(name: &str) -> impl Iterator<Item = &str> {
    name.match_indices(DELIMITER).map(move |(at, _)| &name[..at])
}

/// Whether `name` is `of` or below it.
fn within(name: &str, of: &str) -> bool {
    name == of || name.strip_prefix(of).is_some_and(|rest| rest.starts_with(DELIMITER))
}

fn load(tx: &impl Tables, mailbox: &str) -> Result<Registry> {
    Ok(get_json(tx, FOLDERS, mailbox)?.unwrap_or_default())
}

impl Registry {
    fn code_of(&self, name: &str) -> Option<u8> {
        self.made.iter().find(|m| m.name == name).map(|m| m.code)
    }

    fn named(&self, name: &str) -> Option<Folder> {
        system_named(name).or_else(|| {
            let name = check_name(name).ok()?;
            self.code_of(&name).map(Folder::User)
        })
    }

    fn entries(&self) -> Vec<FolderEntry> {
        let system = Folder::ALL
            .into_iter()
            .map(|f| FolderEntry { folder: f, name: f.imap_name().to_owned() });
        let mut made: Vec<FolderEntry> = self
            .made
            .iter()
            .map(|m| FolderEntry { folder: Folder::User(m.code), name: m.name.clone() })
            .collect();
        made.sort_by(|a, b| a.name.cmp(&b.name));
        system.chain(made).collect()
    }

    fn subscriptions(&self) -> BTreeSet<String> {
        match &self.subscribed {
            Some(set) => set.clone(),
            None => Folder::ALL
                .into_iter()
                .filter(|f| f.imap())
                .map(|f| f.imap_name().to_owned())
                .collect(),
        }
    }

    fn free_code(&self) -> Option<u8> {
        let taken: BTreeSet<u8> = self.made.iter().map(|m| m.code).collect();
        let next = u16::from(self.last_code) + 1;
        let after = USER_CODES.filter(|c| u16::from(*c) >= next);
        after.chain(USER_CODES).find(|c| !taken.contains(c))
    }
}

impl Rtx {
    /// Every folder of the mailbox: the system folders, then the user's by name.
    pub fn folders(&self, mailbox: &str) -> Result<Vec<FolderEntry>> {
        Ok(load(self, mailbox)?.entries())
    }

    /// The folder a name means in the mailbox, if any.
    pub fn folder_named(&self, mailbox: &str, name: &str) -> Result<Option<Folder>> {
        Ok(load(self, mailbox)?.named(name))
    }

    /// The name of a folder of the mailbox (`None` for a user folder deleted since).
    pub fn folder_name(&self, mailbox: &str, folder: Folder) -> Result<Option<String>> {
        let Folder::User(code) = folder else { return Ok(Some(folder.imap_name().to_owned())) };
        let registry = load(self, mailbox)?;
        Ok(registry.made.into_iter().find(|m| m.code == code).map(|m| m.name))
    }

    /// How many messages a folder holds, and how many of them are not `\\Seen`.
    pub fn folder_counts(&self, mailbox: &str, folder: Folder) -> Result<(u64, u64)> {
        let seen_at_start = folder.initial_flags().contains(&"\\Seen");
        let (mut total, mut unread) = (0, 0);
        let index = self.tx.open_table(EMAIL_INDEX)?;
        let metas = self.tx.open_table(IMAP_MESSAGES)?;
        let code = folder.code();
        for entry in index.range((mailbox, code, 0u64, "")..(mailbox, code + 1, 0u64, ""))? {
            let (key, _) = entry?;
            total += 1;
            let seen = match metas.get(key.value().3)? {
                Some(meta) => decode::<ImapMeta>(meta.value())?.flags.iter().any(|f| f == "\\Seen"),
                None => seen_at_start,
            };
            unread += u64::from(!seen);
        }
        Ok((total, unread))
    }

    /// The names the mailbox subscribes to, in order (some may name no folder).
    pub fn subscriptions(&self, mailbox: &str) -> Result<Vec<String>> {
        Ok(load(self, mailbox)?.subscriptions().into_iter().collect())
    }
}

impl Wtx<'_> {
    /// The folder a name means in the mailbox, if any.
    pub fn folder_named(&self, mailbox: &str, name: &str) -> Result<Option<Folder>> {
        Ok(load(self, mailbox)?.named(name))
    }

    fn save_registry(&mut self, mailbox: &str, registry: &Registry) -> Result<()> {
        self.tx.open_table(FOLDERS)?.insert(mailbox, encode(registry)?.as_slice())?;
        Ok(())
    }

    /// Makes the folders of `names` that do not exist, in order, each empty with a fresh
    /// UIDVALIDITY.
    fn make(
        &mut self,
        mailbox: &str,
        registry: &mut Registry,
        names: &[&str],
        now: u64,
    ) -> Result<()> {
        for name in names {
            if registry.named(name).is_some() {
                continue;
            }
            let code = registry.free_code().ok_or_else(|| {
                Error::invalid(
                    format!("a mailbox holds at most {} folders of its own", USER_CODES.len()),
                    "delete folders it no longer needs",
                )
            })?;
            let validity = u32::try_from(now / 1000).unwrap_or(u32::MAX).max(registry.validity + 1);
            registry.validity = validity;
            registry.last_code = code;
            self.imap_made(mailbox, code, validity)?;
            registry.made.push(Made { code, name: (*name).to_owned() });
        }
        Ok(())
    }

    /// Makes a folder (and the parents its name needs); `subscribe` adds it to the IMAP
    /// subscriptions. A system folder's name, or one that exists, is refused.
    pub fn create_folder(
        &mut self,
        mailbox: &str,
        name: &str,
        subscribe: bool,
        now: u64,
    ) -> Result<FolderEntry> {
        let name = check_name(name)?;
        if reserved(&name) {
            return Err(Error::invalid(
                format!("{name} is a system folder"),
                "system folders exist in every mailbox; pick another name",
            ));
        }
        let mut registry = load(self, mailbox)?;
        if registry.named(&name).is_some() {
            return Err(Error::Conflict(format!("folder {name} already exists")));
        }
        let mut names: Vec<&str> = parents(&name).collect();
        names.push(&name);
        self.make(mailbox, &mut registry, &names, now)?;
        if subscribe {
            let mut set = registry.subscriptions();
            set.insert(name.clone());
            registry.subscribed = Some(set);
        }
        self.save_registry(mailbox, &registry)?;
        let folder = registry.named(&name).ok_or_else(|| Error::internal("folder not made"))?;
        Ok(FolderEntry { folder, name })
    }

    /// Renames a user folder and every folder below it, or moves INBOX's mail into a new folder
    /// (RFC 3501 6.3.5: INBOX itself stays, empty).
    pub fn rename_folder(&mut self, mailbox: &str, from: &str, to: &str, now: u64) -> Result<()> {
        let (from, to) = (check_name(from)?, check_name(to)?);
        let mut registry = load(self, mailbox)?;
        if registry.named(&to).is_some() || reserved(&to) {
            return Err(Error::Conflict(format!("folder {to} already exists")));
        }
        if from == Folder::Inbox.imap_name() {
            self.create_folder(mailbox, &to, false, now)?;
            let registry = load(self, mailbox)?;
            let target = registry.named(&to).ok_or_else(|| Error::internal("folder not made"))?;
            for id in self.folder_ids(mailbox, Folder::Inbox)? {
                self.imap_move(mailbox, &id, target, now)?;
            }
            return Ok(());
        }
        if reserved(&from) {
            return Err(Error::invalid(
                format!("{from} is a system folder"),
                "system folders keep their names; make a folder and move mail into it",
            ));
        }
        if registry.code_of(&from).is_none() {
            return Err(Error::NotFound(format!("folder {from} not found")));
        }
        if within(&to, &from) {
            return Err(Error::invalid(
                format!("{to} is inside {from}"),
                "a folder cannot move into itself",
            ));
        }
        let needed: Vec<&str> = parents(&to).filter(|p| registry.named(p).is_none()).collect();
        self.make(mailbox, &mut registry, &needed, now)?;
        let renamed = |name: &str| format!("{to}{}", &name[from.len()..]);
        for made in registry.made.iter_mut().filter(|m| within(&m.name, &from)) {
            made.name = renamed(&made.name);
        }
        if let Some(set) = registry.subscribed.take() {
            let set = set.into_iter().map(|n| if within(&n, &from) { renamed(&n) } else { n });
            registry.subscribed = Some(set.collect());
        }
        self.save_registry(mailbox, &registry)
    }

    /// Deletes a user folder and its mail (`discard`); `subfolders` deletes the folders below it
    /// too, otherwise a folder that has some is refused. How many messages it held.
    pub fn delete_folder(
        &mut self,
        mailbox: &str,
        name: &str,
        discard: Discard,
        subfolders: bool,
        now: u64,
    ) -> Result<u64> {
        let name = check_name(name)?;
        if reserved(&name) {
            return Err(Error::invalid(
                format!("{name} is a system folder"),
                "system folders cannot be deleted; delete or move their mail instead",
            ));
        }
        let mut registry = load(self, mailbox)?;
        if registry.code_of(&name).is_none() {
            return Err(Error::NotFound(format!("folder {name} not found")));
        }
        let victims: Vec<u8> =
            registry.made.iter().filter(|m| within(&m.name, &name)).map(|m| m.code).collect();
        if victims.len() > 1 && !subfolders {
            return Err(Error::invalid(
                format!("{name} has subfolders"),
                "delete the folders inside it first",
            ));
        }
        let mut count = 0;
        for code in &victims {
            for id in self.folder_ids(mailbox, Folder::User(*code))? {
                match discard {
                    Discard::Expunge => self.imap_expunge(mailbox, &id, now)?,
                    Discard::ToTrash => {
                        self.imap_move(mailbox, &id, Folder::Trash, now)?;
                    }
                }
                count += 1;
            }
            self.imap_dropped(mailbox, *code)?;
        }
        registry.made.retain(|m| !victims.contains(&m.code));
        self.save_registry(mailbox, &registry)?;
        Ok(count)
    }

    /// Adds a name to the IMAP subscriptions, or takes it out. A name may be subscribed to
    /// before its folder exists, and stays after it is gone (RFC 3501 6.3.6).
    pub fn subscribe_folder(&mut self, mailbox: &str, name: &str, on: bool) -> Result<()> {
        let name = check_name(name)?;
        let mut registry = load(self, mailbox)?;
        let mut set = registry.subscriptions();
        if on && !set.contains(&name) && set.len() >= MAX_SUBSCRIPTIONS {
            return Err(Error::invalid(
                format!("at most {MAX_SUBSCRIPTIONS} subscriptions"),
                "unsubscribe names no longer used",
            ));
        }
        if on {
            set.insert(name);
        } else {
            set.remove(&name);
        }
        registry.subscribed = Some(set);
        self.save_registry(mailbox, &registry)
    }

    /// Forgets the folder list of a mailbox being removed (its mail goes separately).
    pub(super) fn forget_folders(&mut self, mailbox: &str) -> Result<()> {
        self.tx.open_table(FOLDERS)?.remove(mailbox)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_system_heads_normalized() {
        assert_eq!(check_name("inbox/Receipts").expect("test value"), "INBOX/Receipts"); // ok: test
        assert_eq!(check_name("archive/2024").expect("test value"), "Archive/2024"); // ok: test
        assert_eq!(check_name("Projekte/Übersicht").expect("test value"), "Projekte/Übersicht"); // ok: test
        for bad in ["", "/a", "a/", "a//b", "a*", "50%", "a\u{7}b", "a/../b", &"x".repeat(201)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parents_and_within() {
        assert_eq!(parents("a/b/c").collect::<Vec<_>>(), ["a", "a/b"]);
        assert!(within("a/b", "a") && within("a", "a") && !within("ab", "a"));
    }

    #[test]
    fn codes_are_handed_out_in_turn() {
        let mut r = Registry::default();
        assert_eq!(r.free_code(), Some(16));
        r.last_code = 16;
        assert_eq!(r.free_code(), Some(17));
        r.last_code = 255;
        assert_eq!(r.free_code(), Some(16));
        r.made = USER_CODES.map(|code| Made { code, name: code.to_string() }).collect();
        assert_eq!(r.free_code(), None);
    }
}
