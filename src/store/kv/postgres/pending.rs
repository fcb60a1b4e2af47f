//! Writes held by a PostgreSQL transaction until a read needs them or it commits, so that the
//! puts and deletes of a whole group commit reach the server as two statements instead of a
//! round trip each. The transaction's own reads look here first, so they see its writes.

use std::collections::{BTreeMap, HashMap};

/// Per table, the last write of each key: a value, or `None` for a delete.
#[derive(Default)]
pub(super) struct Pending {
    tables: HashMap<String, BTreeMap<Vec<u8>, Option<Vec<u8>>>>,
}

/// Held writes as the arrays the flushing statements take.
#[derive(Default)]
pub(super) struct Columns {
    pub put_tables: Vec<String>,
    pub put_keys: Vec<Vec<u8>>,
    pub put_values: Vec<Vec<u8>>,
    pub delete_tables: Vec<String>,
    pub delete_keys: Vec<Vec<u8>>,
}

impl Columns {
    pub fn is_empty(&self) -> bool {
        self.put_keys.is_empty() && self.delete_keys.is_empty()
    }
}

impl Pending {
    pub fn put(&mut self, table: &str, key: &[u8], value: &[u8]) {
        self.table(table).insert(key.to_vec(), Some(value.to_vec()));
    }

    /// Holds a delete of `key`; answers the held write it replaces, if any (`Some(None)`: the
    /// key was already deleted here), or `None` when the server has to be asked.
    pub fn delete(&mut self, table: &str, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let held = self.tables.get_mut(table)?.get_mut(key)?;
        Some(held.take())
    }

    /// The held write of `key`, if any.
    pub fn get(&self, table: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        let held = self.tables.get(table)?.get(key)?;
        Some(held.as_deref())
    }

    /// Takes the held writes of `table`, or of every table.
    pub fn take(&mut self, table: Option<&str>) -> Columns {
        let mut columns = Columns::default();
        let mut add = |name: String, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>| {
            for (key, write) in writes {
                match write {
                    Some(value) => {
                        columns.put_tables.push(name.clone());
                        columns.put_keys.push(key);
                        columns.put_values.push(value);
                    }
                    None => {
                        columns.delete_tables.push(name.clone());
                        columns.delete_keys.push(key);
                    }
                }
            }
        };
        match table {
            Some(name) => {
                if let Some((name, writes)) = self.tables.remove_entry(name) {
                    add(name, writes);
                }
            }
            None => {
                for (name, writes) in self.tables.drain() {
                    add(name, writes);
                }
            }
        }
        columns
    }

    fn table(&mut self, table: &str) -> &mut BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        self.tables.entry(table.to_owned()).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_of_a_key_wins_and_reads_see_it() {
        let mut p = Pending::default();
        p.put("t", b"a", b"1");
        p.put("t", b"a", b"2");
        assert_eq!(p.get("t", b"a"), Some(Some(&b"2"[..])));
        assert_eq!(p.delete("t", b"a"), Some(Some(b"2".to_vec())));
        assert_eq!(p.get("t", b"a"), Some(None));
        assert_eq!(p.delete("t", b"a"), Some(None));
        assert_eq!(p.get("t", b"b"), None);
        assert_eq!(p.delete("u", b"a"), None);
        let c = p.take(None);
        assert_eq!(c.delete_keys, vec![b"a".to_vec()]);
        assert!(c.put_keys.is_empty());
        assert!(p.tables.is_empty());
    }

    #[test]
    fn one_table_is_taken_alone() {
        let mut p = Pending::default();
        p.put("t", b"a", b"1");
        p.put("u", b"b", b"2");
        let c = p.take(Some("t"));
        assert_eq!((c.put_tables, c.put_keys), (vec!["t".to_owned()], vec![b"a".to_vec()]));
        assert_eq!(p.get("u", b"b"), Some(Some(&b"2"[..])));
    }
}
