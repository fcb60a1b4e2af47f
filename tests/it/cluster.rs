//! Several nodes on one PostgreSQL store (a throwaway cluster, see `tests/support`): what one
//! node writes the other serves, each accepted message is delivered once by one node, the work
//! of a node that died is taken over after its lease, a sequence step is queued once, and a key
//! revoked on one node stops working on the other within 2 s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Server, TempDir, share_store};
use crate::mail_world::{MailWorld, basic};
use crate::pg_cluster::Cluster;
use crate::smtp_sink::Sink;

pub const LEASE: (&str, &str) = ("EDGEMAIL_CLUSTER_LEASE", "3s");

/// Node `a` (the world's server) and node `b`, on one fresh database.
pub fn two_nodes() -> (MailWorld, Server, TempDir) {
    let url = Cluster::shared().database();
    let (dir_a, dir_b) = (TempDir::new("node-a"), TempDir::new("node-b"));
    share_store(&dir_a.0, &url);
    share_store(&dir_b.0, &url);
    let w = MailWorld::start_in(dir_a, &[LEASE, ("EDGEMAIL_CLUSTER_NODE", "a")], &[]);
    let b = w.start_node(&dir_b, &["--node", "b"]);
    (w, b, dir_b)
}

/// The sink received `n` recipients, each exactly once.
pub fn each_recipient_once(sink: &Sink, n: usize) {
    let mut per_recipient: HashMap<String, usize> = HashMap::new();
    for message in sink.messages() {
        for rcpt in message.rcpt_to {
            *per_recipient.entry(rcpt).or_default() += 1;
        }
    }
    assert_eq!(per_recipient.len(), n);
    let twice: Vec<_> = per_recipient.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
}

pub fn wait_until<T>(what: &str, within: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_nodes_share_mailboxes_keys_sends_and_inbound_mail() {
    let (w, b, _dir_b) = two_nodes();
    let on_b = b.client(Some(&w.key));
    w.api().post("/v1/mailboxes", json!({"address": "support"})).expect(201);
    let listed = on_b.get("/v1/mailboxes").expect(200).json();
    let addresses: Vec<&str> =
        listed.as_array().expect("list").iter().filter_map(|m| m["address"].as_str()).collect();
    assert!(addresses.contains(&"support@alpha.test"), "{listed}");
    // Sent on b, seen on a.
    let sent = on_b.post("/v1/send", basic(json!("ada@example.org"))).expect(200).json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.wait_status(&id, "delivered");
    assert_eq!(email["deliveries"][0]["attempts"], 1, "{email}");
    // Received by a's MX, read through b.
    let reply = crate::smtp_client::send_one(
        w.server.smtp,
        "jane@example.org",
        "support@alpha.test",
        "Subject: across nodes\r\nFrom: jane@example.org\r\n\r\nhello b",
    );
    assert!(reply.starts_with("250"), "{reply}");
    let inbox = wait_until("inbound mail on b", Duration::from_secs(10), || {
        let page =
            on_b.get("/v1/emails?folder=inbox&mailbox=support@alpha.test").expect(200).json();
        let found = page.as_array().is_some_and(|a| !a.is_empty());
        found.then_some(page)
    });
    assert_eq!(inbox[0]["subject"], "across nodes", "{inbox}");
}

#[test]
fn three_hundred_sends_over_two_nodes_are_each_delivered_exactly_once() {
    let (w, b, _dir_b) = two_nodes();
    let nodes = [w.api(), b.client(Some(&w.key))];
    for i in 0..300 {
        let body = json!({"from": "sales@alpha.test", "to": format!("u{i}@example.org"),
            "subject": format!("n{i}"), "text": "once"});
        nodes[i % 2].post("/v1/send", body).expect(200);
    }
    w.sink.wait_for(300, Duration::from_secs(90));
    // Anything delivered twice would arrive in the moments after the last first delivery.
    std::thread::sleep(Duration::from_secs(2));
    each_recipient_once(&w.sink, 300);
    let (log_a, log_b) = (w.server.log(), b.log());
    let delivered = |log: &str| {
        log.matches("\"result\":\"delivered\"").count()
            + log.matches("result=\"delivered\"").count()
            + log.matches("result=delivered").count()
    };
    assert!(delivered(&log_a) > 0 && delivered(&log_b) > 0, "both nodes delivered");
}

#[test]
fn scheduled_work_of_a_killed_node_is_delivered_by_the_other_after_its_lease() {
    let url = Cluster::shared().database();
    let (dir_a, dir_b) = (TempDir::new("node-a"), TempDir::new("node-b"));
    share_store(&dir_a.0, &url);
    share_store(&dir_b.0, &url);
    let mut w = MailWorld::start_in(dir_a, &[LEASE, ("EDGEMAIL_CLUSTER_NODE", "a")], &[]);
    // a takes the scheduled message when it is due, and its delivery hangs at the receiver.
    w.sink.stall(true);
    let at = edgemail::ids::now_ms() + 1000;
    let mut body = basic(json!("ada@example.org"));
    body["scheduledAt"] = json!(at);
    let sent = w.send(body).expect(200).json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    wait_until("a's attempt to start", Duration::from_secs(10), || {
        (w.sink.connections() > 0).then_some(())
    });
    let b = w.start_node(&dir_b, &["--node", "b"]);
    w.server.kill9();
    w.sink.stall(false);
    let on_b = b.client(Some(&w.key));
    let email = wait_until("b to deliver", Duration::from_secs(30), || {
        let email = on_b.get(&format!("/v1/emails/{id}")).expect(200).json();
        (email["status"] == "delivered").then_some(email)
    });
    assert_eq!(w.sink.messages().len(), 1, "{email}");
    assert!(b.log().contains(&id), "b made the delivery: {}", b.log());
}

#[test]
fn a_sequence_step_is_queued_once_with_two_nodes() {
    let (w, b, _dir_b) = two_nodes();
    let steps = json!([{"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"}]);
    let body = json!({"name": "Once", "from": "sales@alpha.test", "steps": steps});
    let created = b.client(Some(&w.key)).post("/v1/sequences", body).expect(201).json();
    let id = created["id"].as_str().expect("id");
    let contacts: Vec<Value> =
        (0..20).map(|i| json!({"email": format!("c{i}@example.org")})).collect();
    let enrolled = w
        .api()
        .post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": contacts}))
        .expect(200);
    assert_eq!(enrolled.json()["enrolled"], 20);
    w.sink.wait_for(20, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    let mut rcpts: Vec<String> = w.sink.messages().into_iter().flat_map(|m| m.rcpt_to).collect();
    rcpts.sort();
    rcpts.dedup();
    assert_eq!(w.sink.messages().len(), 20, "one message per enrollment");
    assert_eq!(rcpts.len(), 20);
}

#[test]
fn a_key_revoked_on_one_node_stops_working_on_the_other_within_two_seconds() {
    let (w, b, _dir_b) = two_nodes();
    let on_b = b.client(Some(&w.key));
    on_b.get("/v1/mailboxes").expect(200);
    let keys = on_node(&w, &["key", "list"]);
    let id = keys.lines().find(|l| l.contains("active")).and_then(|l| l.split('\t').next());
    let id = id.expect("a key").to_owned();
    on_node(&w, &["key", "revoke", &id]);
    let revoked = Instant::now();
    wait_until("the revoked key refused on b", Duration::from_secs(2), || {
        (on_b.get("/v1/mailboxes").status == 401).then_some(())
    });
    assert!(revoked.elapsed() <= Duration::from_secs(2));
}

/// Runs a CLI command against node a (through its admin socket); returns its output.
pub fn on_node(w: &MailWorld, args: &[&str]) -> String {
    let data = w.dir.0.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--data", &data]);
    let (ok, out, err) = crate::harness::cli(&all);
    assert!(ok, "edgemail {args:?}: {err}");
    out
}
