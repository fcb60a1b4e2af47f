//! A quick look over a whole message that over-counts what could nest: every Content-Type field
//! anywhere (headers or not) naming a multipart or a message, and every `--`. Most mail has a
//! handful of each and needs nothing more; a message with more is scanned part by part.

use super::fields::{self, Field};

/// A Content-Type field that could open a container.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    /// Where the field's name starts (what is renamed to make it opaque).
    pub at: usize,
    pub multipart: bool,
}

#[derive(Default, Debug)]
pub struct Survey {
    pub candidates: Vec<Candidate>,
    /// Occurrences of `--`: the parser starts a part at `--boundary` anywhere, so this bounds
    /// the number of parts.
    pub dashes: usize,
    /// Whether a transfer encoding the parser decodes appears: an attached message under it is
    /// parsed from its decoded bytes, which this look cannot see.
    pub decoded_encoding: bool,
}

pub fn survey(raw: &[u8]) -> Survey {
    let mut out =
        Survey { dashes: memchr::memmem::find_iter(raw, b"--").count(), ..Survey::default() };
    let mut open: Option<(usize, Vec<u8>)> = None;
    for line in fields::lines(raw) {
        if fields::is_continuation(line.text) {
            if let Some((_, value)) = open.as_mut() {
                value.extend_from_slice(line.text);
            }
            continue;
        }
        if let Some((at, value)) = open.take() {
            note(&mut out, at, &value);
        }
        match fields::field(line.text) {
            Some((Field::ContentType, value, name)) => {
                open = Some((line.at + name, value.to_vec()))
            }
            Some((Field::TransferEncoding, value, _)) if fields::is_decoded(value) => {
                out.decoded_encoding = true;
            }
            _ => {}
        }
    }
    if let Some((at, value)) = open {
        note(&mut out, at, &value);
    }
    out
}

fn note(out: &mut Survey, at: usize, value: &[u8]) {
    let lower = value.to_ascii_lowercase();
    let multipart = memchr::memmem::find(&lower, b"multipart").is_some();
    if multipart || memchr::memmem::find(&lower, b"message").is_some() {
        out.candidates.push(Candidate { at, multipart });
    }
}

#[cfg(test)]
mod tests {
    use super::survey;

    #[test]
    fn counts_every_field_that_could_nest() {
        let raw = b"Content-Type: multipart/mixed;\r\n boundary=x\r\n\r\n--x\r\n\
            content-type:\r\n\tmessage/rfc822\r\n\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n";
        let s = survey(raw);
        let found: Vec<(usize, bool)> = s.candidates.iter().map(|c| (c.at, c.multipart)).collect();
        assert_eq!(found, [(0, true), (52, false)]);
        assert_eq!(s.dashes, 3);
        assert!(!s.decoded_encoding);
    }
}
