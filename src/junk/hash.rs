//! The token hash: 64-bit FNV-1a. Counts are stored under it, so it must give the same number
//! for the same text in every build and process (std's `DefaultHasher` promises neither), and
//! 64 bits keep collisions negligible for the few million tokens a store could hold. Tokens are
//! not secret, and a sender who forges a collision only moves one token of his own message.

use std::hash::{BuildHasherDefault, Hasher};

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// The stable hash of a token's text.
pub fn token_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// A hasher for maps keyed by token hashes: they are hashes already, so hashing them again
/// (SipHash) would only cost time in the lookups scoring is made of.
#[derive(Default, Clone, Copy)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by u64 keys; anything else still spreads.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type TokenMap<V> = std::collections::HashMap<u64, V, BuildHasherDefault<Identity>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed_forever() {
        // FNV-1a's published test vectors: stored counts depend on these values.
        assert_eq!(token_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(token_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(token_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
