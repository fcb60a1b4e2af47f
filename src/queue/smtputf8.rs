//! What a message asks of the server it goes to (RFC 6531, RFC 6532): SMTPUTF8 when a
//! recipient's local part is UTF-8 or when the header holds UTF-8 (a message submitted with
//! SMTPUTF8 may carry `To: 用户@example.org` as it is). A Unicode domain alone asks nothing: the
//! envelope carries it in A-labels (`address::envelope_form`). Such a message never goes to a
//! server that did not offer SMTPUTF8 (section 3.4 leaves the client to reject or downgrade;
//! downgrading would rewrite what the sender signed): every recipient of that transaction fails
//! permanently with a reason the sender can act on, instead of invalid bytes being sent.

use crate::store::Outcome;

/// Why a transaction needs SMTPUTF8; `None` when plain SMTP carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// A recipient's (or the sender's) local part is UTF-8.
    Address,
    /// The message's header holds UTF-8 (RFC 6532).
    Header,
}

/// What `from`, `recipients` and `message` need of the receiving server.
pub fn needs(from: &str, recipients: &[String], message: &[u8]) -> Option<Needs> {
    let address = std::iter::once(from).chain(recipients.iter().map(String::as_str));
    if address.into_iter().any(crate::address::needs_smtputf8) {
        return Some(Needs::Address);
    }
    header(message).iter().any(|b| !b.is_ascii()).then_some(Needs::Header)
}

/// The header section of `message`: up to the first empty line.
fn header(message: &[u8]) -> &[u8] {
    let end = memchr::memmem::find(message, b"\r\n\r\n")
        .or_else(|| memchr::memmem::find(message, b"\n\n"))
        .unwrap_or(message.len());
    &message[..end]
}

/// The permanent failure of a transaction the server cannot take (RFC 3463 X.6.7 for an
/// address, X.6.9 for a UTF-8 header; RFC 6531 section 3.4).
pub fn refused(need: Needs, host: &str) -> Outcome {
    let host: String = host.chars().filter(|c| c.is_ascii_graphic()).take(255).collect();
    Outcome::Bounced(match need {
        Needs::Address => format!(
            "550 5.6.7 the receiving server {host} does not support SMTPUTF8, which this \
             UTF-8 address needs (RFC 6531 section 3.4); the message was not sent"
        ),
        Needs::Header => format!(
            "550 5.6.9 the receiving server {host} does not support SMTPUTF8, which this \
             message's UTF-8 header needs (RFC 6531 section 3.4); the message was not sent"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_local_parts_and_headers_need_smtputf8_unicode_domains_and_bodies_do_not() {
        let ascii = b"From: a@x.test\r\nSubject: hi\r\n\r\nK\xc3\xa4se im Text\r\n";
        let to = |r: &str| vec![r.to_owned()];
        assert_eq!(needs("a@x.test", &to("b@y.test"), ascii), None);
        assert_eq!(needs("a@x.test", &to("b@b\u{fc}cher.example"), ascii), None);
        assert_eq!(needs("a@x.test", &to("\u{7528}\u{6237}@y.test"), ascii), Some(Needs::Address));
        let header = "From: a@x.test\r\nTo: \u{7528}\u{6237}@y.test\r\n\r\nhi\r\n";
        assert_eq!(needs("a@x.test", &to("b@y.test"), header.as_bytes()), Some(Needs::Header));
        let Outcome::Bounced(reply) = refused(Needs::Address, "mx.y.test") else {
            panic!("a permanent failure")
        };
        assert!(reply.starts_with("550 5.6.7 the receiving server mx.y.test"), "{reply}");
        // Not a reason to suppress the address: it is fine, the server is not.
        assert!(!crate::bounce::classify(&reply).suppresses());
    }
}
