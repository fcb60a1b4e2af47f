//! Keys as bytes that sort as the typed keys do, so that any ordered byte store (redb, a
//! PostgreSQL `bytea` column) keeps the order the store relies on: tuples compare part by part,
//! integers numerically, strings and bytes lexicographically.
//!
//! Integers are fixed-width big-endian. A string or byte string that other parts follow ends with
//! `00 01`, and a `00` inside it is written `00 FF`: the end sorts below every byte the part could
//! go on with, so `("a", "b")` sorts before `("ab", "")`. The last part of a key needs neither: its
//! bytes run to the end, which is also why a single string key is stored as itself.
//!
//! Decoding borrows: a decoded key is read from a "plain" layout (a part's length before its
//! bytes), which for single-part keys is the encoding itself.

use super::super::error::{Error, Result};

/// A key type of a table. `SelfType` is what callers pass and get back (`&str` for `&str`).
pub trait Key {
    type SelfType<'a>;
    /// Whether the plain layout of a whole key is its encoding (single-part keys).
    const PLAIN_IS_ENCODED: bool;
    /// Appends the order-preserving bytes of `value`; `last` when no part follows it.
    fn encode(value: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>);
    /// Reads this part off the front of `encoded`, appending its plain layout to `plain`;
    /// returns what follows it.
    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]>;
    /// Checks that `encoded` is a whole key of this type whose plain layout is itself.
    fn check_plain(encoded: &[u8]) -> Result<()>;
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
    while let Some(at) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(&ESCAPED_ZERO);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&END);
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
        let at = rest.iter().position(|&b| b == 0).ok_or_else(|| corrupt("unterminated part"))?;
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

impl Key for &[u8] {
    type SelfType<'a> = &'a [u8];
    const PLAIN_IS_ENCODED: bool = true;

    fn encode(value: &&[u8], last: bool, out: &mut Vec<u8>) {
        encode_bytes(value, last, out);
    }

    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
        bytes_to_plain(encoded, last, plain)
    }

    fn check_plain(_: &[u8]) -> Result<()> {
        Ok(())
    }

    fn from_plain(plain: &[u8], last: bool) -> (&[u8], &[u8]) {
        bytes_from_plain(plain, last)
    }
}

impl Key for &str {
    type SelfType<'a> = &'a str;
    const PLAIN_IS_ENCODED: bool = true;

    fn encode(value: &&str, last: bool, out: &mut Vec<u8>) {
        encode_bytes(value.as_bytes(), last, out);
    }

    fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
        let start = plain.len();
        let rest = bytes_to_plain(encoded, last, plain)?;
        let (text, _) = bytes_from_plain(&plain[start..], last);
        std::str::from_utf8(text).map_err(|_| corrupt("not UTF-8"))?;
        Ok(rest)
    }

    fn check_plain(encoded: &[u8]) -> Result<()> {
        std::str::from_utf8(encoded).map(|_| ()).map_err(|_| corrupt("not UTF-8"))
    }

    fn from_plain(plain: &[u8], last: bool) -> (&str, &[u8]) {
        let (text, rest) = bytes_from_plain(plain, last);
        // Checked by `to_plain` or `check_plain` when the plain layout was made.
        (std::str::from_utf8(text).unwrap_or_default(), rest)
    }
}

macro_rules! integer_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            type SelfType<'a> = $t;
            const PLAIN_IS_ENCODED: bool = true;

            fn encode(value: &$t, _: bool, out: &mut Vec<u8>) {
                out.extend_from_slice(&value.to_be_bytes());
            }

            fn to_plain<'e>(encoded: &'e [u8], _: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
                const N: usize = size_of::<$t>();
                let part = encoded.get(..N).ok_or_else(|| corrupt("short integer"))?;
                plain.extend_from_slice(part);
                Ok(&encoded[N..])
            }

            fn check_plain(encoded: &[u8]) -> Result<()> {
                if encoded.len() == size_of::<$t>() { Ok(()) } else { Err(corrupt("integer size")) }
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
            const PLAIN_IS_ENCODED: bool = false;

            fn encode(value: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>) {
                let ($($v,)+ $lv) = value;
                $($name::encode($v, false, out);)+
                $lname::encode($lv, last, out);
            }

            fn to_plain<'e>(encoded: &'e [u8], last: bool, plain: &mut Vec<u8>) -> Result<&'e [u8]> {
                let rest = encoded;
                $(let rest = $name::to_plain(rest, false, plain)?;)+
                $lname::to_plain(rest, last, plain)
            }

            fn check_plain(_: &[u8]) -> Result<()> {
                Err(corrupt("a tuple key is never plain as encoded"))
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
