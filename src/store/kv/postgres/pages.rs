//! Ranges on PostgreSQL, read lazily a page at a time: each page is one statement resuming after
//! the last key seen, so a range the caller stops early costs only the pages it read.

use std::collections::VecDeque;
use std::ops::Bound;

use super::super::super::error::Result;
use super::super::{Bytes, Direction};
use super::txn::Txn;

/// A range is read in pages that grow from this many rows (most ranges stop after a few).
const FIRST_PAGE: i64 = 16;
const LAST_PAGE: i64 = 1024;

/// A range read lazily, a page at a time, each page resuming after the last key seen.
pub(super) struct Pages<'r> {
    txn: &'r Txn,
    table: &'r str,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    direction: Direction,
    buffered: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: i64,
    exhausted: bool,
}

fn as_slices(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// The statement for a page between the given kinds of bounds: one text per combination, so
/// each is prepared once per connection and every one can use the primary key's order.
fn page_sql(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>, direction: Direction) -> String {
    let mut sql = String::from("SELECT k, v FROM edgemail_kv WHERE tbl = $1");
    let mut next = 2;
    for (bound, included, excluded) in [(lo, ">=", ">"), (hi, "<=", "<")] {
        let op = match bound {
            Bound::Included(_) => included,
            Bound::Excluded(_) => excluded,
            Bound::Unbounded => continue,
        };
        sql.push_str(&format!(" AND k {op} ${next}"));
        next += 1;
    }
    let order = if direction == Direction::Forward { "ASC" } else { "DESC" };
    sql.push_str(&format!(" ORDER BY k {order} LIMIT ${next}"));
    sql
}

impl<'r> Pages<'r> {
    pub fn new(
        txn: &'r Txn,
        table: &'r str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        direction: Direction,
    ) -> Self {
        Pages {
            txn,
            table,
            lo: lo.map(<[u8]>::to_vec),
            hi: hi.map(<[u8]>::to_vec),
            direction,
            buffered: VecDeque::new(),
            size: FIRST_PAGE,
            exhausted: false,
        }
    }

    fn fetch(&mut self) -> Result<()> {
        self.txn.flush(Some(self.table))?;
        let sql = page_sql(&self.lo, &self.hi, self.direction);
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&self.table];
        for bound in [&self.lo, &self.hi] {
            if let Bound::Included(k) | Bound::Excluded(k) = bound {
                params.push(k);
            }
        }
        params.push(&self.size);
        let rows = self.txn.rows(&sql, &params)?;
        self.exhausted = (rows.len() as i64) < self.size;
        // Only a first page holds the caller's own bounds (later ones resume after a key).
        let first = self.size == FIRST_PAGE;
        self.size = (self.size * 4).min(LAST_PAGE);
        for row in rows {
            self.buffered.push_back((row.get(0), row.get(1)));
        }
        if first && self.exhausted {
            let whole = self.buffered.iter().cloned().collect();
            let (lo, hi) = (as_slices(&self.lo), as_slices(&self.hi));
            self.txn.remember((self.table, lo, hi, self.direction), whole);
        }
        if let Some((last, _)) = self.buffered.back() {
            let resume = Bound::Excluded(last.clone());
            match self.direction {
                Direction::Forward => self.lo = resume,
                Direction::Backward => self.hi = resume,
            }
        }
        Ok(())
    }
}

impl<'r> Iterator for Pages<'r> {
    type Item = Result<(Bytes<'r>, Bytes<'r>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffered.is_empty()
            && !self.exhausted
            && let Err(e) = self.fetch()
        {
            self.exhausted = true;
            return Some(Err(e));
        }
        let (k, v) = self.buffered.pop_front()?;
        Some(Ok((Bytes::Owned(k), Bytes::Owned(v))))
    }
}
