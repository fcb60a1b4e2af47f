//! Address syntax: what we accept as a domain, a local part and an email address. Deliberately
//! stricter than RFC 5322 (no quoted local parts, no comments, no address literals): those forms
//! are legal but in practice only ever seen in abuse and in broken input.
//!
//! Internationalized addresses (RFC 6531, SMTPUTF8) are accepted where a peer declared it can
//! carry them (`parse_intl`): a local part may hold UTF-8, and a domain in its Unicode form
//! (U-label) is turned into its A-label (`xn--`) form by IDNA (UTS #46), so a hosted domain,
//! stored ASCII-only, is compared in one form whichever way a sender wrote it.

/// Longest address that fits in an SMTP path (RFC 5321 4.5.3.1.3 minus the angle brackets).
const MAX_ADDRESS: usize = 254;
const MAX_LOCAL: usize = 64;
const MAX_DOMAIN: usize = 253;

/// An address split into its parts; the domain is lower-cased, the local part kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address<'a> {
    pub local: &'a str,
    pub domain: String,
}

/// Checks a domain name and returns it lower-cased without a trailing dot.
pub fn normalize_domain(input: &str) -> Result<String, &'static str> {
    let name = input.trim().trim_end_matches('.');
    if name.is_empty() {
        return Err("the domain is empty");
    }
    if !name.is_ascii() {
        return Err("the domain must be ASCII; write internationalized names in their xn-- form");
    }
    if name.len() > MAX_DOMAIN {
        return Err("the domain is longer than 253 characters");
    }
    let name = name.to_ascii_lowercase();
    let mut labels = 0;
    for label in name.split('.') {
        labels += 1;
        if label.is_empty() || label.len() > 63 {
            return Err("each label of the domain must be 1 to 63 characters");
        }
        if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err("the domain may only contain letters, digits, hyphens and dots");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a domain label may not start or end with a hyphen");
        }
    }
    if labels < 2 {
        return Err("the domain needs at least two labels, such as example.com");
    }
    if name.rsplit('.').next().is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit())) {
        return Err("the domain's last label may not be numeric");
    }
    Ok(name)
}

fn is_atext(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&b)
}

/// Checks a local part written as a dot-atom.
pub fn check_local_part(local: &str) -> Result<(), &'static str> {
    if local.is_empty() {
        return Err("the local part (before @) is empty");
    }
    if local.len() > MAX_LOCAL {
        return Err("the local part (before @) is longer than 64 characters");
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err("the local part may not start or end with a dot or contain two dots in a row");
    }
    if !local.bytes().all(|b| b == b'.' || is_atext(b)) {
        return Err(
            "the local part may only contain letters, digits, dots and !#$%&'*+/=?^_`{|}~-",
        );
    }
    Ok(())
}

/// A domain in its ASCII form: an ASCII name as `normalize_domain` gives it, a Unicode name
/// turned into its A-labels first (`bücher.example` -> `xn--bcher-kva.example`).
pub fn ascii_domain(input: &str) -> Result<String, &'static str> {
    let name = input.trim().trim_end_matches('.');
    if name.is_ascii() {
        return normalize_domain(name);
    }
    let ascii = idna::domain_to_ascii(name)
        .map_err(|_| "the domain is not a valid internationalized domain name")?;
    normalize_domain(&ascii)
}

/// Checks a local part that may hold UTF-8 (RFC 6531 section 3.3: atext extended by UTF-8
/// characters); an ASCII one is held to `check_local_part`. Whitespace, control characters and
/// U+FFFD (what invalid UTF-8 became on the way in) are refused.
pub fn check_intl_local_part(local: &str) -> Result<(), &'static str> {
    if local.is_ascii() {
        return check_local_part(local);
    }
    if local.len() > MAX_LOCAL {
        return Err("the local part (before @) is longer than 64 bytes");
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err("the local part may not start or end with a dot or contain two dots in a row");
    }
    let fits = |c: char| {
        if c.is_ascii() {
            c == '.' || is_atext(c as u8)
        } else {
            !c.is_control() && !c.is_whitespace() && c != '\u{FFFD}'
        }
    };
    if !local.chars().all(fits) {
        return Err("the local part holds a character no address may hold");
    }
    Ok(())
}

/// Parses `local@domain` where either part may be internationalized (only for peers that
/// declared SMTPUTF8); the domain comes back in its A-label form. ASCII input gets exactly what
/// `parse` gives.
pub fn parse_intl(input: &str) -> Result<Address<'_>, &'static str> {
    let input = input.trim();
    if input.is_ascii() {
        return parse(input);
    }
    if input.len() > MAX_ADDRESS {
        return Err("the address is longer than 254 bytes");
    }
    let Some((local, domain)) = input.rsplit_once('@') else {
        return Err("the address has no @");
    };
    check_intl_local_part(local)?;
    let domain = ascii_domain(domain)?;
    Ok(Address { local, domain })
}

/// Whether carrying `address` in an SMTP envelope needs SMTPUTF8: a UTF-8 local part does, a
/// Unicode domain does not (its A-label form says the same in ASCII).
pub fn needs_smtputf8(address: &str) -> bool {
    let local = address.rsplit_once('@').map_or(address, |(local, _)| local);
    !local.is_ascii()
}

/// `address` as an SMTP envelope carries it: its domain in A-label form when it converts;
/// otherwise as given (the receiver judges it).
pub fn envelope_form(address: &str) -> String {
    match address.rsplit_once('@') {
        Some((local, domain)) if !domain.is_ascii() => match ascii_domain(domain) {
            Ok(ascii) => format!("{local}@{ascii}"),
            Err(_) => address.to_owned(),
        },
        _ => address.to_owned(),
    }
}

/// The domain of `address` in the form hosted domains are compared in (A-labels, lower case);
/// one that does not convert is only lower-cased, so it matches no hosted domain.
pub fn domain_key(address: &str) -> String {
    let domain = address.rsplit_once('@').map_or("", |(_, d)| d);
    ascii_domain(domain).unwrap_or_else(|_| domain.to_ascii_lowercase())
}

/// `addr` of `"Name" <addr>`, or the whole text trimmed when it has no angle brackets.
pub fn bare(text: &str) -> &str {
    match (text.rfind('<'), text.rfind('>')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].trim(),
        _ => text.trim(),
    }
}

/// Whether `a` and `b` name the same mailbox as this server compares them: ASCII letters of
/// the local part without regard to case (as mailboxes are stored), the domains in A-label
/// form.
pub fn same_address(a: &str, b: &str) -> bool {
    match (a.trim().rsplit_once('@'), b.trim().rsplit_once('@')) {
        (Some((la, da)), Some((lb, db))) => {
            let da = ascii_domain(da);
            la.eq_ignore_ascii_case(lb) && da.is_ok() && da == ascii_domain(db)
        }
        _ => a.trim().eq_ignore_ascii_case(b.trim()),
    }
}

/// Parses `local@domain`.
pub fn parse(input: &str) -> Result<Address<'_>, &'static str> {
    let input = input.trim();
    if input.len() > MAX_ADDRESS {
        return Err("the address is longer than 254 characters");
    }
    let Some((local, domain)) = input.rsplit_once('@') else {
        return Err("the address has no @");
    };
    check_local_part(local)?;
    let domain = normalize_domain(domain)?;
    Ok(Address { local, domain })
}

/// Splits a recipient list written as one string: commas and line breaks separate entries, blank
/// entries are skipped.
pub fn split_list(input: &str) -> impl Iterator<Item = &str> {
    input.split([',', '\n', '\r', ';']).map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_addresses() {
        let a = parse(" Jane.Doe+news@Example.COM ").expect("valid"); // ok: test
        assert_eq!(a.local, "Jane.Doe+news");
        assert_eq!(a.domain, "example.com");
        assert!(parse("o'brien@sub.example.co.uk").is_ok());
    }

    #[test]
    fn refuses_malformed_addresses() {
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@b",
            "a..b@example.com",
            ".a@example.com",
            "a@-x.com",
            "a@x-.com",
            "a b@example.com",
            "a@exa mple.com",
            "a@example.123",
            "\"quoted\"@example.com",
            "a@ex\u{e4}mple.com",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(parse(&long_local).is_err());
    }

    #[test]
    fn splits_lists_on_commas_and_newlines() {
        let got: Vec<_> = split_list("a@x.com, b@x.com\n\nc@x.com,\r\n").collect();
        assert_eq!(got, ["a@x.com", "b@x.com", "c@x.com"]);
    }

    #[test]
    fn internationalized_addresses_parse_with_their_domain_in_a_labels() {
        let a = parse_intl("用户@例子.测试").expect("valid"); // ok: test
        assert_eq!(a.local, "用户");
        assert_eq!(a.domain, "xn--fsqu00a.xn--0zwm56d");
        let b = parse_intl("jürgen@Bücher.Example").expect("valid"); // ok: test
        assert_eq!((b.local, b.domain.as_str()), ("jürgen", "xn--bcher-kva.example"));
        assert_eq!(parse_intl("Jane@Example.com"), parse("Jane@Example.com"));
        for bad in [
            "a b\u{e4}@x.example",
            "\u{e4}\u{FFFD}@x.example",
            "\u{e4}\u{7}@x.example",
            ".\u{e4}@x.example",
        ] {
            assert!(parse_intl(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse("用户@example.com").is_err(), "plain parse stays ASCII-only");
    }

    #[test]
    fn envelope_forms_and_comparisons_use_a_labels() {
        assert!(needs_smtputf8("用户@example.com"));
        assert!(!needs_smtputf8("user@bücher.example"));
        assert_eq!(envelope_form("user@bücher.example"), "user@xn--bcher-kva.example");
        assert_eq!(envelope_form("用户@example.com"), "用户@example.com");
        assert_eq!(domain_key("x@Bücher.Example"), "xn--bcher-kva.example");
        assert!(same_address("Sales@xn--bcher-kva.example", "sales@bücher.example"));
        assert!(!same_address("sales@bücher.example", "sales@bucher.example"));
        assert!(!same_address("a@x.example", "b@x.example"));
    }

    #[test]
    fn domains_are_normalized() {
        assert_eq!(normalize_domain("Example.COM.").as_deref(), Ok("example.com"));
        assert!(normalize_domain("localhost").is_err());
    }
}
