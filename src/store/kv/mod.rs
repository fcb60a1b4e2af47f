//! The narrow storage backend beneath the store: named, ordered tables of byte keys and byte
//! values, read and written inside transactions (get, put, delete, and range scans in either
//! direction, whole or by pages). `embedded` implements it on redb (the default: one file),
//! `postgres` on a PostgreSQL relation keyed by `(table, key bytea)`, which sorts the same way
//! (several nodes share it).
//!
//! Above the bytes, `table` gives the store typed tables (`TableDefinition<K, V>`), keys encoded
//! by `key` so that byte order is typed order, values by `value`.

mod embedded;
mod key;
mod postgres;
mod table;
mod value;

#[cfg(test)]
pub(super) mod conformance;

use std::ops::{Bound, ControlFlow};

use super::error::Result;

pub use embedded::{Embedded, Redb};
pub use key::Key;
#[cfg(test)]
use postgres::TRIAL;
pub use postgres::{Changed, Postgres, Relation};
pub use table::{Ahead, ReadableTable, Table, TableDefinition};
pub use value::Value;

/// Bytes read from a backend: its own guard on them, or a copy.
pub enum Bytes<'a> {
    Owned(Vec<u8>),
    Embedded(embedded::Guard<'a>),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Embedded(g) => g.bytes(),
        }
    }
}

/// The order a range is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

pub type Entry<'a> = (Bytes<'a>, Bytes<'a>);

/// What a scan calls with each entry, lent where it lies; it answers whether to go on.
pub type Visit<'v> = &'v mut dyn FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>>;

/// The entries of a range, read lazily. redb's cursor is a variant of its own rather than a boxed
/// iterator: a scan then calls it directly, and each entry's guards are built where the typed
/// layer keeps them instead of being moved through a dynamic call (a cost per entry that the
/// typed redb tables of older releases did not have). Other backends box their iterator.
// One lives per scan, inside the scan's `Range`: boxing the cursor would cost an allocation per
// scan to save stack it does not lack.
#[allow(clippy::large_enum_variant)]
pub enum Entries<'a> {
    Embedded(embedded::Cursor<'a>),
    Boxed(Box<dyn Iterator<Item = Result<Entry<'a>>> + 'a>),
    Empty,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Entries::Embedded(cursor) => cursor.next(),
            Entries::Boxed(entries) => entries.next(),
            Entries::Empty => None,
        }
    }
}

/// One page of a range: its entries, and the key to resume after when more follow. The store
/// reads ranges lazily (`range`); pages are for backends and tools that cross a network, and the
/// conformance suite holds every backend to them.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    pub next: Option<Vec<u8>>,
}

/// A table as seen by a transaction. A table never written reads as empty.
pub trait ReadTable {
    fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>>;
    /// The entries between `lo` and `hi` in `direction`, read lazily.
    fn range<'r>(
        &'r self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<Entries<'r>>;
    fn len(&self) -> Result<u64>;

    /// Calls `each` with the entries between `lo` and `hi` in `direction` until it breaks. The
    /// cheapest way through many entries: a backend that reads in place (redb) lends each entry
    /// from its pages, with no guard built, moved or held per entry.
    fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
        each: Visit<'_>,
    ) -> Result<()> {
        for entry in self.range(lo, hi, direction)? {
            let (k, v) = entry?;
            if each(&k, &v)?.is_break() {
                break;
            }
        }
        Ok(())
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Up to `limit` entries between `lo` and `hi`; the next page starts after `Page::next`
    /// (pass it as the excluded `lo` going forward, the excluded `hi` going backward).
    fn page(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Page> {
        let mut page = Page::default();
        let mut entries = self.range(lo, hi, direction)?;
        for entry in entries.by_ref().take(limit) {
            let (k, v) = entry?;
            page.entries.push((k.to_vec(), v.to_vec()));
        }
        if entries.next().transpose()?.is_some() {
            page.next = page.entries.last().map(|(k, _)| k.clone());
        }
        Ok(page)
    }
}

pub trait WriteTable: ReadTable {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes `key`; answers the value it had.
    fn delete(&mut self, key: &[u8]) -> Result<Option<Bytes<'_>>>;

    /// Of `keys`, those present that no other open transaction holds locked, each locked now
    /// for this one until it ends (PostgreSQL's `FOR UPDATE SKIP LOCKED`): writers that each
    /// take a batch of the same entries get disjoint parts instead of conflicting on them. A
    /// backend with one writer at a time (redb) has nobody to skip: every present key.
    fn lock_unheld(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for key in keys {
            if self.get(key)?.is_some() {
                out.push(key.clone());
            }
        }
        Ok(out)
    }
}

/// A consistent snapshot.
pub trait ReadTxn {
    fn table(&self, name: &str) -> Result<Opened<'_>>;

    /// Whether `read_ahead` saves anything: a backend across a network answers many keys in
    /// one exchange; one reading in place (redb) has nothing to gain, and its callers then
    /// spare themselves listing the keys.
    fn reads_ahead(&self) -> bool {
        false
    }

    /// Reads `keys` (table, key) now, together, so that the `get`s of them that follow are
    /// answered without asking the backend again. Only a hint: it changes no answer.
    fn read_ahead(&self, _keys: &[(&str, Vec<u8>)]) -> Result<()> {
        Ok(())
    }
}

/// A table opened by a read transaction: redb's held as it is, a table never written as empty,
/// other backends' boxed. Every API read opens a table or two, and an allocation each is a
/// measurable share of a short read.
pub enum Opened<'a> {
    Embedded(embedded::ReadOnly),
    Empty,
    Boxed(Box<dyn ReadTable + 'a>),
}

impl ReadTable for Opened<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        match self {
            Opened::Embedded(t) => t.get(key),
            Opened::Empty => Ok(None),
            Opened::Boxed(t) => t.get(key),
        }
    }

    fn range<'r>(
        &'r self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<Entries<'r>> {
        match self {
            Opened::Embedded(t) => t.range(lo, hi, direction),
            Opened::Empty => Ok(Entries::Empty),
            Opened::Boxed(t) => t.range(lo, hi, direction),
        }
    }

    fn len(&self) -> Result<u64> {
        match self {
            Opened::Embedded(t) => t.len(),
            Opened::Empty => Ok(0),
            Opened::Boxed(t) => t.len(),
        }
    }

    fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
        each: Visit<'_>,
    ) -> Result<()> {
        match self {
            Opened::Embedded(t) => t.scan(lo, hi, direction, each),
            Opened::Empty => Ok(()),
            Opened::Boxed(t) => t.scan(lo, hi, direction, each),
        }
    }
}

/// A read transaction of any backend: redb's held as it is, others boxed.
pub enum Snapshot {
    Embedded(embedded::Snapshot),
    Boxed(Box<dyn ReadTxn>),
}

impl ReadTxn for Snapshot {
    fn table(&self, name: &str) -> Result<Opened<'_>> {
        match self {
            Snapshot::Embedded(tx) => tx.table(name),
            Snapshot::Boxed(tx) => tx.table(name),
        }
    }

    fn reads_ahead(&self) -> bool {
        matches!(self, Snapshot::Boxed(tx) if tx.reads_ahead())
    }

    fn read_ahead(&self, keys: &[(&str, Vec<u8>)]) -> Result<()> {
        match self {
            Snapshot::Embedded(_) => Ok(()),
            Snapshot::Boxed(tx) => tx.read_ahead(keys),
        }
    }
}

/// A write transaction: what it writes is seen by its own reads, and by others once committed.
pub trait WriteTxn {
    fn table(&self, name: &str) -> Result<Box<dyn WriteTable + '_>>;

    /// As `ReadTxn::reads_ahead`.
    fn reads_ahead(&self) -> bool {
        false
    }

    /// As `ReadTxn::read_ahead`, seeing this transaction's own writes.
    fn read_ahead(&self, _keys: &[(&str, Vec<u8>)]) -> Result<()> {
        Ok(())
    }
}

/// A write transaction the caller ends: committed (durably) or abandoned.
pub trait Transaction: WriteTxn {
    fn commit(self: Box<Self>) -> Result<()>;
    fn abort(self: Box<Self>) -> Result<()>;
}

/// A store of named ordered tables.
pub trait Backend: Send + Sync {
    fn read(&self) -> Result<Snapshot>;
    /// A write transaction as if it ran alone (serializable).
    fn write(&self) -> Result<Box<dyn Transaction>>;
    /// A write transaction under snapshot isolation: it sees one snapshot, and it loses (with
    /// `Error::Contention`) only to a concurrent transaction that wrote a key it writes too.
    /// For work whose every invariant across concurrent writers rests on keys they all write
    /// (see `Store::write_snapshot`). On a store with one writer at a time it is `write`.
    fn write_snapshot(&self) -> Result<Box<dyn Transaction>> {
        self.write()
    }
}

/// The backend a store runs on.
pub enum Db {
    Redb(Redb),
    Postgres(Postgres),
}

impl Db {
    /// The names of the tables holding data, in order (a table redb keeps empty may be listed).
    pub fn table_names(&self) -> Result<Vec<String>> {
        match self {
            Db::Redb(db) => db.table_names(),
            Db::Postgres(db) => db.table_names(),
        }
    }

    /// The redb file, for what only it does (migrating older layouts, copying the file).
    pub fn redb(&self) -> Option<&Redb> {
        match self {
            Db::Redb(db) => Some(db),
            Db::Postgres(_) => None,
        }
    }

    /// What other nodes wrote to the watched tables: `None` on the file, which one process owns
    /// (its own writes wake its engines directly).
    pub fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Changed>> {
        match self {
            Db::Redb(_) => None,
            Db::Postgres(db) => Some(db.changes()),
        }
    }

    /// Whether notifications of other nodes' writes arrive now.
    pub fn listening(&self) -> bool {
        matches!(self, Db::Postgres(db) if db.listening())
    }
}

impl Backend for Db {
    fn read(&self) -> Result<Snapshot> {
        match self {
            Db::Redb(db) => db.read(),
            Db::Postgres(db) => db.read(),
        }
    }

    fn write(&self) -> Result<Box<dyn Transaction>> {
        match self {
            Db::Redb(db) => db.write(),
            Db::Postgres(db) => db.write(),
        }
    }

    fn write_snapshot(&self) -> Result<Box<dyn Transaction>> {
        match self {
            Db::Redb(db) => db.write(),
            Db::Postgres(db) => db.write_snapshot(),
        }
    }
}
