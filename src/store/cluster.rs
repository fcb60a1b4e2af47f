//! What the nodes sharing a store agree on through it: each node's heartbeat, the node working
//! on a queued message (its claim, good while that node's heartbeat is), and named leases such as
//! the leader's. A store with one node (the redb file) writes none of this.

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::ReadableTable;
use super::queue::spooled;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode};

/// What `Rtx::claims_of` found of a set of queued messages.
#[derive(Debug, Default)]
pub struct ClaimsOf {
    /// Claimed by another node whose heartbeat is current.
    pub others: Vec<String>,
    /// Claimed by nobody, or by a node whose heartbeat ran out.
    pub free: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Lease {
    node: String,
    until: u64,
}

/// Whether `node`'s heartbeat is current at `now`.
fn alive(tx: &impl Tables, node: &str, now: u64) -> Result<bool> {
    Ok(tx.table(NODES)?.get(node)?.is_some_and(|until| until.value() > now))
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

    /// Claims for `node` those of the queue entries `due` (messages `claims_of` found nobody
    /// holding) that no other node is claiming at this moment, in one batch; answers the ids it
    /// claimed. The entries are locked with `SKIP LOCKED` (`lock_unheld`): nodes that look at the
    /// same free entries together split them instead of losing to each other, and a node skips
    /// what another is taking. Each claim is then checked as `claim` does (the entry may have
    /// been claimed and committed since the read that found it free); like `claim`, nothing is
    /// taken while this node's own heartbeat has less than `margin` ms to run.
    pub fn claim_free(
        &mut self,
        due: &[(u64, String)],
        node: &str,
        now: u64,
        margin: u64,
    ) -> Result<Vec<String>> {
        if due.is_empty() || !alive(self, node, now.saturating_add(margin))? {
            return Ok(Vec::new());
        }
        let keys: Vec<(u64, &str)> = due.iter().map(|(at, id)| (*at, id.as_str())).collect();
        let locked = self.tx.open_table(QUEUE)?.lock_unheld(&keys)?;
        // Each claim is read below: in one exchange, not one each.
        self.ahead(|a| {
            for (_, id) in &keys {
                a.key(CLAIMS, *id);
            }
        })?;
        let mut mine = Vec::new();
        for ((due, id), locked) in keys.into_iter().zip(locked) {
            if !locked {
                continue;
            }
            let holder = self.tx.open_table(CLAIMS)?.get(id)?.map(|v| v.value().to_owned());
            let free = match holder.as_deref() {
                // Already this node's: nothing to write.
                Some(holder) if holder == node => false,
                Some(holder) => !alive(self, holder, now)?,
                None => true,
            };
            if free {
                self.take_claim(due, id, node, holder.as_deref())?;
            }
            if free || holder.as_deref() == Some(node) {
                mine.push(id.to_owned());
            }
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

    /// Of `ids` (queued messages), those another node holds a claim on with a heartbeat current
    /// at `now`, and those nobody holds (no claim, or its holder's heartbeat ran out): their
    /// claims read in one exchange, then each holder's heartbeat once.
    pub fn claims_of(&self, ids: &[String], node: &str, now: u64) -> Result<ClaimsOf> {
        self.ahead(|a| {
            for id in ids {
                a.key(CLAIMS, id.as_str());
            }
        })?;
        let claims = self.tx.open_table(CLAIMS)?;
        let mut live: Vec<(String, bool)> = Vec::new();
        let mut out = ClaimsOf::default();
        for id in ids {
            let Some(holder) = claims.get(id.as_str())? else {
                out.free.push(id.clone());
                continue;
            };
            let holder = holder.value();
            if holder == node {
                continue;
            }
            let alive = match live.iter().find(|(name, _)| name == holder) {
                Some((_, alive)) => *alive,
                None => {
                    let alive = alive(self, holder, now)?;
                    live.push((holder.to_owned(), alive));
                    alive
                }
            };
            match alive {
                true => out.others.push(id.clone()),
                false => out.free.push(id.clone()),
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
    use super::super::emails::{Email, Folder};
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
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = "m@x.test".into();
        e.summary.folder = Folder::Outbox;
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
        let ids = vec!["em_2".to_owned()];
        let found = b.read_blocking(move |r| r.claims_of(&ids, "b", now)).expect("read"); // ok: test
        assert_eq!(found.free, ["em_2"]);
        let due = vec![(2000, "em_2".to_owned())];
        assert_eq!(write(&b, move |w| w.claim_free(&due, "b", now, 0)), ["em_2"]);
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
}
