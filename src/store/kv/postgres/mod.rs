//! The backend on PostgreSQL, so that several nodes can share one store: every table is a slice
//! of one relation keyed by `(tbl, k)`, partitioned so that the hot paths' tables have relations
//! of their own (`layout`), and `bytea` sorts byte-wise as redb's keys do, so ranges come back in
//! the same order from both backends.
//!
//! The store's transactions are synchronous (its closures run inside them), so this backend is a
//! synchronous facade: each statement is awaited where it is issued, by the thread that waits
//! for it driving the connection itself (`drive`, `conn`, `pool`). Writes run at SERIALIZABLE; a
//! transaction that lost a race fails with `Error::Contention` and the writer runs it again.
//! Reads are REPEATABLE READ snapshots.
//!
//! Round trips are what PostgreSQL costs here, so a transaction sends as few as it can: its
//! BEGIN goes with its first statement, its puts and deletes wait (`pending`) until a range read
//! of their table or the commit, and then go as one statement each, in one exchange with the
//! COMMIT.
//!
//! Writes to the tables the store watches are told to the other nodes (`notify`). The
//! connections use TLS as the URL's libpq parameters ask (`url`, `tls`).

mod conn;
mod drive;
mod fail;
mod idle;
#[cfg(test)]
mod isolation;
mod layout;
mod notify;
mod pages;
mod pending;
mod pool;
mod rel;
#[cfg(test)]
mod tests;
mod tls;
mod txn;
mod url;

use std::sync::Arc;

use super::super::error::{Error, Result};
use super::{Backend, Snapshot, Transaction};
use conn::Connector;
use idle::Idle;
pub use layout::Relation;
pub use notify::Changed;
use pool::{Pool, Pooled};
use txn::{Begin, Txn};

/// Settings of every connection, sent at its start. Each statement here finds rows by the
/// primary key, a key or a key range, so an index path is always the right plan; but a statement
/// is planned once per connection (a generic plan, after five runs) with the sizes the relation
/// had then, and one planned while the relation was small (a new store, a bench) scanned all of
/// it, and hashed it for the read-ahead join, at every run from then on: PostgreSQL's CPU grew
/// with the store's size. Measured: 4.6 ms a statement over 30,000 rows instead of 0.03 ms.
const SESSION: &str = "-c enable_seqscan=off";

/// Held writes, one statement for all the puts and one for all the deletes of a flush.
const UPSERT: &str = "INSERT INTO edgemail_kv (tbl, k, v) \
    SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[]) \
    ON CONFLICT (tbl, k) DO UPDATE SET v = EXCLUDED.v";
const DELETE: &str = "DELETE FROM edgemail_kv AS d \
    USING unnest($1::text[], $2::bytea[]) AS x(tbl, k) WHERE d.tbl = x.tbl AND d.k = x.k";

/// The layout the backend's own tests run on: table `u` in a relation of its own, the rest in
/// the default partition.
#[cfg(test)]
pub(super) const TRIAL: &[Relation] = &[Relation { name: "edgemail_trial", tables: &["u"] }];

/// A PostgreSQL database holding the store.
pub struct Postgres {
    pool: Arc<Pool>,
    /// Where the listening connection's task runs; `None` once dropped.
    runtime: Option<tokio::runtime::Runtime>,
    // notify: the tables whose writes are told, and the connection that listens.
    watched: &'static [&'static str],
    /// This process's name in its notifications.
    origin: Arc<str>,
    listener: notify::Listener,
    /// Connections inside a finished read snapshot, for the next transaction.
    idle: Arc<Idle>,
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
    /// the relations when absent (`layout`: a partition for each of `relations`, the tables of
    /// the hot paths). A first connection is made here, so that a wrong address, password or
    /// certificate stops the start with its reason. A committed write to a table of `watched`
    /// is told to every node that listens (`changes`).
    pub fn connect(
        url: &str,
        connections: usize,
        watched: &'static [&'static str],
        relations: &[Relation],
    ) -> Result<Postgres> {
        notify::check(watched).map_err(Error::internal)?;
        let mut target = url::parse(url)?;
        let options = match target.config.get_options() {
            Some(theirs) => format!("{theirs} {SESSION}"),
            None => SESSION.to_owned(),
        };
        target.config.options(&options);
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
        let origin = notify::origin();
        let listener =
            notify::Listener::new(&target.config, tls.clone(), runtime.handle(), origin.clone());
        let pool = Pool::new(Connector::new(target.config, tls, hosts.clone()), connections.max(2));
        let idle = Arc::new(Idle::default());
        idle.start().map_err(|e| Error::io("cannot start the PostgreSQL sweeping thread", e))?;
        let db = Postgres { pool, runtime: Some(runtime), watched, origin, listener, idle };
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
        layout::ensure(&client, relations)?;
        Ok(db)
    }

    /// A connection from the pool.
    fn client(&self) -> Result<Pooled> {
        self.pool.get()
    }

    /// The names of the tables that hold at least one entry, in order.
    pub fn table_names(&self) -> Result<Vec<String>> {
        let client = self.client()?;
        let sql = "SELECT DISTINCT tbl FROM edgemail_kv ORDER BY tbl";
        let rows = client.wait(client.query(sql, &[]))?;
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

    /// A transaction on a connection left inside a finished snapshot (`idle`), or else on one
    /// from the pool.
    fn begin(&self, kind: Begin) -> Result<Txn> {
        let client = match self.idle.take() {
            Some(client) => (client, true),
            None => (self.client()?, false),
        };
        let written = notify::Written::new(self.watched, self.origin.clone());
        Ok(Txn::open(client, kind, self.idle.clone(), written))
    }
}

impl Backend for Postgres {
    fn read(&self) -> Result<Snapshot> {
        let txn = self.begin(Begin::Read)?;
        Ok(Snapshot::Boxed(Box::new(txn)))
    }

    fn write(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin(Begin::Serializable)?))
    }

    /// REPEATABLE READ is PostgreSQL's snapshot isolation: a write of a row that a concurrent
    /// transaction wrote and committed after this one's snapshot (an update, a delete, an
    /// insert that meets it through ON CONFLICT) fails with a serialization failure, so two
    /// writers of one key never both commit. Unlike SERIALIZABLE it takes no predicate locks:
    /// those lock index pages, not keys, so writers of neighbouring keys of the one relation
    /// (new messages and queue entries land side by side) lost to each other without sharing
    /// a key, and their batches ran again and again. `isolation.rs` holds each case against a
    /// server, and the write skew this level allows on keys a transaction only reads.
    fn write_snapshot(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(self.begin(Begin::Snapshot)?))
    }
}
