//! Writes held by a PostgreSQL transaction until a read needs them or it commits, so that the
//! puts and deletes of a whole group commit reach the server as two statements instead of a
//! round trip each; and what it read ahead (many keys in one exchange). The transaction's own
//! reads look here first, so they see its writes.

use std::collections::{BTreeMap, HashMap};

/// Per table, the last write of each key: a value, or `None` for a delete.
#[derive(Default)]
pub(super) struct Pending {
    tables: HashMap<String, BTreeMap<Vec<u8>, Option<Vec<u8>>>>,
    /// Per table, what the server answered for keys read ahead in this transaction's snapshot
    /// (`None`: no such row). A held write of the key comes before it; one sent drops it.
    known: HashMap<String, HashMap<Vec<u8>, Option<Vec<u8>>>>,
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

    /// Holds a delete of `key` when its value is known here (held or read ahead), answering
    /// that value (`Some(None)`: there is no row to delete); `None` when the server has to be
    /// asked.
    pub fn delete(&mut self, table: &str, key: &[u8]) -> Option<Option<Vec<u8>>> {
        if let Some(held) = self.tables.get_mut(table).and_then(|t| t.get_mut(key)) {
            return Some(held.take());
        }
        let known = self.known.get_mut(table)?;
        let value = known.get(key)?.clone();
        if value.is_some() {
            known.remove(key);
            self.table(table).insert(key.to_vec(), None);
        }
        Some(value)
    }

    /// The value of `key` as known here (its held write, or what was read ahead), if known.
    pub fn get(&self, table: &str, key: &[u8]) -> Option<Option<&[u8]>> {
        let held = self.tables.get(table).and_then(|t| t.get(key));
        let held = held.or_else(|| self.known.get(table)?.get(key))?;
        Some(held.as_deref())
    }

    /// Those of `keys` whose value is not known here, as the read-ahead statement takes them.
    pub fn unknown(&self, keys: &[(&str, Vec<u8>)]) -> (Vec<String>, Vec<Vec<u8>>) {
        let mut out = (Vec::new(), Vec::new());
        for (table, key) in keys {
            let asked = out.0.iter().zip(&out.1).any(|(t, k)| t == table && k == key);
            if self.get(table, key).is_none() && !asked {
                out.0.push((*table).to_owned());
                out.1.push(key.clone());
            }
        }
        out
    }

    /// Keeps what the server answered for `key` (read ahead).
    pub fn learn(&mut self, table: &str, key: Vec<u8>, value: Option<Vec<u8>>) {
        self.known.entry(table.to_owned()).or_default().insert(key, value);
    }

    /// Takes the held writes of `table`, or of every table.
    pub fn take(&mut self, table: Option<&str>) -> Columns {
        let mut columns = Columns::default();
        let known = &mut self.known;
        let mut add = |name: String, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>| {
            // Once sent, a write is the server's to answer: what was read ahead of it is stale.
            let mut known = known.get_mut(&name);
            for (key, write) in writes {
                if let Some(known) = known.as_mut() {
                    known.remove(&key);
                }
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
    fn keys_read_ahead_answer_reads_until_a_write_of_them_is_sent() {
        let mut p = Pending::default();
        let keys = [("t", b"a".to_vec()), ("t", b"b".to_vec()), ("u", b"a".to_vec())];
        assert_eq!(p.unknown(&keys).1.len(), 3);
        p.learn("t", b"a".to_vec(), Some(b"1".to_vec()));
        p.learn("t", b"b".to_vec(), None);
        assert_eq!(p.unknown(&keys), (vec!["u".to_owned()], vec![b"a".to_vec()]));
        assert_eq!(p.get("t", b"a"), Some(Some(&b"1"[..])));
        assert_eq!(p.get("t", b"b"), Some(None));
        // A delete of a known row is held; of a known absence, nothing to send.
        assert_eq!(p.delete("t", b"a"), Some(Some(b"1".to_vec())));
        assert_eq!(p.delete("t", b"b"), Some(None));
        assert_eq!(p.get("t", b"a"), Some(None));
        p.put("t", b"b", b"2");
        let sent = p.take(Some("t"));
        assert_eq!(sent.delete_keys, vec![b"a".to_vec()]);
        assert_eq!(sent.put_keys, vec![b"b".to_vec()]);
        assert_eq!(p.get("t", b"a"), None, "the server answers for a key written since");
        assert_eq!(p.get("t", b"b"), None);
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
