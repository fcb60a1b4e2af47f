//! Writing every folder of a mailbox out: to one mbox file (each message with its folder and
//! flags in bookkeeping headers, which an import reads and removes) or to a Maildir++ tree as
//! Dovecot reads it (INBOX at the root, `.Level.Level` folders in modified UTF-7, flags and
//! keyword letters in names, `dovecot-keywords`, the internal date as modification time).
//! Messages are read and written one at a time.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::{Folder, Store};

/// What an export wrote.
#[derive(Debug, Default)]
pub struct Exported {
    /// (folder, messages written) in folder order.
    pub folders: Vec<(String, u64)>,
    /// Messages left out because the store keeps no bytes for them.
    pub without_bytes: u64,
}

impl Exported {
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (name, n) in &self.folders {
            out.push_str(&format!("{name}: {n} exported\n"));
        }
        if self.without_bytes > 0 {
            out.push_str(&format!(
                "{} messages without stored bytes left out\n",
                self.without_bytes
            ));
        }
        out
    }
}

/// Where an export goes.
#[derive(Debug, Clone)]
pub enum Target {
    Mbox(PathBuf),
    Maildir(PathBuf),
}

/// One message as the store keeps it.
struct Stored {
    raw: Vec<u8>,
    flags: Vec<String>,
    internal: u64,
}

/// Exports every folder IMAP shows of `mailbox`. An existing file, or a directory that is not
/// empty, is refused: an export never mixes into or replaces what is there.
pub fn export(store: &Store, mailbox: &str, target: &Target) -> Result<Exported> {
    let mailbox = mailbox.trim().to_ascii_lowercase();
    let (local, domain) = mailbox.rsplit_once('@').unwrap_or((mailbox.as_str(), ""));
    let (l, d) = (local.to_owned(), domain.to_owned());
    if store.read_blocking(move |r| r.mailbox(&d, &l))?.is_none() {
        return Err(Error::NotFound(format!("mailbox {mailbox} not found")));
    }
    let m = mailbox.clone();
    let folders = store.read_blocking(move |r| r.folders(&m))?;
    let mut out = Exported::default();
    match target {
        Target::Mbox(path) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| refused(path, e))?;
            let mut writer = std::io::BufWriter::new(file);
            for entry in folders.iter().filter(|f| f.folder.imap()) {
                let n = each(store, &mailbox, entry.folder, &mut out, |m| {
                    super::mbox::write_message(
                        &mut writer,
                        &m.raw,
                        &m.flags,
                        &entry.name,
                        m.internal,
                    )
                })?;
                out.folders.push((entry.name.clone(), n));
            }
            writer.into_inner().map_err(|e| Error::from(e.into_error()))?.sync_all()?;
        }
        Target::Maildir(root) => {
            if std::fs::read_dir(root).is_ok_and(|mut d| d.next().is_some()) {
                return Err(Error::invalid(
                    format!("{} is not empty", root.display()),
                    "export into a new or empty directory",
                ));
            }
            for entry in folders.iter().filter(|f| f.folder.imap()) {
                let dir = maildir_dir(root, &entry.name);
                let n = write_maildir_folder(
                    store,
                    &mailbox,
                    entry.folder,
                    &dir,
                    root == &dir,
                    &mut out,
                )?;
                out.folders.push((entry.name.clone(), n));
            }
        }
    }
    Ok(out)
}

fn refused(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        return Error::invalid(format!("{} exists", path.display()), "export into a new file");
    }
    e.into()
}

/// The directory of a folder in a Maildir++ tree (`a/b` -> `.a.b`, levels in modified UTF-7, a
/// `.` inside a level as its UTF-7 form so that it does not split the level).
pub fn maildir_dir(root: &Path, name: &str) -> PathBuf {
    if name == "INBOX" {
        return root.to_path_buf();
    }
    let levels: Vec<String> =
        name.split('/').map(|l| super::utf7::encode(l).replace('.', "&AC4-")).collect();
    root.join(format!(".{}", levels.join(".")))
}

fn write_maildir_folder(
    store: &Store,
    mailbox: &str,
    folder: Folder,
    dir: &Path,
    is_root: bool,
    out: &mut Exported,
) -> Result<u64> {
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    if !is_root {
        // Maildir++: the marker Dovecot and Courier write into each folder.
        std::fs::write(dir.join("maildirfolder"), b"")?;
    }
    let mut keywords = Vec::new();
    let pid = std::process::id();
    let mut seq = 0u64;
    let n = each(store, mailbox, folder, out, |m| {
        seq += 1;
        let info = super::flags::to_maildir_info(&m.flags, &mut keywords);
        let name =
            format!("{}.M{seq}P{pid}.edgemail,S={}:2,{info}", m.internal / 1000, m.raw.len());
        let path = dir.join("cur").join(name);
        let mut file = std::fs::File::create(&path)?;
        file.write_all(&m.raw)?;
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(m.internal);
        file.set_modified(at)?;
        Ok(())
    })?;
    if !keywords.is_empty() {
        let lines: Vec<String> =
            keywords.iter().enumerate().map(|(i, k)| format!("{i} {k}\n")).collect();
        std::fs::write(dir.join("dovecot-keywords"), lines.concat())?;
    }
    Ok(n)
}

/// Calls `write` for each message of the folder in UID order; how many were written.
fn each(
    store: &Store,
    mailbox: &str,
    folder: Folder,
    out: &mut Exported,
    mut write: impl FnMut(Stored) -> std::io::Result<()>,
) -> Result<u64> {
    let (m, now) = (mailbox.to_owned(), crate::ids::now_ms());
    // A folder no IMAP client opened yet gets its UIDs now, as its first SELECT would.
    store.write_blocking(move |w| w.imap_open(&m, folder, now).map(|_| ()))?;
    let m = mailbox.to_owned();
    let uids = store.read_blocking(move |r| r.imap_uids(&m, folder))?;
    let mut written = 0;
    for chunk in uids.chunks(256) {
        let (m, chunk) = (mailbox.to_owned(), chunk.to_vec());
        let entries = store.read_blocking(move |r| r.imap_entries(&m, folder, &chunk))?;
        for entry in entries {
            let id = entry.id.clone();
            let Some(raw) = store.read_blocking(move |r| r.raw_message(&id))? else {
                out.without_bytes += 1;
                continue;
            };
            write(Stored { raw, flags: entry.meta.flags, internal: entry.meta.internal })?;
            written += 1;
        }
    }
    Ok(written)
}
