//! Opaque, time-ordered identifiers: a prefix naming the kind, 48 bits of milliseconds and 80
//! random bits in Crockford base32. Sorting ids sorts by creation time, which keeps range scans
//! in creation order without a second index.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// How far the clock runs ahead of the system's (`testing.clock_offset`, a testing aid: tests
/// put the server on the other side of a UTC midnight without waiting for one).
static CLOCK_OFFSET_MS: AtomicU64 = AtomicU64::new(0);

/// Sets the clock's lead over the system clock; called once at start-up.
pub fn set_clock_offset(offset: Duration) {
    CLOCK_OFFSET_MS.store(offset.as_millis() as u64, Ordering::Relaxed);
}

/// Milliseconds since the Unix epoch, the unit of every time in the API.
pub fn now_ms() -> u64 {
    let system =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    system.saturating_add(CLOCK_OFFSET_MS.load(Ordering::Relaxed))
}

/// A new id such as `ct_01jd3k...` (prefix, underscore, 26 base32 characters). Within one
/// process ids strictly increase, also within one millisecond, so id order is creation order.
/// Within a millisecond each id adds a random step of up to 2^32 to the last: ids must not be
/// guessable from a neighbour (a VERP bounce address or a link names one), and 2^79 of room
/// leaves 2^47 steps per millisecond before the random part could overflow.
pub fn new_id(prefix: &str) -> String {
    static LAST: Mutex<(u64, u128)> = Mutex::new((0, 0));
    let mut last = match LAST.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let now = now_ms();
    let (ms, random) = if now > last.0 {
        (now, rand::random::<u128>() >> 49) // room to count up within the millisecond
    } else {
        (last.0, last.1 + 1 + u128::from(rand::random::<u32>()))
    };
    *last = (ms, random);
    id_at(prefix, ms, random)
}

fn id_at(prefix: &str, ms: u64, random: u128) -> String {
    let value: u128 = ((ms as u128 & 0xFFFF_FFFF_FFFF) << 80) | (random & ((1u128 << 80) - 1));
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for i in (0..26).rev() {
        let digit = (value >> (i * 5)) & 31;
        out.push(ALPHABET[digit as usize] as char);
    }
    out
}

/// 32 random bytes as URL-safe base64 without padding: secrets such as API keys.
pub fn secret(prefix: &str) -> String {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    let mut out = String::from(prefix);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(bytes, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_have_fixed_length() {
        let a = id_at("em", 1_000, u128::MAX);
        let b = id_at("em", 1_001, 0);
        assert!(a < b);
        assert_eq!(a.len(), 29);
        assert!(a.starts_with("em_"));
    }

    #[test]
    fn ids_increase_within_a_millisecond() {
        let ids: Vec<String> = (0..1000).map(|_| new_id("x")).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn neighbouring_ids_are_not_sequential() {
        let ids: Vec<String> = (0..200).map(|_| new_id("x")).collect();
        let sequential = ids.windows(2).filter(|w| {
            let last = |s: &str| s.as_bytes()[s.len() - 1];
            w[0][..w[0].len() - 1] == w[1][..w[1].len() - 1] && last(&w[1]) == last(&w[0]) + 1
        });
        assert!(sequential.count() < 5, "ids one apart: {ids:?}");
    }
}
