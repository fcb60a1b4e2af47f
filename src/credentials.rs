//! Mailbox app passwords: making them, their argon2id hashes (PHC strings with their own salt),
//! and checking a mail client's login against them. Hashing is slow on purpose, so it runs on
//! blocking threads, never on the runtime, a few at a time (each takes ~19 MiB). A login argon2
//! accepted is remembered for a few minutes (`verified`), so a client's repeated logins with an
//! unchanged password skip the computation; the stored hashes are read on every login all the
//! same, so a deleted password stops working at once.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use tokio::sync::Semaphore;

use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::store::{AppPassword, Store};
use limits::LoginLimits;
use verified::Verified;

mod limits;
mod verified;

/// Characters of a generated password: lower-case letters and digits without the ones people
/// misread (0/o, 1/l/i), so a password read off a screen can be typed.
const ALPHABET: &[u8; 32] = b"23456789abcdefghjkmnpqrstuvwxyz_";
/// 24 characters of 5 bits: 120 bits, out of reach of any guessing.
const LENGTH: usize = 24;
/// Password checks running at once.
const CHECKS_AT_ONCE: usize = 4;

/// A fresh random password.
pub fn generate() -> String {
    let bytes: [u8; LENGTH] = rand::random();
    bytes.iter().map(|b| ALPHABET[usize::from(b & 31)] as char).collect()
}

/// The PHC string of `password`'s argon2id hash, with a random salt. Blocking.
pub fn hash(password: &str) -> Result<String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| Error::internal(format!("hashing an app password: {e}")))
}

/// Whether `password` matches the PHC string `phc` (argon2 compares in constant time). Blocking.
pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default().verify_password(password.as_bytes(), phc).is_ok()
}

/// Makes an app password for the mailbox `address` (lower-cased); the record stored and the
/// password, which is shown this once.
pub async fn create(store: &Store, address: String, name: String) -> Result<(AppPassword, String)> {
    let password = generate();
    let phc = {
        let password = password.clone();
        tokio::task::spawn_blocking(move || hash(&password)).await.map_err(Error::internal)??
    };
    let record = AppPassword { id: new_id("pw"), name, hash: phc, created_at: now_ms() };
    let stored = record.clone();
    store.write(move |w| w.add_app_password(&address, &stored)).await?;
    Ok((record, password))
}

/// How a login went.
#[derive(Debug, PartialEq, Eq)]
pub enum Login {
    /// The mailbox address logged in as (lower-cased).
    Accepted(String),
    Refused,
    /// Too many failures from this address (for this mailbox, or for any): not checked.
    Throttled,
    /// The check could not be made (the store failed).
    Unavailable,
}

/// Checks mail clients' logins: the store's hashes, the failure limits, the check slots.
pub struct Logins {
    store: Arc<Store>,
    limits: LoginLimits,
    checks: Semaphore,
    verified: Verified,
}

impl Logins {
    pub fn new(store: Arc<Store>, failures: u32) -> Logins {
        Logins {
            store,
            limits: LoginLimits::new(failures),
            checks: Semaphore::new(CHECKS_AT_ONCE),
            verified: Verified::new(verified::TTL, verified::CAPACITY),
        }
    }

    /// A login by `user` (the full mailbox address) with `password`, from `ip`.
    pub async fn check(&self, ip: IpAddr, user: &str, password: &str) -> Login {
        let user = user.trim().to_ascii_lowercase();
        if !self.limits.allowed(ip, &user) {
            return Login::Throttled;
        }
        let lookup = user.clone();
        let hashes = match self.store.read(move |r| r.app_passwords(&lookup)).await {
            Ok(found) => found.into_iter().map(|p| p.hash).collect::<Vec<_>>(),
            Err(e) => {
                tracing::error!(error = %e, "reading app passwords");
                return Login::Unavailable;
            }
        };
        // Tags of this password against each hash stored now: a hash deleted or replaced since
        // the last login has no tag here, so only what the store still holds can match.
        let tags: Vec<_> =
            hashes.iter().map(|phc| self.verified.tag(&user, password, phc)).collect();
        if tags.iter().any(|tag| self.verified.knows(tag)) {
            return Login::Accepted(user);
        }
        let Ok(_slot) = self.checks.acquire().await else { return Login::Unavailable };
        let password = password.to_owned();
        let matched = tokio::task::spawn_blocking(move || matches_any(&password, &hashes)).await;
        match matched {
            Ok(Some(at)) => {
                if let Some(tag) = tags.get(at) {
                    self.verified.remember(*tag);
                }
                Login::Accepted(user)
            }
            Ok(None) => {
                self.limits.failed(ip, &user);
                Login::Refused
            }
            Err(_) => Login::Unavailable,
        }
    }

    /// Forgets limits that are over.
    pub fn tidy(&self) {
        self.limits.tidy();
    }
}

/// The position of the hash `password` matches. Checks every hash, also after a match, and one
/// stand-in when there are none: how long a login takes tells nothing about whether the mailbox
/// exists or which password matched. (A remembered login is fast, but only its owner, who knows
/// the password, can make one.)
fn matches_any(password: &str, hashes: &[String]) -> Option<usize> {
    static STAND_IN: OnceLock<String> = OnceLock::new();
    if hashes.is_empty() {
        let stand_in = STAND_IN.get_or_init(|| hash(&generate()).unwrap_or_default());
        verify(password, stand_in);
        return None;
    }
    hashes.iter().enumerate().fold(None, |found, (at, phc)| {
        let matched = verify(password, phc);
        found.or(matched.then_some(at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_are_long_and_hash_to_phc_strings_that_verify() {
        let a = generate();
        assert_eq!(a.len(), LENGTH);
        assert_ne!(a, generate());
        let phc = hash(&a).unwrap_or_default();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(!phc.contains(&a));
        assert!(verify(&a, &phc));
        assert!(!verify("wrong", &phc));
        assert_ne!(hash(&a).unwrap_or_default(), phc, "salted");
        assert_eq!(matches_any(&a, &["garbage".into(), phc]), Some(1));
        assert_eq!(matches_any(&a, &[]), None);
    }

    async fn temp_store(tag: &str) -> (Arc<Store>, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("edgemail-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        store
            .write(|w| -> crate::store::Result<()> {
                let domain =
                    crate::store::Domain { name: "x.test".into(), created_at: 0, dkim: Vec::new() };
                w.add_domain(&domain)?;
                w.create_mailbox("x.test", "m", None)?;
                Ok(())
            })
            .await
            .expect("seed"); // ok: test
        (Arc::new(store), dir)
    }

    /// A cached login skips argon2 but not the store: a deleted password fails at once, and a
    /// wrong one is never remembered. Prints the cold and cached timings (`--nocapture`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn repeat_logins_skip_argon2_until_the_password_is_deleted() {
        let (store, dir) = temp_store("logins-cache").await;
        let logins = Logins::new(store.clone(), 10);
        let (record, password) =
            create(&store, "m@x.test".into(), "laptop".into()).await.expect("create"); // ok: test
        let ip: IpAddr = [192, 0, 2, 1].into();
        let accepted = Login::Accepted("m@x.test".into());

        let remembered = |password: &str, phc: &str| {
            logins.verified.knows(&logins.verified.tag("m@x.test", password, phc))
        };
        assert!(!remembered(&password, &record.hash));
        let started = std::time::Instant::now();
        assert_eq!(logins.check(ip, "M@x.test", &password).await, accepted);
        let cold = started.elapsed();
        assert!(remembered(&password, &record.hash), "remembered under the lower-cased login");
        let started = std::time::Instant::now();
        let rounds = 100u32;
        for _ in 0..rounds {
            assert_eq!(logins.check(ip, "m@x.test", &password).await, accepted);
        }
        let cached = started.elapsed() / rounds;
        // Printed, not asserted: timings on a shared machine say nothing reliable.
        println!("login timing: cold (argon2) {cold:?}, cached {cached:?} (mean of {rounds})");

        // A wrong password is checked every time and never remembered.
        for _ in 0..2 {
            assert_eq!(logins.check(ip, "m@x.test", "wrong").await, Login::Refused);
            assert!(!remembered("wrong", &record.hash));
        }

        // Deleted: refused at once, though the login was remembered a moment ago.
        let id = record.id.clone();
        store.write(move |w| w.delete_app_password("m@x.test", &id)).await.expect("delete"); // ok: test
        assert_eq!(logins.check(ip, "m@x.test", &password).await, Login::Refused);

        // The same password under a new hash (a new record) is verified afresh, then cached.
        let mut again = record.clone();
        again.id = new_id("pw");
        again.hash = hash(&password).expect("hash"); // ok: test
        store.write(move |w| w.add_app_password("m@x.test", &again)).await.expect("add"); // ok: test
        assert_eq!(logins.check(ip, "m@x.test", &password).await, accepted);
        let _ = std::fs::remove_dir_all(dir);
    }
}
