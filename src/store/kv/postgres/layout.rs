//! The relations the store's tables live in. `edgemail_kv` is partitioned by table name: the
//! tables of the hot paths, as the store names them (`Relation`: the queue and its claims,
//! idempotency keys, the webhook outbox, tracking hits, the per-node counters), each get a
//! relation of their own, and every other table lives in `edgemail_kv_rest`, the default
//! partition.
//!
//! Why partitions of one relation rather than relations beside it: every statement of this
//! backend still names `edgemail_kv`, so one upsert writes the rows of all the tables a
//! transaction touched, each routed to its relation, and the read-ahead joins across them, in
//! one exchange (separate relations would cost a statement per relation in each flush). What
//! the hot tables gain is what a relation of their own has: a heap and a primary key index of
//! their own (the queue's entries, inserted and deleted at every send, no longer churn the index
//! every other read walks), their own row locks (the queue is claimed with `SKIP LOCKED`, which
//! then walks only the queue's index), autovacuum and statistics sized to them.
//!
//! A database made by an earlier release holds one plain `edgemail_kv`; the first start of this
//! one turns it into the default partition and moves the hot tables' rows into theirs, in one
//! transaction. A relation named later is added the same way. The change takes the advisory lock
//! `LOCK`, so nodes starting together do it once, and PostgreSQL's own locks hold the nodes of an
//! older release that run meanwhile until it commits (their statements name `edgemail_kv`, which
//! is then the partitioned relation).

use super::super::super::error::{Error, Result};
use super::conn::Conn;

/// Tables that share a relation of their own.
#[derive(Debug, Clone, Copy)]
pub struct Relation {
    /// The relation's name, `edgemail_` and a word.
    pub name: &'static str,
    pub tables: &'static [&'static str],
}

/// The advisory lock the layout is changed under ("edgemail" in ASCII, as a number).
const LOCK: i64 = 0x6564_6765_6d61_696c;

/// The partitioned relation, and the default partition every table not named lives in.
const PARENT: &str = "CREATE TABLE edgemail_kv (
    tbl text NOT NULL,
    k bytea NOT NULL,
    v bytea NOT NULL,
    PRIMARY KEY (tbl, k)
) PARTITION BY LIST (tbl)";
const REST: &str = "edgemail_kv_rest";

/// What `edgemail_kv` is: `r` a plain relation (an earlier release's), `p` partitioned, or
/// nothing yet.
const KIND: &str =
    "SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass('edgemail_kv')";
const PARTITIONS: &str = "SELECT c.relname::text FROM pg_inherits i \
    JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('edgemail_kv')";

/// Makes `edgemail_kv` the partitioned relation with a partition for each of `relations`,
/// creating or converting what is there. Does nothing (one statement) when it already is.
pub(super) fn ensure(client: &Conn, relations: &[Relation]) -> Result<()> {
    let named = |n: &str| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if let Some(odd) = relations.iter().find(|r| !r.name.starts_with("edgemail_") || !named(r.name))
    {
        return Err(Error::internal(format!("relation name {:?}", odd.name)));
    }
    if missing(client, relations)?.is_none() {
        return Ok(());
    }
    client.wait(client.batch_execute("BEGIN"))?;
    let changed = change(client, relations);
    let end = if changed.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = client.wait(client.batch_execute(end));
    changed?;
    ended
}

/// The relations to add (with whether the parent is there and partitioned), or `None` when the
/// layout is complete.
fn missing(
    client: &Conn,
    relations: &[Relation],
) -> Result<Option<(Option<String>, Vec<Relation>)>> {
    let kind = client.wait(client.query(KIND, &[]))?;
    let kind: Option<String> = kind.first().map(|row| row.get(0));
    let have = client.wait(client.query(PARTITIONS, &[]))?;
    let have: Vec<String> = have.iter().map(|row| row.get(0)).collect();
    let absent: Vec<Relation> =
        relations.iter().filter(|r| !have.iter().any(|h| h == r.name)).copied().collect();
    let complete =
        kind.as_deref() == Some("p") && absent.is_empty() && have.iter().any(|h| h == REST);
    Ok((!complete).then_some((kind, absent)))
}

fn change(client: &Conn, relations: &[Relation]) -> Result<()> {
    client.wait(client.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK]))?;
    // Looked at again under the lock: another node may have done it meanwhile.
    let Some((kind, absent)) = missing(client, relations)? else { return Ok(()) };
    match kind.as_deref() {
        None => {
            // A new store: every partition made empty, nothing to move.
            let mut sql = format!("{PARENT};");
            for relation in &absent {
                let values = values(relation);
                let name = relation.name;
                sql.push_str(&format!(
                    "CREATE TABLE {name} PARTITION OF edgemail_kv FOR VALUES IN ({values});"
                ));
            }
            sql.push_str(&format!("CREATE TABLE {REST} PARTITION OF edgemail_kv DEFAULT"));
            return client.wait(client.batch_execute(&sql));
        }
        Some("r") => {
            // An earlier release's relation becomes the default partition, rows and all.
            let sql = format!(
                "ALTER TABLE edgemail_kv RENAME TO {REST};
                 ALTER INDEX edgemail_kv_pkey RENAME TO {REST}_pkey;
                 {PARENT};
                 ALTER TABLE edgemail_kv ATTACH PARTITION {REST} DEFAULT"
            );
            client.wait(client.batch_execute(&sql))?;
        }
        _ => {}
    }
    for relation in absent {
        add(client, &relation)?;
    }
    Ok(())
}

/// Adds `relation` as a partition, moving its tables' rows out of the default partition first
/// (PostgreSQL refuses a partition whose rows the default one still holds).
fn add(client: &Conn, relation: &Relation) -> Result<()> {
    let (name, values) = (relation.name, values(relation));
    let sql = format!(
        "CREATE TABLE {name} (
            tbl text NOT NULL,
            k bytea NOT NULL,
            v bytea NOT NULL,
            PRIMARY KEY (tbl, k)
        );
        WITH moved AS (DELETE FROM {REST} WHERE tbl IN ({values}) RETURNING tbl, k, v)
            INSERT INTO {name} SELECT tbl, k, v FROM moved;
        ALTER TABLE edgemail_kv ATTACH PARTITION {name} FOR VALUES IN ({values})"
    );
    client.wait(client.batch_execute(&sql))?;
    Ok(())
}

/// The names of `relation`'s tables as a list of SQL string literals (they are the store's own
/// constants; quoted anyway).
fn values(relation: &Relation) -> String {
    let quoted: Vec<String> =
        relation.tables.iter().map(|t| format!("'{}'", t.replace('\'', "''"))).collect();
    quoted.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::super::conformance::pg_cluster::Cluster;
    use super::super::super::{Backend, ReadableTable, TableDefinition, WriteTxn};
    use super::super::{Postgres, TRIAL};

    const U: TableDefinition<&str, u64> = TableDefinition::new("u");
    const T: TableDefinition<&str, u64> = TableDefinition::new("t");

    fn connect(url: &str, relations: &[super::Relation]) -> Postgres {
        Postgres::connect(url, 2, &[], relations).expect("connect") // ok: test
    }

    /// Which relation holds each row, `table:relation` in table order.
    fn placed(db: &str) -> String {
        let sql = "SELECT string_agg(tbl || ':' || tableoid::regclass, ' ' ORDER BY tbl) \
                   FROM edgemail_kv";
        Cluster::shared().sql(db, sql)
    }

    fn value(db: &Postgres, table: TableDefinition<&str, u64>) -> Option<u64> {
        let tx = db.write().expect("begin"); // ok: test
        let got = (&*tx as &dyn WriteTxn)
            .open_table(table)
            .and_then(|t| Ok(t.get("k")?.map(|v| v.value())));
        got.expect("read") // ok: test
    }

    /// A store made by an earlier release (one plain relation) and one made before a relation
    /// was named both end up with each table in its relation, every row kept and readable.
    #[test]
    fn an_older_layout_becomes_the_partitions_with_every_row() {
        let url = Cluster::shared().database();
        let db = url.rsplit('/').next().expect("database name").to_owned(); // ok: test
        let store = connect(&url, &[]);
        let tx = store.write().expect("begin"); // ok: test
        let w: &dyn WriteTxn = &*tx;
        w.open_table(U).and_then(|mut u| u.insert("k", 7)).expect("put"); // ok: test
        w.open_table(T).and_then(|mut t| t.insert("k", 8)).expect("put"); // ok: test
        tx.commit().expect("commit"); // ok: test
        drop(store);
        assert_eq!(placed(&db), "t:edgemail_kv_rest u:edgemail_kv_rest");
        // The relation `u` is named in now: its rows move there.
        let store = connect(&url, TRIAL);
        assert_eq!(placed(&db), "t:edgemail_kv_rest u:edgemail_trial");
        assert_eq!((value(&store, U), value(&store, T)), (Some(7), Some(8)));
        drop(store);
        // The one plain relation of an earlier release, with the same rows.
        let flat = "CREATE TABLE flat AS SELECT * FROM edgemail_kv; DROP TABLE edgemail_kv; \
            CREATE TABLE edgemail_kv (tbl text NOT NULL, k bytea NOT NULL, v bytea NOT NULL, \
            PRIMARY KEY (tbl, k)); INSERT INTO edgemail_kv SELECT * FROM flat; DROP TABLE flat; \
            SELECT relkind FROM pg_class WHERE relname = 'edgemail_kv'";
        let out = Cluster::shared().sql(&db, flat);
        assert!(out.ends_with("\nr"), "{out}");
        // Nodes starting together: one changes the layout, the other finds it done.
        let both = std::thread::scope(|s| {
            let a = s.spawn(|| connect(&url, TRIAL));
            let b = s.spawn(|| connect(&url, TRIAL));
            [a.join().expect("first node"), b.join().expect("second node")] // ok: test
        });
        assert_eq!(placed(&db), "t:edgemail_kv_rest u:edgemail_trial");
        for store in &both {
            assert_eq!((value(store, U), value(store, T)), (Some(7), Some(8)));
        }
        let kind = "SELECT relkind FROM pg_class WHERE relname = 'edgemail_kv'";
        assert_eq!(Cluster::shared().sql(&db, kind), "p");
    }
}
