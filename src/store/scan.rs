//! Reads and removals over a domain's slice of a table, shared by the entity modules, and
//! reading tables through either transaction (`Tables`).

use std::ops::ControlFlow as Flow;

use serde::de::DeserializeOwned;

use super::error::Result;
use super::kv::{self, Ahead, Key, ReadableTable, TableDefinition, Value};
use super::{Rtx, Wtx, decode};

/// A JSON array of stored documents joined as they are, for a listing of up to `limit`.
pub(super) struct JsonPage {
    out: Vec<u8>,
    taken: usize,
    limit: usize,
    more: bool,
}

impl JsonPage {
    pub(super) fn new(limit: usize, capacity: usize) -> JsonPage {
        let mut out = Vec::with_capacity(capacity);
        out.push(b'[');
        JsonPage { out, taken: 0, limit, more: false }
    }

    /// Adds `doc`, or breaks once the page is full, noting that more follow.
    pub(super) fn add(&mut self, doc: &[u8]) -> Flow<()> {
        if self.taken == self.limit {
            self.more = true;
            return Flow::Break(());
        }
        if self.taken > 0 {
            self.out.push(b',');
        }
        self.taken += 1;
        self.out.extend_from_slice(doc);
        Flow::Continue(())
    }

    /// The array, and whether documents beyond the page were left out.
    pub(super) fn finish(mut self) -> (Vec<u8>, bool) {
        self.out.push(b']');
        (self.out, self.more)
    }
}

/// The JSON values of `table` named by the `(domain, id)` keys of `index`, in index order,
/// through either transaction.
pub(super) fn scan_index<T: DeserializeOwned>(
    tx: &impl Tables,
    index: TableDefinition<'_, (&'static str, &'static str), ()>,
    table: TableDefinition<'_, &'static str, &'static [u8]>,
    domain: &str,
) -> Result<Vec<T>> {
    let index = tx.table(index)?;
    let table = tx.table(table)?;
    let mut out = Vec::new();
    index.scan((domain, "").., false, |(d, id), ()| {
        if d != domain {
            return Ok(Flow::Break(()));
        }
        if let Some(v) = table.get(id)? {
            out.push(decode(v.value())?);
        }
        Ok(Flow::Continue(()))
    })?;
    Ok(out)
}

/// The JSON value stored under `key`.
pub(super) fn get_json<'k, K, T>(
    tx: &impl Tables,
    definition: TableDefinition<'_, K, &'static [u8]>,
    key: impl std::borrow::Borrow<K::SelfType<'k>>,
) -> Result<Option<T>>
where
    K: Key + 'static,
    T: DeserializeOwned,
{
    let table = tx.table(definition)?;
    let found = table.get(key)?;
    found.map(|v| decode(v.value())).transpose()
}

/// Removes every entry of a (domain, _) keyed table; returns how many.
pub(super) fn drain_domain<V: Value + 'static>(
    table: &mut kv::Table<'_, (&'static str, &'static str), V>,
    domain: &str,
) -> Result<usize> {
    let mut keys = Vec::new();
    table.scan((domain, "").., false, |(d, k), _| {
        if d != domain {
            return Ok(Flow::Break(()));
        }
        keys.push(k.to_owned());
        Ok(Flow::Continue(()))
    })?;
    for key in &keys {
        table.remove((domain, key.as_str()))?;
    }
    Ok(keys.len())
}

/// Every JSON value of `table` whose tuple key starts with `domain`, in key order.
pub(super) fn scan_domain<T, Tb>(table: &Tb, domain: &str) -> Result<Vec<T>>
where
    T: DeserializeOwned,
    Tb: ReadableTable<(&'static str, &'static str), &'static [u8]>,
{
    let mut out = Vec::new();
    table.scan((domain, "").., false, |(d, _), value| {
        if d != domain {
            return Ok(Flow::Break(()));
        }
        out.push(decode(value)?);
        Ok(Flow::Continue(()))
    })?;
    Ok(out)
}

/// Reading tables through either transaction wrapper, so a lookup that both reads and writes need
/// is written once, as a function of `&impl Tables`, behind a thin method on each wrapper.
pub(crate) trait Tables {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_>;

    /// Reads the keys `fill` names together, where the backend gains by it (`kv::Ahead`).
    fn ahead(&self, fill: impl FnOnce(&mut Ahead)) -> Result<()>;
}

impl Tables for Wtx<'_> {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        self.tx.open_table(definition)
    }

    fn ahead(&self, fill: impl FnOnce(&mut Ahead)) -> Result<()> {
        self.tx.ahead(fill)
    }
}

impl Tables for Rtx {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        self.tx.open_table(definition)
    }

    fn ahead(&self, fill: impl FnOnce(&mut Ahead)) -> Result<()> {
        self.tx.ahead(fill)
    }
}
