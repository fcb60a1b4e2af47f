//! One transaction on one pooled connection: its BEGIN sent with its first statement, its
//! writes held (`pending`) until a read needs them or it commits, the keys it read ahead kept
//! for its later reads, and its end (a read snapshot's left to the next user, `idle`).

use std::ops::Bound;
use std::sync::{Arc, Mutex};

use super::super::super::error::{Error, Result};
use super::super::{Direction, Transaction};

/// A range of a table: its table, bounds and direction.
pub(super) type RangeOf<'r> = (&'r str, Bound<&'r [u8]>, Bound<&'r [u8]>, Direction);
use super::idle::Idle;
use super::notify;
use super::pending::{Columns, Pending};
use super::pool::Pooled;
use super::{DELETE, UPSERT};

/// The kinds of transaction, each with its BEGIN.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Begin {
    Read,
    Serializable,
    Snapshot,
}

impl Begin {
    /// The BEGIN, after the ROLLBACK of the snapshot a connection was left in (`idle`) when
    /// `dirty`: one simple query either way.
    fn sql(self, dirty: bool) -> &'static str {
        match (self, dirty) {
            (Begin::Read, false) => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            (Begin::Read, true) => "ROLLBACK; BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            (Begin::Serializable, false) => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            (Begin::Serializable, true) => "ROLLBACK; BEGIN ISOLATION LEVEL SERIALIZABLE",
            (Begin::Snapshot, false) => "BEGIN ISOLATION LEVEL REPEATABLE READ",
            (Begin::Snapshot, true) => "ROLLBACK; BEGIN ISOLATION LEVEL REPEATABLE READ",
        }
    }
}

/// An open transaction on one pooled connection. After a failed statement PostgreSQL refuses
/// the rest of the transaction (and a COMMIT quietly rolls back), so the first failure is kept
/// and answered at commit.
pub(super) struct Txn {
    client: Option<Pooled>,
    state: Mutex<State>,
    kind: Begin,
    /// Whether the connection came inside a finished snapshot (`idle`), rolled back by this
    /// transaction's BEGIN: kept there again when this one sends nothing.
    dirty: bool,
    idle: Arc<Idle>,
}

struct State {
    /// The BEGIN not sent yet: it goes with the first statement.
    begin: Option<&'static str>,
    /// Whether a statement failed, and whether that was a lost race.
    failed: Option<bool>,
    pending: Pending,
    /// The watched tables written, to be told at commit.
    written: notify::Written,
    /// Keys named ahead (`read_ahead`), read with the next key asked of the server.
    wanted: Vec<(String, Vec<u8>)>,
    /// Ranges read whole in one page, for a later read of the same range (`recall`).
    ranges: Vec<Memo>,
}

/// A range read whole, and its rows.
struct Memo {
    table: String,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    direction: Direction,
    rows: Vec<(Vec<u8>, Vec<u8>)>,
}

/// At most this many ranges are kept a transaction (a group commit reads a few distinct ones).
const MEMOS: usize = 32;

/// Runs `begin` (when still to be sent) and then `work`, in one exchange with the server: both
/// are queued on the connection before either answer is awaited.
async fn after_begin<T>(
    client: &tokio_postgres::Client,
    begin: Option<&'static str>,
    work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> std::result::Result<T, tokio_postgres::Error> {
    let begun = async {
        match begin {
            Some(sql) => client.batch_execute(sql).await,
            None => Ok(()),
        }
    };
    let (begun, done) = tokio::join!(begun, work);
    begun.and(done)
}

impl Txn {
    pub(super) fn open(
        (client, dirty): (Pooled, bool),
        kind: Begin,
        idle: Arc<Idle>,
        written: notify::Written,
    ) -> Txn {
        let begin = Some(kind.sql(dirty));
        let pending = Pending::default();
        let ranges = Vec::new();
        let state = State { begin, failed: None, pending, written, wanted: Vec::new(), ranges };
        Txn { client: Some(client), state: state.into(), kind, dirty, idle }
    }

    fn client(&self) -> Result<&Pooled> {
        self.client.as_ref().ok_or_else(|| Error::internal("transaction already ended"))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a failure for the commit.
    fn failed(&self, e: Error) -> Error {
        self.state().failed.get_or_insert(e.is_contention());
        e
    }

    /// Runs `statement` (prepared once per connection) and keeps its failure for the commit.
    pub(super) fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        let client = self.client()?;
        let begin = self.state().begin.take();
        crate::metrics::store_round_trip();
        let outcome = client.wait(after_begin(client, begin, async {
            let statement = client.prepared(sql).await?;
            client.query(&statement, params).await
        }));
        outcome.map_err(|e| self.failed(e))
    }

    /// Sends the held writes of `table` (of every table when `None`).
    pub(super) fn flush(&self, table: Option<&str>) -> Result<()> {
        let columns = self.state().pending.take(table);
        if columns.is_empty() { Ok(()) } else { self.send(&columns, None) }
    }

    /// Sends `columns` and then `end` (COMMIT), all in one exchange.
    fn send(&self, columns: &Columns, end: Option<&str>) -> Result<()> {
        let client = self.client()?;
        let begin = self.state().begin.take();
        crate::metrics::store_round_trip();
        let outcome = client.wait(async {
            // Prepared before anything is sent: a statement not prepared yet costs an exchange
            // of its own, and the writes must be queued ahead of the COMMIT.
            let upsert = match columns.put_keys.is_empty() {
                true => None,
                false => Some(client.prepared(UPSERT).await?),
            };
            let delete = match columns.delete_keys.is_empty() {
                true => None,
                false => Some(client.prepared(DELETE).await?),
            };
            after_begin(client, begin, async {
                let put = async {
                    let Some(statement) = &upsert else { return Ok(0) };
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                        [&columns.put_tables, &columns.put_keys, &columns.put_values];
                    client.execute(statement, &params).await
                };
                let delete = async {
                    let Some(statement) = &delete else { return Ok(0) };
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
                        [&columns.delete_tables, &columns.delete_keys];
                    client.execute(statement, &params).await
                };
                let end = async {
                    match end {
                        Some(sql) => client.batch_execute(sql).await,
                        None => Ok(()),
                    }
                };
                // After a failed write the COMMIT answers ROLLBACK without an error: the first
                // failure in sending order is the transaction's.
                let (put, delete, end) = tokio::join!(put, delete, end);
                put.and(delete).and(end)
            })
            .await
        });
        outcome.map_err(|e| self.failed(e))
    }

    fn end(&mut self, sql: &'static str) -> Result<()> {
        let client = self.client.take().ok_or_else(|| Error::internal("transaction ended"))?;
        if self.state().begin.is_some() {
            // Nothing was sent: the connection is as it came, inside a finished snapshot when
            // dirty (rolled back by the next BEGIN), otherwise as the pool gave it.
            if self.dirty {
                self.idle.keep(client);
            }
            return Ok(());
        }
        crate::metrics::store_round_trip();
        let ended = client.wait(client.batch_execute(sql));
        if ended.is_err() {
            // A connection whose transaction state is unknown must not serve another one.
            client.discard();
        }
        ended
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else { return };
        let (unsent, failed) = {
            let state = self.state();
            (state.begin.is_some(), state.failed.is_some())
        };
        if unsent {
            if self.dirty {
                self.idle.keep(client);
            }
            return;
        }
        if self.kind == Begin::Read && !failed {
            // A read snapshot holds no lock: its ROLLBACK goes with the next BEGIN (`idle`).
            self.idle.keep(client);
            return;
        }
        // An abandoned write (or a read that failed) is rolled back at once, on the backend's
        // sweeping thread so the caller goes on; the connection returns to the pool after.
        self.idle.retire(client);
    }
}

impl Txn {
    /// What this transaction knows of `key` without asking the server: a held write or a row
    /// read ahead (`Some(None)`: known to be absent).
    pub(super) fn known(&self, table: &str, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.state().pending.get(table, key).map(|held| held.map(<[u8]>::to_vec))
    }

    /// Keeps the rows of a range read whole in one page. A transaction sees one snapshot, so
    /// reading the range again gives the same rows until it writes to the table itself: the
    /// jobs of a group commit that each look up the same short range (a domain's webhooks for
    /// each delivery outcome) then cost the server one statement, not one a job.
    pub(super) fn remember(&self, range: RangeOf<'_>, rows: Vec<(Vec<u8>, Vec<u8>)>) {
        let mut state = self.state();
        if state.ranges.len() < MEMOS {
            let (table, lo, hi, direction) = range;
            let (table, lo, hi) =
                (table.to_owned(), lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec));
            state.ranges.push(Memo { table, lo, hi, direction, rows });
        }
    }

    /// The rows of a range read whole before (`remember`), if it was.
    pub(super) fn recall(&self, range: RangeOf<'_>) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let (table, lo, hi, direction) = range;
        let same = |memo: &&Memo| {
            memo.table == table
                && memo.direction == direction
                && memo.lo.as_ref().map(Vec::as_slice) == lo
                && memo.hi.as_ref().map(Vec::as_slice) == hi
        };
        self.state().ranges.iter().find(same).map(|memo| memo.rows.clone())
    }

    /// Forgets the ranges of `table`: this transaction writes to it.
    pub(super) fn forget(&self, table: &str) {
        self.state().ranges.retain(|memo| memo.table != table);
    }

    /// Holds a put until the next flush.
    pub(super) fn hold_put(&self, table: &str, key: &[u8], value: &[u8]) {
        let mut state = self.state();
        state.ranges.retain(|memo| memo.table != table);
        state.written.note(table);
        state.pending.put(table, key, value);
    }

    /// Holds a delete of a key this transaction knows (its old value comes back); `None` when
    /// the key is unknown and the server must delete it.
    pub(super) fn hold_delete(&self, table: &str, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let mut state = self.state();
        state.ranges.retain(|memo| memo.table != table);
        state.written.note(table);
        state.pending.delete(table, key)
    }
}

/// The rows of many keys of any tables, in one statement.
const AHEAD: &str = "SELECT x.tbl, x.k, d.v FROM unnest($1::text[], $2::bytea[]) AS x(tbl, k) \
    JOIN edgemail_kv AS d ON d.tbl = x.tbl AND d.k = x.k";

impl Txn {
    /// Notes the keys not known yet, to be read with the next key this transaction has to ask
    /// the server for: keys named ahead by several callers then go in one exchange.
    pub(super) fn note_ahead(&self, keys: &[(&str, Vec<u8>)]) -> Result<()> {
        let mut state = self.state();
        let (tables, wanted) = state.pending.unknown(keys);
        state.wanted.extend(tables.into_iter().zip(wanted));
        Ok(())
    }

    /// Reads `key` of `table` with every key noted ahead, in one exchange; false when none was
    /// noted (the caller asks for `key` alone).
    pub(super) fn read_wanted(&self, table: &str, key: &[u8]) -> Result<bool> {
        let mut wanted = std::mem::take(&mut self.state().wanted);
        if wanted.is_empty() {
            return Ok(false);
        }
        wanted.push((table.to_owned(), key.to_vec()));
        let keys: Vec<(&str, Vec<u8>)> =
            wanted.iter().map(|(t, k)| (t.as_str(), k.clone())).collect();
        let (tables, keys) = self.state().pending.unknown(&keys);
        if keys.is_empty() {
            return Ok(true);
        }
        let rows = self.rows(AHEAD, &[&tables, &keys])?;
        let mut state = self.state();
        for (table, key) in tables.iter().zip(keys) {
            state.pending.learn(table, key, None);
        }
        for row in rows {
            let table: &str = row.get(0);
            state.pending.learn(table, row.get(1), Some(row.get(2)));
        }
        Ok(true)
    }
}

impl Transaction for Txn {
    fn commit(mut self: Box<Self>) -> Result<()> {
        let (failed, columns, begun) = {
            let mut state = self.state();
            (state.failed, state.pending.take(None), state.begin.is_none())
        };
        match failed {
            None if !begun && columns.is_empty() => Ok(()),
            None => {
                let commit = self.state().written.commit();
                let committed = self.send(&columns, Some(commit.as_ref()));
                if let Some(client) = self.client.take()
                    && committed.is_err()
                {
                    // A connection whose transaction state is unknown must not serve another.
                    client.discard();
                }
                committed
            }
            Some(race) => {
                self.end("ROLLBACK")?;
                let why = "a statement of this transaction failed; rolled back";
                Err(if race { Error::Contention(why.into()) } else { Error::internal(why) })
            }
        }
    }

    fn abort(mut self: Box<Self>) -> Result<()> {
        self.end("ROLLBACK")
    }
}
