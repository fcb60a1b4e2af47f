//! What the PostgreSQL backend promises beyond the conformance suite: a range read again in one
//! transaction (kept, `Txn::remember`) still shows every write the transaction made since; a
//! pooled connection the server closed meanwhile is not lent again; a value larger than the
//! socket's buffers goes out and comes back whole (the driver waits for the socket to take more);
//! a host that refuses is passed over for the next, with libpq's socket parameters applied; a
//! read the server holds back does not hold up the other tasks of the runtime thread it runs on.

use super::super::conformance::pg_cluster::Cluster;
use super::super::{Backend, ReadableTable, TableDefinition, WriteTxn};
use super::{Postgres, TRIAL};

const U: TableDefinition<&str, u64> = TableDefinition::new("u");
const BLOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("blobs");

fn connect(url: &str, connections: usize) -> Postgres {
    Postgres::connect(url, connections, &[], TRIAL).expect("connect") // ok: test
}

fn keys(tx: &dyn WriteTxn) -> Vec<String> {
    let u = tx.open_table(U).expect("table"); // ok: test
    let range = u.range::<&str>(..).expect("range"); // ok: test
    range.map(|e| e.expect("entry").0.value().to_owned()).collect() // ok: test
}

#[test]
fn a_range_read_again_in_a_transaction_sees_every_write_since() {
    let db = connect(&Cluster::shared().database(), 2);
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

fn insert(tx: &dyn WriteTxn, key: &str) {
    tx.open_table(U).and_then(|mut u| u.insert(key, 1)).expect("insert"); // ok: test
}

/// Nobody drives a connection while it waits in the pool: the server's close must still be seen
/// before it is lent, or the next transaction fails.
#[test]
fn a_connection_the_server_closed_while_pooled_is_not_lent_again() {
    let db = connect(&Cluster::shared().database(), 3);
    // Two connections go back to the pool: two write transactions at once.
    let (one, two) = (db.write().expect("begin"), db.write().expect("begin")); // ok: test
    insert(&*one, "x");
    insert(&*two, "y");
    one.commit().expect("commit"); // ok: test
    two.commit().expect("commit"); // ok: test
    // The most recently returned one ends every other session of the database.
    let admin = db.client().expect("a connection"); // ok: test
    let terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
        WHERE datname = current_database() AND pid <> pg_backend_pid()";
    admin.wait(admin.batch_execute(terminate)).expect("terminate"); // ok: test
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The pool's other connection is gone now; the next transaction gets a new one.
    let tx = db.write().expect("begin"); // ok: test
    insert(&*tx, "z");
    tx.commit().expect("a commit after the server closed the pooled connection"); // ok: test
    let tx = db.write().expect("begin"); // ok: test
    assert_eq!(keys(&*tx), ["x", "y", "z"]);
}

/// 24 MB in one statement and back: more than the loopback socket's buffers, so writing it meets
/// a full socket (the driver must wait until it is writable) and reading it takes many reads.
#[test]
fn a_value_larger_than_the_socket_buffers_is_written_and_read_whole() {
    let db = connect(&Cluster::shared().database(), 2);
    let value: Vec<u8> =
        (0..24u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let tx = db.write().expect("begin"); // ok: test
    (&*tx as &dyn WriteTxn)
        .open_table(BLOBS)
        .and_then(|mut b| b.insert("big", value.as_slice()))
        .expect("put"); // ok: test
    tx.commit().expect("commit"); // ok: test
    let read = db.read().expect("read"); // ok: test
    let blobs = read.open_table(BLOBS).expect("table"); // ok: test
    let got = blobs.get("big").expect("get").expect("present"); // ok: test
    assert!(got.value() == value.as_slice(), "the value came back changed");
}

/// Port 1 refuses at once. In the URL's order it always comes first, shuffled in half the
/// connections; either way the connection must go to the next host. The socket parameters must be
/// taken, not refused.
#[test]
fn a_host_that_refuses_is_passed_over_with_the_socket_parameters_applied() {
    let url = Cluster::shared().database().replacen("@127.0.0.1:", "@127.0.0.1:1,127.0.0.1:", 1);
    let socket = "keepalives_idle=30&keepalives_interval=5&keepalives_retries=3\
        &tcp_user_timeout=10000&connect_timeout=5";
    for order in ["load_balance_hosts=disable", "load_balance_hosts=random"] {
        for _ in 0..4 {
            let url = format!("{url}?{order}&{socket}");
            let db = Postgres::connect(&url, 2, &[], TRIAL).expect("connect past port 1"); // ok: test
            let tx = db.write().expect("begin"); // ok: test
            insert(&*tx, "k");
            tx.commit().expect("commit"); // ok: test
        }
    }
}

/// A read waits on the server on the runtime thread that asked for it. When the wait grows long
/// the thread's other tasks must move to another thread: with one worker and no hand-off, the
/// probe task below would not run while the read is held back.
#[test]
fn a_read_the_server_holds_back_does_not_stall_its_runtime_thread() {
    use std::time::Duration;
    let url = Cluster::shared().database();
    let db = std::sync::Arc::new(connect(&url, 3)); // ok: test
    // Two connections go back to the pool, so the read below opens none (opening one hands
    // off too, as any wait that may be long does).
    let (one, two) = (db.write().expect("begin"), db.write().expect("begin")); // ok: test
    insert(&*one, "a");
    one.commit().expect("commit"); // ok: test
    two.commit().expect("commit"); // ok: test
    let admin = db.client().expect("a connection"); // ok: test
    // Should the test fail, the server ends the lock's session after 10 s and nothing hangs.
    let lock = "SET idle_in_transaction_session_timeout = '10s'; \
        BEGIN; LOCK TABLE edgemail_kv IN ACCESS EXCLUSIVE MODE";
    admin.wait(admin.batch_execute(lock)).expect("lock"); // ok: test
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime"); // ok: test
    let reader = db.clone();
    let read = runtime.spawn(async move {
        let read = reader.read().expect("read"); // ok: test
        let u = read.open_table(U).expect("table"); // ok: test
        u.get("a").expect("get").map(|v| v.value()) // ok: test
    });
    // The read is on the one worker by now, held back by the lock.
    std::thread::sleep(Duration::from_millis(200));
    let (sent, probe) = std::sync::mpsc::channel();
    runtime.spawn(async move { sent.send(7) });
    let answered = probe.recv_timeout(Duration::from_secs(5));
    assert_eq!(answered, Ok(7), "the probe ran while the read waited");
    assert!(!read.is_finished(), "the read waits for the lock");
    admin.wait(admin.batch_execute("ROLLBACK")).expect("unlock"); // ok: test
    let got = runtime.block_on(read).expect("read task"); // ok: test
    assert_eq!(got, Some(1));
}
