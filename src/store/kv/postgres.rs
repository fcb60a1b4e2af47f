//! The backend on PostgreSQL, so that several nodes can share one store: every table is a slice
//! of one relation keyed by `(tbl, k)`, and `bytea` sorts byte-wise as redb's keys do, so ranges
//! come back in the same order from both backends.
//!
//! The store's transactions are synchronous (its closures run inside them), so this backend is a
//! synchronous facade: connections live on a small runtime of their own, and each statement is
//! awaited where it is issued (a client's futures only talk to its connection task through a
//! channel, so any thread may wait on them). Writes run at SERIALIZABLE; a transaction that
//! lost a race fails with `Error::Contention` and the writer runs it again. Reads are
//! REPEATABLE READ snapshots.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Mutex;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Statement};

use super::super::error::{Error, Result};
use super::{
    Backend, Bytes, Direction, Entries, ReadTable, ReadTxn, Transaction, WriteTable, WriteTxn,
};

/// The relation every table lives in. Created on first use; later layouts add columns or
/// relations beside it, never change it in place.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS edgemail_kv (
    tbl text NOT NULL,
    k bytea NOT NULL,
    v bytea NOT NULL,
    PRIMARY KEY (tbl, k)
)";

/// A range is read in pages that grow from this many rows (most ranges stop after a few).
const FIRST_PAGE: i64 = 16;
const LAST_PAGE: i64 = 1024;

/// Whether PostgreSQL refused the statement because a concurrent transaction won.
fn lost_race(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        if lost_race(&e) { Error::Contention(Box::new(e)) } else { Error::Storage(Box::new(e)) }
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Backend(e) => e.into(),
        other => Error::Unavailable(format!("no PostgreSQL connection: {other}")),
    }
}

/// Waits for `future` on this thread.
fn wait<F: std::future::Future>(future: F) -> F::Output {
    futures_executor::block_on(future)
}

/// A PostgreSQL database holding the store.
pub struct Postgres {
    pool: Pool,
    /// Where the connections' tasks run; `None` once dropped.
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // The store may be dropped on an async thread, where waiting for a runtime's threads
        // is refused: let them end on their own.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Postgres {
    /// Connects to `url` (a `postgres://` URL) with up to `connections` connections, and creates
    /// the relation when absent.
    pub fn connect(url: &str, connections: usize) -> Result<Postgres> {
        let config: tokio_postgres::Config = url.parse().map_err(|e| {
            Error::invalid(format!("store URL: {e}"), "use postgres://user@host/db")
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("store-postgres")
            .enable_all()
            .build()
            .map_err(|e| Error::io("cannot start the PostgreSQL runtime", e))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(connections.max(2))
            .build()
            .map_err(|e| Error::internal(format!("PostgreSQL pool: {e}")))?;
        let handle = runtime.handle().clone();
        let db = Postgres { pool, runtime: Some(runtime), handle };
        let client = db.client()?;
        wait(client.batch_execute(SCHEMA))?;
        Ok(db)
    }

    /// A connection from the pool; a new one is opened on the backend's runtime, where its
    /// connection task then lives.
    fn client(&self) -> Result<Object> {
        let pool = self.pool.clone();
        let got = wait(self.handle.spawn(async move { pool.get().await }))
            .map_err(|e| Error::internal(format!("PostgreSQL connect task: {e}")))?;
        got.map_err(pool_error)
    }

    fn begin(&self, sql: &'static str) -> Result<Txn> {
        let client = self.client()?;
        wait(client.batch_execute(sql))?;
        Ok(Txn { client: Some(client), handle: self.handle.clone(), failed: Mutex::new(None) })
    }
}

impl Backend for Postgres {
    fn read(&self) -> Result<Box<dyn ReadTxn>> {
        Ok(Box::new(self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")?))
    }

    fn write(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin("BEGIN ISOLATION LEVEL SERIALIZABLE")?))
    }
}

/// An open transaction on one pooled connection. After a failed statement PostgreSQL refuses
/// the rest of the transaction (and a COMMIT quietly rolls back), so the first failure is kept
/// and answered at commit.
struct Txn {
    client: Option<Object>,
    handle: tokio::runtime::Handle,
    /// Whether a statement failed, and whether that was a lost race.
    failed: Mutex<Option<bool>>,
}

impl Txn {
    fn client(&self) -> Result<&Object> {
        self.client.as_ref().ok_or_else(|| Error::internal("transaction already ended"))
    }

    /// Runs `statement` (prepared once per connection) and keeps its failure for the commit.
    fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        let client = self.client()?;
        let outcome = wait(async {
            let statement: Statement = client.prepare_cached(sql).await?;
            client.query(&statement, params).await
        });
        outcome.map_err(|e| {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert(lost_race(&e));
            e.into()
        })
    }

    fn end(&mut self, sql: &'static str) -> Result<()> {
        let client = self.client.take().ok_or_else(|| Error::internal("transaction ended"))?;
        let ended = wait(client.batch_execute(sql));
        if ended.is_err() {
            // A connection whose transaction state is unknown must not serve another one.
            drop(Object::take(client));
        }
        Ok(ended?)
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        // A read snapshot (or an abandoned write) ends here; rolling it back on the backend's
        // runtime lets the caller go on at once, and the connection returns to the pool after.
        if let Some(client) = self.client.take() {
            self.handle.spawn(async move {
                if client.batch_execute("ROLLBACK").await.is_err() {
                    drop(Object::take(client));
                }
            });
        }
    }
}

impl ReadTxn for Txn {
    fn table(&self, name: &str) -> Result<Box<dyn ReadTable + '_>> {
        Ok(Box::new(Rel { txn: self, name: name.to_owned() }))
    }
}

impl WriteTxn for Txn {
    fn table(&self, name: &str) -> Result<Box<dyn WriteTable + '_>> {
        Ok(Box::new(Rel { txn: self, name: name.to_owned() }))
    }
}

impl Transaction for Txn {
    fn commit(mut self: Box<Self>) -> Result<()> {
        let failed = *self.failed.lock().unwrap_or_else(|p| p.into_inner());
        match failed {
            None => self.end("COMMIT"),
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

/// One table inside a transaction.
struct Rel<'t> {
    txn: &'t Txn,
    name: String,
}

impl ReadTable for Rel<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
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
        Ok(Entries::Boxed(Box::new(Pages {
            rel: self,
            lo: lo.map(<[u8]>::to_vec),
            hi: hi.map(<[u8]>::to_vec),
            direction,
            buffered: VecDeque::new(),
            size: FIRST_PAGE,
            exhausted: false,
        })))
    }

    fn len(&self) -> Result<u64> {
        let rows =
            self.txn.rows("SELECT count(*) FROM edgemail_kv WHERE tbl = $1", &[&self.name])?;
        let count: i64 = rows.first().map_or(0, |row| row.get(0));
        Ok(count.max(0) as u64)
    }
}

impl WriteTable for Rel<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.txn.rows(
            "INSERT INTO edgemail_kv (tbl, k, v) VALUES ($1, $2, $3) \
             ON CONFLICT (tbl, k) DO UPDATE SET v = EXCLUDED.v",
            &[&self.name, &key, &value],
        )?;
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        let rows = self.txn.rows(
            "DELETE FROM edgemail_kv WHERE tbl = $1 AND k = $2 RETURNING v",
            &[&self.name, &key],
        )?;
        Ok(rows.first().map(|row| Bytes::Owned(row.get(0))))
    }
}

/// A range read lazily, a page at a time, each page resuming after the last key seen.
struct Pages<'r> {
    rel: &'r Rel<'r>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    direction: Direction,
    buffered: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: i64,
    exhausted: bool,
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

impl Pages<'_> {
    fn fetch(&mut self) -> Result<()> {
        let sql = page_sql(&self.lo, &self.hi, self.direction);
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&self.rel.name];
        for bound in [&self.lo, &self.hi] {
            if let Bound::Included(k) | Bound::Excluded(k) = bound {
                params.push(k);
            }
        }
        params.push(&self.size);
        let rows = self.rel.txn.rows(&sql, &params)?;
        self.exhausted = (rows.len() as i64) < self.size;
        self.size = (self.size * 4).min(LAST_PAGE);
        for row in rows {
            self.buffered.push_back((row.get(0), row.get(1)));
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
