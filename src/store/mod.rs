//! The only module that touches redb. `Store` owns the database file and the group-commit writer;
//! `Wtx` and `Rtx` wrap a write and a read transaction and carry the narrow, typed operations
//! (one file per entity). No redb type leaves this module.

mod contacts;
mod domains;
mod emails;
mod groups;
mod inbound;
mod keys;
mod mailboxes;
mod migrate;
mod outbound;
mod sequences;
mod stats;
mod status;
mod tables;
mod warmup;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Builder, Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

pub use contacts::Contact;
pub use domains::{DkimKey, Domain, Removed};
pub use emails::{Attachment, Deleted, Delivery, Email, Folder, Header, Summary};
pub use groups::{GroupPatch, MailboxSelection, SenderGroup};
pub use keys::{ApiKey, encode_hex};
pub use mailboxes::Mailbox;
pub use outbound::{Batch, Outcome, Suppression, Tracking};
pub use sequences::{Enrollment, EnrollmentStats, MessageCounters, Sequence, Step};
pub use stats::{DayCounts, day_of};
pub use status::{DeliveryStatus, EnrollmentStatus, MessageStatus, SendType};
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

    /// Runs `work` in the next group commit; returns once the write is durable.
    pub async fn write<F, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.submit(work)
            .await
            .map_err(|_| Error::Unavailable("the store is shutting down".into()))?
    }

    /// `write` for callers outside the async runtime (command line, test seeding).
    pub fn write_blocking<F, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.submit(work)
            .blocking_recv()
            .map_err(|_| Error::Unavailable("the store is shutting down".into()))?
    }

    fn submit<F, T>(&self, work: F) -> tokio::sync::oneshot::Receiver<Result<T>>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.writer.submit(move |tx| work(&mut Wtx { tx }))
    }

    /// Runs `work` on a snapshot, off the async executor (redb reads may touch the disk).
    pub async fn read<F, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(&Rtx) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || read_on(&db, work)).await.map_err(Error::internal)?
    }

    pub fn read_blocking<F, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(&Rtx) -> Result<T>,
    {
        read_on(&self.db, work)
    }

    /// Commits what the writer holds and stops it, for every clone; later writes answer 503. The
    /// file itself is released when the last clone is dropped.
    pub fn close(&self) {
        self.writer.close();
    }
}

impl Rtx {
    /// A cheap read proving the file is readable.
    pub fn ping(&self) -> Result<()> {
        self.tx.open_table(tables::META)?.get("schema_version")?;
        Ok(())
    }
}

fn read_on<F, T>(db: &Database, work: F) -> Result<T>
where
    F: FnOnce(&Rtx) -> Result<T>,
{
    let rtx = Rtx { tx: db.begin_read()? };
    work(&rtx)
}

fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    Ok(())
}

fn restrict_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(Error::internal)
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::internal(format!("corrupt record: {e}")))
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
