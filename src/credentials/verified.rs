//! Logins verified recently: a mail client logs in again and again (every IMAP connection, every
//! message some clients send), and each argon2 check costs ~80 ms of a core and ~19 MiB. A login
//! that argon2 accepted is remembered for a short while, so the next one with the same password
//! against the same stored hash skips the computation. The stored hashes are untouched: argon2
//! still guards them against whoever reads the store, and every login still reads them, so a
//! password deleted or a mailbox removed stops working at once (its hash is gone, and with it
//! the entry that could match).
//!
//! An entry is a tag, never a password: HMAC-SHA256 under a key made at random for this process
//! over the mailbox, the password and the PHC string (which holds the hash's own salt). Nothing
//! here survives the process or can be checked without its key, so a memory dump yields tags
//! that verify nothing elsewhere. Only successes are remembered: a wrong password always costs
//! argon2 (and a token of the failure limits).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ring::hmac;

/// How long a verified login is remembered: long enough for a client's burst of connections
/// (and a day of polling at ten-minute intervals costs 144 checks, not thousands), short enough
/// that a password is re-verified against its hash often.
pub const TTL: Duration = Duration::from_secs(10 * 60);
/// The most logins remembered; past it the oldest goes (every entry lives as long, so the
/// oldest is also the next to expire).
pub const CAPACITY: usize = 10_000;

type Tag = [u8; 32];

pub struct Verified {
    key: hmac::Key,
    ttl: Duration,
    capacity: usize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// Each tag with when it was remembered and the number of that remembering.
    at: HashMap<Tag, (Instant, u64)>,
    /// The same, oldest first; a tag remembered again leaves its older place stale (another
    /// number), skipped when it comes up.
    order: VecDeque<(Tag, u64)>,
    next: u64,
}

impl Entries {
    /// Takes the oldest place off the queue, and its entry when the place is not stale.
    fn pop_oldest(&mut self) -> Option<()> {
        let (tag, n) = self.order.pop_front()?;
        if self.at.get(&tag).is_some_and(|(_, m)| *m == n) {
            self.at.remove(&tag);
        }
        Some(())
    }

    /// When the oldest place was remembered (`None`: stale, or no place).
    fn oldest(&self) -> Option<Option<Instant>> {
        let (tag, n) = self.order.front()?;
        Some(self.at.get(tag).filter(|(_, m)| m == n).map(|(at, _)| *at))
    }
}

impl Verified {
    pub fn new(ttl: Duration, capacity: usize) -> Verified {
        let rng = ring::rand::SystemRandom::new();
        // Generating a key fails only without an OS random source, which nothing here survives
        // either; a key from the clock and the address of a local would still be per-process.
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
            let fallback = format!("{:?}{:p}", Instant::now(), &rng);
            hmac::Key::new(hmac::HMAC_SHA256, fallback.as_bytes())
        });
        Verified { key, ttl, capacity: capacity.max(1), entries: Mutex::new(Entries::default()) }
    }

    /// The tag of a login by `mailbox` with `password` against the stored hash `phc`. Each part
    /// is length-prefixed, so no two different triples run together into the same input.
    pub fn tag(&self, mailbox: &str, password: &str, phc: &str) -> Tag {
        let mut ctx = hmac::Context::with_key(&self.key);
        for part in [mailbox, password, phc] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part.as_bytes());
        }
        let mut tag = [0u8; 32];
        tag.copy_from_slice(ctx.sign().as_ref());
        tag
    }

    /// Whether `tag` was remembered less than the TTL ago.
    pub fn knows(&self, tag: &Tag) -> bool {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.at.get(tag).is_some_and(|(at, _)| at.elapsed() < self.ttl)
    }

    /// Remembers a login argon2 accepted, making room by dropping expired and then oldest entries.
    pub fn remember(&self, tag: Tag) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Stale places and expired entries at the front go first.
        while let Some(oldest) = entries.oldest() {
            if oldest.is_some_and(|at| now.duration_since(at) < self.ttl) {
                break;
            }
            entries.pop_oldest();
        }
        while entries.at.len() >= self.capacity && !entries.at.contains_key(&tag) {
            if entries.pop_oldest().is_none() {
                break;
            }
        }
        let n = entries.next;
        entries.next += 1;
        entries.at.insert(tag, (now, n));
        entries.order.push_back((tag, n));
        // Stale places of tags remembered again in the middle must not grow the queue unbounded.
        if entries.order.len() > 2 * self.capacity {
            let Entries { at, order, .. } = &mut *entries;
            order.retain(|(tag, n)| at.get(tag).is_some_and(|(_, m)| m == n));
        }
    }

    /// Entries held (expired ones included until they are dropped).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_names_mailbox_password_and_hash_together() {
        let v = Verified::new(TTL, 10);
        let t = v.tag("a@x.test", "pw", "$argon2id$1");
        assert_eq!(t, v.tag("a@x.test", "pw", "$argon2id$1"));
        assert_ne!(t, v.tag("a@x.test", "pw", "$argon2id$2"), "another hash");
        assert_ne!(t, v.tag("a@x.test", "pw2", "$argon2id$1"), "another password");
        assert_ne!(t, v.tag("b@x.test", "pw", "$argon2id$1"), "another mailbox");
        assert_ne!(v.tag("ab", "c", "d"), v.tag("a", "bc", "d"), "parts do not run together");
        let other = Verified::new(TTL, 10);
        assert_ne!(t, other.tag("a@x.test", "pw", "$argon2id$1"), "a key per process");
        assert!(!v.knows(&t));
        v.remember(t);
        assert!(v.knows(&t));
        assert!(!other.knows(&t));
    }

    #[test]
    fn entries_expire_and_the_oldest_goes_first_when_full() {
        let v = Verified::new(Duration::from_millis(50), 3);
        let tags: Vec<Tag> = (0..4).map(|i| v.tag("m@x.test", &format!("p{i}"), "h")).collect();
        for t in &tags[..3] {
            v.remember(*t);
        }
        // Remembered again: its place moves to the back, the stale one is skipped.
        v.remember(tags[0]);
        v.remember(tags[3]);
        assert_eq!(v.len(), 3);
        assert!(!v.knows(&tags[1]), "the oldest went");
        assert!(v.knows(&tags[0]) && v.knows(&tags[2]) && v.knows(&tags[3]));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!v.knows(&tags[0]), "expired");
        v.remember(tags[1]);
        assert_eq!(v.len(), 1, "expired entries are dropped when a new one comes");
        for i in 0..100 {
            v.remember(tags[i % 2]);
        }
        assert!(v.entries.lock().map(|e| e.order.len()).unwrap_or(0) <= 6, "stale places pruned");
    }
}
