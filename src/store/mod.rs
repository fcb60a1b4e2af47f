//! `Store` owns the backend (`kv`: ordered byte tables on one redb file) and the group-commit
//! writer; `Wtx` and `Rtx` wrap a write and a read transaction and carry the narrow, typed
//! operations (one file per entity or concern). No redb type leaves `kv` (or `migrate`'s move).
//!
//! The sub-modules, top first: one uses (by `use`, or the methods they add to `Wtx`/`Rtx`) only
//! those below it, as `layering.rs` checks; work above a module is started from above, not by it.
//! - `backup`       consistent copies between commits, restores, integrity checks
//! - `transfer`     a whole store copied to the other backend, proven by per-table sums
//! - `migrate`      the schema version stamp and the upgrade steps
//! - `removal`      what goes with a domain or a mailbox
//! - `imports`      what imports copied in: one key per message, marks of IMAP source folders
//! - `folders`      the folders users make: names, codes, subscriptions; create, rename, delete
//! - `imap_ops`     what IMAP sessions read and change: folders in UID order, APPEND, MOVE, EXPUNGE
//! - `warmup`       warmup enrollments, and pruning warmup mail
//! - `groups`       sender groups
//! - `contacts`     the contact book
//! - `keys`         API keys
//! - `passwords`    mailbox app passwords for mail clients
//! - `sieve`        Sieve scripts, vacation settings and what vacation already answered
//! - `pacing`       per-mailbox daily caps and gaps: the slot each paced send is given
//! - `mailboxes`    mailboxes, and their sending limits
//! - `aliases`      addresses that lead to mailboxes or outside (the catch-all among them)
//! - `inbound`      received mail: one copy per mailbox, their bodies left in the raw message
//! - `aggregates`   DMARC and TLS-RPT aggregate reports other systems send about our domains
//! - `dmarc_seen`   what our MX saw of other domains' DMARC, for the reports we send them
//! - `replies`      the reply inbox: answers to sequence and campaign mail, and lead labels
//! - `reports`      late bounces (DSNs), complaints (ARF) and replies to what we sent
//! - `tracking`     opens, clicks, unsubscribes and replies of a sent message
//! - `attempts`     committing a delivery attempt's outcome
//! - `batches`      campaign batches, and counting a sent message's events for batch or sequence
//! - `sequences`    sequences and enrollments
//! - `sequence_mail` the latest sequence message a mailbox sent a contact, for bare replies
//! - `webhook_due`  the dispatcher's view of what is due, and giving up what a dead endpoint held
//! - `outbox`       events out: recording them for webhooks, their deliveries and attempts
//! - `webhooks`     webhook endpoints of a domain
//! - `events`       event types and the `data` each carries
//! - `cluster`      nodes sharing a store: heartbeats, claims on queued mail, the leader's lease
//! - `queue`        the delivery queue, and the Message-IDs of what we sent
//! - `suppressions` addresses a domain must not send to
//! - `idempotency`  Idempotency-Key records of API requests, and their expiry
//! - `certificates` certificates obtained over ACME, and the ACME account they were ordered on
//! - `secrets`      secrets made on first start
//! - `trained`      what each received message taught the junk classifier
//! - `greylist`     greylisting's triplets of client network, sender and recipient
//! - `junk`         the junk classifier's token counts and totals, per scope
//! - `stats`        per-domain, per-day counters
//! - `emails`       stored messages and the folder index
//! - `quota`        the bytes each mailbox holds, counted as its mail comes and goes
//! - `folder`       the folders of a mailbox
//! - `imap`         IMAP bookkeeping: UIDVALIDITY, UIDs and flags, kept by the folder index's hooks
//! - `bodies`       the text and HTML of a campaign, stored once for all its messages
//! - `parts`        attachments of mail we send, stored once per send request
//! - `raw`          raw messages, stored once for all their copies
//! - `email_doc`    the stored form of an email document, with the raw message of a single copy
//! - `domains`      hosted domains and their DKIM keys
//! - `status`       the states of messages, recipients and enrollments
//! - `senders`      each mailbox's history with its correspondents, evidence for the spam filter
//! - `scan`         reads and removals over a domain's slice of a table
//! - `changes`      the watched tables, and what the nodes sharing a store are told of their writes
//! - `tables`       every table and its key layout
//! - `writes`       writes handed to the group commit, and the wake-ups once they committed
//! - `writer`       the group-commit thread, and the probe of a degraded store
//! - `file`         the open database file, reopened after a disk fault, and whether it takes writes
//! - `kv`           the storage backend: ordered byte tables in transactions, typed tables above them
//! - `error`        the store's error, and its mapping onto the API's

mod aggregates;
mod aliases;
mod attempts;
mod backup;
mod batches;
mod bodies;
mod certificates;
mod changes;
mod cluster;
mod contacts;
mod dmarc_seen;
mod domains;
mod email_doc;
mod emails;
mod error;
mod events;
mod file;
mod folder;
mod folders;
mod greylist;
mod groups;
mod idempotency;
mod imap;
mod imap_ops;
mod imports;
mod inbound;
mod junk;
mod keys;
mod kv;
mod mailboxes;
mod migrate;
mod outbox;
mod pacing;
mod parts;
mod passwords;
mod queue;
mod quota;
mod raw;
mod removal;
mod replies;
mod reports;
mod scan;
mod secrets;
mod senders;
mod sequence_mail;
mod sequences;
mod sieve;
mod stats;
mod status;
mod suppressions;
mod tables;
mod tracking;
mod trained;
mod transfer;
mod warmup;
mod webhook_due;
mod webhooks;
mod writer;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kv::{Backend, ReadableTable, WriteTxn};
use scan::{Tables, drain_domain, get_json, scan_domain, scan_index};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use aggregates::{DmarcRecord, DmarcReport, TlsPolicy, TlsReport};
pub use aliases::{Alias, CATCH_ALL};
pub use attempts::Outcome;
pub use backup::{Checked, check_file, restore};
pub use batches::Batch;
pub use bodies::SentBody;
pub use certificates::{StoredCertificate, StoredChallenge};
pub use changes::{Changes, Topic};
pub use cluster::ClaimsOf;
pub use contacts::{Contact, ContactUpsert, ContactsImported, MAX_CONTACT_FIELDS};
pub use dmarc_seen::{DmarcGroup, DmarcPolicy, DmarcSeen, SeenDkim, SeenRow};
pub use domains::{DkimKey, Domain};
pub use emails::{
    Attachment, Deleted, Delivery, Email, Folder, Header, Spam, Summary, TrackingOptions,
    received_bodies,
};
pub use error::{Error, JobError, Result};
pub use events::EventType;
pub use file::Options;
pub use folders::{DELIMITER, Discard, FolderEntry, MAX_NAME, check_name, system_named};
pub use greylist::Greylisting;
pub use groups::{GroupPatch, MailboxSelection, SenderGroup};
pub use idempotency::{Claim, Claimant, StoredReply};
pub use imap::{ImapEntry, ImapFolder, ImapMeta};
pub use imap_ops::{SENT_COPY_WINDOW_MS, SentCopy};
pub use imports::{ImportItem, Imported};
pub use inbound::Prepared;
pub use junk::{JunkCounts, JunkTotals, JunkTraining};
pub use keys::{ApiKey, encode_hex};
pub use mailboxes::{Mailbox, MailboxPatch, SpamFilter, SpamFilterPatch};
pub use outbox::{AttemptOutcome, DueDelivery, WebhookDelivery, WebhookStatus};
pub use pacing::Slot;
pub use passwords::{AppPassword, MAX_APP_PASSWORDS};
pub use queue::Spooled;
pub use quota::Quota;
pub use removal::Removed;
pub use replies::{Answer as ReplyAnswer, MAX_LABEL, ReplyRecord};
pub use reports::ReplySeen;
pub use senders::SenderHistory;
pub use sequences::*;
pub use sieve::{MAX_SCRIPTS, SieveScript, Vacation};
pub use stats::{DayCounts, day_of};
pub use status::{DeliveryStatus, EnrollmentStatus, MessageStatus, SendType};
pub use suppressions::Suppression;
pub use tracking::Tracking;
pub use transfer::TableSum;
pub use warmup::Warmup;
pub use webhook_due::DueWebhooks;
pub use webhooks::{Webhook, WebhookPatch};

/// Name of the database file inside the data directory.
pub const DB_FILE: &str = "edgemail.redb";

/// A handle on the database; clones share the file and the writer, so services can each hold
/// one. `close` stops the writer for every clone.
#[derive(Clone)]
pub struct Store {
    file: Arc<file::File>,
    writer: Arc<writer::Writer>,
    path: PathBuf,
    /// Woken after a write that recorded a webhook event has committed.
    events: crate::wake::Wake,
    /// Woken after a write that changed a folder IMAP shows has committed.
    mail: crate::wake::Broadcast,
    /// See `Wtx::shard`.
    shard: Option<Arc<str>>,
}

/// A write transaction shared with the other jobs of its group commit.
pub struct Wtx<'a> {
    tx: &'a dyn WriteTxn,
    /// Whether this write recorded a webhook event: the dispatcher is woken once it commits.
    emitted: bool,
    /// Whether this write changed what IMAP sessions show: they are woken once it commits.
    imap_changed: bool,
    /// This node's name on a shared store, where each node counts into counters of its own
    /// (`quota`, `stats`): writers on several nodes then never meet on a counter.
    shard: Option<&'a str>,
}

/// A consistent snapshot for reading.
pub struct Rtx {
    tx: kv::Snapshot,
}

impl Store {
    /// Opens (creating when absent) the database in `dir` and brings its layout up to date.
    pub fn open(dir: &Path) -> Result<Store> {
        Store::open_with(dir, Options::default())
    }

    /// Creates the data directory (mode 0700) when it is missing: a server keeps its admin
    /// socket and certificates there whichever store holds its data. Opening a PostgreSQL store
    /// needs none, so commands run with `--store` leave the file system alone.
    pub fn create_data_dir(dir: &Path) -> Result<()> {
        file::create_private_dir(dir)
    }

    pub fn open_with(dir: &Path, options: Options) -> Result<Store> {
        let path = dir.join(DB_FILE);
        let shard = options.url.as_ref().and(options.node.as_deref()).map(Arc::from);
        let file = match &options.url {
            Some(url) => Arc::new(file::File::connect(
                url,
                dir,
                options.connections,
                &changes::TABLES,
                tables::RELATIONS,
            )?),
            None => {
                file::create_private_dir(dir)?;
                let file = file::File::open(&path, options.cache_size)?;
                file::restrict_file(&path)?;
                Arc::new(file)
            }
        };
        if let Err(e) = file.db().and_then(|db| migrate::upgrade(&db)) {
            if !e.is_disk() {
                return Err(e);
            }
            // A full disk at start: serve reads, refuse writes, and let the probe (which runs
            // the same upgrade) finish the job once there is room.
            file.degrade(Arc::new(e));
            file.reopen()?;
        }
        let writer = Arc::new(writer::Writer::start(file.clone(), migrate::upgrade)?);
        Ok(Store {
            file,
            writer,
            path,
            events: crate::wake::Wake::default(),
            mail: crate::wake::Broadcast::default(),
            shard,
        })
    }

    /// Whether the store still takes writes at all (false once it was closed for shutdown).
    pub fn is_open(&self) -> bool {
        !self.writer.is_closed()
    }

    /// Whether writes are accepted now: false while the disk is full or failing (writes are
    /// then refused with `Error::Degraded` until a probe write commits).
    pub fn writable(&self) -> bool {
        self.file.writable()
    }

    /// `writable` as the answer a write would get: `Error::Degraded` with the fault that
    /// started the spell.
    pub fn takes_writes(&self) -> Result<()> {
        if self.file.writable() { Ok(()) } else { Err(self.file.refusal()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The wake-up handle of whoever delivers webhook events (the dispatcher waits on it).
    pub(crate) fn events(&self) -> crate::wake::Wake {
        self.events.clone()
    }

    /// Woken whenever a folder IMAP shows changes (IDLE waits on it).
    pub(crate) fn mail_changes(&self) -> crate::wake::Broadcast {
        self.mail.clone()
    }

    /// Runs a short read (a few keys, a bounded page) on `work` where it is called: a hop to the
    /// blocking pool would cost more than the read, whose pages are mostly cached.
    pub async fn read<F: FnOnce(&Rtx) -> Result<T, E>, T, E: From<Error>>(
        &self,
        work: F,
    ) -> Result<T, E> {
        // On PostgreSQL each statement waits on the network: the driver hands this thread's
        // other tasks to another when a wait grows long (`kv::postgres::drive::PATIENCE`).
        read_on(&self.file, work)
    }

    /// Whether the store is a PostgreSQL database that other nodes may share.
    pub fn is_shared(&self) -> bool {
        self.file.is_shared()
    }

    /// Runs a read that may walk much of a table (aggregates, whole folders, large raw messages)
    /// off the async executor, so it cannot stall other connections.
    pub async fn read_long<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Rtx) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || read_on(&file, work))
            .await
            .map_err(|e| E::from(Error::Task(e)))?
    }

    pub fn read_blocking<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Rtx) -> Result<T, E>,
        E: From<Error>,
    {
        read_on(&self.file, work)
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

fn read_on<F, T, E>(file: &file::File, work: F) -> Result<T, E>
where
    F: FnOnce(&Rtx) -> Result<T, E>,
    E: From<Error>,
{
    // The handle is held for the read only: a reopen after a disk fault waits for it.
    let db = file.db()?;
    let tx = db.read().map_err(E::from)?;
    work(&Rtx { tx })
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(value)?)
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    Ok(serde_json::from_slice(bytes)?)
}

#[cfg(test)]
mod layering;
