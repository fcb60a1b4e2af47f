//! The backend on one redb file: each table is a redb table of bytes to bytes, named with a
//! `kv/` prefix so that the typed tables of older releases (same names, other types) can sit
//! beside them until they are migrated.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use redb::{
    Builder, Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, TableError, TableHandle, WriteTransaction,
};

use super::super::error::{Error, Result};
use super::{
    Backend, Bytes, Direction, Entries, Opened, ReadTable, ReadTxn, Snapshot as AnySnapshot,
    Transaction, Visit, WriteTable, WriteTxn,
};

type Raw<'n> = TableDefinition<'n, &'static [u8], &'static [u8]>;

/// A value or key held in redb's pages while it is read.
pub struct Guard<'a>(redb::AccessGuard<'a, &'static [u8]>);

impl Guard<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        self.0.value()
    }
}

#[inline]
fn bytes<'a>(guard: redb::AccessGuard<'a, &'static [u8]>) -> Bytes<'a> {
    Bytes::Embedded(Guard(guard))
}

/// Calls `open` with the redb name of `table`. Every read opens its tables: the name is built on
/// the stack (the store's names are short), without the allocation a `String` costs.
fn named<T>(table: &str, open: impl FnOnce(&str) -> T) -> T {
    let mut buf = [0u8; 64];
    let len = PREFIX.len() + table.len();
    if let Some(name) = buf.get_mut(..len) {
        name[..PREFIX.len()].copy_from_slice(PREFIX.as_bytes());
        name[PREFIX.len()..].copy_from_slice(table.as_bytes());
        if let Ok(name) = std::str::from_utf8(name) {
            return open(name);
        }
    }
    open(&format!("{PREFIX}{table}"))
}

const PREFIX: &str = "kv/";

/// Whether redb's storage error comes from the file beneath rather than from how it was used.
fn from_disk(e: &redb::StorageError) -> bool {
    matches!(e, redb::StorageError::Io(_) | redb::StorageError::PreviousIo)
}

/// redb's error types, each with whether it comes from the disk.
macro_rules! storage_error {
    ($($t:ty => |$e:ident| $disk:expr),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from($e: $t) -> Self {
                if $disk { Error::Disk(Box::new($e)) } else { Error::Storage(Box::new($e)) }
            }
        }
    )*};
}
storage_error!(
    redb::StorageError => |e| from_disk(&e),
    redb::Error => |e| matches!(e, redb::Error::Io(_) | redb::Error::PreviousIo),
    redb::DatabaseError => |e| matches!(&e, redb::DatabaseError::Storage(s) if from_disk(s)),
    redb::TransactionError => |e| matches!(&e, redb::TransactionError::Storage(s) if from_disk(s)),
    redb::TableError => |e| matches!(&e, redb::TableError::Storage(s) if from_disk(s)),
    redb::CommitError => |e| matches!(&e, redb::CommitError::Storage(s) if from_disk(s)),
);

/// The database file.
pub struct Redb {
    /// Declared before `db`, so dropped before it: the file closes with no read transaction of
    /// ours alive.
    latest: Arc<Latest>,
    db: Database,
}

/// The read transaction of the last commit, shared by the reads that begin before the next one.
/// A transaction of its own cost each read a turn through redb's transaction tracker (a lock and
/// a map entry, taken again on drop), which on the API's read path was a fortieth of the CPU.
/// A commit drops the shared one, so that an idle cache never holds back the pages later commits
/// free; only reads still running keep it.
#[derive(Default)]
struct Latest {
    /// Commits so far: a shared transaction begun at another count is not the latest.
    commits: AtomicU64,
    shared: Mutex<Option<(u64, Arc<ReadTransaction>)>>,
}

impl Latest {
    fn read(&self, db: &Database) -> Result<Arc<ReadTransaction>> {
        // Loaded before a transaction begins: one begun after a commit is counted later sees it.
        let commits = self.commits.load(Ordering::Acquire);
        if let Some((at, tx)) = &*self.lock()
            && *at == commits
        {
            return Ok(tx.clone());
        }
        let tx = Arc::new(db.begin_read()?);
        let mut shared = self.lock();
        if shared.as_ref().is_none_or(|(at, _)| *at < commits) {
            *shared = Some((commits, tx.clone()));
        }
        Ok(tx)
    }

    /// After a commit, or before the file closes: the shared transaction is no longer the latest.
    fn forget(&self) {
        let mut shared = self.lock();
        self.commits.fetch_add(1, Ordering::AcqRel);
        *shared = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Arc<ReadTransaction>)>> {
        self.shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Redb {
    /// Opens the file at `path`, creating it when absent, with `cache_size` bytes of page cache.
    pub fn open(path: &Path, cache_size: usize) -> Result<Redb> {
        match Builder::new().set_cache_size(cache_size).create(path) {
            Ok(db) => Ok(Redb { db, latest: Arc::default() }),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => Err(Error::Unavailable(format!(
                "{} is open in another process (is `edgemail serve` running on this data \
                 directory?)",
                path.display()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens an existing file, repairing it when it was not closed cleanly, without the
    /// creation `open` allows.
    pub fn open_existing(path: &Path) -> Result<Redb> {
        Ok(Redb { db: Database::open(path)?, latest: Arc::default() })
    }

    /// Whether the file was sound (false: redb repaired it).
    pub fn check_integrity(&mut self) -> Result<bool> {
        Ok(self.db.check_integrity()?)
    }

    pub fn close(self) -> Result<()> {
        self.latest.forget();
        Ok(self.db.close()?)
    }

    /// The file itself, for what only redb can do: reading the typed tables of older layouts.
    /// The names of the tables the file holds, in order.
    pub fn table_names(&self) -> Result<Vec<String>> {
        let tx = self.db.begin_read()?;
        // Only the byte tables (`kv/` names): the rest are kept by redb for older layouts.
        let mut names: Vec<String> = tx
            .list_tables()?
            .filter_map(|t| t.name().strip_prefix(PREFIX).map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    pub(in crate::store) fn database(&self) -> &Database {
        &self.db
    }

    /// A write transaction on the redb file itself, for migrations.
    pub(in crate::store) fn begin_write(&self) -> Result<Embedded> {
        Ok(Embedded(self.db.begin_write()?, self.latest.clone()))
    }
}

impl Backend for Redb {
    fn read(&self) -> Result<AnySnapshot> {
        Ok(AnySnapshot::Embedded(Snapshot(self.latest.read(&self.db)?)))
    }

    fn write(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin_write()?))
    }
}

pub struct Snapshot(Arc<ReadTransaction>);

impl ReadTxn for Snapshot {
    fn table(&self, table: &str) -> Result<Opened<'_>> {
        named(table, |name| match self.0.open_table(Raw::new(name)) {
            Ok(t) => Ok(Opened::Embedded(ReadOnly(t))),
            Err(TableError::TableDoesNotExist(_)) => Ok(Opened::Empty),
            Err(e) => Err(e.into()),
        })
    }
}

/// A write transaction of the redb file, and the shared read its commit makes stale.
pub struct Embedded(WriteTransaction, Arc<Latest>);

impl Embedded {
    pub(in crate::store) fn redb(&self) -> &WriteTransaction {
        &self.0
    }
}

impl WriteTxn for Embedded {
    fn table(&self, table: &str) -> Result<Box<dyn WriteTable + '_>> {
        Ok(Box::new(Writable(named(table, |name| self.0.open_table(Raw::new(name)))?)))
    }
}

impl Transaction for Embedded {
    fn commit(self: Box<Self>) -> Result<()> {
        let Embedded(tx, latest) = *self;
        let committed = tx.commit();
        // Also after a failed commit: what it left is not known, so no shared read stays.
        latest.forget();
        Ok(committed?)
    }

    fn abort(self: Box<Self>) -> Result<()> {
        Ok(self.0.abort()?)
    }
}

pub struct ReadOnly(redb::ReadOnlyTable<&'static [u8], &'static [u8]>);
struct Writable<'t>(redb::Table<'t, &'static [u8], &'static [u8]>);

/// redb's range in one direction.
pub struct Cursor<'a> {
    range: redb::Range<'a, &'static [u8], &'static [u8]>,
    direction: Direction,
}

impl<'a> Iterator for Cursor<'a> {
    type Item = Result<(Bytes<'a>, Bytes<'a>)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let entry = match self.direction {
            Direction::Forward => self.range.next(),
            Direction::Backward => self.range.next_back(),
        }?;
        Some(match entry {
            Ok((k, v)) => Ok((bytes(k), bytes(v))),
            Err(e) => Err(Error::from(e)),
        })
    }
}

/// Whether a range holds nothing by its bounds alone: redb refuses one whose start lies after
/// its end.
fn empty(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
            l >= h
        }
        _ => false,
    }
}

fn range<'r>(
    table: &'r impl ReadableTable<&'static [u8], &'static [u8]>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    direction: Direction,
) -> Result<Entries<'r>> {
    if empty(lo, hi) {
        return Ok(Entries::Empty);
    }
    let range = table.range::<&[u8]>((lo, hi))?;
    Ok(Entries::Embedded(Cursor { range, direction }))
}

fn scan(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    direction: Direction,
    each: Visit<'_>,
) -> Result<()> {
    if empty(lo, hi) {
        return Ok(());
    }
    let mut range = table.range::<&[u8]>((lo, hi))?;
    // Each entry's guards are used where redb hands them over and dropped there: this is the
    // per-entry cost of redb's own typed tables, which a lazily read range adds to.
    loop {
        let entry = match direction {
            Direction::Forward => range.next(),
            Direction::Backward => range.next_back(),
        };
        let Some(entry) = entry else { return Ok(()) };
        let (k, v) = entry?;
        if each(k.value(), v.value())?.is_break() {
            return Ok(());
        }
    }
}

/// Both of redb's table kinds read alike; one body serves them.
macro_rules! read_table {
    ($table:ty) => {
        impl ReadTable for $table {
            fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
                Ok(self.0.get(key)?.map(bytes))
            }

            fn range<'r>(
                &'r self,
                lo: Bound<&[u8]>,
                hi: Bound<&[u8]>,
                direction: Direction,
            ) -> Result<Entries<'r>> {
                range(&self.0, lo, hi, direction)
            }

            fn scan(
                &self,
                lo: Bound<&[u8]>,
                hi: Bound<&[u8]>,
                direction: Direction,
                each: Visit<'_>,
            ) -> Result<()> {
                scan(&self.0, lo, hi, direction, each)
            }

            fn len(&self) -> Result<u64> {
                Ok(self.0.len()?)
            }
        }
    };
}

read_table!(ReadOnly);
read_table!(Writable<'_>);

impl WriteTable for Writable<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.insert(key, value)?;
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        Ok(self.0.remove(key)?.map(bytes))
    }
}
