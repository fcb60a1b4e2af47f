//! A node on PostgreSQL reads and writes its relation through the primary key only, whatever
//! size the relation had when a statement was planned: a new store is planned while it is tiny,
//! and a plan that scanned the whole relation then kept scanning it as it grew (a generic plan
//! is made once per connection). The relation is not scanned whole while the node takes,
//! delivers and lists mail.

use std::time::Duration;

use serde_json::json;

use crate::cluster::wait_until;
use crate::harness::{TempDir, share_store};
use crate::mail_world::{MailWorld, basic};
use crate::pg_cluster::Cluster;

/// `(seq_scan, idx_scan)` of the store's relations (the partitions of `edgemail_kv`), summed, as
/// the statistics have them so far.
fn scans(db: &str) -> (u64, u64) {
    let sql = "SELECT sum(seq_scan) || ' ' || sum(coalesce(idx_scan, 0)) \
               FROM pg_stat_user_tables WHERE relname LIKE 'edgemail%'";
    let out = Cluster::shared().sql(db, sql);
    let mut counts = out.split_whitespace().map(|n| n.parse::<u64>().expect("a count")); // ok: test
    (counts.next().unwrap_or(0), counts.next().unwrap_or(0))
}

#[test]
fn the_relation_is_never_scanned_whole_however_small_it_was_when_planned() {
    let url = Cluster::shared().database();
    let db = url.rsplit('/').next().expect("database name").to_owned(); // ok: test
    let dir = TempDir::new("plans");
    share_store(&dir.0, &url);
    let w = MailWorld::start_in(dir, &[], &[]);
    // More than five runs of every statement, so that each connection plans it generically.
    for i in 0..40 {
        w.send(basic(json!(format!("p{i}@example.org")))).expect(200);
    }
    wait_until("the deliveries", Duration::from_secs(30), || {
        (w.sink.messages().len() >= 40).then_some(())
    });
    w.api().get("/v1/emails?limit=50").expect(200);
    // A backend hands its counts to the statistics at most once a second, all at once: once
    // the index scans of this work show, the sequential scans would show with them.
    let (seq, idx) = wait_until("the statistics", Duration::from_secs(30), || {
        let (seq, idx) = scans(&db);
        (idx >= 200).then_some((seq, idx))
    });
    // Creating each relation (a partition of edgemail_kv) scans it once, to build its primary
    // key (empty then).
    let made = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'edgemail_kv'::regclass";
    let made: u64 = Cluster::shared().sql(&db, made).parse().expect("a count"); // ok: test
    assert!(made >= 2, "edgemail_kv has {made} partitions");
    assert_eq!(seq, made, "sequential scans of edgemail_kv's relations ({idx} index scans)");
}
