//! One table inside a transaction (`Rel`), and the transaction's table openers: the reads and
//! writes of the store's tables, answered from what the transaction holds or read ahead when it
//! can, otherwise by a statement. Kept apart from `txn` so that the transaction itself does not
//! know its tables or their range reader (`pages`).

use std::ops::Bound;

use super::super::super::error::Result;
use super::super::{Bytes, Direction, Entries, Opened, ReadTable, ReadTxn, WriteTable, WriteTxn};
use super::pages::Pages;
use super::txn::Txn;

/// One table inside a transaction.
struct Rel<'t> {
    txn: &'t Txn,
    name: String,
}

impl ReadTxn for Txn {
    fn table(&self, name: &str) -> Result<Opened<'_>> {
        Ok(Opened::Boxed(Box::new(Rel { txn: self, name: name.to_owned() })))
    }

    fn reads_ahead(&self) -> bool {
        true
    }

    fn read_ahead(&self, keys: &[(&str, Vec<u8>)]) -> Result<()> {
        self.note_ahead(keys)
    }
}

impl WriteTxn for Txn {
    fn table(&self, name: &str) -> Result<Box<dyn WriteTable + '_>> {
        Ok(Box::new(Rel { txn: self, name: name.to_owned() }))
    }

    fn reads_ahead(&self) -> bool {
        true
    }

    fn read_ahead(&self, keys: &[(&str, Vec<u8>)]) -> Result<()> {
        self.note_ahead(keys)
    }
}

impl ReadTable for Rel<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        if let Some(known) = self.txn.known(&self.name, key) {
            return Ok(known.map(Bytes::Owned));
        }
        if self.txn.read_wanted(&self.name, key)?
            && let Some(known) = self.txn.known(&self.name, key)
        {
            return Ok(known.map(Bytes::Owned));
        }
        let rows = self
            .txn
            .rows("SELECT v FROM edgemail_kv WHERE tbl = $1 AND k = $2", &[&self.name, &key])?;
        Ok(rows.first().map(|row| Bytes::Owned(row.get(0))))
    }

    fn range<'r>(
        &'r self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<Entries<'r>> {
        if let Some(rows) = self.txn.recall((&self.name, lo, hi, direction)) {
            let rows = rows.into_iter().map(|(k, v)| Ok((Bytes::Owned(k), Bytes::Owned(v))));
            return Ok(Entries::Boxed(Box::new(rows)));
        }
        Ok(Entries::Boxed(Box::new(Pages::new(self.txn, &self.name, lo, hi, direction))))
    }

    fn len(&self) -> Result<u64> {
        self.txn.flush(Some(&self.name))?;
        let rows =
            self.txn.rows("SELECT count(*) FROM edgemail_kv WHERE tbl = $1", &[&self.name])?;
        let count: i64 = rows.first().map_or(0, |row| row.get(0));
        Ok(count.max(0) as u64)
    }
}

impl WriteTable for Rel<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.txn.hold_put(&self.name, key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        let mut held = self.txn.hold_delete(&self.name, key);
        if held.is_none() && self.txn.read_wanted(&self.name, key)? {
            held = self.txn.hold_delete(&self.name, key);
        }
        if let Some(held) = held {
            // Held (or read ahead): a row the server has goes at the flush.
            return Ok(held.map(Bytes::Owned));
        }
        self.txn.forget(&self.name);
        let rows = self.txn.rows(
            "DELETE FROM edgemail_kv WHERE tbl = $1 AND k = $2 RETURNING v",
            &[&self.name, &key],
        )?;
        Ok(rows.first().map(|row| Bytes::Owned(row.get(0))))
    }

    fn lock_unheld(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        // A key this transaction put and has not sent yet is not on the server to lock.
        self.txn.flush(Some(&self.name))?;
        let rows = self.txn.rows(
            "SELECT k FROM edgemail_kv WHERE tbl = $1 AND k = ANY($2) FOR UPDATE SKIP LOCKED",
            &[&self.name, &keys],
        )?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }
}
