//! The base subject of RFC 5256 section 2.1: what SORT SUBJECT compares and THREAD groups by.
//! The subject arrives decoded (RFC 2047 words turned into text); it is upper-cased here once,
//! which makes the Re:/Fwd: leaders case-insensitive and gives the comparison form
//! (i;unicode-casemap sorts "_" after letters, as Dovecot does). Every step removes text, so
//! the loops end; the work is linear in the subject per removal, and the subject is capped.

/// Subjects longer than this are cut (on a character boundary) before extraction: a real
/// subject is a line, and extraction rescans the text after each removal.
pub const MAX_SUBJECT: usize = 4096;

/// The base subject of a decoded subject, upper-cased, and whether the subject was a reply or
/// a forward (it had a Re:/Fwd: leader, a "(fwd)" trailer or a "[fwd: ...]" wrapper), which
/// THREAD=REFERENCES's subject grouping needs.
pub fn base_subject(decoded: &str) -> (String, bool) {
    let cut = decoded.char_indices().take_while(|(i, _)| *i < MAX_SUBJECT).last();
    let end = cut.map_or(0, |(i, c)| i + c.len_utf8());
    // (1) whitespace runs (tabs and unfolded line ends included) become one space.
    let mut s = String::with_capacity(end);
    for word in decoded[..end].split(|c: char| c.is_whitespace()).filter(|w| !w.is_empty()) {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(word);
    }
    let s = s.to_uppercase();
    let mut t: &str = &s;
    let mut reply = false;
    loop {
        // (2) trailers: "(FWD)" and whitespace, from the end.
        loop {
            let trimmed = t.trim_end_matches(' ');
            if let Some(rest) = trimmed.strip_suffix("(FWD)") {
                reply = true;
                t = rest;
            } else {
                t = trimmed;
                break;
            }
        }
        // (3)-(5) leaders and blobs, until neither is left.
        loop {
            if let Some(rest) = leader(t) {
                reply |= !t.starts_with(' ');
                t = rest;
                continue;
            }
            match blob(t) {
                Some(rest) if !rest.is_empty() => t = rest,
                _ => break,
            }
        }
        // (6) "[FWD: ...]" wraps a forwarded subject: unwrap it and start over.
        match t.strip_prefix("[FWD:").and_then(|r| r.strip_suffix(']')) {
            Some(inner) => {
                reply = true;
                t = inner;
            }
            None => break,
        }
    }
    (t.to_owned(), reply)
}

/// `subj-leader = (*subj-blob subj-refwd) / WSP`: the text after it, if `t` starts with one.
fn leader(t: &str) -> Option<&str> {
    if let Some(rest) = t.strip_prefix(' ') {
        return Some(rest);
    }
    let mut u = t;
    loop {
        if let Some(rest) = refwd(u) {
            return Some(rest);
        }
        u = blob(u)?;
    }
}

/// `subj-refwd = ("re" / ("fw" ["d"])) *WSP [subj-blob] ":"`.
fn refwd(t: &str) -> Option<&str> {
    let rest =
        t.strip_prefix("RE").or_else(|| t.strip_prefix("FWD")).or_else(|| t.strip_prefix("FW"))?;
    let rest = rest.trim_start_matches(' ');
    let rest = blob(rest).unwrap_or(rest);
    rest.strip_prefix(':')
}

/// `subj-blob = "[" *BLOBCHAR "]" *WSP`: the text after it.
fn blob(t: &str) -> Option<&str> {
    let inner = t.strip_prefix('[')?;
    let close = inner.find([']', '['])?;
    if !inner[close..].starts_with(']') {
        return None;
    }
    Some(inner[close + 1..].trim_start_matches(' '))
}

#[cfg(test)]
mod tests {
    use super::base_subject;

    fn base(s: &str) -> String {
        base_subject(s).0
    }

    #[test]
    fn leaders_trailers_and_blobs_go() {
        assert_eq!(base("a"), "A");
        assert_eq!(base("[foo] Fwd: [bar] Re: fw: b (fWd)  (fwd)"), "B");
        assert_eq!(base("Re: [FWD: c]"), "C");
        assert_eq!(base("re: [fwd: [fwd: re: [fwd: babylon]]]"), "BABYLON");
        assert_eq!(base("Ad: Re: Ad: Re: Ad: x"), "AD: RE: AD: RE: AD: X");
        assert_eq!(base("b (a)"), "B (A)");
        assert_eq!(base("Re:\tmany \t  spaces "), "MANY SPACES");
        assert_eq!(base("RE [x]: fw : y"), "Y");
    }

    #[test]
    fn a_lone_blob_stays_and_empty_subjects_are_empty() {
        assert_eq!(base("[xyz]"), "[XYZ]");
        assert_eq!(base("[a] [b] c"), "C");
        assert_eq!(base(" "), "");
        assert_eq!(base("Re:"), "");
        assert_eq!(base("[unclosed Re: x"), "[UNCLOSED RE: X");
    }

    #[test]
    fn replies_and_forwards_are_told_apart() {
        assert!(!base_subject("hello").1);
        assert!(base_subject("Re: hello").1);
        assert!(base_subject("hello (fwd)").1);
        assert!(base_subject("[Fwd: hello]").1);
        assert!(!base_subject("[list] hello").1, "a blob alone is not a reply");
    }

    #[test]
    fn long_subjects_are_cut_on_a_character() {
        let long = "é".repeat(super::MAX_SUBJECT);
        assert!(base(&long).len() <= super::MAX_SUBJECT + 2);
    }
}
