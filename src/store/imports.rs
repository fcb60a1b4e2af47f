//! What imports (`edgemail import`, the import route) copied into a mailbox: one entry per
//! message copied, under a key its source gives it, and per-folder marks of an IMAP source, so
//! that a second run copies only what is new, whether the CLI or a running server writes.
//! An imported message is stored mail (as IMAP's APPEND stores it), never received mail.

use super::emails::{Email, Folder};
use super::error::Result;
use super::folders::system_named;
use super::kv::ReadableTable;
use super::tables::*;
use super::{Rtx, Tables, Wtx, drain_domain};

/// What became of one message offered to `import_messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    /// Stored, under this UID of its folder.
    Stored(u32),
    /// An earlier import already copied it (same key).
    Skipped,
    /// The mailbox's quota has no room for it; nothing was written for it.
    OverQuota,
}

/// One message to import: the email made from its bytes (mailbox, folder and internal date set),
/// the bytes, its IMAP flags and keywords, and the key that tells it apart in its source.
#[derive(Debug, Clone)]
pub struct ImportItem {
    pub email: Email,
    pub raw: Vec<u8>,
    pub flags: Vec<String>,
    pub key: String,
}

impl Wtx<'_> {
    /// Stores each item not already imported (by key) and within the quota, in one transaction:
    /// an item that does not fit is refused alone, the others go on.
    pub fn import_messages(
        &mut self,
        items: &[ImportItem],
        quota: u64,
        now: u64,
    ) -> Result<Vec<Imported>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let mailbox = item.email.summary.mailbox.as_str();
            if self.table(IMPORTS)?.get((mailbox, item.key.as_str()))?.is_some() {
                out.push(Imported::Skipped);
                continue;
            }
            if !self.has_room(mailbox, item.email.summary.size, quota)? {
                out.push(Imported::OverQuota);
                continue;
            }
            let uid = self.imap_append(&item.email, &item.raw, item.flags.clone(), now)?;
            let id = item.email.summary.id.as_bytes();
            self.tx.open_table(IMPORTS)?.insert((mailbox, item.key.as_str()), id)?;
            out.push(Imported::Stored(uid));
        }
        Ok(out)
    }

    /// The folder `name` (IMAP's form, levels split by `/`) means in `mailbox`, made (and
    /// subscribed) when it does not exist yet.
    pub fn import_folder(&mut self, mailbox: &str, name: &str, now: u64) -> Result<Folder> {
        if let Some(folder) = system_named(name) {
            return Ok(folder);
        }
        if let Some(folder) = self.folder_named(mailbox, name)? {
            return Ok(folder);
        }
        Ok(self.create_folder(mailbox, name, true, now)?.folder)
    }

    /// Records a mark of a source (an IMAP folder's UIDVALIDITY and last UID copied).
    pub fn set_import_mark(&mut self, mailbox: &str, key: &str, mark: &[u8]) -> Result<()> {
        self.tx.open_table(IMPORTS)?.insert((mailbox, key), mark)?;
        Ok(())
    }

    /// Forgets what was imported into a mailbox (when the mailbox goes).
    pub(super) fn forget_imports(&mut self, mailbox: &str) -> Result<()> {
        drain_domain(&mut self.tx.open_table(IMPORTS)?, mailbox)?;
        Ok(())
    }
}

impl Rtx {
    /// The mark recorded under `key` for `mailbox`, if any.
    pub fn import_mark(&self, mailbox: &str, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.table(IMPORTS)?.get((mailbox, key))?.map(|v| v.value().to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    fn item(mailbox: &str, key: &str, size: u64) -> ImportItem {
        let mut email = Email::default();
        email.summary.id = crate::ids::new_id("em");
        email.summary.mailbox = mailbox.into();
        email.summary.folder = Folder::Inbox;
        email.summary.created_at = 1_000_000;
        email.summary.size = size;
        let raw = vec![b'x'; usize::try_from(size).expect("small")]; // ok: test
        ImportItem { email, raw, flags: vec!["\\Seen".into()], key: key.into() }
    }

    #[test]
    fn a_key_imports_once_and_marks_are_forgotten_with_the_mailbox() {
        let dir = tempdir();
        let store = Store::open(&dir).expect("open"); // ok: test
        // The quota is the integration tests' (a mailbox needs a domain); here keys alone.
        let items = vec![item("a@x.test", "m:1", 10), item("a@x.test", "m:2", 20)];
        let first =
            store.write_blocking(move |w| w.import_messages(&items, 100, 5)).expect("import"); // ok: test
        assert_eq!(first, vec![Imported::Stored(1), Imported::Stored(2)]);
        let again = vec![item("a@x.test", "m:1", 10), item("a@x.test", "m:3", 10)];
        let second =
            store.write_blocking(move |w| w.import_messages(&again, 100, 5)).expect("import"); // ok: test
        assert_eq!(second[0], Imported::Skipped);
        assert_eq!(second[1], Imported::Stored(3));
        store.write_blocking(|w| w.set_import_mark("a@x.test", "f:INBOX", b"{}")).expect("mark"); // ok: test
        let mark = store.read_blocking(|r| r.import_mark("a@x.test", "f:INBOX")).expect("read"); // ok: test
        assert_eq!(mark.as_deref(), Some(&b"{}"[..]));
        store.write_blocking(|w| w.forget_imports("a@x.test")).expect("forget"); // ok: test
        let gone = store.read_blocking(|r| r.import_mark("a@x.test", "f:INBOX")).expect("read"); // ok: test
        assert!(gone.is_none());
    }

    fn tempdir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(crate::ids::new_id("imports-test"));
        std::fs::create_dir_all(&dir).expect("dir"); // ok: test
        dir
    }
}
