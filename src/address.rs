//! Address syntax: what we accept as a domain, a local part and an email address. Deliberately
//! stricter than RFC 5322 (no quoted local parts, no comments, no address literals): those forms
//! are legal but in practice only ever seen in abuse and in broken input.

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
    fn domains_are_normalized() {
        assert_eq!(normalize_domain("Example.COM.").as_deref(), Ok("example.com"));
        assert!(normalize_domain("localhost").is_err());
    }
}
