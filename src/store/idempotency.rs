//! Idempotency keys of API requests: per API key, the hash of the first request that used the key
//! and, once it finished, its answer. Claiming a key is a write, so the single writer decides
//! which of two concurrent requests runs; keys older than their time to live are treated as absent
//! and pruned a few at a time by later claims.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::Result;
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode, get_json};

/// Expired keys removed by one claim, at most: pruning stays cheap whatever piled up.
const PRUNE: usize = 32;

/// An answer kept for replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredReply {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    /// The body, base64.
    pub body: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// Hash of what the request asked (method, path, body).
    hash: String,
    created_at: u64,
    /// The process that claimed it: a claim left by a process that is gone never finishes.
    boot: String,
    reply: Option<StoredReply>,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is ours: run the request, then `finish_idempotency`.
    Fresh,
    /// The same request finished before: answer this.
    Replay(StoredReply),
    /// The key was used with another request.
    Conflict,
    /// The same request is running now.
    InFlight,
}

/// Who claims a key, and when.
pub struct Claimant<'a> {
    pub key_id: &'a str,
    pub key: &'a str,
    pub hash: &'a str,
    pub boot: &'a str,
    pub now: u64,
    /// How long a key is kept, ms.
    pub ttl: u64,
}

fn record(tx: &impl Tables, key_id: &str, key: &str) -> Result<Option<Record>> {
    get_json(tx, IDEMPOTENCY, (key_id, key))
}

/// What an existing, unexpired record means for a new request.
fn verdict(found: &Record, c: &Claimant<'_>) -> Option<Claim> {
    if found.hash != c.hash {
        return Some(Claim::Conflict);
    }
    match &found.reply {
        Some(reply) => Some(Claim::Replay(reply.clone())),
        None if found.boot == c.boot => Some(Claim::InFlight),
        // Claimed by a process that stopped before it answered: nobody will finish it.
        None => None,
    }
}

impl Wtx<'_> {
    pub fn claim_idempotency(&mut self, c: &Claimant<'_>) -> Result<Claim> {
        self.prune_idempotency(c.now.saturating_sub(c.ttl))?;
        let found = record(self, c.key_id, c.key)?;
        if let Some(found) = &found {
            if found.created_at + c.ttl > c.now
                && let Some(claim) = verdict(found, c)
            {
                return Ok(claim);
            }
            let old = (found.created_at, c.key_id, c.key);
            self.tx.open_table(IDEMPOTENCY_BY_TIME)?.remove(old)?;
        }
        let new = Record {
            hash: c.hash.to_owned(),
            created_at: c.now,
            boot: c.boot.to_owned(),
            reply: None,
        };
        self.tx.open_table(IDEMPOTENCY)?.insert((c.key_id, c.key), encode(&new)?.as_slice())?;
        self.tx.open_table(IDEMPOTENCY_BY_TIME)?.insert((c.now, c.key_id, c.key), ())?;
        Ok(Claim::Fresh)
    }

    /// Records the answer of a claimed key, or lets the key go (`None`: a retry runs again).
    pub fn finish_idempotency(
        &mut self,
        key_id: &str,
        key: &str,
        reply: Option<StoredReply>,
    ) -> Result<()> {
        let Some(mut found) = record(self, key_id, key)? else {
            return Ok(());
        };
        let mut table = self.tx.open_table(IDEMPOTENCY)?;
        match reply {
            Some(reply) => {
                found.reply = Some(reply);
                table.insert((key_id, key), encode(&found)?.as_slice())?;
            }
            None => {
                table.remove((key_id, key))?;
                self.tx.open_table(IDEMPOTENCY_BY_TIME)?.remove((found.created_at, key_id, key))?;
            }
        }
        Ok(())
    }

    /// Removes up to `PRUNE` keys created before `before`.
    fn prune_idempotency(&mut self, before: u64) -> Result<()> {
        let mut by_time = self.tx.open_table(IDEMPOTENCY_BY_TIME)?;
        let mut old: Vec<(u64, String, String)> = Vec::new();
        for entry in by_time.range((0u64, "", "")..(before, "", ""))?.take(PRUNE) {
            let (key, _) = entry?;
            let (at, key_id, key) = key.value();
            old.push((at, key_id.to_owned(), key.to_owned()));
        }
        let mut table = self.tx.open_table(IDEMPOTENCY)?;
        for (at, key_id, key) in &old {
            by_time.remove((*at, key_id.as_str(), key.as_str()))?;
            table.remove((key_id.as_str(), key.as_str()))?;
        }
        Ok(())
    }
}

impl Rtx {
    /// Whether the claim on a key still runs: `None` when it finished or went.
    pub fn idempotency_claim(&self, c: &Claimant<'_>) -> Result<Option<Claim>> {
        let found = record(self, c.key_id, c.key)?;
        Ok(found.filter(|r| r.created_at + c.ttl > c.now).and_then(|r| verdict(&r, c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn claimant<'a>(hash: &'a str, boot: &'a str, now: u64) -> Claimant<'a> {
        Claimant { key_id: "k1", key: "abc", hash, boot, now, ttl: 1000 }
    }

    fn claim(store: &Store, hash: &'static str, boot: &'static str, now: u64) -> Claim {
        store
            .write_blocking(move |w| w.claim_idempotency(&claimant(hash, boot, now)))
            .expect("claim") // ok: test
    }

    #[test]
    fn claims_replay_conflict_expire_and_survive_their_process() {
        let dir = std::env::temp_dir().join(format!("edgemail-idem-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        assert_eq!(claim(&store, "h", "b1", 10), Claim::Fresh);
        assert_eq!(claim(&store, "h", "b1", 20), Claim::InFlight);
        assert_eq!(claim(&store, "other", "b1", 20), Claim::Conflict);
        let reply = StoredReply {
            status: 200,
            content_type: "application/json".into(),
            headers: vec![],
            body: "e30=".into(),
        };
        let kept = reply.clone();
        store
            .write_blocking(move |w| w.finish_idempotency("k1", "abc", Some(kept)))
            .expect("finish"); // ok: test
        assert_eq!(claim(&store, "h", "b2", 30), Claim::Replay(reply));
        // After its time to live the key is new again.
        assert_eq!(claim(&store, "other", "b2", 2000), Claim::Fresh);
        // A claim left by a process that is gone is taken over.
        assert_eq!(claim(&store, "other", "b3", 2100), Claim::Fresh);
        store.close();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
