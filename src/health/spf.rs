//! SPF (RFC 7208): a parser for one record, a static count of the DNS lookups a record tree costs,
//! and `check_host` evaluation of an IP address, all over the `Resolve` trait.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

mod eval;

pub use eval::{Published, Tree, Verdict, check_host, fetch, walk};

/// RFC 7208 4.6.4: mechanisms and modifiers that cause DNS lookups, over the whole evaluation.
pub const LOOKUP_LIMIT: usize = 10;
/// RFC 7208 4.6.4: an `mx` mechanism may name at most this many hosts.
pub(crate) const MX_HOST_LIMIT: usize = 10;
/// Include/redirect nesting we follow; real records never come close, loops would.
pub(crate) const MAX_DEPTH: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qualifier {
    Pass,
    Fail,
    SoftFail,
    Neutral,
}

impl Qualifier {
    pub fn symbol(self) -> char {
        match self {
            Qualifier::Pass => '+',
            Qualifier::Fail => '-',
            Qualifier::SoftFail => '~',
            Qualifier::Neutral => '?',
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    All,
    Include(String),
    A { domain: Option<String>, v4: u8, v6: u8 },
    Mx { domain: Option<String>, v4: u8, v6: u8 },
    Ptr(Option<String>),
    Ip4(Ipv4Addr, u8),
    Ip6(Ipv6Addr, u8),
    Exists(String),
}

impl Mechanism {
    /// Whether evaluating it costs one of the ten DNS lookups.
    pub fn looks_up(&self) -> bool {
        matches!(
            self,
            Mechanism::Include(_)
                | Mechanism::A { .. }
                | Mechanism::Mx { .. }
                | Mechanism::Ptr(_)
                | Mechanism::Exists(_)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub qualifier: Qualifier,
    pub mechanism: Mechanism,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub directives: Vec<Directive>,
    pub redirect: Option<String>,
    pub exp: Option<String>,
}

impl Record {
    /// The qualifier of an `all` mechanism, if the record has one.
    pub fn all(&self) -> Option<Qualifier> {
        self.directives.iter().find(|d| d.mechanism == Mechanism::All).map(|d| d.qualifier)
    }
}

/// Whether a TXT string is an SPF record at all (the version tag, then a space or the end).
pub fn is_spf(text: &str) -> bool {
    let t = text.as_bytes();
    t.len() >= 6 && t[..6].eq_ignore_ascii_case(b"v=spf1") && (t.len() == 6 || t[6] == b' ')
}

/// Parses one record; the error names the offending term.
pub fn parse(text: &str) -> Result<Record, String> {
    if !is_spf(text) {
        return Err("an SPF record starts with `v=spf1`".into());
    }
    let mut record = Record::default();
    for term in text[6..].split(' ').filter(|t| !t.is_empty()) {
        if let Some((name, value)) = modifier(term) {
            check_macro_string(value).map_err(|e| format!("`{term}`: {e}"))?;
            let slot = match name.to_ascii_lowercase().as_str() {
                "redirect" => &mut record.redirect,
                "exp" => &mut record.exp,
                // RFC 7208 6: unknown modifiers are ignored.
                _ => continue,
            };
            if slot.is_some() {
                return Err(format!("`{name}=` may appear only once"));
            }
            domain_spec(value).map_err(|e| format!("`{term}`: {e}"))?;
            *slot = Some(value.to_owned());
        } else {
            record.directives.push(directive(term).map_err(|e| format!("`{term}`: {e}"))?);
        }
    }
    Ok(record)
}

/// `name=value` when the term is a modifier (a name made of ALPHA *(ALPHA / DIGIT / - _ .)).
fn modifier(term: &str) -> Option<(&str, &str)> {
    let (name, value) = term.split_once('=')?;
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (first_ok && rest_ok).then_some((name, value))
}

fn directive(term: &str) -> Result<Directive, String> {
    let (qualifier, body) = match term.as_bytes()[0] {
        b'+' => (Qualifier::Pass, &term[1..]),
        b'-' => (Qualifier::Fail, &term[1..]),
        b'~' => (Qualifier::SoftFail, &term[1..]),
        b'?' => (Qualifier::Neutral, &term[1..]),
        _ => (Qualifier::Pass, term),
    };
    let split = body.find([':', '/']).unwrap_or(body.len());
    let (name, rest) = body.split_at(split);
    let arg = rest.strip_prefix(':');
    let mechanism = match name.to_ascii_lowercase().as_str() {
        "all" if rest.is_empty() => Mechanism::All,
        "all" => return Err("`all` takes no argument".into()),
        "include" => Mechanism::Include(required_domain(arg)?),
        "exists" => Mechanism::Exists(required_domain(arg)?),
        "ptr" => Mechanism::Ptr(arg.map(domain_spec).transpose()?),
        "a" | "mx" => {
            let (spec, v4, v6) = dual_cidr(rest)?;
            let domain = match spec {
                "" => None,
                s => {
                    Some(domain_spec(s.strip_prefix(':').ok_or("expected `:` before the domain")?)?)
                }
            };
            if name.eq_ignore_ascii_case("a") {
                Mechanism::A { domain, v4, v6 }
            } else {
                Mechanism::Mx { domain, v4, v6 }
            }
        }
        "ip4" => {
            let (addr, len) = network(arg.ok_or("ip4 needs an address, as in ip4:192.0.2.1")?)?;
            let ip: Ipv4Addr =
                addr.parse().map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
            Mechanism::Ip4(ip, prefix(len, 32)?)
        }
        "ip6" => {
            let (addr, len) = network(arg.ok_or("ip6 needs an address, as in ip6:2001:db8::1")?)?;
            let ip: Ipv6Addr =
                addr.parse().map_err(|_| format!("{addr:?} is not an IPv6 address"))?;
            Mechanism::Ip6(ip, prefix(len, 128)?)
        }
        "" => return Err("a qualifier without a mechanism".into()),
        other => return Err(format!("unknown mechanism `{other}`")),
    };
    Ok(Directive { qualifier, mechanism })
}

fn required_domain(arg: Option<&str>) -> Result<String, String> {
    domain_spec(arg.ok_or("needs a domain, as in include:_spf.example.com")?)
}

/// Splits `[:domain][/n][//m]` into the domain part and the IPv4 and IPv6 prefix lengths.
fn dual_cidr(rest: &str) -> Result<(&str, u8, u8), String> {
    let (rest, v6) = match rest.rsplit_once("//") {
        Some((head, n)) if n.bytes().all(|b| b.is_ascii_digit()) => (head, Some(n)),
        _ => (rest, None),
    };
    let (rest, v4) = match rest.rsplit_once('/') {
        Some((head, n)) if n.bytes().all(|b| b.is_ascii_digit()) => (head, Some(n)),
        _ => (rest, None),
    };
    Ok((rest, prefix(v4, 32)?, prefix(v6, 128)?))
}

fn network(arg: &str) -> Result<(&str, Option<&str>), String> {
    Ok(match arg.split_once('/') {
        Some((addr, len)) => (addr, Some(len)),
        None => (arg, None),
    })
}

fn prefix(len: Option<&str>, max: u8) -> Result<u8, String> {
    match len {
        None => Ok(max),
        Some(n) => n
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(|| format!("prefix length must be 0 to {max}; got {n:?}")),
    }
}

/// A domain-spec: a valid macro-string whose literal form, when it has no macros, is a domain.
fn domain_spec(spec: &str) -> Result<String, String> {
    check_macro_string(spec)?;
    if !spec.contains('%') {
        let name = spec.trim_end_matches('.');
        let labels: Vec<&str> = name.split('.').collect();
        let label_ok = |l: &&str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if labels.len() < 2 || !labels.iter().all(label_ok) {
            return Err(format!("{spec:?} is not a domain name"));
        }
        if labels.last().is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit())) {
            return Err(format!("{spec:?} ends in a numeric label"));
        }
    }
    Ok(spec.to_owned())
}

fn check_macro_string(spec: &str) -> Result<(), String> {
    let ctx = Macros {
        ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        domain: "example.com",
        sender_domain: "example.com",
        helo: "example.com",
    };
    expand(spec, &ctx).map(|_| ())
}

/// The values macros expand to (RFC 7208 7). The sender is `postmaster@` the checked domain: a
/// health check has no real envelope.
pub struct Macros<'a> {
    pub ip: IpAddr,
    pub domain: &'a str,
    pub sender_domain: &'a str,
    pub helo: &'a str,
}

pub fn expand(spec: &str, m: &Macros<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(spec.len());
    let mut rest = spec;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            Some('%') => out.push('%'),
            Some('_') => out.push(' '),
            Some('-') => out.push_str("%20"),
            Some('{') => {
                let end = after.find('}').ok_or("unterminated macro: `%{` without `}`")?;
                out.push_str(&macro_value(&after[1..end], m)?);
                rest = &after[end + 1..];
                continue;
            }
            _ => return Err("a `%` must start %{..}, %%, %_ or %-".into()),
        }
        rest = &after[1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn macro_value(body: &str, m: &Macros<'_>) -> Result<String, String> {
    let mut chars = body.chars();
    let letter = chars.next().ok_or("empty macro `%{}`")?;
    let value = match letter.to_ascii_lowercase() {
        's' => format!("postmaster@{}", m.sender_domain),
        'l' => "postmaster".to_owned(),
        'o' => m.sender_domain.to_owned(),
        'd' => m.domain.to_owned(),
        'i' => match m.ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => nibbles(v6).join("."),
        },
        'p' => "unknown".to_owned(),
        'v' => if m.ip.is_ipv4() { "in-addr" } else { "ip6" }.to_owned(),
        'h' => m.helo.to_owned(),
        other => return Err(format!("unknown macro letter `{other}`")),
    };
    let spec: String = chars.collect();
    let digits: String = spec.chars().take_while(char::is_ascii_digit).collect();
    let mut tail = &spec[digits.len()..];
    let reverse = tail.starts_with(['r', 'R']);
    if reverse {
        tail = &tail[1..];
    }
    if let Some(bad) = tail.chars().find(|c| !".-+,/_=".contains(*c)) {
        return Err(format!("`{bad}` is not a macro delimiter"));
    }
    let delimiters: Vec<char> = if tail.is_empty() { vec!['.'] } else { tail.chars().collect() };
    let mut parts: Vec<&str> = value.split(|c| delimiters.contains(&c)).collect();
    if reverse {
        parts.reverse();
    }
    if !digits.is_empty() {
        let keep: usize =
            digits.parse().ok().filter(|n| *n > 0).ok_or("a macro keeps at least 1 part")?;
        let skip = parts.len().saturating_sub(keep);
        parts.drain(..skip);
    }
    Ok(parts.join("."))
}

/// The 32 hex nibbles of an IPv6 address, most significant first.
pub fn nibbles(ip: Ipv6Addr) -> Vec<String> {
    ip.octets().iter().flat_map(|b| [b >> 4, b & 0xf]).map(|n| format!("{n:x}")).collect()
}

pub fn in_network(
    ip: IpAddr,
    v4_net: Option<(Ipv4Addr, u8)>,
    v6_net: Option<(Ipv6Addr, u8)>,
) -> bool {
    match (ip, v4_net, v6_net) {
        (IpAddr::V4(ip), Some((net, len)), _) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), _, Some((net, len))) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
