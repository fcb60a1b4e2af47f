//! A node on PostgreSQL whose store refuses to record deliveries: the receivers have the mail,
//! the commit that says so fails (injected by a trigger that raises PostgreSQL's serialization
//! failure on every removal of a queue entry, for longer than the writer retries), and no
//! message may be delivered a second time while the node holds the outcomes and tries again.

use std::time::Duration;

use serde_json::json;

use crate::cluster::{each_recipient_once, wait_until};
use crate::harness::{TempDir, share_store};
use crate::mail_world::{MailWorld, basic};
use crate::pg_cluster::Cluster;

/// Refuses, while `edgemail_inject.fail` is set, every statement that removes a queue entry:
/// the commit that records a delivery attempt removes its message's entry.
const INJECT: &str = "
CREATE TABLE edgemail_inject (fail boolean NOT NULL);
INSERT INTO edgemail_inject VALUES (false);
CREATE FUNCTION edgemail_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.tbl = 'queue' AND (SELECT fail FROM edgemail_inject) THEN
    RAISE EXCEPTION 'injected: commit refused after delivery' USING ERRCODE = '40001';
  END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER edgemail_refuse BEFORE DELETE ON edgemail_kv
  FOR EACH ROW EXECUTE FUNCTION edgemail_refuse();
";

const MESSAGES: usize = 30;

#[test]
fn deliveries_whose_outcome_cannot_be_committed_are_not_made_twice() {
    let cluster = Cluster::shared();
    let url = cluster.database();
    let db = url.rsplit('/').next().expect("a database name").to_owned(); // ok: test
    let dir = TempDir::new("node-faults");
    share_store(&dir.0, &url);
    let w = MailWorld::start_in(dir, &[("EDGEMAIL_CLUSTER_NODE", "a")], &[]);
    cluster.sql(&db, INJECT);
    // Scheduled, so every send is accepted before the store starts refusing.
    let at = edgemail::ids::now_ms() + 1500;
    let mut ids = Vec::new();
    for i in 0..MESSAGES {
        let mut body = basic(json!(format!("r{i}@example.org")));
        body["scheduledAt"] = json!(at);
        let sent = w.send(body).expect(200).json();
        ids.push(sent["messageId"].as_str().expect("id").to_owned());
    }
    cluster.sql(&db, "UPDATE edgemail_inject SET fail = true");
    w.sink.wait_for(MESSAGES, Duration::from_secs(30));
    // Longer than the writer's retries plus the pause after which an attempt that gave up is
    // started again (5 s): before the fix, every message arrived a second time in here.
    std::thread::sleep(Duration::from_secs(8));
    let refused = w.server.log().matches("delivery outcome held").count();
    cluster.sql(&db, "UPDATE edgemail_inject SET fail = false");
    for id in &ids {
        wait_until("the outcome committed", Duration::from_secs(30), || {
            let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
            (email["status"] == "delivered").then_some(())
        });
    }
    each_recipient_once(&w.sink, MESSAGES);
    assert!(refused > 0, "the injected refusals reached the queue: {}", w.server.log());
    let metrics = w.api().get("/metrics").expect(200).text();
    assert!(metrics.contains("edgemail_store_retries_total"), "{metrics}");
}
