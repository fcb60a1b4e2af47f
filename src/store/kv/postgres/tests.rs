//! What the PostgreSQL backend promises beyond the conformance suite: a range read again in one
//! transaction (kept, `Txn::remember`) still shows every write the transaction made since.

use super::super::conformance::pg_cluster::Cluster;
use super::super::{Backend, ReadableTable, TableDefinition, WriteTxn};
use super::Postgres;

const U: TableDefinition<&str, u64> = TableDefinition::new("u");

fn keys(tx: &dyn WriteTxn) -> Vec<String> {
    let u = tx.open_table(U).expect("table"); // ok: test
    let range = u.range::<&str>(..).expect("range"); // ok: test
    range.map(|e| e.expect("entry").0.value().to_owned()).collect() // ok: test
}

#[test]
fn a_range_read_again_in_a_transaction_sees_every_write_since() {
    let db = Postgres::connect(&Cluster::shared().database(), 2, &[]).expect("connect"); // ok: test
    let tx = db.write().expect("begin"); // ok: test
    for k in ["a", "b", "c"] {
        (&*tx as &dyn WriteTxn).open_table(U).and_then(|mut u| u.insert(k, 1)).expect("insert"); // ok: test
    }
    tx.commit().expect("commit"); // ok: test
    let tx = db.write().expect("begin"); // ok: test
    assert_eq!(keys(&*tx), ["a", "b", "c"]);
    assert_eq!(keys(&*tx), ["a", "b", "c"], "the same range read again");
    let w: &dyn WriteTxn = &*tx;
    w.open_table(U).and_then(|mut u| u.insert("d", 1)).expect("held put"); // ok: test
    assert_eq!(keys(&*tx), ["a", "b", "c", "d"], "a put since shows");
    w.open_table(U).and_then(|mut u| u.remove("a").map(drop)).expect("delete"); // ok: test
    assert_eq!(keys(&*tx), ["b", "c", "d"], "a delete since shows");
    tx.commit().expect("commit"); // ok: test
    let tx = db.write().expect("begin"); // ok: test
    assert_eq!(keys(&*tx), ["b", "c", "d"], "and each was committed");
}
