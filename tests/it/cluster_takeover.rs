//! The mail of a node that died is taken over by the live nodes together: each claims a batch
//! of the entries nobody holds under `FOR UPDATE SKIP LOCKED`, so two survivors looking at the
//! same entries split them (or one takes them) instead of both claiming one. Every message is
//! claimed once and delivered once.

use std::time::Duration;

use serde_json::json;

use crate::cluster::{LEASE, each_recipient_once, wait_until};
use crate::harness::{Server, TempDir, share_store};
use crate::mail_world::{MailWorld, basic};
use crate::pg_cluster::Cluster;

const MESSAGES: usize = 40;

/// A node's `edgemail_queue_claims_total`.
fn claims(node: &Server) -> u64 {
    let text = node.client(None).get("/metrics").expect(200).text();
    let line = text.lines().find_map(|l| l.strip_prefix("edgemail_queue_claims_total "));
    line.and_then(|n| n.trim().parse().ok()).expect("the claims counter") // ok: test
}

#[test]
fn the_mail_of_a_killed_node_is_claimed_once_by_the_survivors_and_delivered_once() {
    let url = Cluster::shared().database();
    let dirs = [TempDir::new("node-a"), TempDir::new("node-b"), TempDir::new("node-c")];
    for dir in &dirs {
        share_store(&dir.0, &url);
    }
    let [dir_a, dir_b, dir_c] = dirs;
    let mut w = MailWorld::start_in(dir_a, &[LEASE, ("EDGEMAIL_CLUSTER_NODE", "a")], &[]);
    let b = w.start_node(&dir_b, &["--node", "b"]);
    let c = w.start_node(&dir_c, &["--node", "c"]);
    // a accepts (and so claims) every message; its attempts hang at the receiver.
    w.sink.stall(true);
    for i in 0..MESSAGES {
        w.send(basic(json!(format!("t{i}@example.org")))).expect(200);
    }
    wait_until("a's attempts to start", Duration::from_secs(10), || {
        (w.sink.connections() > 0).then_some(())
    });
    w.server.kill9();
    w.sink.stall(false);
    w.sink.wait_for(MESSAGES, Duration::from_secs(60));
    // Anything delivered twice would arrive in the moments after the last first delivery.
    std::thread::sleep(Duration::from_secs(2));
    each_recipient_once(&w.sink, MESSAGES);
    // Each message changed hands once: b's claims and c's add up to the messages.
    let (on_b, on_c) = (claims(&b), claims(&c));
    assert_eq!(on_b + on_c, MESSAGES as u64, "claimed by b {on_b}, by c {on_c}");
    let batched = |node: &Server| node.log().contains("claimed in a batch");
    assert!(batched(&b) || batched(&c), "b: {}\nc: {}", b.log(), c.log());
}
