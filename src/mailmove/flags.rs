//! IMAP flags as the file formats carry them: Maildir's info letters (`:2,FRS`, Dovecot's
//! keyword letters a-z) and mbox's `Status`, `X-Status` and `X-Keywords` headers.

/// Maildir's flag letters and the IMAP flags they mean, in ASCII order (names list them so).
const LETTERS: [(u8, &str); 6] = [
    (b'D', "\\Draft"),
    (b'F', "\\Flagged"),
    (b'P', "$Forwarded"),
    (b'R', "\\Answered"),
    (b'S', "\\Seen"),
    (b'T', "\\Deleted"),
];

/// The most keywords a Maildir folder can name by letter (a-z).
pub const MAX_LETTER_KEYWORDS: usize = 26;

/// The IMAP flags of a Maildir name's info (`2,FRSa` -> `\Flagged \Answered \Seen` and the
/// folder's keyword `a`); unknown letters are left out.
pub fn from_maildir_info(info: &str, keywords: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for b in info.bytes() {
        if let Some((_, flag)) = LETTERS.iter().find(|(l, _)| *l == b) {
            out.push((*flag).to_owned());
        } else if b.is_ascii_lowercase()
            && let Some(k) = keywords.get(usize::from(b - b'a'))
        {
            out.push(k.clone());
        }
    }
    out.dedup();
    out
}

/// The info letters of a message's flags, keywords by their letter in `keywords` (which grows
/// with new ones while it has room). The letters come sorted, as Dovecot expects.
pub fn to_maildir_info(flags: &[String], keywords: &mut Vec<String>) -> String {
    let mut letters: Vec<u8> = Vec::new();
    for flag in flags {
        if let Some((l, _)) = LETTERS.iter().find(|(_, f)| f.eq_ignore_ascii_case(flag)) {
            letters.push(*l);
            continue;
        }
        if flag.starts_with('\\') {
            continue;
        }
        let at = match keywords.iter().position(|k| k == flag) {
            Some(at) => at,
            None if keywords.len() < MAX_LETTER_KEYWORDS => {
                keywords.push(flag.clone());
                keywords.len() - 1
            }
            None => continue,
        };
        letters.push(b'a' + u8::try_from(at).unwrap_or(0));
    }
    letters.sort_unstable();
    letters.dedup();
    String::from_utf8(letters).unwrap_or_default()
}

/// The flags mbox status headers give: `Status` (R read), `X-Status` (A answered, F flagged,
/// T draft, D deleted) and `X-Keywords` (keywords split by spaces or commas).
pub fn from_mbox_headers(status: &str, x_status: &str, keywords: &str) -> Vec<String> {
    let mut out = Vec::new();
    if status.contains('R') {
        out.push("\\Seen".to_owned());
    }
    for (letter, flag) in
        [('A', "\\Answered"), ('F', "\\Flagged"), ('T', "\\Draft"), ('D', "\\Deleted")]
    {
        if x_status.contains(letter) {
            out.push(flag.to_owned());
        }
    }
    let words = keywords.split([' ', ',', '\t']).filter(|w| valid_keyword(w));
    out.extend(words.map(str::to_owned));
    out
}

/// The values of `Status`, `X-Status` and `X-Keywords` for a message's flags.
pub fn to_mbox_headers(flags: &[String]) -> (String, String, String) {
    let has = |f: &str| flags.iter().any(|x| x.eq_ignore_ascii_case(f));
    let status = if has("\\Seen") { "RO" } else { "O" }.to_owned();
    let x_status: String =
        [('A', "\\Answered"), ('F', "\\Flagged"), ('T', "\\Draft"), ('D', "\\Deleted")]
            .iter()
            .filter(|(_, f)| has(f))
            .map(|(l, _)| *l)
            .collect();
    let keywords: Vec<&str> =
        flags.iter().filter(|f| !f.starts_with('\\')).map(String::as_str).collect();
    (status, x_status, keywords.join(" "))
}

/// Whether a word can be an IMAP keyword (an atom: no specials, no controls, not a system flag).
pub fn valid_keyword(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 100
        && word.bytes().all(|b| b.is_ascii_graphic() && !b"(){%*\"\\]".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maildir_letters_round_trip_with_keywords() {
        let keywords = vec!["$Label1".to_owned(), "work".to_owned()];
        let flags = from_maildir_info("2,FRSb", &keywords);
        assert_eq!(flags, ["\\Flagged", "\\Answered", "\\Seen", "work"]);
        let mut out = Vec::new();
        assert_eq!(to_maildir_info(&flags, &mut out), "FRSa");
        assert_eq!(out, ["work"]);
    }

    #[test]
    fn a_27th_keyword_has_no_letter_and_is_left_out() {
        let mut keywords: Vec<String> = (0..26).map(|i| format!("k{i}")).collect();
        assert_eq!(to_maildir_info(&["k27".to_owned(), "\\Seen".to_owned()], &mut keywords), "S");
    }

    #[test]
    fn mbox_headers_round_trip() {
        let flags: Vec<String> = ["\\Seen", "\\Answered", "\\Flagged", "$Work"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (s, x, k) = to_mbox_headers(&flags);
        assert_eq!((s.as_str(), x.as_str(), k.as_str()), ("RO", "AF", "$Work"));
        assert_eq!(from_mbox_headers(&s, &x, &k), flags);
        assert_eq!(from_mbox_headers("O", "", "a, (bad b"), ["a", "b"]);
    }
}
