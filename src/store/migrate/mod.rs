//! The schema version stamp and the upgrade path. A file is stamped with the layout version that
//! last wrote it; opening an older file runs each upgrade step in order inside one transaction, and
//! a file from a newer release is refused rather than misread.

mod legacy;

use super::batches::Batch;
use super::error::{Error, Result};
use super::kv::{Backend, Db, ReadableTable, Redb, Transaction, WriteTxn};
use super::tables::*;

/// The layout this build writes.
pub const SCHEMA_VERSION: u64 = 6;

/// Upgrade steps: `STEPS[n]` turns version `n + 1` into `n + 2`.
const STEPS: &[fn(&dyn WriteTxn) -> Result<()>] =
    &[index_batches_by_domain, shared_raw, byte_tables, compact_emails, deflated_raw];

/// Version 6 deflates the raw message kept in a document when that saves space (`email_doc`).
/// Older documents read as they are; the stamp makes an older build refuse the file rather than
/// fail on documents it cannot read.
fn deflated_raw(_: &dyn WriteTxn) -> Result<()> {
    Ok(())
}

/// Version 5 writes email documents in a compact tagged form (`email_doc`), keeps received
/// copies without their bodies, and a message received as one copy without `RAW_OF` and
/// `RAW_REFS` entries. Documents of older versions read as they are, so nothing is rewritten
/// (rewriting every message would hold the file for as long at the first start); the stamp
/// makes an older build refuse the file rather than fail on documents it cannot read.
fn compact_emails(_: &dyn WriteTxn) -> Result<()> {
    Ok(())
}

/// Version 4 keeps every table as ordered bytes (see `kv`), so that another backend can hold
/// them. The typed tables of older files are moved when the file opens, before any step (the
/// steps read the byte tables); the stamp makes an older build refuse the file, whose tables it
/// would not find.
fn byte_tables(_: &dyn WriteTxn) -> Result<()> {
    Ok(())
}

/// Version 3 keeps a received message's raw bytes once for all its copies, and large copies
/// without their bodies. Nothing is rewritten (old copies read as before); the stamp exists so
/// that an older build refuses the file instead of showing such mail without its bodies.
fn shared_raw(_: &dyn WriteTxn) -> Result<()> {
    Ok(())
}

/// Version 2 lists campaign batches per domain; batches written before have no index entry.
fn index_batches_by_domain(tx: &dyn WriteTxn) -> Result<()> {
    let batches = tx.open_table(BATCHES)?;
    let mut index = tx.open_table(BATCHES_BY_DOMAIN)?;
    for entry in batches.iter()? {
        let (key, value) = entry?;
        let batch: Batch = super::decode(value.value())?;
        index.insert((batch.domain.as_str(), key.value()), ())?;
    }
    Ok(())
}

/// Brings the store's layout up to date: a redb file may still hold the typed tables of an
/// older release; a PostgreSQL database only ever held byte tables. Nodes sharing a database
/// may start together: the loser of that race finds the work done when it runs again.
pub(super) fn upgrade(db: &Db) -> Result<()> {
    let Some(redb) = db.redb() else {
        let mut tries = 0;
        loop {
            let tx = db.write()?;
            match upgrade_tables(&*tx).and_then(|()| tx.commit()) {
                Err(e) if e.is_contention() && tries < 10 => tries += 1,
                done => return done,
            }
        }
    };
    let file = redb.begin_write()?;
    if legacy::is_typed(&file)? {
        legacy::move_to_byte_tables(&file)?;
    }
    upgrade_tables(&file)?;
    legacy::stamp(&file, SCHEMA_VERSION)?;
    Box::new(file).commit()
}

fn upgrade_tables(tx: &dyn WriteTxn) -> Result<()> {
    index_enrollments(tx)?;
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
                step(tx)?;
            }
        }
    }
    tx.open_table(META)?.insert("schema_version", SCHEMA_VERSION)?;
    super::quota::count_once(tx)?;
    ensure_secret(tx, "tracking")
}

/// The version stamp of the file, in either layout; `None` when it has none (not a data file).
pub(super) fn stored_version(db: &Redb) -> Result<Option<u64>> {
    let tx = db.read()?;
    match tx.open_table(META)?.get("schema_version")? {
        Some(v) => Ok(Some(v.value())),
        None => legacy::typed_version(db),
    }
}

/// A random 32-byte secret under `name`, created once and kept for the life of the file.
fn ensure_secret(tx: &dyn WriteTxn, name: &str) -> Result<()> {
    let mut table = tx.open_table(SECRETS)?;
    if table.get(name)?.is_none() {
        let secret: [u8; 32] = rand::random();
        table.insert(name, secret.as_slice())?;
    }
    Ok(())
}

/// Enrollments made before their per-sequence index existed are indexed once, on the first
/// open that finds the index empty while enrollments exist (no version bump: an older build
/// simply does not read the index).
fn index_enrollments(tx: &dyn WriteTxn) -> Result<()> {
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
    use super::super::{Email, Folder, Store};
    use super::*;

    /// A version 4 file: its email documents plain JSON with their bodies, the raw message of a
    /// received copy in a blob linked by `RAW_OF`.
    #[test]
    fn a_version_4_file_is_stamped_5_and_its_mail_reads_as_before() {
        let dir = std::env::temp_dir().join(format!("edgemail-migrate5-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let raw = b"From: a@b.test\r\nTo: m@x.test\r\nSubject: Hi\r\n\r\nhello\r\n".to_vec();
        let mut email = Email::default();
        email.summary.id = "em_v4".into();
        email.summary.mailbox = "m@x.test".into();
        email.summary.subject = "Hi".into();
        super::super::emails::fill_bodies(&mut email, &raw);
        let json = |e: &Email| serde_json::to_string(e).unwrap_or_default();
        let expected = json(&email);
        let store = Store::open(&dir).expect("open"); // ok: test
        let (seed, bytes) = (email.clone(), raw.clone());
        store
            .write_blocking(move |w| -> Result<_> {
                w.insert_email(&seed)?;
                let doc = serde_json::to_vec(&seed)?;
                w.tx.open_table(EMAILS)?.insert("em_v4", doc.as_slice())?;
                w.put_raw("raw_v4", &bytes)?;
                w.share_raw("em_v4", "raw_v4", false)?;
                w.tx.open_table(META)?.insert("schema_version", 4)?;
                Ok(())
            })
            .expect("seed"); // ok: test
        store.close();
        drop(store);

        let store = Store::open(&dir).expect("reopen"); // ok: test
        let (version, read, bytes) = store
            .read_blocking(|r| -> Result<_> {
                let version = r.tx.open_table(META)?.get("schema_version")?.map(|v| v.value());
                Ok((version, r.email("x.test", "em_v4")?, r.raw_message("em_v4")?))
            })
            .expect("read"); // ok: test
        assert_eq!(version, Some(SCHEMA_VERSION));
        assert_eq!(read.map(|e| json(&e)), Some(expected));
        assert_eq!(bytes, Some(raw));
        store.write_blocking(|w| w.delete_email("x.test", "em_v4").map(|_| ())).expect("to trash"); // ok: test
        let moved = store.read_blocking(|r| r.email("x.test", "em_v4")).expect("read"); // ok: test
        assert_eq!(moved.map(|e| (e.summary.folder, e.text)), Some((Folder::Trash, email.text)));
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_from_a_newer_release_is_refused() {
        let dir = std::env::temp_dir().join(format!("edgemail-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let db = Db::Redb(Redb::open(&dir.join("t.redb"), 1 << 20).expect("create")); // ok: test
        upgrade(&db).expect("first open stamps the file"); // ok: test
        let tx = db.write().expect("write"); // ok: test
        let w: &dyn WriteTxn = &*tx;
        w.open_table(META).expect("meta").insert("schema_version", SCHEMA_VERSION + 1).expect("x"); // ok: test
        tx.commit().expect("commit"); // ok: test
        assert!(matches!(upgrade(&db), Err(Error::Unavailable(_))));
        drop(db);
        std::fs::remove_dir_all(&dir).ok();
    }
}
