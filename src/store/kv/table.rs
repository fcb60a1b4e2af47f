//! Typed tables over the byte tables of a backend, with the calls the store modules make: `get`,
//! `insert`, `remove`, `range` (and `rev` on it), `iter`, `first`, `last`, `len`, `retain_in`.

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::{Bound, ControlFlow, RangeBounds};

use super::super::error::Result;
use super::key::{Key, corrupt, encode_key};
use super::value::Value;
use super::{
    Bytes, Direction, Entries, Opened, ReadTable, ReadTxn, Snapshot, WriteTable, WriteTxn,
};

/// A table's name and its key and value types.
pub struct TableDefinition<'n, K, V> {
    name: &'n str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<'n, K, V> TableDefinition<'n, K, V> {
    pub const fn new(name: &'n str) -> Self {
        TableDefinition { name, types: PhantomData }
    }

    pub const fn name(&self) -> &'n str {
        self.name
    }
}

impl<K, V> Clone for TableDefinition<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V> Copy for TableDefinition<'_, K, V> {}

/// A stored value.
pub struct AccessGuard<'a, V> {
    bytes: Bytes<'a>,
    types: PhantomData<fn() -> V>,
}

impl<'a, V: Value> AccessGuard<'a, V> {
    #[inline]
    fn new(bytes: Bytes<'a>) -> Result<Self> {
        V::check(&bytes)?;
        Ok(AccessGuard { bytes, types: PhantomData })
    }

    pub fn value(&self) -> V::SelfType<'_> {
        V::read(&self.bytes)
    }
}

/// A stored key, decoded: read where it lies, or from its plain layout when a part of it
/// escapes a zero byte (rare: the store's strings hold no NUL).
pub struct KeyGuard<'a, K> {
    bytes: Bytes<'a>,
    /// Whether `bytes` is the key's plain layout rather than its encoding.
    plain: bool,
    types: PhantomData<fn() -> K>,
}

impl<'a, K: Key> KeyGuard<'a, K> {
    #[inline]
    fn new(encoded: Bytes<'a>) -> Result<Self> {
        let whole = K::decode(&encoded, true)?.map(|(_, rest)| rest.is_empty());
        let (bytes, plain) = match whole {
            Some(true) => (encoded, false),
            Some(false) => return Err(corrupt("bytes after the key")),
            None => {
                let mut plain = Vec::with_capacity(encoded.len() + 8);
                if !K::to_plain(&encoded, true, &mut plain)?.is_empty() {
                    return Err(corrupt("bytes after the key"));
                }
                (Bytes::Owned(plain), true)
            }
        };
        Ok(KeyGuard { bytes, plain, types: PhantomData })
    }

    pub fn value(&self) -> K::SelfType<'_> {
        if self.plain {
            K::from_plain(&self.bytes, true).0
        } else {
            K::in_place(&self.bytes, true).0
        }
    }
}

fn encode_bound<'a, K: Key, KR: Borrow<K::SelfType<'a>>>(bound: Bound<&KR>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) => Bound::Included(encode_key::<K>(k.borrow())),
        Bound::Excluded(k) => Bound::Excluded(encode_key::<K>(k.borrow())),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The entries of a key range, in key order, or in reverse after `rev`. The backend is asked
/// on the first `next`, so `rev` costs nothing.
pub struct Range<'t, K, V> {
    table: &'t dyn ReadTable,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    direction: Direction,
    entries: Option<Entries<'t>>,
    types: PhantomData<fn() -> (K, V)>,
}

impl<'t, K, V> Range<'t, K, V> {
    fn new(table: &'t dyn ReadTable, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Self {
        Range { table, lo, hi, direction: Direction::Forward, entries: None, types: PhantomData }
    }

    /// The same range, read from its end. Call it before reading any entry.
    pub fn rev(mut self) -> Self {
        self.direction = match self.direction {
            Direction::Forward => Direction::Backward,
            Direction::Backward => Direction::Forward,
        };
        self
    }
}

impl<'t, K: Key, V: Value> Iterator for Range<'t, K, V> {
    type Item = Result<(KeyGuard<'t, K>, AccessGuard<'t, V>)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let entries = match &mut self.entries {
            Some(entries) => entries,
            None => {
                let opened =
                    self.table.range(as_slice(&self.lo), as_slice(&self.hi), self.direction);
                match opened {
                    Ok(entries) => self.entries.insert(entries),
                    Err(e) => {
                        self.entries = Some(Entries::Empty);
                        return Some(Err(e));
                    }
                }
            }
        };
        Some(match entries.next()? {
            Ok((k, v)) => KeyGuard::new(k).and_then(|k| Ok((k, AccessGuard::new(v)?))),
            Err(e) => Err(e),
        })
    }
}

/// What reads of a typed table have in common, in a read or a write transaction.
pub trait ReadableTable<K: Key, V: Value> {
    fn raw(&self) -> &dyn ReadTable;

    fn get<'a>(&self, key: impl Borrow<K::SelfType<'a>>) -> Result<Option<AccessGuard<'_, V>>> {
        let key = encode_key::<K>(key.borrow());
        self.raw().get(&key)?.map(AccessGuard::new).transpose()
    }

    fn range<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Range<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        let lo = encode_bound::<K, KR>(range.start_bound());
        let hi = encode_bound::<K, KR>(range.end_bound());
        Ok(Range::new(self.raw(), lo, hi))
    }

    /// Calls `each` with the entries of `range`, from its end when `rev`, until it breaks. For
    /// loops over many entries that need none of them afterwards: nothing is held or moved per
    /// entry, and each key and value is checked and read in one pass.
    fn scan<'a, KR>(
        &self,
        range: impl RangeBounds<KR> + 'a,
        rev: bool,
        mut each: impl FnMut(K::SelfType<'_>, V::SelfType<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        let lo = encode_bound::<K, KR>(range.start_bound());
        let hi = encode_bound::<K, KR>(range.end_bound());
        let direction = if rev { Direction::Backward } else { Direction::Forward };
        // Only a key whose parts escape a zero byte is unescaped, into this one buffer.
        let mut plain = Vec::new();
        self.raw().scan(as_slice(&lo), as_slice(&hi), direction, &mut |k, v| {
            let value = V::decode(v)?;
            match K::decode(k, true)? {
                Some((key, [])) => each(key, value),
                Some(_) => Err(corrupt("bytes after the key")),
                None => {
                    plain.clear();
                    if !K::to_plain(k, true, &mut plain)?.is_empty() {
                        return Err(corrupt("bytes after the key"));
                    }
                    each(K::from_plain(&plain, true).0, value)
                }
            }
        })
    }

    fn iter(&self) -> Result<Range<'_, K, V>> {
        Ok(Range::new(self.raw(), Bound::Unbounded, Bound::Unbounded))
    }

    #[allow(clippy::type_complexity)]
    fn first(&self) -> Result<Option<(KeyGuard<'_, K>, AccessGuard<'_, V>)>> {
        self.iter()?.next().transpose()
    }

    #[allow(clippy::type_complexity)]
    #[cfg_attr(not(test), allow(dead_code))]
    fn last(&self) -> Result<Option<(KeyGuard<'_, K>, AccessGuard<'_, V>)>> {
        self.iter()?.rev().next().transpose()
    }

    fn len(&self) -> Result<u64> {
        self.raw().len()
    }

    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A table opened by a read transaction.
pub struct ReadOnlyTable<'t, K, V> {
    raw: Opened<'t>,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K: Key, V: Value> ReadableTable<K, V> for ReadOnlyTable<'_, K, V> {
    fn raw(&self) -> &dyn ReadTable {
        &self.raw
    }
}

/// A table opened by a write transaction.
pub struct Table<'t, K, V> {
    raw: Box<dyn WriteTable + 't>,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K: Key, V: Value> ReadableTable<K, V> for Table<'_, K, V> {
    fn raw(&self) -> &dyn ReadTable {
        &*self.raw
    }
}

impl<K: Key, V: Value> Table<'_, K, V> {
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<()> {
        let key = encode_key::<K>(key.borrow());
        let mut bytes = Vec::new();
        V::write(value.borrow(), &mut bytes);
        self.raw.put(&key, &bytes)
    }

    /// Removes `key`; answers the value it had.
    pub fn remove<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<AccessGuard<'_, V>>> {
        let key = encode_key::<K>(key.borrow());
        self.raw.delete(&key)?.map(AccessGuard::new).transpose()
    }

    /// For each of `keys`, whether it is present and now locked by this transaction, not held
    /// by another (`WriteTable::lock_unheld`).
    pub fn lock_unheld<'k>(&mut self, keys: &[K::SelfType<'k>]) -> Result<Vec<bool>> {
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| encode_key::<K>(k)).collect();
        let locked = self.raw.lock_unheld(&keys)?;
        Ok(keys.iter().map(|k| locked.contains(k)).collect())
    }

    /// Removes the entries of `range` for which `keep` answers false.
    pub fn retain_in<'a, KR>(
        &mut self,
        range: impl RangeBounds<KR> + 'a,
        mut keep: impl FnMut(K::SelfType<'_>, V::SelfType<'_>) -> bool,
    ) -> Result<()>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        let mut doomed = Vec::new();
        for entry in self.range(range)? {
            let (key, value) = entry?;
            if !keep(key.value(), value.value()) {
                doomed.push(encode_key::<K>(&key.value()));
            }
        }
        for key in doomed {
            self.raw.delete(&key)?;
        }
        Ok(())
    }
}

/// Keys about to be read, of any tables, gathered so that a backend across a network reads
/// them in one exchange (`ReadTxn::read_ahead`).
#[derive(Default)]
pub struct Ahead {
    keys: Vec<(&'static str, Vec<u8>)>,
}

impl Ahead {
    pub fn key<'k, K: Key, V>(
        &mut self,
        table: TableDefinition<'static, K, V>,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> &mut Self {
        self.keys.push((table.name(), encode_key::<K>(key.borrow())));
        self
    }

    /// Gathers the keys `fill` names and hands them to `read`, when the backend `reads_ahead`
    /// (otherwise builds no list at all).
    fn gather(
        reads_ahead: bool,
        fill: impl FnOnce(&mut Ahead),
        read: impl FnOnce(&[(&str, Vec<u8>)]) -> Result<()>,
    ) -> Result<()> {
        if !reads_ahead {
            return Ok(());
        }
        let mut ahead = Ahead::default();
        fill(&mut ahead);
        read(&ahead.keys)
    }
}

impl dyn WriteTxn + '_ {
    pub fn open_table<K: Key, V: Value>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<Table<'_, K, V>> {
        Ok(Table { raw: self.table(definition.name())?, types: PhantomData })
    }

    /// Reads the keys `fill` names in one exchange where that saves any; see `Ahead`.
    pub fn ahead(&self, fill: impl FnOnce(&mut Ahead)) -> Result<()> {
        Ahead::gather(self.reads_ahead(), fill, |keys| self.read_ahead(keys))
    }
}

impl Snapshot {
    pub fn open_table<K: Key, V: Value>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<ReadOnlyTable<'_, K, V>> {
        Ok(ReadOnlyTable { raw: self.table(definition.name())?, types: PhantomData })
    }

    /// Reads the keys `fill` names in one exchange where that saves any; see `Ahead`.
    pub fn ahead(&self, fill: impl FnOnce(&mut Ahead)) -> Result<()> {
        Ahead::gather(self.reads_ahead(), fill, |keys| self.read_ahead(keys))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type K2<'a> = (&'a str, u64);

    fn guard(encoded: Vec<u8>) -> Result<KeyGuard<'static, K2<'static>>> {
        KeyGuard::new(Bytes::Owned(encoded))
    }

    #[test]
    fn a_key_without_escapes_is_read_where_it_lies() -> Result<()> {
        let key = guard(encode_key::<K2<'_>>(&("user@example.com", 42)))?;
        assert!(!key.plain, "no copy for a key whose parts hold no zero byte");
        assert_eq!(key.value(), ("user@example.com", 42));
        let key = guard(encode_key::<K2<'_>>(&("a\0b", 42)))?;
        assert!(key.plain, "a part that escapes a zero is unescaped into a copy");
        assert_eq!(key.value(), ("a\0b", 42));
        Ok(())
    }

    #[test]
    fn bytes_after_a_key_are_an_error() {
        for name in ["a", "a\0b"] {
            let mut encoded = encode_key::<K2<'_>>(&(name, 42));
            encoded.push(0);
            assert!(guard(encoded).is_err(), "{name:?}");
        }
    }
}
