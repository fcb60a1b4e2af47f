//! Moving a whole store from one backend to the other (`edgemail migrate`): a single node on the
//! redb file grows onto PostgreSQL, or comes back. Keys and values are encoded above the
//! backends, the same bytes for both, so every table is copied as the bytes it holds, in
//! chunks of bounded size. Then both sides are summed per table (entries, and SHA-256 over
//! them in key order) and must agree: the copy is proven, not assumed.
//!
//! The source is read from one snapshot. The target must hold nothing but what opening it wrote
//! (the version stamp, the same on both sides since opening the source upgraded it, and the
//! secrets made on first start, replaced by the source's so its signed links stay valid): a
//! copy never merges into data it would silently overwrite.

use std::ops::{Bound, ControlFlow};

use sha2::{Digest, Sha256};

use super::Store;
use super::error::{Error, Result};
use super::kv::{Backend, Db, ReadTable, ReadTxn, Snapshot};
use super::tables::{META, SECRETS};

/// A chunk written in one transaction of the target: at most this many entries or bytes.
const CHUNK_ENTRIES: usize = 5_000;
const CHUNK_BYTES: usize = 16 << 20;

/// What one table holds: its entries, and SHA-256 over them in key order (each key and value
/// prefixed by its length, so no two different tables sum the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSum {
    pub table: String,
    pub entries: u64,
    pub sha256: String,
}

impl Store {
    /// Copies every table of this store into `target`, then checks that both sum the same.
    /// Answers the sums.
    pub fn copy_into(&self, target: &Store) -> Result<Vec<TableSum>> {
        let (from, to) = (self.file.db()?, target.file.db()?);
        let opening = [META.name(), SECRETS.name()];
        let holding: Vec<TableSum> =
            sums(&to)?.into_iter().filter(|s| !opening.contains(&s.table.as_str())).collect();
        if let Some(first) = holding.first() {
            return Err(Error::Conflict(format!(
                "the target already holds data ({} entries in table {}): migrate into an empty \
                 database or data directory",
                first.entries, first.table
            )));
        }
        for name in opening {
            empty_table(&to, name)?;
        }
        let snapshot = from.read()?;
        for name in from.table_names()? {
            copy_table(&snapshot, &to, &name)?;
        }
        let (source, copied) = (sums(&from)?, sums(&to)?);
        if let Some(diff) = source.iter().find(|s| !copied.contains(s)) {
            return Err(Error::Internal(format!(
                "the copy of table {} differs from the source (the source changed while it was \
                 copied: stop every node first, empty the target and run again)",
                diff.table
            )));
        }
        if let Some(extra) = copied.iter().find(|s| !source.contains(s)) {
            return Err(Error::Internal(format!(
                "the target holds a table {} the source lacks",
                extra.table
            )));
        }
        Ok(source)
    }

    /// The sums of every table holding entries, by table name.
    pub fn table_sums(&self) -> Result<Vec<TableSum>> {
        sums(&*self.file.db()?)
    }
}

/// Copies one table from the snapshot, a chunk per transaction of the target.
fn copy_table(snapshot: &Snapshot, to: &Db, name: &str) -> Result<()> {
    let table = snapshot.table(name)?;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let lo = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let (mut chunk, mut bytes) = (Vec::new(), 0);
        table.scan(lo, Bound::Unbounded, super::kv::Direction::Forward, &mut |k, v| {
            chunk.push((k.to_vec(), v.to_vec()));
            bytes += k.len() + v.len();
            let full = chunk.len() >= CHUNK_ENTRIES || bytes >= CHUNK_BYTES;
            Ok(if full { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        })?;
        let Some((last, _)) = chunk.last() else { return Ok(()) };
        after = Some(last.clone());
        let tx = to.write()?;
        {
            let mut target = tx.table(name)?;
            for (k, v) in &chunk {
                target.put(k, v)?;
            }
        }
        tx.commit()?;
    }
}

/// Removes every entry of a table that holds a few (what opening a store wrote).
fn empty_table(db: &Db, name: &str) -> Result<()> {
    let tx = db.write()?;
    {
        let mut table = tx.table(name)?;
        let mut keys = Vec::new();
        table.scan(
            Bound::Unbounded,
            Bound::Unbounded,
            super::kv::Direction::Forward,
            &mut |k, _| {
                keys.push(k.to_vec());
                Ok(ControlFlow::Continue(()))
            },
        )?;
        for key in keys {
            table.delete(&key)?;
        }
    }
    tx.commit()
}

/// The sums of the tables of `db` that hold entries.
fn sums(db: &Db) -> Result<Vec<TableSum>> {
    let snapshot = db.read()?;
    let mut out = Vec::new();
    for name in db.table_names()? {
        let table = snapshot.table(&name)?;
        let (mut hash, mut entries) = (Sha256::new(), 0u64);
        table.scan(
            Bound::Unbounded,
            Bound::Unbounded,
            super::kv::Direction::Forward,
            &mut |k, v| {
                for part in [k, v] {
                    hash.update((part.len() as u64).to_be_bytes());
                    hash.update(part);
                }
                entries += 1;
                Ok(ControlFlow::Continue(()))
            },
        )?;
        if entries > 0 {
            let sha256 = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
            out.push(TableSum { table: name, entries, sha256 });
        }
    }
    Ok(out)
}
