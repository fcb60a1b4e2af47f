//! Following an SPF record through DNS: the static lookup count of its include/redirect tree,
//! and `check_host` (RFC 7208 4) for one address.

use std::fmt;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{LOOKUP_LIMIT, MAX_DEPTH, MX_HOST_LIMIT, Macros, Mechanism, Qualifier, Record};
use super::{expand, in_network, is_spf, parse};
use crate::health::lookup::{Answer, Resolve};

/// The SPF record(s) published at a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    One(String),
    None,
    Many(usize),
    Failed(String),
}

pub async fn fetch<R: Resolve>(r: &R, domain: &str) -> Published {
    match r.txt(domain).await {
        Answer::Found(texts) => {
            let spf: Vec<String> = texts.into_iter().filter(|t| is_spf(t)).collect();
            match spf.len() {
                0 => Published::None,
                1 => spf.into_iter().next().map_or(Published::None, Published::One),
                n => Published::Many(n),
            }
        }
        Answer::Nothing => Published::None,
        Answer::Failed(e) => Published::Failed(e),
    }
}

/// What following a record's includes and redirects found, without evaluating any address.
#[derive(Debug, Default)]
pub struct Tree {
    /// DNS-lookup terms over the whole tree (counting stops following once past the limit).
    pub lookups: usize,
    /// Problems in included or redirected records (missing, several, broken).
    pub problems: Vec<String>,
    /// Lookups that got no answer.
    pub unanswered: Vec<String>,
    /// The `all` that ends evaluation: the record's own, or the one reached through `redirect`.
    pub ending: Option<Qualifier>,
}

/// Counts the lookups of `record` (published at `domain`) and every record it includes or
/// redirects to. Targets with macros count but are not followed: they depend on the sender.
pub async fn walk<R: Resolve>(r: &R, domain: &str, record: &Record) -> Tree {
    let mut tree = Tree { ending: record.all(), ..Tree::default() };
    let mut seen = vec![domain.to_ascii_lowercase()];
    // (record, whether it decides the ending, depth)
    let mut pending: Vec<(Record, bool, usize)> = vec![(record.clone(), true, 0)];
    while let Some((rec, main_line, depth)) = pending.pop() {
        let mut targets: Vec<(String, bool)> = Vec::new();
        for d in &rec.directives {
            if d.mechanism.looks_up() {
                tree.lookups += 1;
            }
            if let Mechanism::Include(target) = &d.mechanism {
                targets.push((target.clone(), false));
            }
        }
        // RFC 7208 6.1: `redirect` is ignored when the record has an `all`.
        if let (Some(target), None) = (&rec.redirect, rec.all()) {
            tree.lookups += 1;
            targets.push((target.clone(), main_line));
        }
        for (target, decides) in targets {
            let key = target.trim_end_matches('.').to_ascii_lowercase();
            if target.contains('%') || tree.lookups > LOOKUP_LIMIT || depth >= MAX_DEPTH {
                continue;
            }
            if seen.contains(&key) {
                tree.problems.push(format!("{key} is included more than once (or in a loop)"));
                continue;
            }
            seen.push(key.clone());
            match fetch(r, &key).await {
                Published::One(text) => match parse(&text) {
                    Ok(parsed) => {
                        if decides {
                            tree.ending = parsed.all();
                        }
                        pending.push((parsed, decides, depth + 1));
                    }
                    Err(e) => {
                        tree.problems.push(format!("the SPF record of {key} is invalid: {e}"))
                    }
                },
                Published::None => tree.problems.push(format!("{key} has no SPF record")),
                Published::Many(n) => tree.problems.push(format!("{key} has {n} SPF records")),
                Published::Failed(e) => tree.unanswered.push(e),
            }
        }
    }
    tree
}

/// The result of `check_host` (RFC 7208 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    SoftFail,
    Neutral,
    None,
    PermError,
    TempError,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::SoftFail => "softfail",
            Verdict::Neutral => "neutral",
            Verdict::None => "none",
            Verdict::PermError => "permerror",
            Verdict::TempError => "temperror",
        })
    }
}

impl From<Qualifier> for Verdict {
    fn from(q: Qualifier) -> Verdict {
        match q {
            Qualifier::Pass => Verdict::Pass,
            Qualifier::Fail => Verdict::Fail,
            Qualifier::SoftFail => Verdict::SoftFail,
            Qualifier::Neutral => Verdict::Neutral,
        }
    }
}

/// Evaluates SPF for mail from `postmaster@{domain}` sent by `ip`.
pub async fn check_host<R: Resolve>(r: &R, ip: IpAddr, domain: &str, helo: &str) -> Verdict {
    let eval = Eval { r, ip, sender_domain: domain, helo, lookups: AtomicUsize::new(0) };
    eval.check(domain.to_owned(), 0).await
}

struct Eval<'a, R> {
    r: &'a R,
    ip: IpAddr,
    sender_domain: &'a str,
    helo: &'a str,
    lookups: AtomicUsize,
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl<R: Resolve> Eval<'_, R> {
    fn check(&self, domain: String, depth: usize) -> Boxed<'_, Verdict> {
        Box::pin(async move {
            if depth > MAX_DEPTH {
                return Verdict::PermError;
            }
            let record = match fetch(self.r, &domain).await {
                Published::One(text) => match parse(&text) {
                    Ok(record) => record,
                    Err(_) => return Verdict::PermError,
                },
                Published::None => return Verdict::None,
                Published::Many(_) => return Verdict::PermError,
                Published::Failed(_) => return Verdict::TempError,
            };
            for d in &record.directives {
                match self.matches(&d.mechanism, &domain, depth).await {
                    Ok(true) => return d.qualifier.into(),
                    Ok(false) => {}
                    Err(verdict) => return verdict,
                }
            }
            if let Some(target) = &record.redirect {
                if let Err(v) = self.spend() {
                    return v;
                }
                let Ok(target) = self.expand(target, &domain) else {
                    return Verdict::PermError;
                };
                return match self.check(target, depth + 1).await {
                    Verdict::None => Verdict::PermError,
                    v => v,
                };
            }
            Verdict::Neutral
        })
    }

    fn spend(&self) -> Result<(), Verdict> {
        let used = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        if used > LOOKUP_LIMIT { Err(Verdict::PermError) } else { Ok(()) }
    }

    fn expand(&self, spec: &str, domain: &str) -> Result<String, Verdict> {
        let m = Macros { ip: self.ip, domain, sender_domain: self.sender_domain, helo: self.helo };
        expand(spec, &m).map_err(|_| Verdict::PermError)
    }

    /// Whether the mechanism matches; `Err` ends evaluation with that result.
    async fn matches(&self, mech: &Mechanism, domain: &str, depth: usize) -> Result<bool, Verdict> {
        if mech.looks_up() {
            self.spend()?;
        }
        let v6 = self.ip.is_ipv6();
        match mech {
            Mechanism::All => Ok(true),
            Mechanism::Ip4(net, len) => Ok(in_network(self.ip, Some((*net, *len)), None)),
            Mechanism::Ip6(net, len) => Ok(in_network(self.ip, None, Some((*net, *len)))),
            Mechanism::A { domain: target, v4, v6: len6 } => {
                let name = self.expand(target.as_deref().unwrap_or(domain), domain)?;
                let addrs = found(self.r.addrs(&name, v6).await)?;
                Ok(addrs.iter().any(|a| self.within(*a, *v4, *len6)))
            }
            Mechanism::Mx { domain: target, v4, v6: len6 } => {
                let name = self.expand(target.as_deref().unwrap_or(domain), domain)?;
                let hosts = found(self.r.mx(&name).await)?;
                if hosts.len() > MX_HOST_LIMIT {
                    return Err(Verdict::PermError);
                }
                for (_, host) in hosts.iter().filter(|(_, h)| !h.is_empty()) {
                    let addrs = found(self.r.addrs(host, v6).await)?;
                    if addrs.iter().any(|a| self.within(*a, *v4, *len6)) {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Mechanism::Ptr(target) => {
                let name = self.expand(target.as_deref().unwrap_or(domain), domain)?;
                Ok(self.ptr_matches(&name).await)
            }
            Mechanism::Exists(target) => {
                let name = self.expand(target, domain)?;
                Ok(!found(self.r.addrs(&name, false).await)?.is_empty())
            }
            Mechanism::Include(target) => {
                let name = self.expand(target, domain)?;
                match self.check(name, depth + 1).await {
                    Verdict::Pass => Ok(true),
                    Verdict::Fail | Verdict::SoftFail | Verdict::Neutral => Ok(false),
                    Verdict::TempError => Err(Verdict::TempError),
                    Verdict::PermError | Verdict::None => Err(Verdict::PermError),
                }
            }
        }
    }

    /// RFC 7208 5.5: a name the client's address points back to (PTR), that points to the
    /// address again (A or AAAA), and is `target` or under it. Only the first ten names count,
    /// and DNS trouble on the way means no match, never an error.
    async fn ptr_matches(&self, target: &str) -> bool {
        let target = target.trim_end_matches('.').to_ascii_lowercase();
        let Answer::Found(names) = self.r.ptr(self.ip).await else { return false };
        for name in names.iter().take(PTR_NAME_LIMIT) {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let under = name == target
                || name.strip_suffix(&target).is_some_and(|head| head.ends_with('.'));
            if !under {
                continue;
            }
            if let Answer::Found(addrs) = self.r.addrs(&name, self.ip.is_ipv6()).await
                && addrs.contains(&self.ip)
            {
                return true;
            }
        }
        false
    }

    fn within(&self, addr: IpAddr, v4: u8, v6: u8) -> bool {
        match addr {
            IpAddr::V4(a) => in_network(self.ip, Some((a, v4)), None),
            IpAddr::V6(a) => in_network(self.ip, None, Some((a, v6))),
        }
    }
}

/// RFC 7208 4.6.4: the names of a PTR answer `ptr` looks at.
const PTR_NAME_LIMIT: usize = 10;

/// Records of a lookup inside evaluation: nothing is an empty set, no answer a temporary error.
fn found<T>(answer: Answer<Vec<T>>) -> Result<Vec<T>, Verdict> {
    match answer {
        Answer::Found(v) => Ok(v),
        Answer::Nothing => Ok(Vec::new()),
        Answer::Failed(_) => Err(Verdict::TempError),
    }
}
