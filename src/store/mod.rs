//! The only module that touches redb. `Store` owns the database file and the group-commit writer;
//! `Wtx` and `Rtx` wrap a write and a read transaction and carry the narrow, typed operations
//! (one file per entity or concern). No redb type leaves this module.
//!
//! The sub-modules, top first. A module uses only modules listed below it: by `use`, and by
//! calling the methods they add to `Wtx` and `Rtx` (`layering.rs` holds store to this). A lower
//! module that must trigger work above it does not: the upper one does it (removal cleans up
//! after every entity; the event counting of sent mail lives above the sequence counters).
//! - `migrate`      the schema version stamp and the upgrade steps
//! - `removal`      what goes with a domain or a mailbox
//! - `warmup`       warmup enrollments, and pruning warmup mail
//! - `groups`       sender groups
//! - `contacts`     the contact book
//! - `keys`         API keys
//! - `mailboxes`    mailboxes
//! - `inbound`      received mail: one copy per mailbox, bodies of large copies left in the raw
//! - `reports`      late bounces (DSNs), complaints (ARF) and replies to what we sent
//! - `tracking`     opens, clicks, unsubscribes and replies of a sent message
//! - `attempts`     committing a delivery attempt's outcome
//! - `batches`      campaign batches, and counting a sent message's events for batch or sequence
//! - `sequences`    sequences and enrollments
//! - `queue`        the delivery queue, and the Message-IDs of what we sent
//! - `suppressions` addresses a domain must not send to
//! - `idempotency`  Idempotency-Key records of API requests, and their expiry
//! - `secrets`      secrets made on first start
//! - `stats`        per-domain, per-day counters
//! - `emails`       stored messages and the folder index
//! - `parts`        attachments of mail we send, stored once per send request
//! - `raw`          raw messages, stored once for all their copies
//! - `domains`      hosted domains and their DKIM keys
//! - `status`       the states of messages, recipients and enrollments
//! - `tables`       every table and its key layout
//! - `writer`       the group-commit thread
//! - `error`        the store's error, and its mapping onto the API's

mod attempts;
mod batches;
mod contacts;
mod domains;
mod emails;
mod error;
mod groups;
mod idempotency;
mod inbound;
mod keys;
mod mailboxes;
mod migrate;
mod parts;
mod queue;
mod raw;
mod removal;
mod reports;
mod secrets;
mod sequences;
mod stats;
mod status;
mod suppressions;
mod tables;
mod tracking;
mod warmup;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{
    Builder, Database, Key, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition,
    Value, WriteTransaction,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use attempts::Outcome;
pub use batches::Batch;
pub use contacts::Contact;
pub use domains::{DkimKey, Domain};
pub use emails::{Attachment, Deleted, Delivery, Email, Folder, Header, Summary};
pub use error::{Error, JobError, Result};
pub use groups::{GroupPatch, MailboxSelection, SenderGroup};
pub use idempotency::{Claim, Claimant, StoredReply};
pub use keys::{ApiKey, encode_hex};
pub use mailboxes::Mailbox;
pub use removal::Removed;
pub use sequences::{Enrollment, EnrollmentStats, MessageCounters, Sequence, Step};
pub use stats::{DayCounts, day_of};
pub use status::{DeliveryStatus, EnrollmentStatus, MessageStatus, SendType};
pub use suppressions::Suppression;
pub use tracking::Tracking;
pub use warmup::Warmup;

/// Name of the database file inside the data directory.
pub const DB_FILE: &str = "edgemail.redb";

/// A handle on the database; clones share the file and the writer, so services can each hold
/// one. `close` stops the writer for every clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<Database>,
    writer: Arc<writer::Writer>,
    path: PathBuf,
}

/// How the data file is opened.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Bytes of redb's page cache (`storage.cache_size`).
    pub cache_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { cache_size: crate::config::DEFAULT_CACHE_SIZE }
    }
}

/// A write transaction shared with the other jobs of its group commit.
pub struct Wtx<'a> {
    tx: &'a WriteTransaction,
}

/// A consistent snapshot for reading.
pub struct Rtx {
    tx: ReadTransaction,
}

impl Store {
    /// Opens (creating when absent) the database in `dir` and brings its layout up to date.
    pub fn open(dir: &Path) -> Result<Store> {
        Store::open_with(dir, Options::default())
    }

    pub fn open_with(dir: &Path, options: Options) -> Result<Store> {
        create_private_dir(dir)?;
        let path = dir.join(DB_FILE);
        let db = match Builder::new().set_cache_size(options.cache_size).create(&path) {
            Ok(db) => db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(Error::Unavailable(format!(
                    "{} is open in another process (is `edgemail serve` running on this data \
                     directory?)",
                    path.display()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        restrict_file(&path)?;
        migrate::upgrade(&db)?;
        let db = Arc::new(db);
        let writer = Arc::new(writer::Writer::start(db.clone())?);
        Ok(Store { db, writer, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` in the next group commit; returns once the write is durable. `work` fails
    /// in its caller's error type, which must carry the store's errors and tell a fault (the
    /// commit is aborted) from a refusal (`JobError`). A closure whose body never names that
    /// type (only `?` and `Ok`) leaves it to be annotated: `|w| -> Result<_> { .. }`.
    pub async fn write<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        self.submit(work).await.map_err(|_| E::from(shutting_down()))?
    }

    /// `write` for callers outside the async runtime (command line, test seeding).
    pub fn write_blocking<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        self.submit(work).blocking_recv().map_err(|_| E::from(shutting_down()))?
    }

    fn submit<F, T, E>(&self, work: F) -> tokio::sync::oneshot::Receiver<Result<T, E>>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        self.writer.submit(move |tx| work(&mut Wtx { tx }))
    }

    /// Runs `work` on a snapshot, off the async executor (redb reads may touch the disk).
    pub async fn read<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Rtx) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || read_on(&db, work))
            .await
            .map_err(|e| E::from(Error::Task(e)))?
    }

    pub fn read_blocking<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Rtx) -> Result<T, E>,
        E: From<Error>,
    {
        read_on(&self.db, work)
    }

    /// Commits what the writer holds and stops it, for every clone; later writes answer 503. The
    /// file itself is released when the last clone is dropped.
    pub fn close(&self) {
        self.writer.close();
    }
}

fn shutting_down() -> Error {
    Error::Unavailable("the store is shutting down".into())
}

impl Rtx {
    /// A cheap read proving the file is readable.
    pub fn ping(&self) -> Result<()> {
        self.tx.open_table(tables::META)?.get("schema_version")?;
        Ok(())
    }
}

fn read_on<F, T, E>(db: &Database, work: F) -> Result<T, E>
where
    F: FnOnce(&Rtx) -> Result<T, E>,
    E: From<Error>,
{
    let tx = db.begin_read().map_err(|e| E::from(Error::from(e)))?;
    work(&Rtx { tx })
}

fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    }
    Ok(())
}

fn restrict_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::io(format!("cannot restrict {}", path.display()), e))?;
    Ok(())
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(value)?)
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    Ok(serde_json::from_slice(bytes)?)
}

impl Rtx {
    /// The JSON values of `table` named by the `(domain, id)` keys of `index`, in index order.
    fn listed_for_domain<T: DeserializeOwned>(
        &self,
        index: redb::TableDefinition<(&str, &str), ()>,
        table: redb::TableDefinition<&str, &[u8]>,
        domain: &str,
    ) -> Result<Vec<T>> {
        let index = self.tx.open_table(index)?;
        let table = self.tx.open_table(table)?;
        let mut out = Vec::new();
        for entry in index.range((domain, "")..)? {
            let (key, _) = entry?;
            let (d, id) = key.value();
            if d != domain {
                break;
            }
            if let Some(v) = table.get(id)? {
                out.push(decode(v.value())?);
            }
        }
        Ok(out)
    }
}

/// Reading tables through either transaction wrapper, so a lookup that both reads and writes need
/// is written once, as a function of `&impl Tables`, behind a thin method on each wrapper.
pub(super) trait Tables {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_>;
}

impl Tables for Wtx<'_> {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        Ok(self.tx.open_table(definition)?)
    }
}

impl Tables for Rtx {
    fn table<K: Key + 'static, V: Value + 'static>(
        &self,
        definition: TableDefinition<'_, K, V>,
    ) -> Result<impl ReadableTable<K, V> + '_> {
        Ok(self.tx.open_table(definition)?)
    }
}

/// The JSON value stored under `key`.
fn get_json<'k, K, T>(
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
fn drain_domain<V: Value + 'static>(
    table: &mut redb::Table<(&'static str, &'static str), V>,
    domain: &str,
) -> Result<usize> {
    let mut keys = Vec::new();
    for entry in table.range((domain, "")..)? {
        let (key, _) = entry?;
        let (d, k) = key.value();
        if d != domain {
            break;
        }
        keys.push(k.to_owned());
    }
    for key in &keys {
        table.remove((domain, key.as_str()))?;
    }
    Ok(keys.len())
}

/// Every JSON value of `table` whose tuple key starts with `domain`, in key order.
fn scan_domain<T, Tb>(table: &Tb, domain: &str) -> Result<Vec<T>>
where
    T: DeserializeOwned,
    Tb: ReadableTable<(&'static str, &'static str), &'static [u8]>,
{
    let mut out = Vec::new();
    for entry in table.range((domain, "")..)? {
        let (key, value) = entry?;
        if key.value().0 != domain {
            break;
        }
        out.push(decode(value.value())?);
    }
    Ok(out)
}

#[cfg(test)]
mod layering;
