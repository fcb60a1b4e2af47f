//! Authentication-Results fields a sender wrote in our name. RFC 8601 section 5: a receiver
//! removes, before it adds its own, every Authentication-Results field that carries its own
//! authserv-id, since a reader trusts those as ours. Fields naming other servers stay.

use std::borrow::Cow;

/// `raw` without the header fields `Authentication-Results: <host>; ...` (the authserv-id
/// compared without case, a version number after it allowed). The body is never touched.
pub fn without_our_results<'a>(raw: &'a [u8], host: &str) -> Cow<'a, [u8]> {
    let head_end = header_end(raw);
    let mut kept: Option<Vec<u8>> = None;
    let mut at = 0;
    while at < head_end {
        let end = field_end(raw, at, head_end);
        let field = &raw[at..end];
        if names_us(field, host) {
            kept.get_or_insert_with(|| raw[..at].to_vec());
        } else if let Some(k) = kept.as_mut() {
            k.extend_from_slice(field);
        }
        at = end;
    }
    match kept {
        Some(mut k) => {
            k.extend_from_slice(&raw[head_end..]);
            Cow::Owned(k)
        }
        None => Cow::Borrowed(raw),
    }
}

/// Where the header ends: at the blank line (which belongs to the body), or at the end.
fn header_end(raw: &[u8]) -> usize {
    let mut at = 0;
    while at < raw.len() {
        if raw[at..].starts_with(b"\r\n") || raw[at] == b'\n' {
            return at;
        }
        at = memchr::memchr(b'\n', &raw[at..]).map_or(raw.len(), |n| at + n + 1);
    }
    raw.len()
}

/// The end of the field starting at `at`: after its last continuation line.
fn field_end(raw: &[u8], at: usize, limit: usize) -> usize {
    let mut end = at;
    loop {
        end = memchr::memchr(b'\n', &raw[end..limit]).map_or(limit, |n| end + n + 1);
        if end >= limit || !matches!(raw[end], b' ' | b'\t') {
            return end;
        }
    }
}

fn names_us(field: &[u8], host: &str) -> bool {
    let Some(colon) = memchr::memchr(b':', field) else { return false };
    if !field[..colon].trim_ascii().eq_ignore_ascii_case(b"authentication-results") {
        return false;
    }
    let value = &field[colon + 1..];
    let id_end = value.iter().position(|b| *b == b';').unwrap_or(value.len());
    // `authserv-id [version]`, possibly folded, possibly with a comment after it.
    let id = value[..id_end]
        .split(|b| b.is_ascii_whitespace() || *b == b'(')
        .find(|w| !w.is_empty())
        .unwrap_or_default();
    id.eq_ignore_ascii_case(host.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::without_our_results;

    #[test]
    fn fields_in_our_name_go_and_others_stay() {
        let raw = b"Received: x\r\nAuthentication-Results: MX.Alpha.test 1;\r\n dkim=pass\r\n\
            Authentication-Results: mx.google.com; spf=pass\r\nauthentication-results :\r\n \
            mx.alpha.test; dmarc=pass\r\nSubject: s\r\n\r\nAuthentication-Results: mx.alpha.test; body\r\n";
        let out = without_our_results(raw, "mx.alpha.test");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Received: x\r\nAuthentication-Results: mx.google.com; spf=pass\r\nSubject: s\r\n\r\n\
             Authentication-Results: mx.alpha.test; body\r\n"
        );
        let clean = b"Subject: s\nAuthentication-Results: other; x\n\nbody";
        assert!(matches!(
            without_our_results(clean, "mx.alpha.test"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
