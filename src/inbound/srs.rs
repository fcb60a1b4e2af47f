//! The Sender Rewriting Scheme (SRS0) for mail we forward to outside addresses: the envelope
//! sender becomes `SRS0=hash=tt=orig.domain=orig-local@forwarding.domain`, so SPF checks our
//! domain, and a bounce comes back to us, proves we made the address (an HMAC over the rest)
//! and is passed on to the original sender while the address is young enough.

use ring::hmac;

/// Base32 (RFC 4648 alphabet) for the timestamp and the hash: local parts are compared without
/// regard to case on the way back, which base64 would not survive.
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Characters of the hash kept: 30 bits, enough against guessing within `MAX_AGE_DAYS`.
const HASH_LEN: usize = 6;

/// A bounce older than this many days is refused (the SRS convention is 21).
pub const MAX_AGE_DAYS: u64 = 21;

/// The SRS timestamp: days since the epoch, modulo 1024, as two base32 characters.
fn timestamp(days: u64) -> String {
    let t = (days % 1024) as usize;
    [BASE32[t >> 5] as char, BASE32[t & 31] as char].iter().collect()
}

fn days_of(tt: &str) -> Option<u64> {
    let mut value = 0u64;
    for c in tt.bytes() {
        let digit = BASE32.iter().position(|b| *b == c.to_ascii_uppercase())?;
        value = value * 32 + digit as u64;
    }
    (tt.len() == 2).then_some(value)
}

fn hash(key: &hmac::Key, tt: &str, domain: &str, local: &str) -> String {
    let input = format!(
        "{}{}{}",
        tt.to_ascii_uppercase(),
        domain.to_ascii_lowercase(),
        local.to_ascii_lowercase()
    );
    let tag = hmac::sign(key, input.as_bytes());
    // Five bits from each byte: plenty of the tag's randomness, and simple.
    tag.as_ref().iter().take(HASH_LEN).map(|b| BASE32[usize::from(b & 31)] as char).collect()
}

/// The SRS0 address for `sender` forwarded by `forwarding_domain` at `now_ms`; `None` for the
/// null sender (nothing to return to) or an address without a domain.
pub fn encode(
    key: &hmac::Key,
    sender: &str,
    forwarding_domain: &str,
    now_ms: u64,
) -> Option<String> {
    let (local, domain) = sender.rsplit_once('@')?;
    if local.is_empty() || domain.is_empty() {
        return None;
    }
    let tt = timestamp(now_ms / 86_400_000);
    let h = hash(key, &tt, domain, local);
    Some(format!("SRS0={h}={tt}={domain}={local}@{forwarding_domain}"))
}

/// Whether `local` is an SRS0 local part (of any validity).
pub fn is_srs(local: &str) -> bool {
    local.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("SRS0="))
}

/// The original sender named by the SRS0 local part `local` when its hash is ours and it is at
/// most `MAX_AGE_DAYS` old.
pub fn decode(key: &hmac::Key, local: &str, now_ms: u64) -> Option<String> {
    if !is_srs(local) {
        return None;
    }
    let mut parts = local[5..].splitn(4, '=');
    let (h, tt, domain, orig) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if domain.is_empty() || orig.is_empty() {
        return None;
    }
    let expected = hash(key, tt, domain, orig);
    // Compared without an early exit: the hash is the only thing that proves the address ours.
    let given = h.to_ascii_uppercase();
    let differ = given.len() != expected.len()
        || given.bytes().zip(expected.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) != 0;
    if differ {
        return None;
    }
    let made = days_of(tt)?;
    let today = (now_ms / 86_400_000) % 1024;
    let age = (today + 1024 - made) % 1024;
    (age <= MAX_AGE_DAYS).then(|| format!("{orig}@{domain}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, b"test secret")
    }

    const DAY: u64 = 86_400_000;

    #[test]
    fn an_address_made_here_decodes_back_while_young() {
        let now = 20_000 * DAY + 5;
        let srs = encode(&key(), "Jane.Doe@example.org", "alpha.test", now).expect("srs"); // ok: test
        let (local, domain) = srs.rsplit_once('@').expect("at"); // ok: test
        assert_eq!(domain, "alpha.test");
        assert!(local.starts_with("SRS0="), "{srs}");
        assert!(local.ends_with("=example.org=Jane.Doe"), "{srs}");
        assert_eq!(decode(&key(), local, now).as_deref(), Some("Jane.Doe@example.org"));
        // Receivers may lower-case it.
        let lower = local.to_ascii_lowercase();
        assert_eq!(decode(&key(), &lower, now + 3 * DAY).as_deref(), Some("jane.doe@example.org"));
        assert_eq!(decode(&key(), local, now + 22 * DAY), None);
    }

    #[test]
    fn forged_or_foreign_addresses_do_not_decode() {
        let now = 20_000 * DAY;
        let srs = encode(&key(), "a@example.org", "alpha.test", now).expect("srs"); // ok: test
        let local = srs.rsplit_once('@').map(|(l, _)| l).expect("local"); // ok: test
        let other = hmac::Key::new(hmac::HMAC_SHA256, b"another secret");
        assert_eq!(decode(&other, local, now), None);
        let tampered = local.replace("=a", "=b");
        assert_eq!(decode(&key(), &tampered, now), None);
        assert_eq!(decode(&key(), "SRS0=AAAAAA=AA=example.org=a", now), None);
        assert_eq!(decode(&key(), "jane", now), None);
        assert_eq!(encode(&key(), "", "alpha.test", now), None);
    }
}
