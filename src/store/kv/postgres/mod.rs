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
//!
//! Round trips are what PostgreSQL costs here, so a transaction sends as few as it can: its
//! BEGIN goes with its first statement, its puts and deletes wait (`pending`) until a range read
//! of their table or the commit, and then go as one statement each, in one exchange with the
//! COMMIT.
//!
//! Writes to the tables the store watches are told to the other nodes (`notify`). The
//! connections use TLS as the URL's libpq parameters ask (`url`, `tls`).

mod fail;
mod notify;
mod pages;
mod pending;
mod tls;
mod url;

use std::ops::Bound;
use std::sync::Mutex;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::Statement;

use super::super::error::{Error, Result};
use super::{
    Backend, Bytes, Direction, Entries, Opened, ReadTable, ReadTxn, Snapshot, Transaction,
    WriteTable, WriteTxn,
};
use fail::{lost_race, pool_error};
pub use notify::Changed;
use pages::Pages;
use pending::{Columns, Pending};

/// The relation every table lives in. Created on first use; later layouts add columns or
/// relations beside it, never change it in place.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS edgemail_kv (
    tbl text NOT NULL,
    k bytea NOT NULL,
    v bytea NOT NULL,
    PRIMARY KEY (tbl, k)
)";

/// Held writes, one statement for all the puts and one for all the deletes of a flush.
const UPSERT: &str = "INSERT INTO edgemail_kv (tbl, k, v) \
    SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[]) \
    ON CONFLICT (tbl, k) DO UPDATE SET v = EXCLUDED.v";
const DELETE: &str = "DELETE FROM edgemail_kv AS d \
    USING unnest($1::text[], $2::bytea[]) AS x(tbl, k) WHERE d.tbl = x.tbl AND d.k = x.k";

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
    // notify: the tables whose writes are told, and the connection that listens.
    watched: &'static [&'static str],
    listener: notify::Listener,
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
    /// the relation when absent. A first connection is made here, so that a wrong address,
    /// password or certificate stops the start with its reason. A committed write to a table
    /// of `watched` is told to every node that listens (`changes`).
    pub fn connect(
        url: &str,
        connections: usize,
        watched: &'static [&'static str],
    ) -> Result<Postgres> {
        notify::check(watched).map_err(Error::internal)?;
        let target = url::parse(url)?;
        let hosts = &target.hosts;
        let tls = tls::connector(&target.tls).map_err(|e| {
            Error::invalid(format!("store URL for {hosts}: {e}"), "fix or remove that parameter")
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("store-postgres")
            .enable_all()
            .build()
            .map_err(|e| Error::io("cannot start the PostgreSQL runtime", e))?;
        let listener = notify::Listener::new(&target.config, tls.clone(), runtime.handle());
        let manager = Manager::from_config(
            target.config,
            tls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(connections.max(2))
            .build()
            .map_err(|e| Error::internal(format!("PostgreSQL pool: {e}")))?;
        let handle = runtime.handle().clone();
        let db = Postgres { pool, runtime: Some(runtime), handle, watched, listener };
        let client = match db.client() {
            Err(Error::Storage(e)) | Err(Error::Contention(e)) => {
                let text = match e.downcast_ref::<tokio_postgres::Error>() {
                    Some(e) => url::failure(hosts, e),
                    None => format!("cannot connect to PostgreSQL at {hosts}: {e}"),
                };
                return Err(Error::Unavailable(text));
            }
            other => other?,
        };
        wait(client.batch_execute(SCHEMA))?;
        Ok(db)
    }

    /// A connection from the pool. Inside the backend's runtime's context, so that a new
    /// connection registers with its reactor and its connection task is spawned there.
    fn client(&self) -> Result<Object> {
        let _context = self.handle.enter();
        wait(self.pool.get()).map_err(pool_error)
    }

    /// The names of the tables that hold at least one entry, in order.
    pub fn table_names(&self) -> Result<Vec<String>> {
        let client = self.client()?;
        let rows = wait(client.query("SELECT DISTINCT tbl FROM edgemail_kv ORDER BY tbl", &[]))?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    /// What committed writes to the watched tables, of any node, from now on. The first call
    /// starts the listening connection.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<Changed> {
        self.listener.subscribe()
    }

    /// Whether the listening connection is up: notifications arrive.
    pub fn listening(&self) -> bool {
        self.listener.connected()
    }

    fn begin(&self, sql: &'static str) -> Result<Txn> {
        let written = notify::Written::new(self.watched);
        let state = State { begin: Some(sql), failed: None, pending: Pending::default(), written };
        Ok(Txn { client: Some(self.client()?), handle: self.handle.clone(), state: state.into() })
    }
}

impl Backend for Postgres {
    fn read(&self) -> Result<Snapshot> {
        let txn = self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
        Ok(Snapshot::Boxed(Box::new(txn)))
    }

    fn write(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin("BEGIN ISOLATION LEVEL SERIALIZABLE")?))
    }

    /// REPEATABLE READ is PostgreSQL's snapshot isolation: a write of a row that a concurrent
    /// transaction wrote and committed after this one's snapshot (an update, a delete, an
    /// insert that meets it through ON CONFLICT) fails with a serialization failure, so two
    /// writers of one key never both commit. Unlike SERIALIZABLE it takes no predicate locks:
    /// those lock index pages, not keys, so writers of neighbouring keys of the one relation
    /// (new messages and queue entries land side by side) lost to each other without sharing
    /// a key, and their batches ran again and again.
    fn write_snapshot(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ")?))
    }
}

/// An open transaction on one pooled connection. After a failed statement PostgreSQL refuses
/// the rest of the transaction (and a COMMIT quietly rolls back), so the first failure is kept
/// and answered at commit.
struct Txn {
    client: Option<Object>,
    handle: tokio::runtime::Handle,
    state: Mutex<State>,
}

struct State {
    /// The BEGIN not sent yet: it goes with the first statement.
    begin: Option<&'static str>,
    /// Whether a statement failed, and whether that was a lost race.
    failed: Option<bool>,
    pending: Pending,
    /// The watched tables written, to be told at commit.
    written: notify::Written,
}

/// Runs `begin` (when still to be sent) and then `work`, in one exchange with the server: both
/// are queued on the connection before either answer is awaited.
async fn after_begin<T>(
    client: &Object,
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
    fn client(&self) -> Result<&Object> {
        self.client.as_ref().ok_or_else(|| Error::internal("transaction already ended"))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a failure for the commit.
    fn failed(&self, e: tokio_postgres::Error) -> Error {
        self.state().failed.get_or_insert(lost_race(&e));
        e.into()
    }

    /// Runs `statement` (prepared once per connection) and keeps its failure for the commit.
    fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        let client = self.client()?;
        let begin = self.state().begin.take();
        crate::metrics::store_round_trip();
        let outcome = wait(after_begin(client, begin, async {
            let statement: Statement = client.prepare_cached(sql).await?;
            client.query(&statement, params).await
        }));
        outcome.map_err(|e| self.failed(e))
    }

    /// Sends the held writes of `table` (of every table when `None`).
    fn flush(&self, table: Option<&str>) -> Result<()> {
        let columns = self.state().pending.take(table);
        if columns.is_empty() { Ok(()) } else { self.send(&columns, None) }
    }

    /// Sends `columns` and then `end` (COMMIT), all in one exchange.
    fn send(&self, columns: &Columns, end: Option<&str>) -> Result<()> {
        let client = self.client()?;
        let begin = self.state().begin.take();
        crate::metrics::store_round_trip();
        let outcome = wait(async {
            // Prepared before anything is sent: a statement not prepared yet costs an exchange
            // of its own, and the writes must be queued ahead of the COMMIT.
            let upsert = match columns.put_keys.is_empty() {
                true => None,
                false => Some(client.prepare_cached(UPSERT).await?),
            };
            let delete = match columns.delete_keys.is_empty() {
                true => None,
                false => Some(client.prepare_cached(DELETE).await?),
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
            // Nothing was sent: the connection is as the pool gave it.
            return Ok(());
        }
        crate::metrics::store_round_trip();
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
        if self.state().begin.is_some() {
            return;
        }
        if let Some(client) = self.client.take() {
            crate::metrics::store_round_trip();
            self.handle.spawn(async move {
                if client.batch_execute("ROLLBACK").await.is_err() {
                    drop(Object::take(client));
                }
            });
        }
    }
}

impl ReadTxn for Txn {
    fn table(&self, name: &str) -> Result<Opened<'_>> {
        Ok(Opened::Boxed(Box::new(Rel { txn: self, name: name.to_owned() })))
    }
}

impl WriteTxn for Txn {
    fn table(&self, name: &str) -> Result<Box<dyn WriteTable + '_>> {
        Ok(Box::new(Rel { txn: self, name: name.to_owned() }))
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
                    drop(Object::take(client));
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

/// One table inside a transaction.
struct Rel<'t> {
    txn: &'t Txn,
    name: String,
}

impl ReadTable for Rel<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        if let Some(held) = self.txn.state().pending.get(&self.name, key) {
            return Ok(held.map(|v| Bytes::Owned(v.to_vec())));
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
        Ok(Entries::Boxed(Box::new(Pages::new(self, lo, hi, direction))))
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
        let mut state = self.txn.state();
        state.written.note(&self.name);
        state.pending.put(&self.name, key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<Option<Bytes<'_>>> {
        self.txn.state().written.note(&self.name);
        if let Some(held) = self.txn.state().pending.delete(&self.name, key) {
            // The held write is now a held delete: a row the server has goes at the flush.
            return Ok(held.map(Bytes::Owned));
        }
        let rows = self.txn.rows(
            "DELETE FROM edgemail_kv WHERE tbl = $1 AND k = $2 RETURNING v",
            &[&self.name, &key],
        )?;
        Ok(rows.first().map(|row| Bytes::Owned(row.get(0))))
    }
}
