//! The importer every source feeds: it makes the folders a source names, turns each message's
//! bytes into a stored email (parsed as received mail is, but stored as an APPEND stores it) and
//! writes them in batches, one transaction and one commit per batch, so that thousands of small
//! messages do not each wait for their own fsync.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::store::{Folder, ImportItem, Imported, Store};

/// Messages written per transaction, and the bytes after which a batch is written sooner.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 32 << 20;
/// Failures a report lists one by one (the count goes on past them).
const MAX_LISTED_FAILURES: usize = 1000;

/// One message a source offers.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// Our folder name (IMAP's form, `/` between levels).
    pub folder: String,
    pub raw: Vec<u8>,
    /// IMAP flags and keywords.
    pub flags: Vec<String>,
    /// The internal date, Unix milliseconds.
    pub internal: u64,
    /// The key that tells the message apart in its source (an IMAP source's UIDVALIDITY and
    /// UID); `None`: its Message-ID and Date, or its bytes' hash when it has no Message-ID.
    pub key: Option<String>,
}

/// A message that was not imported, by its position in the source (0 is the first).
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub index: usize,
    pub reason: String,
}

/// What one folder of the source gave.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FolderReport {
    pub name: String,
    pub imported: u64,
    pub skipped: u64,
    pub failed: u64,
}

/// What an import did, per folder and in all.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub imported: u64,
    pub skipped: u64,
    pub failed: Vec<Failure>,
    /// Failures past those listed.
    #[serde(skip)]
    pub failed_count: u64,
    #[serde(skip)]
    pub folders: Vec<FolderReport>,
}

impl Report {
    /// One line per folder, then the totals: what the command line prints.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for f in &self.folders {
            out.push_str(&format!(
                "{}: {} imported, {} skipped, {} failed\n",
                f.name, f.imported, f.skipped, f.failed
            ));
        }
        for f in self.failed.iter().take(20) {
            out.push_str(&format!("  message {}: {}\n", f.index, f.reason));
        }
        out.push_str(&format!(
            "total: {} imported, {} skipped, {} failed\n",
            self.imported, self.skipped, self.failed_count
        ));
        out
    }

    fn folder(&mut self, name: &str) -> &mut FolderReport {
        let at = match self.folders.iter().position(|f| f.name == name) {
            Some(at) => at,
            None => {
                self.folders.push(FolderReport { name: name.to_owned(), ..Default::default() });
                self.folders.len() - 1
            }
        };
        &mut self.folders[at]
    }

    fn fail(&mut self, index: usize, folder: &str, reason: String) {
        self.folder(folder).failed += 1;
        self.failed_count += 1;
        if self.failed.len() < MAX_LISTED_FAILURES {
            self.failed.push(Failure { index, reason });
        }
    }
}

/// Imports into one mailbox; `offer` each message, then `finish`.
pub struct Importer {
    store: Store,
    mailbox: String,
    quota: u64,
    folders: HashMap<String, std::result::Result<Folder, String>>,
    pending: Vec<(usize, String, ImportItem)>,
    pending_bytes: usize,
    report: Report,
    meter: super::progress::Meter,
}

impl Importer {
    /// An importer into `mailbox` (an existing mailbox: 404 otherwise); `quota` is the server's
    /// default quota (`mailbox.quota_bytes`), which the mailbox's own replaces.
    pub fn new(store: &Store, mailbox: &str, quota: u64) -> Result<Importer> {
        let mailbox = mailbox.trim().to_ascii_lowercase();
        let (local, domain) = mailbox.rsplit_once('@').unwrap_or((mailbox.as_str(), ""));
        let (local, domain) = (local.to_owned(), domain.to_owned());
        if store.read_blocking(move |r| r.mailbox(&domain, &local))?.is_none() {
            return Err(Error::NotFound(format!("mailbox {mailbox} not found")));
        }
        Ok(Importer {
            store: store.clone(),
            mailbox,
            quota,
            folders: HashMap::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            report: Report::default(),
            meter: super::progress::Meter::new(None),
        })
    }

    /// Hands the progress of each folder to `sink` as messages are offered.
    pub fn set_progress(&mut self, sink: super::progress::Sink) {
        self.meter = super::progress::Meter::new(Some(sink));
    }

    /// Says how many messages `folder` will offer, for the progress shown.
    pub fn announce(&mut self, folder: &str, total: u64) {
        self.meter.folder(folder, total);
    }

    /// The mailbox imported into.
    pub fn mailbox(&self) -> &str {
        &self.mailbox
    }

    /// The report so far (the batches not yet written are not in it).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Takes one message: `index` is its position in the source, for the report.
    pub fn offer(&mut self, index: usize, message: Incoming) -> Result<()> {
        let name = message.folder.clone();
        self.meter.step(&name);
        if message.raw.len() > super::MAX_MESSAGE {
            let reason = format!(
                "message of {} bytes is over the import limit of {} bytes",
                message.raw.len(),
                super::MAX_MESSAGE
            );
            self.report.fail(index, &name, reason);
            return Ok(());
        }
        let folder = match self.folder(&name)? {
            Ok(folder) => folder,
            Err(reason) => {
                self.report.fail(index, &name, reason);
                return Ok(());
            }
        };
        let Some(inspected) = crate::inbound::inspect(&message.raw, message.internal) else {
            self.report.fail(index, &name, "the bytes are not a message".into());
            return Ok(());
        };
        let mut email = inspected.email;
        email.summary.id = crate::ids::new_id("em");
        email.summary.mailbox = self.mailbox.clone();
        email.summary.folder = folder;
        let key = message.key.unwrap_or_else(|| content_key(&name, &email, &message.raw));
        self.pending_bytes += message.raw.len();
        let item = ImportItem { email, raw: message.raw, flags: message.flags, key };
        self.pending.push((index, name, item));
        if self.pending.len() >= BATCH || self.pending_bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Records a message the source could not give (unreadable, over the limit).
    pub fn fail(&mut self, index: usize, folder: &str, reason: String) -> Result<()> {
        self.meter.step(folder);
        self.report.fail(index, folder, reason);
        Ok(())
    }

    /// Marks a point of the source (an IMAP folder's last UID) once what precedes it is written.
    pub fn mark(&mut self, key: &str, mark: &[u8]) -> Result<()> {
        self.flush()?;
        let (mailbox, key, mark) = (self.mailbox.clone(), key.to_owned(), mark.to_vec());
        self.store.write_blocking(move |w| w.set_import_mark(&mailbox, &key, &mark))?;
        Ok(())
    }

    /// The mark recorded under `key`.
    pub fn read_mark(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let (mailbox, key) = (self.mailbox.clone(), key.to_owned());
        Ok(self.store.read_blocking(move |r| r.import_mark(&mailbox, &key))?)
    }

    /// Writes what is pending and hands over the report.
    pub fn finish(mut self) -> Result<Report> {
        self.flush()?;
        self.meter.end();
        Ok(self.report)
    }

    /// Makes sure a folder the source names exists; a name the store refuses fails its
    /// messages alone.
    pub fn folder(&mut self, name: &str) -> Result<std::result::Result<Folder, String>> {
        if let Some(known) = self.folders.get(name) {
            return Ok(known.clone());
        }
        let (mailbox, owned) = (self.mailbox.clone(), name.to_owned());
        let now = crate::ids::now_ms();
        let made = self.store.write_blocking(move |w| w.import_folder(&mailbox, &owned, now));
        let known = match made {
            Ok(folder) => Ok(folder),
            Err(e @ (crate::store::Error::Invalid { .. } | crate::store::Error::Conflict(_))) => {
                Err(format!("folder {name}: {e}"))
            }
            Err(e) => return Err(e.into()),
        };
        self.folders.insert(name.to_owned(), known.clone());
        self.report.folder(name);
        Ok(known)
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let items: Arc<Vec<ImportItem>> =
            Arc::new(batch.iter().map(|(_, _, item)| item.clone()).collect());
        let (quota, now) = (self.quota, crate::ids::now_ms());
        let outcomes =
            self.store.write_blocking(move |w| w.import_messages(items.as_slice(), quota, now))?;
        for ((index, name, item), outcome) in batch.into_iter().zip(outcomes) {
            match outcome {
                Imported::Stored(_) => {
                    self.report.imported += 1;
                    self.report.folder(&name).imported += 1;
                }
                Imported::Skipped => {
                    self.report.skipped += 1;
                    self.report.folder(&name).skipped += 1;
                }
                Imported::OverQuota => {
                    let reason = format!(
                        "the mailbox's quota has no room for this message of {} bytes",
                        item.email.summary.size
                    );
                    self.report.fail(index, &name, reason);
                }
            }
        }
        Ok(())
    }
}

/// The key of a message without a source key: its folder, Message-ID and Date header, or its
/// folder and the SHA-256 of its bytes when it has no Message-ID.
fn content_key(folder: &str, email: &crate::store::Email, raw: &[u8]) -> String {
    match email.message_id.as_deref().filter(|m| !m.is_empty()) {
        Some(id) => {
            let date = email
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("date"))
                .map_or("", |h| h.value.as_str());
            format!("m:{folder}\n{id}\n{}", date.trim())
        }
        None => {
            let hash = Sha256::digest(raw);
            format!("h:{folder}\n{}", crate::store::encode_hex(&hash))
        }
    }
}
