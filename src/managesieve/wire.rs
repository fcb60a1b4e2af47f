//! ManageSieve's wire format (RFC 5804 4): a command is atoms, quoted strings and literals
//! (`{N}` or `{N+}` ending a line, then N octets, then the rest of the command). Everything is
//! bounded: a line, a literal, the words of a command, and each wait for the client. Input past
//! a bound is an error the session answers and then ends (a literal it will not read cannot be
//! skipped safely).

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The longest line of a command (a literal's octets do not count).
pub const MAX_LINE: usize = 8 * 1024;
/// The largest literal: a script, with room for its quoting.
pub const MAX_LITERAL: usize = crate::filters::MAX_SCRIPT_BYTES + 1024;
/// Words in one command (the longest, PUTSCRIPT and RENAMESCRIPT, take three).
const MAX_WORDS: usize = 4;

/// Why a command could not be read.
#[derive(Debug)]
pub enum Fault {
    /// The client closed the connection or waited too long.
    Gone,
    /// Past a bound, or not ManageSieve: answered with NO, then the session ends.
    Bad(&'static str),
}

/// A word of a command: an atom is upper-cased (command names), a string keeps its octets.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    Atom(String),
    Str(Vec<u8>),
}

impl Word {
    pub fn text(&self) -> Option<String> {
        match self {
            Word::Str(b) => String::from_utf8(b.clone()).ok(),
            Word::Atom(_) => None,
        }
    }

    /// A number argument (HAVESPACE's size, RFC 5804 2.5) as its digits: numbers are atoms.
    pub fn number(&self) -> Option<String> {
        match self {
            Word::Atom(a) if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) => {
                Some(a.clone())
            }
            _ => None,
        }
    }
}

async fn line<R: AsyncBufRead + Unpin>(r: &mut R, wait: Duration) -> Result<Vec<u8>, Fault> {
    let mut buf = Vec::new();
    let mut limited = r.take(MAX_LINE as u64 + 1);
    let read = tokio::time::timeout(wait, limited.read_until(b'\n', &mut buf)).await;
    match read {
        Ok(Ok(0)) | Err(_) | Ok(Err(_)) => Err(Fault::Gone),
        Ok(Ok(_)) if !buf.ends_with(b"\n") => {
            if buf.len() > MAX_LINE {
                Err(Fault::Bad("line too long"))
            } else {
                Err(Fault::Gone)
            }
        }
        Ok(Ok(_)) => {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            Ok(buf)
        }
    }
}

/// Reads one command's words; an empty line gives none.
pub async fn command<R: AsyncBufRead + Unpin>(
    r: &mut R,
    wait: Duration,
) -> Result<Vec<Word>, Fault> {
    let mut words = Vec::new();
    let mut text = line(r, wait).await?;
    loop {
        let literal = parse(&text, &mut words)?;
        if words.len() > MAX_WORDS {
            return Err(Fault::Bad("too many arguments"));
        }
        let Some(size) = literal else { return Ok(words) };
        if size > MAX_LITERAL {
            return Err(Fault::Bad("literal too large"));
        }
        let mut octets = vec![0; size];
        match tokio::time::timeout(wait, r.read_exact(&mut octets)).await {
            Ok(Ok(_)) => {}
            _ => return Err(Fault::Gone),
        }
        words.push(Word::Str(octets));
        text = line(r, wait).await?;
    }
}

/// Parses the words of `text` into `words`; a literal's size when the line ends with one.
fn parse(text: &[u8], words: &mut Vec<Word>) -> Result<Option<usize>, Fault> {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b' ' => i += 1,
            b'"' => {
                let mut s = Vec::new();
                i += 1;
                loop {
                    match text.get(i) {
                        None => return Err(Fault::Bad("unterminated string")),
                        Some(b'"') => break,
                        Some(b'\\') => {
                            s.push(*text.get(i + 1).ok_or(Fault::Bad("bad escape"))?);
                            i += 2;
                        }
                        Some(&c) => {
                            s.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
                words.push(Word::Str(s));
            }
            b'{' => {
                let end =
                    text[i..].iter().position(|&c| c == b'}').ok_or(Fault::Bad("bad literal"))?;
                if i + end + 1 != text.len() {
                    return Err(Fault::Bad("a literal ends its line"));
                }
                let inner = &text[i + 1..i + end];
                let digits = inner.strip_suffix(b"+").unwrap_or(inner);
                if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(Fault::Bad("bad literal size"));
                }
                let size = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse::<usize>().ok())
                    .ok_or(Fault::Bad("bad literal size"))?;
                return Ok(Some(size));
            }
            _ => {
                let end = text[i..].iter().position(|&c| c == b' ').map_or(text.len(), |e| i + e);
                let atom = String::from_utf8_lossy(&text[i..end]).to_ascii_uppercase();
                words.push(Word::Atom(atom));
                i = end;
            }
        }
    }
    Ok(None)
}

/// A string as the server sends it: quoted when short and plain, else a literal.
pub fn string(text: &str) -> String {
    if text.len() < 1024 && !text.contains(['"', '\\', '\r', '\n']) {
        format!("\"{text}\"")
    } else {
        format!("{{{}}}\r\n{text}", text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn words(input: &[u8]) -> Result<Vec<Word>, Fault> {
        let mut r = tokio::io::BufReader::new(input);
        command(&mut r, Duration::from_secs(1)).await
    }

    #[tokio::test]
    async fn reads_atoms_strings_and_literals() {
        let got = words(b"PUTSCRIPT \"a\\\"b\" {4+}\r\nkeep\r\n").await.expect("ok"); // ok: test
        assert_eq!(
            got,
            vec![
                Word::Atom("PUTSCRIPT".into()),
                Word::Str(b"a\"b".to_vec()),
                Word::Str(b"keep".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn refuses_what_is_past_its_bounds() {
        assert!(matches!(words(b"PUTSCRIPT \"a\" {999999999+}\r\n").await, Err(Fault::Bad(_))));
        let long = [b"NOOP ".as_slice(), &vec![b'a'; MAX_LINE + 10], b"\r\n"].concat();
        assert!(matches!(words(&long).await, Err(Fault::Bad(_))));
        assert!(matches!(words(b"NOOP \"open\r\n").await, Err(Fault::Bad(_))));
    }
}
