//! A search string as matching uses it. The client's bytes are converted from the command's
//! CHARSET to UTF-8 once, then lower-cased once, and matched in linear time (memmem) against
//! text lower-cased the same way: decoded header values and body text. The bytes as sent are
//! also kept, ASCII letters lower-cased, for matching undecoded bytes (a raw header field).

use encoding_rs::Encoding;
use memchr::memmem::Finder;

/// Raw hay is lower-cased this much at a time for matching, so matching allocates no more.
const WINDOW: usize = 64 * 1024;

/// The charsets a BADCHARSET answer names: those a client should fall back to.
pub const ADVERTISED: [&str; 2] = ["UTF-8", "US-ASCII"];

/// What a command's search strings are written in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Charset {
    Utf8,
    Other(&'static Encoding),
}

/// A CHARSET the server cannot convert from.
#[derive(Debug, PartialEq)]
pub struct UnknownCharset(pub String);

/// The charset named by a SEARCH command (none: UTF-8). US-ASCII is read as UTF-8: the two
/// agree on ASCII, and a client that says US-ASCII but sends 8-bit bytes sends UTF-8 in
/// practice. Any other label encoding_rs knows (the WHATWG labels: ISO-8859-*, windows-125x,
/// KOI8-R, Shift_JIS, ISO-2022-JP, GB18030, ...) converts; labels it maps to its "replacement"
/// decoder (ISO-2022-KR, HZ-GB-2312) are as good as unknown.
pub fn charset(name: Option<&str>) -> Result<Charset, UnknownCharset> {
    let Some(name) = name else { return Ok(Charset::Utf8) };
    let label = name.trim();
    if ["us-ascii", "ascii", "utf-8", "utf8"].iter().any(|a| label.eq_ignore_ascii_case(a)) {
        return Ok(Charset::Utf8);
    }
    match Encoding::for_label_no_replacement(label.as_bytes()) {
        Some(e) if e == encoding_rs::UTF_8 => Ok(Charset::Utf8),
        Some(e) => Ok(Charset::Other(e)),
        None => Err(UnknownCharset(label.to_owned())),
    }
}

/// Lower-cases text for matching, the same way for hay and needle. Character by character
/// (not `str::to_lowercase`, which makes a word-final capital sigma a final sigma) so a needle
/// lowers as it does inside a longer word; ASCII takes the fast path.
pub fn lower(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.chars().flat_map(char::to_lowercase).collect()
}

pub struct Needle {
    /// The bytes as sent, ASCII letters lower-cased.
    raw: Vec<u8>,
    /// The string in UTF-8, lower-cased; empty means "anything".
    text: Finder<'static>,
    /// Whether `text` differs from `raw` (non-ASCII needles, or a conversion happened), so raw
    /// hay is tried with both.
    text_differs: bool,
}

impl Needle {
    /// `bytes` as written in `charset`; bytes invalid in it become U+FFFD in the text form (the
    /// raw form still matches them).
    pub fn new(bytes: &[u8], charset: Charset) -> Needle {
        let text = match charset {
            Charset::Utf8 => String::from_utf8_lossy(bytes),
            Charset::Other(e) => e.decode_without_bom_handling(bytes).0,
        };
        let text = lower(&text);
        let raw = bytes.to_ascii_lowercase();
        let text_differs = text.as_bytes() != raw.as_slice();
        Needle { raw, text: Finder::new(text.as_bytes()).into_owned(), text_differs }
    }

    /// Whether lower-cased text holds the needle.
    pub fn in_text(&self, lowered: &str) -> bool {
        self.text.needle().is_empty() || self.text.find(lowered.as_bytes()).is_some()
    }

    /// Whether undecoded bytes hold the needle, as sent or in UTF-8, ASCII letters in either
    /// case.
    pub fn in_raw(&self, hay: &[u8]) -> bool {
        contains(hay, &self.raw) || (self.text_differs && contains(hay, self.text.needle()))
    }
}

/// Whether `hay` holds `needle` (already lower-cased), ASCII letters in either case. The hay is
/// lower-cased a window at a time (windows overlap by the needle's length, so a match across
/// two is seen), and memmem finds the needle in time linear in the hay.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    let finder = Finder::new(needle);
    let overlap = needle.len() - 1;
    let mut lowered = Vec::with_capacity(hay.len().min(WINDOW) + overlap);
    let mut start = 0;
    while start < hay.len() {
        let end = (start + WINDOW).min(hay.len());
        lowered.clear();
        lowered.extend(hay[start.saturating_sub(overlap)..end].iter().map(u8::to_ascii_lowercase));
        if finder.find(&lowered).is_some() {
            return true;
        }
        start = end;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: some window of the hay equals the needle, ASCII case aside.
    fn naive(hay: &[u8], needle: &[u8]) -> bool {
        needle.is_empty() || hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
    }

    #[test]
    fn contains_agrees_with_the_definition_across_window_edges() {
        let mut hay = vec![b'a'; 3 * WINDOW + 17];
        for (at, byte) in [(WINDOW - 2, b'X'), (WINDOW, b'y'), (2 * WINDOW + 5, b'Z')] {
            hay[at] = byte;
        }
        let needles: [&[u8]; 8] =
            [b"", b"a", b"AAx", b"xAY", b"aaaaZ", b"zA", b"b", b"aaaaaaaaaaaaaaaaaaaaaaaaaab"];
        for needle in needles {
            let lowered = needle.to_ascii_lowercase();
            assert_eq!(contains(&hay, &lowered), naive(&hay, needle), "{needle:?}");
        }
        assert!(!contains(b"ab", b"abc"));
        assert!(contains(b"Hello World", b"o wor"));
        let long = vec![b'a'; super::super::MAX_NEEDLE];
        assert!(contains(&hay, &long) && !contains(&hay[..long.len() - 1], &long));
    }

    #[test]
    fn charsets_known_to_encoding_rs_convert_and_others_are_refused() {
        assert_eq!(charset(None), Ok(Charset::Utf8));
        assert_eq!(charset(Some("utf-8")), Ok(Charset::Utf8));
        assert_eq!(charset(Some("US-ASCII")), Ok(Charset::Utf8));
        for label in ["ISO-8859-1", "windows-1252", "KOI8-R", "ISO-2022-JP", "Shift_JIS"] {
            assert!(matches!(charset(Some(label)), Ok(Charset::Other(_))), "{label}");
        }
        for label in ["X-UNKNOWN", "UTF-7", "ISO-2022-KR", ""] {
            assert_eq!(charset(Some(label)), Err(UnknownCharset(label.to_owned())), "{label}");
        }
    }

    #[test]
    fn needles_convert_from_their_charset_and_lower_case_beyond_ascii() {
        let latin1 = charset(Some("ISO-8859-1")).expect("known"); // ok: test
        let n = Needle::new(b"CAF\xc9", latin1);
        assert!(n.in_text(&lower("Un café noir")));
        assert!(n.in_raw(b"un caf\xc9 noir"), "the Latin-1 bytes as sent match raw Latin-1");
        let koi8 = charset(Some("KOI8-R")).expect("known"); // ok: test
        // "ПРИВЕТ" in KOI8-R.
        let n = Needle::new(b"\xf0\xf2\xe9\xf7\xe5\xf4", koi8);
        assert!(n.in_text(&lower("Он сказал: привет!")));
        let jis = charset(Some("ISO-2022-JP")).expect("known"); // ok: test
        // "日本" in ISO-2022-JP.
        let n = Needle::new(b"\x1b$BF|K\\\x1b(B", jis);
        assert!(n.in_text(&lower("日本語のメール")));
        let n = Needle::new("ΟΔΟΣ".as_bytes(), Charset::Utf8);
        assert!(n.in_text(&lower("ΟΔΟΣΤΡΩΜΑ")), "a capital sigma lowers alike in a longer word");
        assert!(
            Needle::new(b"", Charset::Utf8).in_text("") && Needle::new(b"", latin1).in_raw(b"")
        );
    }
}
