//! Keys as bytes that sort as the typed keys do, so that any ordered byte store (redb, a
//! PostgreSQL `bytea` column) keeps the order the store relies on: tuples compare part by part,
//! integers numerically, strings and bytes lexicographically.
//!
//! Integers are fixed-width big-endian. A string or byte string that other parts follow ends with
//! `00 01`, and a `00` inside it is written `00 FF`: the end sorts below every byte the part could
//! go on with, so `("a", "b")` sorts before `("ab", "")`. The last part of a key needs neither: its
//! bytes run to the end, which is also why a single string key is stored as itself.
//!
//! Decoding borrows and, almost always, does not copy: a key whose parts escape no zero byte is
//! read where it lies (`in_place`); only one that does is unescaped into a "plain" layout (a
//! part's length before its bytes) and read from there. A range scan thus allocates nothing per
//! entry for the keys the store writes, whose strings hold no NUL.

use super::super::error::{Error, Result};

/// A key type of a table. `SelfType` is what callers pass and get back (`&str` for `&str`).
pub trait Key {
    type SelfType<'a>;
    /// Appends the order-preserving bytes of `value`; `last` when no part follows it.
    fn encode(value: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>);
    /// Checks and reads this part at the front of `encoded` in one pass; returns it and what
    /// follows it, or `None` when the part escapes a zero byte, so that the key must be read
    /// from its plain layout instead.
    fn decode<'a>(encoded: &'a [u8], last: bool) -> Result<Option<(Self::SelfType<'a>, &'a [u8])>>;
    /// Reads this part off the front of an encoding `decode` accepted whole; returns it and what
    /// follows it.
    fn in_place<'a>(encoded: &'a [u8], last: bool) -> (Self::SelfType<'a>, &'a [u8]);
    /// Reads this part off the front of `encoded`, appending its plain layout to `plain`;
    /// returns what follows it.
    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]>;
    /// Reads this part off the front of `plain`; returns it and what follows it.
    fn from_plain<'a>(plain: &'a [u8], last: bool) -> (Self::SelfType<'a>, &'a [u8]);
}

/// The bytes of a whole key.
pub fn encode_key<K: Key>(value: &K::SelfType<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    K::encode(value, true, &mut out);
    out
}

pub(super) fn corrupt(what: &str) -> Error {
    Error::internal(format!("a stored key does not decode: {what}"))
}

const END: [u8; 2] = [0x00, 0x01];
const ESCAPED_ZERO: [u8; 2] = [0x00, 0xFF];

fn encode_bytes(bytes: &[u8], last: bool, out: &mut Vec<u8>) {
    if last {
        out.extend_from_slice(bytes);
        return;
    }
    let mut rest = bytes;
    while let Some(at) = find_zero(rest) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(&ESCAPED_ZERO);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&END);
}

/// Where the first zero byte of `bytes` lies. A scan meets each part twice (checked when the
/// entry is read, split when its key is), so it looks at a word at a time rather than a byte.
#[inline]
fn find_zero(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        // A byte's high bit is set for each zero byte, and (by the borrow) maybe for bytes after
        // it: the lowest set bit is the first zero.
        let zeros = word.wrapping_sub(ONES) & !word & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words.remainder().iter().position(|&b| b == 0).map(|i| at + i)
}

/// Unescapes one byte-string part into `plain` (its length, then its bytes); returns the rest.
fn bytes_to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
    if last {
        plain.extend_from_slice(encoded);
        return Ok(&[]);
    }
    let len_at = plain.len();
    plain.extend_from_slice(&[0; 4]);
    let mut rest = encoded;
    loop {
        let at = find_zero(rest).ok_or_else(|| corrupt("unterminated part"))?;
        plain.extend_from_slice(&rest[..at]);
        match rest.get(at + 1) {
            Some(0x01) => {
                rest = &rest[at + 2..];
                break;
            }
            Some(0xFF) => {
                plain.push(0);
                rest = &rest[at + 2..];
            }
            _ => return Err(corrupt("bad escape")),
        }
    }
    let len = u32::try_from(plain.len() - len_at - 4).map_err(|_| corrupt("part too long"))?;
    plain[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
    Ok(rest)
}

fn bytes_from_plain(plain: &[u8], last: bool) -> (&[u8], &[u8]) {
    if last {
        return (plain, &[]);
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(plain.get(..4).unwrap_or(&[0; 4]));
    let len = u32::from_le_bytes(len) as usize;
    let body = plain.get(4..).unwrap_or(&[]);
    // Plain layouts are only made by `to_plain`, which wrote this length.
    let len = len.min(body.len());
    (&body[..len], &body[len..])
}

/// Where a byte-string part ends in `encoded` and where what follows it starts, or `None` when
/// the part escapes a zero byte.
#[inline]
fn unescaped_end(encoded: &[u8], last: bool) -> Result<Option<(usize, usize)>> {
    if last {
        return Ok(Some((encoded.len(), encoded.len())));
    }
    let at = find_zero(encoded).ok_or_else(|| corrupt("unterminated part"))?;
    match encoded.get(at + 1) {
        Some(0x01) => Ok(Some((at, at + 2))),
        Some(0xFF) => Ok(None),
        _ => Err(corrupt("bad escape")),
    }
}

/// Splits an unescaped byte-string part off the front of `encoded`.
#[inline]
fn bytes_in_place(encoded: &[u8], last: bool) -> (&[u8], &[u8]) {
    if last {
        return (encoded, &[]);
    }
    // `unescaped_end` found this part's end (a zero, then its terminator) when the key was read.
    let at = find_zero(encoded).unwrap_or(encoded.len());
    (&encoded[..at], encoded.get(at + 2..).unwrap_or(&[]))
}

impl Key for &[u8] {
    type SelfType<'a> = &'a [u8];

    fn encode(value: &&[u8], last: bool, out: &mut Vec<u8>) {
        encode_bytes(value, last, out);
    }

    #[inline]
    fn decode(encoded: &[u8], last: bool) -> Result<Option<(&[u8], &[u8])>> {
        Ok(unescaped_end(encoded, last)?.map(|(end, next)| (&encoded[..end], &encoded[next..])))
    }

    #[inline]
    fn in_place(encoded: &[u8], last: bool) -> (&[u8], &[u8]) {
        bytes_in_place(encoded, last)
    }

    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
        bytes_to_plain(encoded, last, plain)
    }

    fn from_plain(plain: &[u8], last: bool) -> (&[u8], &[u8]) {
        bytes_from_plain(plain, last)
    }
}

impl Key for &str {
    type SelfType<'a> = &'a str;

    fn encode(value: &&str, last: bool, out: &mut Vec<u8>) {
        encode_bytes(value.as_bytes(), last, out);
    }

    #[inline]
    fn decode(encoded: &[u8], last: bool) -> Result<Option<(&str, &[u8])>> {
        let Some((end, next)) = unescaped_end(encoded, last)? else { return Ok(None) };
        let text = std::str::from_utf8(&encoded[..end]).map_err(|_| corrupt("not UTF-8"))?;
        Ok(Some((text, &encoded[next..])))
    }

    #[inline]
    fn in_place(encoded: &[u8], last: bool) -> (&str, &[u8]) {
        let (text, rest) = bytes_in_place(encoded, last);
        // Checked by `decode` when the key was read.
        (std::str::from_utf8(text).unwrap_or_default(), rest)
    }

    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
        let start = plain.len();
        let rest = bytes_to_plain(encoded, last, plain)?;
        let (text, _) = bytes_from_plain(&plain[start..], last);
        std::str::from_utf8(text).map_err(|_| corrupt("not UTF-8"))?;
        Ok(rest)
    }

    fn from_plain(plain: &[u8], last: bool) -> (&str, &[u8]) {
        let (text, rest) = bytes_from_plain(plain, last);
        // Checked by `to_plain` when the plain layout was made, or by `decode`.
        (std::str::from_utf8(text).unwrap_or_default(), rest)
    }
}

macro_rules! integer_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            type SelfType<'a> = $t;

            fn encode(value: &$t, _: bool, out: &mut Vec<u8>) {
                out.extend_from_slice(&value.to_be_bytes());
            }

            #[inline]
            fn decode(encoded: &[u8], _: bool) -> Result<Option<($t, &[u8])>> {
                const N: usize = size_of::<$t>();
                let Some((part, rest)) = encoded.split_first_chunk::<N>() else {
                    return Err(corrupt("short integer"));
                };
                Ok(Some((<$t>::from_be_bytes(*part), rest)))
            }

            #[inline]
            fn in_place(encoded: &[u8], last: bool) -> ($t, &[u8]) {
                Self::from_plain(encoded, last)
            }

            fn to_plain<'e>(encoded: &'e [u8], _: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
                const N: usize = size_of::<$t>();
                let part = encoded.get(..N).ok_or_else(|| corrupt("short integer"))?;
                plain.extend_from_slice(part);
                Ok(&encoded[N..])
            }

            fn from_plain(plain: &[u8], _: bool) -> ($t, &[u8]) {
                const N: usize = size_of::<$t>();
                let mut bytes = [0u8; N];
                if let Some(part) = plain.get(..N) {
                    bytes.copy_from_slice(part);
                }
                (<$t>::from_be_bytes(bytes), plain.get(N..).unwrap_or(&[]))
            }
        }
    )*};
}

integer_key!(u8, u32, u64);

macro_rules! tuple_key {
    ($($name:ident $v:ident),+; $lname:ident $lv:ident) => {
        impl<$($name: Key,)+ $lname: Key> Key for ($($name,)+ $lname) {
            type SelfType<'a> = ($($name::SelfType<'a>,)+ $lname::SelfType<'a>);

            fn encode(value: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>) {
                let ($($v,)+ $lv) = value;
                $($name::encode($v, false, out);)+
                $lname::encode($lv, last, out);
            }

            #[inline]
            fn decode<'a>(
                encoded: &'a [u8],
                last: bool,
            ) -> Result<Option<(Self::SelfType<'a>, &'a [u8])>> {
                let rest = encoded;
                $(let Some(($v, rest)) = $name::decode(rest, false)? else { return Ok(None) };)+
                let Some(($lv, rest)) = $lname::decode(rest, last)? else { return Ok(None) };
                Ok(Some((($($v,)+ $lv), rest)))
            }

            #[inline]
            fn in_place<'a>(encoded: &'a [u8], last: bool) -> (Self::SelfType<'a>, &'a [u8]) {
                let rest = encoded;
                $(let ($v, rest) = $name::in_place(rest, false);)+
                let ($lv, rest) = $lname::in_place(rest, last);
                (($($v,)+ $lv), rest)
            }

            fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
                let rest = encoded;
                $(let rest = $name::to_plain(rest, false, plain)?;)+
                $lname::to_plain(rest, last, plain)
            }

            fn from_plain<'a>(plain: &'a [u8], last: bool) -> (Self::SelfType<'a>, &'a [u8]) {
                let rest = plain;
                $(let ($v, rest) = $name::from_plain(rest, false);)+
                let ($lv, rest) = $lname::from_plain(rest, last);
                (($($v,)+ $lv), rest)
            }
        }
    };
}

tuple_key!(A a; B b);
tuple_key!(A a, B b; C c);
tuple_key!(A a, B b, C c; D d);

#[cfg(test)]
mod tests {
    use super::*;

    type K3<'a> = (&'a str, u64, &'a str);

    #[test]
    fn in_place_reads_what_was_encoded_unless_a_part_escapes_a_zero() {
        for d in ["", "a", "a\0", "é\0\0z", "\u{10FFFF}"] {
            for n in [0u64, 1, u64::MAX] {
                for id in ["", "x", "x\0y"] {
                    let encoded = encode_key::<K3<'_>>(&(d, n, id));
                    let decoded = <K3<'_>>::decode(&encoded, true);
                    let decoded = decoded.unwrap_or_else(|e| panic!("{d:?}: {e}"));
                    if d.contains('\0') {
                        assert!(decoded.is_none(), "{d:?} escapes a zero: read from plain");
                        continue;
                    }
                    assert_eq!(decoded, Some(((d, n, id), &[][..])), "{d:?} is read in place");
                    assert_eq!(<K3<'_>>::in_place(&encoded, true).0, (d, n, id));
                }
            }
        }
        let bytes = encode_key::<(u32, &[u8])>(&(7, b"\0\xFF"));
        let decoded = <(u32, &[u8])>::decode(&bytes, true).ok().flatten();
        assert_eq!(decoded, Some(((7, &b"\0\xFF"[..]), &[][..])));
        assert_eq!(<(u32, &[u8])>::in_place(&bytes, true).0, (7, &b"\0\xFF"[..]));
    }

    #[test]
    fn the_word_scan_finds_the_first_zero_where_the_byte_scan_does() {
        for len in 0..20 {
            let mut bytes = vec![0x80u8; len];
            assert_eq!(find_zero(&bytes), None);
            for first in 0..len {
                // Bytes after the first zero that a borrow could mark: 0x01 and another zero.
                for (at, b) in bytes.iter_mut().enumerate() {
                    *b = if at < first { 0xFF } else { 0x01 };
                }
                bytes[first] = 0;
                if first + 2 < len {
                    bytes[first + 2] = 0;
                }
                assert_eq!(find_zero(&bytes), Some(first), "{bytes:?}");
            }
        }
    }

    #[test]
    fn a_damaged_key_decoded_in_place_is_an_error() {
        type S2<'a> = (&'a str, &'a str);
        assert!(<S2<'_>>::decode(b"abc", true).is_err(), "unterminated");
        assert!(<S2<'_>>::decode(b"a\0\x05b", true).is_err(), "bad escape");
        assert!(<S2<'_>>::decode(b"\xFF\0\x01b", true).is_err(), "not UTF-8");
        assert!(<S2<'_>>::decode(b"a\0\x01\xFF", true).is_err(), "last not UTF-8");
        assert!(<(&str, u64)>::decode(b"a\0\x01\0\0", true).is_err(), "short integer");
    }
}
