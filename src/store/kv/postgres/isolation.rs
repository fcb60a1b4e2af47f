//! The isolation argument of `Postgres::write_snapshot` (REPEATABLE READ, PostgreSQL's snapshot
//! isolation), held against a real server: two transactions that write one key never both
//! commit, whether both update it, one deletes what the other updated, or both insert it new;
//! the one that loses fails as contention (which the writer runs again) and writes nothing. What
//! snapshot isolation allows, and the store's callers accept where they use it, is write skew:
//! two transactions that each write a key the other only read both commit. `write`
//! (SERIALIZABLE) does not allow even that, and is what work that needs it uses. Last, what
//! `lock_unheld` (`FOR UPDATE SKIP LOCKED`) promises writers that lock the same keys together.

use super::super::conformance::pg_cluster::Cluster;
use super::super::{Backend, ReadableTable, TableDefinition, Transaction, WriteTxn};
use super::{Postgres, TRIAL};
use crate::store::error::Result;

const U: TableDefinition<&str, u64> = TableDefinition::new("u");

fn store() -> Postgres {
    Postgres::connect(&Cluster::shared().database(), 4, &[], TRIAL).expect("connect") // ok: test
}

fn get(tx: &dyn WriteTxn, key: &str) -> Option<u64> {
    let table = tx.open_table(U).expect("table"); // ok: test
    table.get(key).expect("get").map(|v| v.value()) // ok: test
}

fn put(tx: &dyn WriteTxn, key: &str, n: u64) {
    tx.open_table(U).and_then(|mut u| u.insert(key, n)).expect("put"); // ok: test
}

fn seeded(db: &Postgres, keys: &[(&str, u64)]) {
    let tx = db.write().expect("begin"); // ok: test
    for (k, n) in keys {
        put(&*tx, k, *n);
    }
    tx.commit().expect("seed"); // ok: test
}

/// Two snapshots; each has read (so its snapshot is taken) before either writes.
fn pair(db: &Postgres, key: &str) -> (Box<dyn Transaction>, Box<dyn Transaction>) {
    let (a, b) = (db.write_snapshot().expect("a"), db.write_snapshot().expect("b")); // ok: test
    get(&*a, key);
    get(&*b, key);
    (a, b)
}

fn lost(outcome: Result<()>) {
    assert!(outcome.as_ref().is_err_and(|e| e.is_contention()), "{outcome:?}");
}

fn committed(db: &Postgres, key: &str) -> Option<u64> {
    let tx = db.write().expect("begin"); // ok: test
    get(&*tx, key)
}

/// `n` seeded 1; a snapshot taken; then another transaction updates `n` to 2 and commits. The
/// snapshot is returned, to write `n` in turn.
fn updated_since(db: &Postgres) -> Box<dyn Transaction> {
    seeded(db, &[("n", 1)]);
    let (a, b) = pair(db, "n");
    put(&*a, "n", 2);
    a.commit().expect("the first commits"); // ok: test
    b
}

#[test]
fn snapshot_writers_that_both_update_a_key_never_both_commit() {
    let db = store();
    let b = updated_since(&db);
    put(&*b, "n", 20);
    lost(b.commit());
    assert_eq!(committed(&db, "n"), Some(2), "the loser wrote nothing");
}

#[test]
fn a_snapshot_that_deletes_a_key_updated_since_loses() {
    let db = store();
    let b = updated_since(&db);
    // The delete may lose where it reaches the server (its own statement) or at the commit.
    let removed = (&*b as &dyn WriteTxn).open_table(U).and_then(|mut u| u.remove("n").map(drop));
    lost(removed.and_then(|()| b.commit()));
    assert_eq!(committed(&db, "n"), Some(2), "the update stands");
}

#[test]
fn snapshot_writers_that_both_insert_a_new_key_never_both_commit() {
    let db = store();
    let (a, b) = pair(&db, "new");
    put(&*a, "new", 1);
    put(&*b, "new", 10);
    a.commit().expect("the first insert commits"); // ok: test
    lost(b.commit());
    assert_eq!(committed(&db, "new"), Some(1));
}

/// Each reads `x` and `y` and writes the other's key with what it read: one serial order would
/// leave one of them 2, snapshot isolation leaves both 1 (write skew).
fn skew(db: &Postgres, serializable: bool) -> (Result<()>, Result<()>) {
    seeded(db, &[("x", 0), ("y", 0)]);
    let begin = || if serializable { db.write() } else { db.write_snapshot() };
    let (a, b) = (begin().expect("a"), begin().expect("b")); // ok: test
    let (ax, ay) = (get(&*a, "x").unwrap_or(0), get(&*a, "y").unwrap_or(0));
    let (bx, by) = (get(&*b, "x").unwrap_or(0), get(&*b, "y").unwrap_or(0));
    put(&*a, "y", ax + ay + 1);
    put(&*b, "x", bx + by + 1);
    (a.commit(), b.commit())
}

#[test]
fn snapshots_may_skew_on_keys_they_only_read_and_serializable_writes_may_not() {
    let db = store();
    let (a, b) = skew(&db, false);
    assert!(a.is_ok() && b.is_ok(), "snapshot isolation lets both commit: {a:?} {b:?}");
    assert_eq!((committed(&db, "x"), committed(&db, "y")), (Some(1), Some(1)));
    let db = store();
    let (a, b) = skew(&db, true);
    assert!(a.is_ok(), "{a:?}");
    lost(b);
}

fn lock(tx: &dyn WriteTxn, keys: &[&str]) -> Vec<bool> {
    tx.open_table(U).and_then(|mut u| u.lock_unheld(keys)).expect("lock") // ok: test
}

/// The batch claim of due mail (`claim_free`): writers that lock the same entries with
/// `SKIP LOCKED` each get what the other does not hold, without waiting or failing, and a key
/// that is not there is not taken. Once the holder ends, the entries are free again.
#[test]
fn writers_locking_the_same_keys_skip_what_another_holds() {
    let db = store();
    seeded(&db, &[("a", 1), ("b", 1), ("c", 1)]);
    let (first, second) = (db.write_snapshot().expect("a"), db.write_snapshot().expect("b")); // ok: test
    assert_eq!(lock(&*first, &["a", "b", "none"]), [true, true, false]);
    assert_eq!(lock(&*second, &["a", "b", "c", "none"]), [false, false, true, false]);
    put(&*first, "a", 2);
    first.commit().expect("the first commits"); // ok: test
    second.commit().expect("the second commits too: they shared no key"); // ok: test
    let third = db.write_snapshot().expect("c"); // ok: test
    assert_eq!(lock(&*third, &["a", "b", "c"]), [true, true, true]);
    // A key this transaction put and has not sent yet is there to lock.
    put(&*third, "d", 1);
    assert_eq!(lock(&*third, &["d"]), [true]);
    third.commit().expect("commit"); // ok: test
    assert_eq!(committed(&db, "a"), Some(2));
}
