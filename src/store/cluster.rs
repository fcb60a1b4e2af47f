//! What the nodes sharing a store agree on through it: each node's heartbeat, the node working
//! on a queued message (its claim, good while that node's heartbeat is), and named leases such as
//! the leader's. A store with one node (the redb file) writes none of this.

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::ReadableTable;
use super::queue::spooled;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode};

/// What `Rtx::claims_of` found of a set of queue entries.
#[derive(Debug, Default)]
pub struct ClaimsOf {
    /// Claimed by another node whose heartbeat is current.
    pub others: Vec<String>,
    /// Claimed by nobody, or by a node whose heartbeat ran out: `(due, id, destination)`, for
    /// `Wtx::claim_free`.
    pub free: Vec<Free>,
    /// No longer in the queue (delivered, deleted or moved since the scan read it).
    pub gone: Vec<String>,
}

/// A queue entry nobody live holds: its due time, its message, and its destination.
pub type Free = (u64, String, String);

#[derive(Debug, Serialize, Deserialize)]
struct Lease {
    node: String,
    until: u64,
}

/// Whether `node`'s heartbeat is current at `now`.
fn alive(tx: &impl Tables, node: &str, now: u64) -> Result<bool> {
    Ok(tx.table(NODES)?.get(node)?.is_some_and(|until| until.value() > now))
}

/// The heartbeats of the holders met in one batch of claims, each read once.
#[derive(Default)]
struct Heartbeats(Vec<(String, bool)>);

impl Heartbeats {
    fn alive(&mut self, tx: &impl Tables, node: &str, now: u64) -> Result<bool> {
        if let Some((_, alive)) = self.0.iter().find(|(name, _)| name == node) {
            return Ok(*alive);
        }
        let found = alive(tx, node, now)?;
        self.0.push((node.to_owned(), found));
        Ok(found)
    }
}

fn holds_claim(tx: &impl Tables, id: &str, node: &str, now: u64) -> Result<bool> {
    let mine = tx.table(CLAIMS)?.get(id)?.is_some_and(|v| v.value() == node);
    Ok(mine && alive(tx, node, now)?)
}

impl Wtx<'_> {
    /// Records that `node` lives until `until` (it renews this well before then).
    pub fn heartbeat(&mut self, node: &str, until: u64) -> Result<()> {
        self.tx.open_table(NODES)?.insert(node, until)?;
        Ok(())
    }

    /// Takes lease `name` for `node` until `until` when it is free, expired, or `node`'s already;
    /// answers whether `node` holds it now.
    pub fn take_lease(&mut self, name: &str, node: &str, now: u64, until: u64) -> Result<bool> {
        let mut leases = self.tx.open_table(LEASES)?;
        let held = leases.get(name)?.map(|v| decode::<Lease>(v.value())).transpose()?;
        if held.is_some_and(|l| l.node != node && l.until > now) {
            return Ok(false);
        }
        let lease = Lease { node: node.to_owned(), until };
        leases.insert(name, encode(&lease)?.as_slice())?;
        Ok(true)
    }

    /// Gives up lease `name` if `node` holds it.
    pub fn release_lease(&mut self, name: &str, node: &str) -> Result<()> {
        let mut leases = self.tx.open_table(LEASES)?;
        let held = leases.get(name)?.map(|v| decode::<Lease>(v.value())).transpose()?;
        if held.is_some_and(|l| l.node == node) {
            leases.remove(name)?;
        }
        Ok(())
    }

    /// Claims the queue entry `(due, id)` for `node`, unless it is gone or another live node
    /// holds it. A node claims only while its own heartbeat has `margin` ms to run: one whose
    /// renewals fall behind could be counted dead by the others while its attempt is still on
    /// the wire, and the message delivered twice.
    pub fn claim(&mut self, due: u64, id: &str, node: &str, now: u64, margin: u64) -> Result<bool> {
        let queued = self.tx.open_table(QUEUE)?.get((due, id))?.is_some();
        if !queued || !alive(self, node, now.saturating_add(margin))? {
            return Ok(false);
        }
        let holder = self.tx.open_table(CLAIMS)?.get(id)?.map(|v| v.value().to_owned());
        if holder.as_deref() == Some(node) {
            return Ok(true);
        }
        if let Some(holder) = &holder
            && alive(self, holder, now)?
        {
            return Ok(false);
        }
        self.take_claim(due, id, node, holder.as_deref())?;
        Ok(true)
    }

    /// Makes `node` the holder of the claim on entry `(due, id)`, moving the entry from the
    /// spool of `from` (the holder whose heartbeat ran out), if any, to `node`'s.
    fn take_claim(&mut self, due: u64, id: &str, node: &str, from: Option<&str>) -> Result<()> {
        self.tx.open_table(CLAIMS)?.insert(id, node)?;
        let mut spool = self.tx.open_table(SPOOL)?;
        if let Some(from) = from {
            spool.remove((from, due, id))?;
        }
        spool.insert((node, due, id), ())?;
        Ok(())
    }

    /// Whether `node` still holds its claim on `id`, with a current heartbeat: only then may it
    /// commit what its attempt did.
    pub fn holds_claim(&self, id: &str, node: &str, now: u64) -> Result<bool> {
        holds_claim(self, id, node, now)
    }

    /// Gives up `node`'s claim on the queue entry `(due, id)` (its attempt is over), and the
    /// entry's place in `node`'s spool.
    pub fn release_claim(&mut self, due: u64, id: &str, node: &str) -> Result<()> {
        self.tx.open_table(CLAIMS)?.remove(id)?;
        self.tx.open_table(SPOOL)?.remove((node, due, id))?;
        Ok(())
    }

    /// Drops entries of `node`'s spool whose queue entry went (`Rtx::spool` found them).
    pub fn unspool(&mut self, node: &str, gone: &[(u64, String)]) -> Result<()> {
        let mut spool = self.tx.open_table(SPOOL)?;
        for (due, id) in gone {
            spool.remove((node, *due, id.as_str()))?;
        }
        Ok(())
    }

    /// Moves a queued message's entry in its holder's spool from `from` to `to` (its queue
    /// entry moved so); nothing when nobody holds it.
    pub(super) fn respool(&mut self, id: &str, from: u64, to: u64) -> Result<()> {
        let holder = self.tx.open_table(CLAIMS)?.get(id)?.map(|v| v.value().to_owned());
        let Some(holder) = holder else { return Ok(()) };
        let mut spool = self.tx.open_table(SPOOL)?;
        if spool.remove((holder.as_str(), from, id))?.is_some() {
            spool.insert((holder.as_str(), to, id), ())?;
        }
        Ok(())
    }

    /// Claims for `node` those of the queue entries `due` (entries `claims_of` found nobody
    /// holding) that no other node is taking, in one batch, a destination at a time; answers the
    /// ids it claimed. The entries are locked with `SKIP LOCKED` (`lock_unheld`): nodes that look
    /// at the same free entries together split them instead of losing to each other. Each claim
    /// is then checked as `claim` does (it may have been taken and committed since the read that
    /// found it free). A destination of which another node holds or is locking an entry is left
    /// to that node whole: one node then delivers a destination's mail of the batch, over the
    /// connections its pool keeps there, within that destination's limits. An entry of no known
    /// destination ("", queued by an older release) stands alone. Like `claim`, nothing is taken
    /// while this node's own heartbeat has less than `margin` ms to run.
    pub fn claim_free(
        &mut self,
        due: &[Free],
        node: &str,
        now: u64,
        margin: u64,
    ) -> Result<Vec<String>> {
        if due.is_empty() || !alive(self, node, now.saturating_add(margin))? {
            return Ok(Vec::new());
        }
        let keys: Vec<(u64, &str)> = due.iter().map(|(at, id, _)| (*at, id.as_str())).collect();
        let locked = self.tx.open_table(QUEUE)?.lock_unheld(&keys)?;
        // Each claim is read below: in one exchange, not one each.
        self.ahead(|a| {
            for (_, id) in &keys {
                a.key(CLAIMS, *id);
            }
        })?;
        let mut holders = Vec::with_capacity(due.len());
        let mut heartbeats = Heartbeats::default();
        let mut elsewhere = std::collections::HashSet::new();
        for ((_, id, destination), locked) in due.iter().zip(locked) {
            let holder =
                self.tx.open_table(CLAIMS)?.get(id.as_str())?.map(|v| v.value().to_owned());
            let ours = match holder.as_deref() {
                _ if !locked => false,
                Some(holder) => holder == node || !heartbeats.alive(self, holder, now)?,
                None => true,
            };
            if !ours {
                elsewhere.insert(destination.as_str());
            }
            holders.push((ours, holder));
        }
        let mut mine = Vec::new();
        for ((due, id, destination), (ours, holder)) in due.iter().zip(holders) {
            let whole = destination.is_empty() || !elsewhere.contains(destination.as_str());
            if !ours || !whole {
                continue;
            }
            if holder.as_deref() != Some(node) {
                self.take_claim(*due, id, node, holder.as_deref())?;
            }
            mine.push(id.clone());
        }
        Ok(mine)
    }

    /// Drops every claim `node` holds (it starts again: what it was doing before is free for
    /// any node at once, itself included); answers how many.
    pub fn free_claims_of(&mut self, node: &str) -> Result<usize> {
        let mut claims = self.tx.open_table(CLAIMS)?;
        let mut mine = Vec::new();
        for entry in claims.iter()? {
            let (id, holder) = entry?;
            if holder.value() == node {
                mine.push(id.value().to_owned());
            }
        }
        for id in &mine {
            claims.remove(id.as_str())?;
        }
        drop(claims);
        self.unspool(node, &spooled(self, node, usize::MAX)?)?;
        Ok(mine.len())
    }
}

impl Rtx {
    /// Whether `node` holds its claim on `id` with a heartbeat current at `now`. A node that
    /// finds this in the snapshot its attempt loads from may deliver without claiming in a
    /// write: claiming what it already holds writes nothing, so that write would be this read.
    pub fn holds_claim(&self, id: &str, node: &str, now: u64) -> Result<bool> {
        holds_claim(self, id, node, now)
    }

    /// Of the queue entries `entries`, those another node holds a claim on with a heartbeat
    /// current at `now`, those nobody holds (no claim, or its holder's heartbeat ran out) with
    /// their destination, and those gone from the queue: the claims and the entries read in one
    /// exchange, then each holder's heartbeat once.
    pub fn claims_of(&self, entries: &[(u64, String)], node: &str, now: u64) -> Result<ClaimsOf> {
        self.ahead(|a| {
            for (due, id) in entries {
                a.key(CLAIMS, id.as_str()).key(QUEUE, (*due, id.as_str()));
            }
        })?;
        let (claims, queue) = (self.tx.open_table(CLAIMS)?, self.tx.open_table(QUEUE)?);
        let mut heartbeats = Heartbeats::default();
        let mut out = ClaimsOf::default();
        for (due, id) in entries {
            let Some(destination) = queue.get((*due, id.as_str()))? else {
                out.gone.push(id.clone());
                continue;
            };
            let free = (*due, id.clone(), destination.value().to_owned());
            let Some(holder) = claims.get(id.as_str())? else {
                out.free.push(free);
                continue;
            };
            let holder = holder.value();
            if holder == node {
                continue;
            }
            match heartbeats.alive(self, holder, now)? {
                true => out.others.push(id.clone()),
                false => out.free.push(free),
            }
        }
        Ok(out)
    }

    /// The nodes whose heartbeat is current at `now`, by name.
    pub fn live_nodes(&self, now: u64) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in self.tx.open_table(NODES)?.iter()? {
            let (node, until) = entry?;
            if until.value() > now {
                out.push(node.value().to_owned());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::emails::{Delivery, Email, Folder};
    use super::super::kv::conformance::pg_cluster::Cluster;
    use super::super::{Options, Store};
    use super::*;

    fn node(url: &str, name: &str) -> Store {
        let dir =
            std::env::temp_dir().join(format!("edgemail-spool-{name}-{}", std::process::id()));
        let options = Options {
            url: Some(url.to_owned()),
            connections: 2,
            node: Some(name.to_owned()),
            ..Options::default()
        };
        Store::open_with(&dir, options).expect("open") // ok: test
    }

    fn outbound(id: &str) -> Email {
        to(id, &["r@X.test"])
    }

    /// An outbound message to `recipients`, none delivered yet.
    fn to(id: &str, recipients: &[&str]) -> Email {
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = "m@x.test".into();
        e.summary.folder = Folder::Outbox;
        e.deliveries = recipients
            .iter()
            .map(|r| Delivery {
                recipient: (*r).to_owned(),
                status: Default::default(),
                attempts: 0,
                last_response: None,
                updated_at: 0,
                bounce_class: None,
            })
            .collect();
        e
    }

    fn write<T>(
        store: &Store,
        work: impl FnOnce(&mut Wtx<'_>) -> Result<T> + Clone + Send + 'static,
    ) -> T
    where
        T: Send + 'static,
    {
        store.write_blocking(work).expect("write") // ok: test
    }

    fn spool(store: &Store, name: &str) -> Vec<(u64, String)> {
        let name = name.to_owned();
        let spooled = store.read_blocking(move |r| r.spool(&name, 10)).expect("read"); // ok: test
        assert!(spooled.gone.is_empty(), "{spooled:?}");
        spooled.queued
    }

    /// A node's spool follows its claims: an accepted message is in its acceptor's, a claim taken
    /// from a node whose heartbeat ran out (one at a time or in a batch) moves it, and a released
    /// claim or a node's claims freed leave nothing behind; an entry whose queue entry went is
    /// told apart and dropped.
    #[test]
    fn a_spool_holds_what_its_node_claimed_and_nothing_else() {
        let url = Cluster::shared().database();
        let (a, b) = (node(&url, "a"), node(&url, "b"));
        let now = 1_800_000_000_000;
        write(&a, move |w| w.heartbeat("a", now - 1));
        write(&b, move |w| w.heartbeat("b", now + 60_000));
        write(&a, |w| w.enqueue(&outbound("em_1"), 1000));
        assert_eq!(spool(&a, "a"), [(1000, "em_1".to_owned())]);
        assert!(write(&b, move |w| w.claim(1000, "em_1", "b", now, 0)), "a's heartbeat ran out");
        assert_eq!((spool(&a, "a"), spool(&b, "b")), (vec![], vec![(1000, "em_1".to_owned())]));
        write(&b, |w| w.release_claim(1000, "em_1", "b"));
        assert!(spool(&b, "b").is_empty());
        // A batch claim of entries nobody live holds.
        write(&a, |w| w.enqueue(&outbound("em_2"), 2000));
        let entries = vec![(2000, "em_2".to_owned())];
        let found = b.read_blocking(move |r| r.claims_of(&entries, "b", now)).expect("read"); // ok: test
        assert_eq!(found.free, [(2000, "em_2".to_owned(), "x.test".to_owned())]);
        assert_eq!(write(&b, move |w| w.claim_free(&found.free, "b", now, 0)), ["em_2"]);
        assert_eq!((spool(&a, "a"), spool(&b, "b")), (vec![], vec![(2000, "em_2".to_owned())]));
        // The queue entry goes (the message was deleted): the spool tells, and drops it.
        write(&b, |w| w.tx.open_table(QUEUE)?.remove((2000, "em_2")).map(drop));
        let found = b.read_blocking(|r| r.spool("b", 10)).expect("read"); // ok: test
        assert_eq!((found.queued, found.gone.clone()), (vec![], vec![(2000, "em_2".to_owned())]));
        write(&b, move |w| w.unspool("b", &found.gone));
        assert!(spool(&b, "b").is_empty());
        write(&b, |w| w.enqueue(&outbound("em_3"), 3000));
        // em_2's claim outlived its queue entry (a message deleted while claimed keeps it, to no
        // effect) and goes here too.
        assert_eq!(write(&b, |w| w.free_claims_of("b")), 2);
        assert!(spool(&b, "b").is_empty());
        a.close();
        b.close();
    }

    /// A batch claim takes a destination whole or not at all: of free entries read together, a
    /// destination one of whose entries a live node claimed meanwhile is left to that node, the
    /// others are taken; a message's destination is the set of its pending recipients' domains.
    /// A message deleted while claimed takes its claim and spool entry with it.
    #[test]
    fn a_batch_claim_takes_whole_destinations_and_a_deleted_message_leaves_no_claim() {
        let url = Cluster::shared().database();
        let (a, b, c) = (node(&url, "ga"), node(&url, "gb"), node(&url, "gc"));
        let now = 1_800_000_000_000;
        write(&a, move |w| w.heartbeat("ga", now + 60_000));
        write(&b, move |w| w.heartbeat("gb", now + 60_000));
        write(&c, move |w| w.heartbeat("gc", now - 1));
        let queued = [("x1", &["r@x.test"][..]), ("x2", &["s@X.test"]), ("y1", &["t@y.test"])];
        for (at, (id, rcpts)) in queued.into_iter().enumerate() {
            let (mut email, due) = (to(id, rcpts), 100 + at as u64);
            email.next_attempt_at = Some(due);
            // Queued by a node that stopped since: nobody live holds them.
            write(&c, move |w| w.enqueue(&email, due));
        }
        let both = to("xy", &["u@y.test", "v@x.test"]);
        assert_eq!(both.destination(), "x.test,y.test");
        let entries: Vec<(u64, String)> =
            [(100, "x1"), (101, "x2"), (102, "y1")].map(|(at, id)| (at, id.to_owned())).into();
        let found = b.read_blocking(move |r| r.claims_of(&entries, "gb", now)).expect("read"); // ok: test
        let dests: Vec<&str> = found.free.iter().map(|(_, _, d)| d.as_str()).collect();
        assert_eq!(dests, ["x.test", "x.test", "y.test"]);
        // Node ga claims x1 and commits before gb's batch claim.
        assert!(write(&a, move |w| w.claim(100, "x1", "ga", now, 0)));
        assert_eq!(write(&b, move |w| w.claim_free(&found.free, "gb", now, 0)), ["y1"]);
        assert_eq!(spool(&b, "gb"), [(102, "y1".to_owned())]);
        // Deleting x1 while ga holds it drops the claim and ga's spool entry in the same write.
        write(&a, |w| w.delete_email("x.test", "x1").map(drop));
        assert!(spool(&a, "ga").is_empty());
        let claim = a.read_blocking(|r| -> Result<bool> {
            Ok(r.tx.open_table(CLAIMS)?.get("x1")?.is_some())
        });
        assert!(!claim.expect("read"), "the claim went with the message"); // ok: test
        a.close();
        b.close();
        c.close();
    }
}
