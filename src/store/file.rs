//! The open database file, and whether it takes writes. After an I/O fault (a full disk, EIO)
//! redb latches its handle: every later operation on it fails with "previous I/O error", reads of
//! pages not in its cache included. So after a fault the store drops the handle and opens the file
//! again (redb repairs it from the last durable commit), and refuses writes until a probe write
//! commits: it is degraded, not broken, and recovers without a restart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::error::{Error, Result};
use super::kv::{Db, Postgres, Redb, Relation};

/// How long a reopen waits for reads in progress to let go of the old handle.
const READERS_GRACE: Duration = Duration::from_secs(3);

pub(super) struct File {
    path: PathBuf,
    cache_size: usize,
    /// Whether the store is a shared PostgreSQL database rather than the file at `path`.
    shared: bool,
    /// `None` only while a reopen failed; reads then wait for the next one.
    slot: RwLock<Option<Arc<Db>>>,
    writable: AtomicBool,
    /// The fault that made the store refuse writes, while it does.
    fault: Mutex<Option<Arc<Error>>>,
}

impl File {
    pub(super) fn open(path: &Path, cache_size: usize) -> Result<File> {
        let db = create(path, cache_size)?;
        Ok(File::holding(path, cache_size, false, Db::Redb(db)))
    }

    /// A store on the PostgreSQL database at `url` (`path` is still the node's data directory).
    /// Writes to the tables of `watched` are told to the nodes that listen; `relations` are the
    /// hot tables' own relations.
    pub(super) fn connect(
        url: &str,
        path: &Path,
        connections: usize,
        watched: &'static [&'static str],
        relations: &[Relation],
    ) -> Result<File> {
        let db = Postgres::connect(url, connections, watched, relations)?;
        Ok(File::holding(path, 0, true, Db::Postgres(db)))
    }

    fn holding(path: &Path, cache_size: usize, shared: bool, db: Db) -> File {
        File {
            path: path.to_owned(),
            cache_size,
            shared,
            slot: RwLock::new(Some(Arc::new(db))),
            writable: AtomicBool::new(true),
            fault: Mutex::new(None),
        }
    }

    pub(super) fn is_shared(&self) -> bool {
        self.shared
    }

    /// The current handle. A handle held across a reopen keeps the reopen waiting: hold it for
    /// one transaction only.
    pub(super) fn db(&self) -> Result<Arc<Db>> {
        let slot = self.slot.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        match slot.as_ref() {
            Some(db) => Ok(db.clone()),
            None => Err(self.refusal()),
        }
    }

    pub(super) fn writable(&self) -> bool {
        self.writable.load(Ordering::Acquire)
    }

    /// The answer to a write while the store is degraded.
    pub(super) fn refusal(&self) -> Error {
        let fault = self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Error::Degraded(fault.unwrap_or_else(|| Arc::new(Error::internal("storage fault"))))
    }

    /// Refuses writes from now on, for `fault`. Only the first fault of a spell is kept: it is
    /// the one that explains the others.
    pub(super) fn degrade(&self, fault: Arc<Error>) {
        let mut kept = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        if self.writable.swap(false, Ordering::AcqRel) || kept.is_none() {
            tracing::error!(error = %fault, "store degraded: writes refused until a probe commits");
            crate::metrics::store_writable(false);
            *kept = Some(fault);
        }
    }

    pub(super) fn recover(&self) {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if !self.writable.swap(true, Ordering::AcqRel) {
            tracing::warn!("store recovered: writes accepted again");
            crate::metrics::store_writable(true);
        }
    }

    /// Drops the handle and opens the file again. Only the writer thread calls this, between
    /// transactions, so no write holds the old handle.
    pub(super) fn reopen(&self) -> Result<()> {
        if self.shared {
            // The pool replaces broken connections itself; there is no file to reopen.
            return Ok(());
        }
        let mut slot = self.slot.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(old) = slot.take() {
            // New reads wait on the lock; the ones in progress finish and let go.
            let deadline = Instant::now() + READERS_GRACE;
            while Arc::strong_count(&old) > 1 {
                if Instant::now() > deadline {
                    *slot = Some(old);
                    return Err(Error::Unavailable("reads kept the store file busy".into()));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            drop(old);
        }
        let db = create(&self.path, self.cache_size)?;
        *slot = Some(Arc::new(Db::Redb(db)));
        tracing::info!(path = %self.path.display(), "store file reopened");
        Ok(())
    }
}

fn create(path: &Path, cache_size: usize) -> Result<Redb> {
    Redb::open(path, cache_size)
}

/// The data directory, created readable by its owner only.
pub(super) fn create_private_dir(dir: &Path) -> Result<()> {
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

/// The data file (and its backups) readable by their owner only: they hold keys and mail.
pub(super) fn restrict_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::io(format!("cannot restrict {}", path.display()), e))?;
    Ok(())
}

/// How the store is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// Bytes of redb's page cache (`storage.cache_size`).
    pub cache_size: usize,
    /// A PostgreSQL database to use instead of the file (`store.url`).
    pub url: Option<String>,
    /// Connections to that database, at most.
    pub connections: usize,
    /// This node's name (`cluster.node`), naming its counter shards on a shared store.
    pub node: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cache_size: crate::config::DEFAULT_CACHE_SIZE,
            url: None,
            connections: 16,
            node: None,
        }
    }
}
