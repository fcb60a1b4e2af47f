//! Two nodes on one PostgreSQL store telling each other what they wrote (LISTEN/NOTIFY): a key
//! revoked on one is refused on the other at once, the spool of a node that stops is delivered by
//! the other within its next look, a domain and its DKIM keys changed on one are used by the other,
//! and with the listening connection cut the polls still hold a revocation within 2 s. "At once"
//! is told apart from the fallback polls (a second for scanners, 1.6 s for keys) by repeating:
//! several latencies all well under a poll would be luck without notifications.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::Client;
use crate::cluster::{LEASE, on_node, two_nodes, wait_until};
use crate::harness::{Server, TempDir, share_store, store_url};
use crate::mail_world::{MailWorld, basic, verify_dkim};
use crate::pg_cluster::Cluster;

/// What a change must take at most to count as told: a poll would take up to 1 s (scanners) or
/// 1.6 s (keys), so several in a row under this are not luck.
const TOLD: Duration = Duration::from_millis(400);
const LISTENER: &str = "edgemail-listen";

/// The name of the database the world's nodes share.
fn database(w: &MailWorld) -> String {
    let url = store_url(&w.dir.0).expect("a PostgreSQL store"); // ok: test
    url.rsplit('/').next().expect("database name").to_owned() // ok: test
}

/// How many listening connections the nodes hold on `db`.
fn listeners(db: &str) -> usize {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{LISTENER}' \
         AND datname = '{db}'"
    );
    Cluster::shared().sql("postgres", &sql).trim().parse().expect("a count") // ok: test
}

fn wait_listening(db: &str, nodes: usize) {
    wait_until("the nodes to listen", Duration::from_secs(10), || {
        (listeners(db) == nodes).then_some(())
    });
}

/// Time until `probe` holds, polled every 5 ms, failing after `within`.
fn latency(what: &str, within: Duration, mut probe: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    wait_until(what, within, || {
        if probe() {
            return Some(());
        }
        std::thread::sleep(Duration::from_millis(5));
        None
    });
    start.elapsed()
}

/// A key made on node a for `domain`: its secret.
fn new_key(w: &MailWorld, name: &str, domain: &str) -> String {
    let out = on_node(w, &["key", "create", "--name", name, "--domain", domain]);
    out.lines().rev().find(|l| !l.trim().is_empty()).expect("the secret").trim().to_owned() // ok: test
}

fn key_id(w: &MailWorld, name: &str) -> String {
    let keys = on_node(w, &["key", "list"]);
    let line = keys.lines().find(|l| l.contains(name) && l.contains("active"));
    line.and_then(|l| l.split('\t').next()).expect("the key").to_owned() // ok: test
}

#[test]
fn keys_made_and_revoked_on_one_node_are_seen_by_the_other_at_once() {
    let (w, b, _dir_b) = two_nodes();
    wait_listening(&database(&w), 2);
    let mut took = Vec::new();
    for round in 0..3 {
        let name = format!("told{round}");
        let secret = new_key(&w, &name, "alpha.test");
        let on_b = b.client(Some(&secret));
        took.push(latency("the new key on b", TOLD, || on_b.get("/v1/mailboxes").status == 200));
        on_node(&w, &["key", "revoke", &key_id(&w, &name)]);
        took.push(latency("the revoked key refused on b", TOLD, || {
            on_b.get("/v1/mailboxes").status == 401
        }));
    }
    eprintln!("key changes seen on b after {took:?}");
    assert!(took.iter().all(|t| *t < Duration::from_secs(1)), "{took:?}");
}

/// A listener that takes SMTP connections and never answers: a node delivering there holds its
/// attempt (and its delivery slot) for as long as the test runs.
fn black_hole() -> (u16, Arc<AtomicUsize>) {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind"); // ok: test
    let port = socket.local_addr().expect("addr").port(); // ok: test
    let taken = Arc::new(AtomicUsize::new(0));
    let count = taken.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in socket.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (port, taken)
}

#[test]
fn mail_a_stopped_node_had_queued_is_delivered_by_the_other_at_once() {
    let url = Cluster::shared().database();
    let (dir_a, dir_b) = (TempDir::new("node-a"), TempDir::new("node-b"));
    share_store(&dir_a.0, &url);
    share_store(&dir_b.0, &url);
    let (hole, held) = black_hole();
    let hole = hole.to_string();
    let env_a = [
        LEASE,
        ("EDGEMAIL_CLUSTER_NODE", "a"),
        ("EDGEMAIL_DELIVERY_PORT", hole.as_str()),
        ("EDGEMAIL_DELIVERY_CONCURRENCY", "1"),
        ("EDGEMAIL_HTTP_SHUTDOWN_GRACE", "1s"),
    ];
    let mut w = MailWorld::start_in(dir_a, &env_a, &[]);
    let sink = w.sink.port().to_string();
    let env_b = [("EDGEMAIL_DELIVERY_PORT", sink.as_str()), ("EDGEMAIL_DELIVERY_CONCURRENCY", "8")];
    let _b = w.start_node_with(&dir_b, &["--node", "b"], &env_b);
    wait_listening(&database(&w), 2);
    // Each node delivers what it accepted (its spool): a's mail waits behind its one delivery
    // slot, which hangs at the black hole.
    for i in 0..5 {
        w.send(basic(json!(format!("r{i}@example.org")))).expect(200);
    }
    wait_until("a's slot to hang", Duration::from_secs(10), || {
        (held.load(Ordering::SeqCst) > 0).then_some(())
    });
    assert!(w.sink.messages().is_empty(), "b left a's spool alone while a lived");
    // Stopped, a hands its claims back; b takes them at its next look (a second at most).
    assert!(w.server.terminate().success());
    let took = latency("b to deliver what a had queued", Duration::from_secs(10), || {
        w.sink.messages().len() >= 5
    });
    eprintln!("a's spool delivered by b {took:?} after a stopped");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// Adds `beta.test` on node a, publishes its DKIM keys, and makes a key for it: its secret.
fn host_beta(w: &MailWorld, round: usize) -> String {
    let printed = on_node(w, &["domain", "add", "beta.test"]);
    for (name, value) in crate::security::dkim_records(&printed) {
        w.dns.remove(&name);
        w.dns.add_txt(&name, &value);
    }
    new_key(w, &format!("beta{round}"), "beta.test")
}

/// Sends from `news@beta.test` through `node`, as soon as it takes the key and the mailbox.
fn send_from_beta(w: &MailWorld, node: &Client, to: &str) -> Duration {
    let took = latency("beta.test usable on b", TOLD, || {
        node.post("/v1/mailboxes", json!({"address": "news"})).status == 201
    });
    let body = json!({"from": "news@beta.test", "to": to, "subject": "Re-keyed", "text": "hi"});
    node.post("/v1/send", body).expect(200);
    let found = wait_until("the message at the sink", Duration::from_secs(10), || {
        w.sink.messages().into_iter().find(|m| m.rcpt_to.iter().any(|r| r == to))
    });
    let verdicts = verify_dkim(&w.dns, &found.data);
    assert!(!verdicts.is_empty(), "signed");
    assert!(verdicts.iter().all(|(_, result)| result == "Pass"), "{verdicts:?}");
    took
}

#[test]
fn a_domain_and_its_dkim_keys_changed_on_one_node_are_used_by_the_other_at_once() {
    let (w, b, _dir_b) = two_nodes();
    wait_listening(&database(&w), 2);
    let secret = host_beta(&w, 0);
    let first = send_from_beta(&w, &b.client(Some(&secret)), "one@example.org");
    // Removed and hosted again: new DKIM keys under the same selectors. A node that signed with
    // the keys it had parsed before would fail verification against the published ones.
    on_node(&w, &["domain", "remove", "beta.test"]);
    let gone = b.client(Some(&secret));
    let refused = latency("the removed domain's key refused on b", TOLD, || {
        gone.get("/v1/mailboxes").status == 401
    });
    let secret = host_beta(&w, 1);
    let again = send_from_beta(&w, &b.client(Some(&secret)), "two@example.org");
    eprintln!("beta.test on b after {first:?}, refused after {refused:?}, again after {again:?}");
}

/// `edgemail_store_listener_reconnects_total` as `node` exposes it.
fn reconnects(node: &Server) -> f64 {
    let text = node.client(None).get("/metrics").text();
    let line = text.lines().find(|l| l.starts_with("edgemail_store_listener_reconnects_total "));
    line.and_then(|l| l.split(' ').nth(1)).and_then(|v| v.parse().ok()).unwrap_or(-1.0)
}

#[test]
fn with_the_listening_connection_cut_a_revocation_still_holds_within_two_seconds() {
    let (w, b, _dir_b) = two_nodes();
    let db = database(&w);
    wait_listening(&db, 2);
    let secret = new_key(&w, "cut", "alpha.test");
    let on_b = b.client(Some(&secret));
    latency("the new key on b", Duration::from_secs(2), || on_b.get("/v1/mailboxes").status == 200);
    // The listeners are cut and cannot come back (the pools keep the connections they hold).
    let sql = Cluster::shared();
    sql.sql("postgres", &format!("ALTER DATABASE {db} ALLOW_CONNECTIONS false"));
    let cut = format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE application_name = '{LISTENER}' AND datname = '{db}'"
    );
    assert_eq!(sql.sql("postgres", &cut).trim(), "2");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(listeners(&db), 0);
    on_node(&w, &["key", "revoke", &key_id(&w, "cut")]);
    let took = latency("the revoked key refused on b", Duration::from_secs(2), || {
        on_b.get("/v1/mailboxes").status == 401
    });
    sql.sql("postgres", &format!("ALTER DATABASE {db} ALLOW_CONNECTIONS true"));
    wait_listening(&db, 2);
    eprintln!("revocation held on b after {took:?} without notifications");
    wait_until("b to count its reconnection", Duration::from_secs(5), || {
        (reconnects(&b) >= 1.0).then_some(())
    });
    assert!(b.log().contains("store notifications: not listening"), "{}", b.log());
}
