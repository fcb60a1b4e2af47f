//! The lines of a message and the few header fields that decide its MIME structure, read the
//! way a lenient parser reads them: CRLF or bare LF line ends, names in any case, folded values.

/// One line: where it starts, and its bytes without the line end.
#[derive(Clone, Copy)]
pub struct Line<'a> {
    pub at: usize,
    pub text: &'a [u8],
    /// Where the next line starts.
    pub next: usize,
}

/// The lines of `raw` in order.
pub fn lines(raw: &[u8]) -> impl Iterator<Item = Line<'_>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= raw.len() {
            return None;
        }
        let rest = &raw[at..];
        let (len, next) = match memchr::memchr(b'\n', rest) {
            Some(n) => (n, at + n + 1),
            None => (rest.len(), raw.len()),
        };
        let mut text = &rest[..len];
        if let [head @ .., b'\r'] = text {
            text = head;
        }
        let line = Line { at, text, next };
        at = next;
        Some(line)
    })
}

/// The length of "Content-Type", the field whose name is rewritten to make a part opaque.
pub const CONTENT_TYPE_LEN: usize = 12;

/// Which structural field a line starts, and the value on that line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Field {
    ContentType,
    TransferEncoding,
    Other,
}

/// The field a header line names (`None` for a continuation or a line without a colon), the
/// value's first line, and where the name starts in the line. Read as mail-parser reads a name:
/// colons and blanks before it are skipped, blanks inside it are dropped, and it ends at the
/// first colon after it starts (`::Content-Type:` and `Content - Type:` name a Content-Type).
pub fn field(text: &[u8]) -> Option<(Field, &[u8], usize)> {
    if text.first().is_none_or(|b| *b == b' ' || *b == b'\t') {
        return None;
    }
    let start = text.iter().position(|b| *b != b':' && !b.is_ascii_whitespace())?;
    let colon = start + memchr::memchr(b':', &text[start..])?;
    let name: Vec<u8> = text[start..colon]
        .iter()
        .filter(|b| !b.is_ascii_whitespace())
        .map(u8::to_ascii_lowercase)
        .collect();
    let kind = if name == b"content-type" {
        Field::ContentType
    } else if name == b"content-transfer-encoding" {
        Field::TransferEncoding
    } else {
        Field::Other
    };
    Some((kind, &text[colon + 1..], start))
}

/// Whether a line continues the field before it.
pub fn is_continuation(text: &[u8]) -> bool {
    matches!(text.first(), Some(b' ' | b'\t'))
}

fn trim_end(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |p| p + 1);
    &s[..end]
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    &s[start..]
}

/// What a Content-Type value makes of its part.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Kind {
    /// A multipart with the boundary that separates its parts; `digest` when its parts are
    /// messages unless they say otherwise (RFC 2046 section 5.1.5).
    Multipart {
        boundary: Vec<u8>,
        digest: bool,
    },
    /// An attached message (`message/rfc822` or `message/global`).
    Message,
    Leaf,
}

/// The kind of a Content-Type value (unfolded, in any case).
pub fn kind(value: &[u8]) -> Kind {
    let lower = value.to_ascii_lowercase();
    let v = trim_start(&lower);
    let mime = memchr::memchr(b';', v).map_or(v, |at| &v[..at]);
    let mime: Vec<u8> = mime.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    if mime.starts_with(b"multipart/") {
        // The boundary keeps its case: find it again in the original value.
        match boundary(value) {
            Some(boundary) => Kind::Multipart { boundary, digest: mime == b"multipart/digest" },
            None => Kind::Leaf,
        }
    } else if mime == b"message/rfc822" || mime == b"message/global" {
        Kind::Message
    } else {
        Kind::Leaf
    }
}

/// The `boundary` parameter of a Content-Type value, quoted or not.
fn boundary(value: &[u8]) -> Option<Vec<u8>> {
    let lower = value.to_ascii_lowercase();
    let at = memchr::memmem::find(&lower, b"boundary")?;
    let rest = trim_start(&value[at + b"boundary".len()..]);
    let rest = trim_start(rest.strip_prefix(b"=")?);
    let found: Vec<u8> = match rest.strip_prefix(b"\"") {
        Some(quoted) => quoted.iter().copied().take_while(|b| *b != b'"').collect(),
        None => rest
            .iter()
            .copied()
            .take_while(|b| !b.is_ascii_whitespace() && *b != b';' && *b != b'"')
            .collect(),
    };
    (!found.is_empty()).then_some(found)
}

/// Whether a Content-Transfer-Encoding value is one the parser decodes before it looks inside an
/// attached message (base64 or quoted-printable).
pub fn is_decoded(value: &[u8]) -> bool {
    let v = trim_start(value);
    let v = trim_end(v);
    v.eq_ignore_ascii_case(b"base64") || v.eq_ignore_ascii_case(b"quoted-printable")
}

/// Whether a Content-Transfer-Encoding value is base64 (else quoted-printable, when decoded).
pub fn is_base64(value: &[u8]) -> bool {
    trim_end(trim_start(value)).eq_ignore_ascii_case(b"base64")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_become_kinds() {
        let multi = |b: &str, d| Kind::Multipart { boundary: b.as_bytes().to_vec(), digest: d };
        assert_eq!(kind(b" multipart/mixed; boundary=\"Ab C\""), multi("Ab C", false));
        assert_eq!(kind(b"Multipart/Digest;\r\n boundary=x1;charset=a"), multi("x1", true));
        assert_eq!(kind(b"multipart/mixed"), Kind::Leaf);
        assert_eq!(kind(b" Message/RFC822"), Kind::Message);
        assert_eq!(kind(b"message/global; x=y"), Kind::Message);
        assert_eq!(kind(b"message/delivery-status"), Kind::Leaf);
        assert_eq!(kind(b"text/plain"), Kind::Leaf);
    }

    #[test]
    fn fields_are_named_in_any_case_with_blanks_before_the_colon() {
        assert_eq!(field(b"CONTENT-TYPE : text/plain").map(|f| f.0), Some(Field::ContentType));
        // As mail-parser reads names: colons before, blanks inside.
        // ok: test input, a field by construction
        let odd = field(b"::: Content -Type: multipart/digest; boundary=x").expect("a field"); // ok: test
        assert_eq!((odd.0, odd.2), (Field::ContentType, 4));
        assert_eq!(odd.1, b" multipart/digest; boundary=x");
        assert_eq!(field(b":::"), None);
        assert_eq!(
            field(b"content-transfer-encoding:base64").map(|f| f.0),
            Some(Field::TransferEncoding)
        );
        assert_eq!(field(b"Subject: x").map(|f| f.0), Some(Field::Other));
        assert_eq!(field(b" folded"), None);
        assert!(is_decoded(b" Base64 "));
        assert!(!is_decoded(b"7bit"));
    }

    #[test]
    fn lines_end_at_crlf_or_lf() {
        let got: Vec<(usize, &[u8])> = lines(b"a\r\nbb\n\r\nc").map(|l| (l.at, l.text)).collect();
        assert_eq!(got, [(0, &b"a"[..]), (3, b"bb"), (6, b""), (8, b"c")]);
    }
}
