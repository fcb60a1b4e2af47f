//! Mailbox app passwords: making them, their argon2id hashes (PHC strings with their own salt),
//! and checking a mail client's login against them. Hashing is slow on purpose, so it runs on
//! blocking threads, never on the runtime, a few at a time (each takes ~19 MiB).

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use tokio::sync::Semaphore;

use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::store::{AppPassword, Store};
use limits::LoginLimits;

mod limits;

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
}

impl Logins {
    pub fn new(store: Arc<Store>, failures: u32) -> Logins {
        Logins { store, limits: LoginLimits::new(failures), checks: Semaphore::new(CHECKS_AT_ONCE) }
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
        let Ok(_slot) = self.checks.acquire().await else { return Login::Unavailable };
        let password = password.to_owned();
        let matched = tokio::task::spawn_blocking(move || matches_any(&password, &hashes)).await;
        match matched {
            Ok(true) => Login::Accepted(user),
            Ok(false) => {
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

/// Checks every hash, also after a match, and one stand-in when there are none: how long a
/// login takes tells nothing about whether the mailbox exists or which password matched.
fn matches_any(password: &str, hashes: &[String]) -> bool {
    static STAND_IN: OnceLock<String> = OnceLock::new();
    if hashes.is_empty() {
        let stand_in = STAND_IN.get_or_init(|| hash(&generate()).unwrap_or_default());
        verify(password, stand_in);
        return false;
    }
    hashes.iter().fold(false, |found, phc| verify(password, phc) | found)
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
        assert!(matches_any(&a, &["garbage".into(), phc]));
        assert!(!matches_any(&a, &[]));
    }
}
