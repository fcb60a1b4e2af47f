//! The schema version stamp and the upgrade path. A file is stamped with the layout version that
//! last wrote it; opening an older file runs each upgrade step in order inside one transaction, and
//! a file from a newer release is refused rather than misread.

use redb::{Database, ReadableTable, ReadableTableMetadata, WriteTransaction};

use super::batches::Batch;
use super::error::{Error, Result};
use super::tables::*;

/// The layout this build writes.
pub const SCHEMA_VERSION: u64 = 3;

/// Upgrade steps: `STEPS[n]` turns version `n + 1` into `n + 2`.
const STEPS: &[fn(&WriteTransaction) -> Result<()>] = &[index_batches_by_domain, shared_raw];

/// Version 3 keeps a received message's raw bytes once for all its copies, and large copies
/// without their bodies. Nothing is rewritten (old copies read as before); the stamp exists so
/// that an older build refuses the file instead of showing such mail without its bodies.
fn shared_raw(_: &WriteTransaction) -> Result<()> {
    Ok(())
}

/// Version 2 lists campaign batches per domain; batches written before have no index entry.
fn index_batches_by_domain(tx: &WriteTransaction) -> Result<()> {
    let batches = tx.open_table(BATCHES)?;
    let mut index = tx.open_table(BATCHES_BY_DOMAIN)?;
    for entry in batches.iter()? {
        let (key, value) = entry?;
        let batch: Batch = super::decode(value.value())?;
        index.insert((batch.domain.as_str(), key.value()), ())?;
    }
    Ok(())
}

pub(super) fn upgrade(db: &Database) -> Result<()> {
    let tx = db.begin_write()?;
    create_tables(&tx)?;
    let found = tx.open_table(META)?.get("schema_version")?.map(|v| v.value());
    match found {
        None => {}
        Some(v) if v > SCHEMA_VERSION => {
            return Err(Error::Unavailable(format!(
                "the data file has schema version {v}, this build understands up to \
                 {SCHEMA_VERSION}; run a newer edgemail"
            )));
        }
        Some(v) => {
            for step in STEPS.iter().skip(v.saturating_sub(1) as usize) {
                step(&tx)?;
            }
        }
    }
    tx.open_table(META)?.insert("schema_version", SCHEMA_VERSION)?;
    ensure_secret(&tx, "tracking")?;
    tx.commit()?;
    Ok(())
}

/// A random 32-byte secret under `name`, created once and kept for the life of the file.
fn ensure_secret(tx: &WriteTransaction, name: &str) -> Result<()> {
    let mut table = tx.open_table(SECRETS)?;
    if table.get(name)?.is_none() {
        let secret: [u8; 32] = rand::random();
        table.insert(name, secret.as_slice())?;
    }
    Ok(())
}

/// Opening a table in a write transaction creates it, so readers never meet a missing table.
fn create_tables(tx: &WriteTransaction) -> Result<()> {
    tx.open_table(META)?;
    tx.open_table(DOMAINS)?;
    tx.open_table(KEYS)?;
    tx.open_table(KEY_HASHES)?;
    tx.open_table(MAILBOXES)?;
    tx.open_table(GROUPS)?;
    tx.open_table(CONTACTS)?;
    tx.open_table(CONTACT_EMAILS)?;
    tx.open_table(EMAILS)?;
    tx.open_table(EMAIL_INDEX)?;
    tx.open_table(QUEUE)?;
    tx.open_table(SUPPRESSIONS)?;
    tx.open_table(SUPPRESSIONS_BY_TIME)?;
    tx.open_table(TRACKING)?;
    tx.open_table(BATCHES)?;
    tx.open_table(SECRETS)?;
    tx.open_table(MESSAGE_IDS)?;
    tx.open_table(RAW)?;
    tx.open_table(RAW_BLOBS)?;
    tx.open_table(RAW_REFS)?;
    tx.open_table(RAW_OF)?;
    tx.open_table(BATCHES_BY_DOMAIN)?;
    tx.open_table(SEQUENCES)?;
    tx.open_table(APP_PASSWORDS)?;
    tx.open_table(SEQUENCES_BY_DOMAIN)?;
    tx.open_table(ENROLLMENTS)?;
    tx.open_table(ENROLLMENTS_ACTIVE)?;
    tx.open_table(ENROLLMENTS_DUE)?;
    tx.open_table(DAILY_STATS)?;
    tx.open_table(WARMUP)?;
    tx.open_table(WEBHOOKS)?;
    tx.open_table(WEBHOOKS_BY_DOMAIN)?;
    tx.open_table(WEBHOOK_EVENTS)?;
    tx.open_table(WEBHOOK_EVENT_REFS)?;
    tx.open_table(WEBHOOK_DELIVERIES)?;
    tx.open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?;
    tx.open_table(WEBHOOK_DUE)?;
    tx.open_table(SENT_PARTS)?;
    tx.open_table(SENT_PARTS_OF)?;
    tx.open_table(SENT_PARTS_REFS)?;
    tx.open_table(IDEMPOTENCY)?;
    tx.open_table(IDEMPOTENCY_BY_TIME)?;
    tx.open_table(MAILBOX_DAY_SENDS)?;
    tx.open_table(MAILBOX_NEXT_SLOT)?;
    tx.open_table(PACED)?;
    tx.open_table(SEQUENCE_MAIL)?;
    tx.open_table(IMAP_FOLDERS)?;
    tx.open_table(IMAP_UIDS)?;
    tx.open_table(IMAP_MESSAGES)?;
    tx.open_table(IMAP_FLAG_LOG)?;
    index_enrollments(tx)
}

/// Enrollments made before their per-sequence index existed are indexed once, on the first
/// open that finds the index empty while enrollments exist (no version bump: an older build
/// simply does not read the index).
fn index_enrollments(tx: &WriteTransaction) -> Result<()> {
    let mut index = tx.open_table(ENROLLMENTS_BY_SEQUENCE)?;
    if !index.is_empty()? {
        return Ok(());
    }
    for entry in tx.open_table(ENROLLMENTS)?.iter()? {
        let (key, value) = entry?;
        let e: super::Enrollment = super::decode(value.value())?;
        index.insert((e.sequence_id.as_str(), key.value()), ())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_from_a_newer_release_is_refused() {
        let dir = std::env::temp_dir().join(format!("edgemail-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join("t.redb");
        let db = Database::create(&path).expect("create"); // ok: test
        upgrade(&db).expect("first open stamps the file"); // ok: test
        let tx = db.begin_write().expect("write"); // ok: test
        tx.open_table(META).expect("meta").insert("schema_version", SCHEMA_VERSION + 1).expect("x"); // ok: test
        tx.commit().expect("commit"); // ok: test
        assert!(matches!(upgrade(&db), Err(Error::Unavailable(_))));
        drop(db);
        std::fs::remove_dir_all(&dir).ok();
    }
}
