//! The typed redb tables of the layouts before version 4, and their move into byte tables. Each
//! old table is read with its old types and written through the codec under the same name, so
//! a file written by an older release reads back identically; the old tables are then dropped.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};

use super::super::error::Result;
use super::super::kv::{Embedded, Redb, WriteTxn};
use super::super::tables::*;

/// The name of the old layout's version stamp, and the last version written with typed tables.
const META_NAME: &str = "meta";
pub const LAST_TYPED_VERSION: u64 = 3;

fn typed_meta() -> TableDefinition<'static, &'static str, u64> {
    TableDefinition::new(META_NAME)
}

/// Whether the file holds the typed tables of an older layout: its typed stamp is one of theirs.
/// (Files of the byte layout keep a typed stamp too, of their own version, so that the older
/// releases, which read only that one, refuse them rather than take them for empty.)
pub fn is_typed(tx: &Embedded) -> Result<bool> {
    let tables = tx.redb().list_tables()?;
    if !tables.into_iter().any(|t| t.name() == META_NAME) {
        return Ok(false);
    }
    let version = tx.redb().open_table(typed_meta())?.get("schema_version")?.map(|v| v.value());
    Ok(version.is_none_or(|v| v <= LAST_TYPED_VERSION))
}

/// Stamps `version` where older releases look for it.
pub fn stamp(tx: &Embedded, version: u64) -> Result<()> {
    tx.redb().open_table(typed_meta())?.insert("schema_version", version)?;
    Ok(())
}

/// The version stamp of a file in the typed layout, read without changing the file.
pub fn typed_version(db: &Redb) -> Result<Option<u64>> {
    let tx = db.database().begin_read()?;
    match tx.open_table(typed_meta()) {
        Ok(table) => Ok(table.get("schema_version")?.map(|v| v.value())),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Moves every typed table (its stamp too) into its byte table.
pub fn move_to_byte_tables(tx: &Embedded) -> Result<()> {
    let kv: &dyn WriteTxn = tx;
    macro_rules! move_tables {
        ($($def:ident: $k:ty => $v:ty,)*) => {$(
            let old: TableDefinition<$k, $v> = TableDefinition::new($def.name());
            {
                let from = tx.redb().open_table(old)?;
                let mut to = kv.open_table($def)?;
                for entry in from.iter()? {
                    let (key, value) = entry?;
                    to.insert(key.value(), value.value())?;
                }
            }
            tx.redb().delete_table(old)?;
        )*};
    }
    move_tables! {
        META: &str => u64,
        DOMAINS: &str => &[u8],
        KEYS: &str => &[u8],
        KEY_HASHES: &[u8] => &str,
        MAILBOXES: (&str, &str) => &[u8],
        GROUPS: (&str, &str) => &[u8],
        CONTACTS: (&str, &str) => &[u8],
        CONTACT_EMAILS: (&str, &str) => &str,
        EMAILS: &str => &[u8],
        EMAIL_INDEX: (&str, u8, u64, &str) => &[u8],
        SUPPRESSIONS: (&str, &str) => &[u8],
        SUPPRESSIONS_BY_TIME: (&str, u64, &str) => (),
        TRACKING: &str => &[u8],
        BATCHES: &str => &[u8],
        SECRETS: &str => &[u8],
        MESSAGE_IDS: &str => &str,
        RAW: &str => &[u8],
        RAW_BLOBS: (&str, u32) => &[u8],
        RAW_REFS: (&str, &str) => (),
        RAW_OF: &str => &[u8],
        BATCHES_BY_DOMAIN: (&str, &str) => (),
        SEQUENCES: &str => &[u8],
        SEQUENCES_BY_DOMAIN: (&str, &str) => (),
        ENROLLMENTS: &str => &[u8],
        ENROLLMENTS_ACTIVE: (&str, &str) => &str,
        ENROLLMENTS_BY_SEQUENCE: (&str, &str) => (),
        ENROLLMENTS_DUE: (u64, &str) => (),
        DAILY_STATS: (&str, u32) => &[u8],
        WARMUP: (&str, &str) => &[u8],
        WEBHOOKS: &str => &[u8],
        WEBHOOKS_BY_DOMAIN: (&str, &str) => (),
        WEBHOOK_EVENTS: &str => &[u8],
        WEBHOOK_EVENT_REFS: (&str, &str) => (),
        WEBHOOK_DELIVERIES: &str => &[u8],
        WEBHOOK_DELIVERIES_BY_ENDPOINT: (&str, &str) => (),
        WEBHOOK_DUE: (u64, &str) => &str,
        APP_PASSWORDS: (&str, &str) => &[u8],
        SENT_PARTS: (&str, u32, u32) => &[u8],
        SENT_PARTS_OF: &str => &str,
        SENT_PARTS_REFS: (&str, &str) => (),
        IDEMPOTENCY: (&str, &str) => &[u8],
        IDEMPOTENCY_BY_TIME: (u64, &str, &str) => (),
        MAILBOX_DAY_SENDS: (&str, u32) => u32,
        MAILBOX_NEXT_SLOT: &str => u64,
        PACED: &str => u64,
        SEQUENCE_MAIL: (&str, &str) => &str,
        IMAP_FOLDERS: (&str, u8) => &[u8],
        IMAP_UIDS: (&str, u8, u32) => &str,
        IMAP_MESSAGES: &str => &[u8],
        IMAP_FLAG_LOG: (&str, u8, u64) => u32,
    }
    // The typed queue held no destination (its values were `()`); each entry gets "", as the
    // byte tables read such an entry (`tables::QUEUE`).
    let old: TableDefinition<(u64, &str), ()> = TableDefinition::new(QUEUE.name());
    {
        let from = tx.redb().open_table(old)?;
        let mut to = kv.open_table(QUEUE)?;
        for entry in from.iter()? {
            to.insert(entry?.0.value(), "")?;
        }
    }
    tx.redb().delete_table(old)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase, TableDefinition};

    use super::super::SCHEMA_VERSION;
    use crate::store::kv::Redb;
    use crate::store::{Folder, Mailbox, Store};

    fn must<T, E: std::fmt::Display>(r: std::result::Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes what the last typed release wrote: its tables, by its definitions.
    fn write_typed(path: &std::path::Path) {
        let db = must(Database::create(path));
        let tx = must(db.begin_write());
        let meta: TableDefinition<&str, u64> = TableDefinition::new("meta");
        must(must(tx.open_table(meta)).insert("schema_version", 3));
        let domains: TableDefinition<&str, &[u8]> = TableDefinition::new("domains");
        let domain = br#"{"name":"demo.test","createdAt":1,"dkim":[]}"#;
        must(must(tx.open_table(domains)).insert("demo.test", domain.as_slice()));
        let mailbox = Mailbox {
            address: "sales@demo.test".into(),
            local_part: "sales".into(),
            domain: "demo.test".into(),
            display_name: Some("Sales".into()),
            created_at: 2,
            daily_limit: Some(40),
            min_gap_ms: None,
            quota_bytes: None,
            spam_filter: None,
            forward_to: Vec::new(),
            keep_copy: true,
        };
        let mailboxes: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("mailboxes");
        let json = must(serde_json::to_vec(&mailbox));
        must(must(tx.open_table(mailboxes)).insert(("demo.test", "sales"), json.as_slice()));
        let index: TableDefinition<(&str, u8, u64, &str), &[u8]> =
            TableDefinition::new("email_index");
        let mut index = must(tx.open_table(index));
        let sent = Folder::Sent.code();
        for (mailbox, at, id) in [
            ("sales@demo.test", 5, "em_b"),
            ("sales@demo.test", 5, "em_a\0x"),
            ("sales@demo.test", 9, "em_c"),
            ("sales@demo.testx", 1, "em_d"),
        ] {
            let summary = format!(r#"{{"id":"{}","createdAt":{at}}}"#, id.replace('\0', ""));
            must(index.insert((mailbox, sent, at, id), summary.as_bytes()));
        }
        drop(index);
        let slots: TableDefinition<(&str, u32), u32> = TableDefinition::new("mailbox_day_sends");
        must(must(tx.open_table(slots)).insert(("sales@demo.test", 20_000), 3));
        let hashes: TableDefinition<&[u8], &str> = TableDefinition::new("api_key_hashes");
        must(must(tx.open_table(hashes)).insert([0u8, 1, 255].as_slice(), "key_1"));
        let secrets: TableDefinition<&str, &[u8]> = TableDefinition::new("secrets");
        must(must(tx.open_table(secrets)).insert("tracking", [7u8; 32].as_slice()));
        must(tx.commit());
    }

    #[test]
    fn a_file_of_the_typed_layout_reads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("edgemail-legacy-{}", crate::ids::new_id("t")));
        std::fs::create_dir_all(&dir).ok();
        write_typed(&dir.join(crate::store::DB_FILE));
        let store = must(Store::open(&dir));
        let (mailbox, page, secret) = must(store.read_blocking(|r| -> crate::store::Result<_> {
            let mailbox = r.mailbox("demo.test", "sales")?;
            let page = r.folder_page("sales@demo.test", Folder::Sent, 10, None, None)?.0;
            Ok((mailbox, page, r.secret("tracking")?))
        }));
        let mailbox = mailbox.unwrap_or_else(|| panic!("the mailbox moved"));
        assert_eq!(
            (mailbox.display_name.as_deref(), mailbox.daily_limit),
            (Some("Sales"), Some(40))
        );
        let page = String::from_utf8_lossy(&page).into_owned();
        let ids: Vec<&str> = page.match_indices("em_").map(|(at, _)| &page[at..at + 4]).collect();
        assert_eq!(
            ids,
            ["em_c", "em_b", "em_a"],
            "newest first, the other mailbox left out: {page}"
        );
        assert_eq!(secret, [7u8; 32], "the secret moved, not made anew");
        assert!(must(store.read_blocking(|r| r.domain("demo.test"))).is_some());
        store.close();
        drop(store);
        let db = must(Redb::open(&dir.join(crate::store::DB_FILE), 1 << 20));
        assert_eq!(must(super::super::stored_version(&db)), Some(SCHEMA_VERSION));
        let tx = must(db.database().begin_read());
        let names: Vec<String> =
            must(tx.list_tables()).map(|t| redb::TableHandle::name(&t).to_owned()).collect();
        let typed: Vec<&String> = names.iter().filter(|n| !n.starts_with("kv/")).collect();
        assert_eq!(
            typed,
            ["meta"],
            "the typed tables are gone but for the stamp older releases read"
        );
        assert_eq!(
            must(super::typed_version(&db)),
            Some(SCHEMA_VERSION),
            "so they refuse the file"
        );
        drop((tx, db));
        std::fs::remove_dir_all(&dir).ok();
    }
}
