//! Backups, restores and integrity checks of the data file. A backup copies the file's bytes
//! between two commits (the writer holds still meanwhile, reads go on), so the copy is exactly
//! the last commit; the copy is then opened, repaired if redb asks for it, checked and closed
//! cleanly before it takes its final name. A check works on a copy too: the file checked is
//! never modified.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use super::error::{Error, Result};
use super::kv::{Db, Redb};
use super::{DB_FILE, Store};

/// What a check found in a sound file.
#[derive(Debug)]
pub struct Checked {
    pub bytes: u64,
    pub schema_version: u64,
    /// redb found the file not closed cleanly (a crash, or a copy of a live file) and repaired
    /// the copy it checked: the next start repairs the file the same way.
    pub repaired: bool,
}

impl Store {
    /// Writes a consistent copy of the data to `to` (replaced if present); returns what the
    /// check of the copy found. Runs alongside reads and writes, holding writes for the time of
    /// a file copy.
    pub fn backup(&self, to: &Path, force: bool) -> Result<Checked> {
        if self.file.is_shared() {
            return Err(Error::Unavailable(
                "this store is a PostgreSQL database: back it up with PostgreSQL's tools \
                 (pg_dump, or base backups with WAL archiving)"
                    .into(),
            ));
        }
        backup_target(to, force)?;
        let partial = sibling(to, "partial");
        let (done, copied) = mpsc::channel();
        let (from, target) = (self.path.clone(), partial.clone());
        let work = Box::new(move |_: &Db| {
            let _ = done.send(copy_durably(&from, &target));
        });
        if !self.writer.between(work) {
            return Err(Error::Unavailable("the store is closed".into()));
        }
        let copied = copied.recv().map_err(|_| Error::Unavailable("the store closed".into()));
        let checked = copied.and_then(|copy| copy).and_then(|()| settle(&partial, to));
        if checked.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        let checked = checked?;
        std::fs::rename(&partial, to)
            .map_err(|e| Error::io(format!("cannot rename the backup to {}", to.display()), e))?;
        Ok(checked)
    }
}

/// Checks the data file at `path` without modifying it: a copy is opened (and repaired when
/// redb asks for it), its integrity checked and its schema version read.
pub fn check_file(path: &Path) -> Result<Checked> {
    if !path.is_file() {
        return Err(Error::NotFound(format!("{} not found", path.display())));
    }
    let copy =
        std::env::temp_dir().join(format!("edgemail-check-{}.redb", crate::ids::new_id("c")));
    let checked = copy_durably(path, &copy).and_then(|()| settle(&copy, path));
    let _ = std::fs::remove_file(&copy);
    checked
}

/// Puts the backup `from` in place as the data file of `dir`. `dir` must not hold a data file
/// unless `force`; the backup is checked before anything in `dir` changes.
pub fn restore(from: &Path, dir: &Path, force: bool) -> Result<Checked> {
    if !from.is_file() {
        return Err(Error::NotFound(format!("{} not found", from.display())));
    }
    let busy = dir.is_dir()
        && std::fs::read_dir(dir)
            .map_err(|e| Error::io(format!("cannot list {}", dir.display()), e))?
            .next()
            .is_some();
    if busy && !force {
        return Err(Error::Conflict(format!(
            "{} is not empty; restore into an empty directory, or pass --force to replace its data",
            dir.display()
        )));
    }
    super::file::create_private_dir(dir)?;
    let target = dir.join(DB_FILE);
    let partial = sibling(&target, "restoring");
    let checked = copy_durably(from, &partial).and_then(|()| settle(&partial, from));
    if checked.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    let checked = checked?;
    std::fs::rename(&partial, &target).map_err(|e| {
        Error::io(format!("cannot move the restored file to {}", target.display()), e)
    })?;
    super::file::restrict_file(&target)?;
    Ok(checked)
}

/// Refuses a backup path that would silently replace a file (without `force`), or whose
/// directory is missing, saying which.
fn backup_target(to: &Path, force: bool) -> Result<()> {
    if to.is_dir() {
        return Err(Error::Conflict(format!("{} is a directory; name a file in it", to.display())));
    }
    if to.exists() && !force {
        return Err(Error::Conflict(format!(
            "{} exists; pass --force to replace it, or name another file",
            to.display()
        )));
    }
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|p| !p.is_dir()) {
        return Err(Error::NotFound(format!(
            "the directory {} does not exist; create it first",
            dir.display()
        )));
    }
    Ok(())
}

fn sibling(path: &Path, tag: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{tag}"));
    path.with_file_name(name)
}

fn copy_durably(from: &Path, to: &Path) -> Result<()> {
    let context = || format!("cannot copy {} to {}", from.display(), to.display());
    std::fs::copy(from, to).map_err(|e| Error::io(context(), e))?;
    let file = std::fs::File::open(to).map_err(|e| Error::io(context(), e))?;
    file.sync_all().map_err(|e| Error::io(context(), e))
}

/// Opens the file (redb repairs it if it was not closed cleanly), checks its integrity, reads its
/// schema version and closes it cleanly. Errors name `shown`, the file the user knows.
fn settle(path: &Path, shown: &Path) -> Result<Checked> {
    let mut db = Redb::open_existing(path).map_err(|e| corrupt(shown, e))?;
    let sound = db.check_integrity().map_err(|e| corrupt(shown, e))?;
    let schema_version =
        super::migrate::stored_version(&db).map_err(|e| corrupt(shown, e))?.ok_or_else(|| {
            Error::invalid(format!("{} is not an edgemail data file", shown.display()), "")
        })?;
    db.close().map_err(|e| corrupt(shown, e))?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(Checked { bytes, schema_version, repaired: !sound })
}

fn corrupt(path: &Path, e: Error) -> Error {
    Error::invalid(
        format!("{} is damaged: {e}", path.display()),
        "restore the last good backup with `edgemail restore --from FILE --data DIR --force`",
    )
}
