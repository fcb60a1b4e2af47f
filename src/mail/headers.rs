//! The headers a sender may add to a message, and the ones the service owns. Owned headers are
//! written by the builder (addresses, identity, MIME structure), by DKIM signing, or by receivers;
//! a sender's copy of one would contradict or forge ours.

/// Header names (compared without case) that only the service writes.
const OWNED: [&str; 25] = [
    "From",
    "To",
    "Cc",
    "Bcc",
    "Reply-To",
    "Sender",
    "Subject",
    "Date",
    "Message-ID",
    "DKIM-Signature",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
    "Return-Path",
    "Received",
    "Received-SPF",
    "Authentication-Results",
    "ARC-Seal",
    "ARC-Message-Signature",
    "ARC-Authentication-Results",
    "Delivered-To",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "Content-Disposition",
    "Content-ID",
];

/// Prefixes of owned names: MIME's own headers, and the markers the service reads back from mail
/// it receives (warmup traffic).
const OWNED_PREFIXES: [&str; 2] = ["content-", "x-edgemail-"];

/// Whether `name` is a header only the service writes.
pub fn is_owned(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    OWNED.iter().any(|o| o.eq_ignore_ascii_case(name))
        || OWNED_PREFIXES.iter().any(|p| lower.starts_with(p))
}

/// Why `name` cannot be a header field name (RFC 5322 section 3.6.8: printable ASCII but the
/// colon), if it cannot.
pub fn name_error(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.len() > 76 {
        return Some("is longer than 76 characters");
    }
    if !name.bytes().all(|b| (33..=126).contains(&b) && b != b':') {
        return Some("may hold only printable ASCII letters, digits and punctuation but the colon");
    }
    None
}

/// Why `value` cannot be a header value, if it cannot: no line breaks or other control
/// characters (a CR or LF would start a header of the sender's choosing), and short enough to
/// fold into lines of at most 998 characters.
pub fn value_error(value: &str) -> Option<&'static str> {
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Some("contains a line break or another control character");
    }
    if value.chars().count() > 2000 {
        return Some("is longer than 2000 characters");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_names_are_known_whatever_their_case() {
        for name in ["from", "BCC", "dkim-signature", "Content-Language", "X-Edgemail-Warmup"] {
            assert!(is_owned(name), "{name}");
        }
        for name in ["X-Campaign", "Precedence", "Auto-Submitted", "X-Entity-Ref-ID"] {
            assert!(!is_owned(name), "{name}");
        }
    }

    #[test]
    fn names_and_values_that_could_inject_are_refused() {
        assert!(name_error("X-Ok").is_none());
        for bad in ["", "X Bad", "X:Bad", "X-\u{e9}", "X-\r\nBcc"] {
            assert!(name_error(bad).is_some(), "{bad:?}");
        }
        assert!(value_error("a value\twith a tab").is_none());
        for bad in ["a\r\nBcc: x@y.test", "a\nb", "a\rb", "nul\0"] {
            assert!(value_error(bad).is_some(), "{bad:?}");
        }
    }
}
