//! A posted `multipart/form-data` form (RFC 7578), as a file upload sends it: the parts' names,
//! file names and bytes. Only what a dashboard form sends is read (no nested multiparts, no
//! transfer encodings); the body is already bounded by the route's limit, and parts are
//! counted, so a hostile body costs one linear scan at most.

use memchr::memmem;

/// The most parts a form may have (the import form has three).
const MAX_PARTS: usize = 16;
/// The most bytes of one part's headers.
const MAX_HEAD: usize = 4096;

/// One part of the form.
#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    pub filename: Option<String>,
    pub data: &'a [u8],
}

/// The boundary of a `multipart/form-data` Content-Type, if it is one.
pub fn boundary(content_type: &str) -> Option<String> {
    let mut pieces = content_type.split(';');
    let essence = pieces.next()?.trim();
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let value = pieces.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_owned())
    })?;
    // RFC 2046: 1 to 70 characters.
    (!value.is_empty() && value.len() <= 70).then_some(value)
}

/// A parameter (`name="..."`) of a Content-Disposition value.
fn param(disposition: &str, name: &str) -> Option<String> {
    disposition.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The parts of `body`; `None` when it is not a well-formed form of at most `MAX_PARTS` parts.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Option<Vec<Part<'a>>> {
    let delimiter = format!("\r\n--{boundary}");
    let finder = memmem::Finder::new(delimiter.as_bytes());
    // The first delimiter may open the body without the CRLF before it.
    let first = &delimiter.as_bytes()[2..];
    let mut rest = body
        .strip_prefix(first)
        .or_else(|| finder.find(body).map(|at| &body[at + delimiter.len()..]))?;
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = memmem::find(&rest[..rest.len().min(MAX_HEAD + 4)], b"\r\n\r\n")?;
        let head = std::str::from_utf8(&rest[..head_end]).ok()?;
        let after = &rest[head_end + 4..];
        let end = finder.find(after)?;
        let disposition = head.split("\r\n").find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case("content-disposition").then_some(v.trim())
        })?;
        if parts.len() == MAX_PARTS {
            return None;
        }
        parts.push(Part {
            name: param(disposition, "name")?,
            filename: param(disposition, "filename"),
            data: &after[..end],
        });
        rest = &after[end + delimiter.len()..];
    }
}

/// The bytes of part `name`, if the form has it.
pub fn field<'a>(parts: &'a [Part<'_>], name: &str) -> Option<&'a [u8]> {
    parts.iter().find(|p| p.name == name).map(|p| p.data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_and_a_field() {
        let ct = "multipart/form-data; boundary=----WebKitFormBoundaryX1";
        let b = boundary(ct).expect("a boundary"); // ok: test
        let body = format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\ntok\r\n\
             --{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"leads.csv\"\r\n\
             Content-Type: text/csv\r\n\r\nemail\r\na@x.test\r\n\r\n--{b}--\r\n"
        );
        let parts = parse(body.as_bytes(), &b).expect("parses"); // ok: test
        assert_eq!(field(&parts, "csrf"), Some(&b"tok"[..]));
        assert_eq!(field(&parts, "file"), Some(&b"email\r\na@x.test\r\n"[..]));
        assert_eq!(parts[1].filename.as_deref(), Some("leads.csv"));
    }

    #[test]
    fn hostile_bodies_are_refused() {
        assert_eq!(boundary("text/plain; boundary=x"), None);
        assert_eq!(boundary(&format!("multipart/form-data; boundary={}", "a".repeat(71))), None);
        for body in
            ["", "--x", "--x\r\nno-head", "--x\r\nContent-Disposition: form-data\r\n\r\nv\r\n--x--"]
        {
            assert_eq!(parse(body.as_bytes(), "x"), None, "{body:?}");
        }
        let many: String = (0..20)
            .map(|i| format!("--x\r\nContent-Disposition: form-data; name=\"f{i}\"\r\n\r\nv\r\n"))
            .collect();
        assert_eq!(parse(format!("{many}--x--").as_bytes(), "x"), None);
        let unterminated = "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue";
        assert_eq!(parse(unterminated.as_bytes(), "x"), None);
    }
}
