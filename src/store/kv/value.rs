//! Values as bytes: byte strings and strings as themselves, integers big-endian, `()` as nothing.

use super::super::error::{Error, Result};

/// A value type of a table. `SelfType` is what callers pass and get back.
pub trait Value {
    type SelfType<'a>;
    fn write(value: &Self::SelfType<'_>, out: &mut Vec<u8>);
    /// Checks stored bytes once, so that `read` cannot meet bytes it does not understand.
    fn check(bytes: &[u8]) -> Result<()>;
    fn read(bytes: &[u8]) -> Self::SelfType<'_>;
    /// Checks and reads in one pass, for values used once where they lie.
    #[inline]
    fn decode(bytes: &[u8]) -> Result<Self::SelfType<'_>> {
        Self::check(bytes)?;
        Ok(Self::read(bytes))
    }
}

fn corrupt(what: &str) -> Error {
    Error::internal(format!("a stored value does not decode: {what}"))
}

impl Value for &[u8] {
    type SelfType<'a> = &'a [u8];

    fn write(value: &&[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(value);
    }

    #[inline]
    fn check(_: &[u8]) -> Result<()> {
        Ok(())
    }

    #[inline]
    fn read(bytes: &[u8]) -> &[u8] {
        bytes
    }
}

impl Value for &str {
    type SelfType<'a> = &'a str;

    fn write(value: &&str, out: &mut Vec<u8>) {
        out.extend_from_slice(value.as_bytes());
    }

    #[inline]
    fn check(bytes: &[u8]) -> Result<()> {
        // `read` validates again to make its `&str`: the cheap test first, as for keys.
        if bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
            Ok(())
        } else {
            Err(corrupt("not UTF-8"))
        }
    }

    #[inline]
    fn read(bytes: &[u8]) -> &str {
        // `check` passed on these bytes when they were read from the backend.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    #[inline]
    fn decode(bytes: &[u8]) -> Result<&str> {
        std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8"))
    }
}

impl Value for () {
    type SelfType<'a> = ();

    fn write(_: &(), _: &mut Vec<u8>) {}

    #[inline]
    fn check(bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() { Ok(()) } else { Err(corrupt("unit with bytes")) }
    }

    fn read(_: &[u8]) {}
}

macro_rules! integer_value {
    ($($t:ty),*) => {$(
        impl Value for $t {
            type SelfType<'a> = $t;

            fn write(value: &$t, out: &mut Vec<u8>) {
                out.extend_from_slice(&value.to_be_bytes());
            }

            #[inline]
            fn check(bytes: &[u8]) -> Result<()> {
                if bytes.len() == size_of::<$t>() { Ok(()) } else { Err(corrupt("integer size")) }
            }

            #[inline]
            fn read(bytes: &[u8]) -> $t {
                let mut out = [0u8; size_of::<$t>()];
                if bytes.len() == out.len() {
                    out.copy_from_slice(bytes);
                }
                <$t>::from_be_bytes(out)
            }
        }
    )*};
}

integer_value!(u32, u64);
