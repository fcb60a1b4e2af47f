//! Modified UTF-7 (RFC 3501 5.1.3): how IMAP names folders whose names are not ASCII, for
//! clients that have not enabled UTF8=ACCEPT. Printable ASCII stands for itself, `&` is `&-`, and
//! any other run of characters is its UTF-16 in base64 (the `,` alphabet, no padding) between
//! `&` and `-`. The base64 is the `base64` crate's, with its IMAP alphabet.

use base64::Engine;
use base64::alphabet::IMAP_MUTF7;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &IMAP_MUTF7,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone),
);

fn direct(c: char) -> bool {
    (' '..='~').contains(&c)
}

/// The modified UTF-7 form of a UTF-8 name.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut run: Vec<u16> = Vec::new();
    let flush = |run: &mut Vec<u16>, out: &mut String| {
        if !run.is_empty() {
            let bytes: Vec<u8> = run.iter().flat_map(|u| u.to_be_bytes()).collect();
            out.push('&');
            out.push_str(&ENGINE.encode(bytes));
            out.push('-');
            run.clear();
        }
    };
    for c in name.chars() {
        if direct(c) {
            flush(&mut run, &mut out);
            match c {
                '&' => out.push_str("&-"),
                c => out.push(c),
            }
        } else {
            let mut units = [0u16; 2];
            run.extend_from_slice(c.encode_utf16(&mut units));
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The UTF-8 name a modified UTF-7 name stands for; `None` when it is not valid modified UTF-7
/// (a stray `&`, bad base64, ASCII that should have stood for itself, broken UTF-16).
pub fn decode(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end = after.find('-')?;
        let coded = &after[..end];
        if coded.is_empty() {
            out.push('&');
        } else {
            let bytes = ENGINE.decode(coded).ok()?;
            if bytes.len() % 2 != 0 {
                return None;
            }
            let units = bytes.chunks(2).map(|p| u16::from_be_bytes([p[0], p[1]]));
            let text: String = char::decode_utf16(units).collect::<Result<_, _>>().ok()?;
            if text.chars().any(direct) {
                return None;
            }
            out.push_str(&text);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_rfc_3501() {
        let name = "~peter/mail/台北/日本語";
        assert_eq!(encode(name), "~peter/mail/&U,BTFw-/&ZeVnLIqe-");
        assert_eq!(decode("~peter/mail/&U,BTFw-/&ZeVnLIqe-").as_deref(), Some(name));
        assert_eq!(encode("Tom & Jerry"), "Tom &- Jerry");
        assert_eq!(decode("Tom &- Jerry").as_deref(), Some("Tom & Jerry"));
        assert_eq!(encode("Entwürfe"), "Entw&APw-rfe");
        assert_eq!(decode("Entw&APw-rfe").as_deref(), Some("Entwürfe"));
        assert_eq!(decode("😀").as_deref(), Some("😀"));
        assert_eq!(decode(&encode("a😀b")).as_deref(), Some("a😀b"));
    }

    #[test]
    fn broken_forms_are_refused() {
        for bad in ["&", "a&b", "&AGE-", "&Jjo!-", "&2D3-"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
