//! The disposable-domain list (see the header of `disposable_domains.txt` for its source and
//! licence), compiled into the binary and loaded into a set on first use.

use std::collections::HashSet;
use std::sync::OnceLock;

const LIST: &str = include_str!("disposable_domains.txt");

fn domains() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        LIST.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
    })
}

/// Whether `domain` (lower-case) or one of its parent domains is a known disposable domain.
pub fn is_disposable(domain: &str) -> bool {
    let set = domains();
    let mut rest = domain;
    loop {
        if set.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count() -> usize {
        domains().len()
    }

    #[test]
    fn knows_common_disposable_domains_and_their_subdomains() {
        assert!(count() >= 2000, "only {} domains", count());
        assert!(is_disposable("mailinator.com"));
        assert!(is_disposable("eu.mailinator.com"));
        assert!(!is_disposable("gmail.com"));
        assert!(!is_disposable("example.com"));
    }
}
