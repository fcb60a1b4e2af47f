//! Where a recipient address leads: a mailbox named exactly, an alias (expanded through other
//! aliases and mailbox forwarding), the same address without its `+tag`, or the domain's
//! catch-all, in that order. The RCPT TO check and delivery both ask here, so what is accepted
//! is what is delivered.

use std::collections::HashSet;

use crate::error::Result;
use crate::store::{CATCH_ALL, Rtx};

/// Alias-to-alias (and forward-to-forward) steps followed before giving up: deep chains are
/// mistakes, and a cycle must end somewhere.
const MAX_DEPTH: usize = 8;

/// What one recipient address resolves to.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Targets {
    /// Hosted mailboxes (lower-cased addresses), each once.
    pub mailboxes: Vec<String>,
    /// Outside addresses to forward to, each with the alias or mailbox that forwards it (its
    /// domain is the SRS domain).
    pub outside: Vec<(String, String)>,
}

impl Targets {
    fn add_mailbox(&mut self, mailbox: &str) {
        if !self.mailboxes.iter().any(|m| m == mailbox) {
            self.mailboxes.push(mailbox.to_owned());
        }
    }

    fn add_outside(&mut self, target: &str, via: &str) {
        if !self.outside.iter().any(|(t, _)| t == target) {
            self.outside.push((target.to_owned(), via.to_owned()));
        }
    }
}

/// The targets of `local@domain` (lower-cased, domain hosted), or `None` when nothing here
/// takes mail for it. `separator` is `smtp.subaddress_separator` ("" for none).
pub(super) fn resolve(
    r: &Rtx,
    local: &str,
    domain: &str,
    separator: &str,
) -> Result<Option<Targets>> {
    let mut targets = Targets::default();
    let mut seen = HashSet::new();
    if expand(r, local, domain, 0, &mut seen, &mut targets)? {
        return Ok(Some(targets));
    }
    if !separator.is_empty()
        && let Some((base, _tag)) = local.split_once(separator)
        && !base.is_empty()
        && expand(r, base, domain, 0, &mut seen, &mut targets)?
    {
        return Ok(Some(targets));
    }
    if let Some(all) = r.alias(domain, CATCH_ALL)? {
        seen.insert(all.address.clone());
        for target in &all.targets {
            follow(r, target, &all.address, 1, &mut seen, &mut targets)?;
        }
        return Ok(Some(targets));
    }
    Ok(None)
}

/// Adds what the mailbox or alias named exactly `local@domain` leads to; false when it is
/// neither.
fn expand(
    r: &Rtx,
    local: &str,
    domain: &str,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Targets,
) -> Result<bool> {
    let address = format!("{local}@{domain}");
    if let Some(mailbox) = r.mailbox(domain, local)? {
        if !seen.insert(address.clone()) {
            return Ok(true); // reached twice (or a forwarding cycle): once is enough
        }
        if mailbox.forward_to.is_empty() || mailbox.keep_copy {
            out.add_mailbox(&address);
        }
        for target in &mailbox.forward_to {
            follow(r, target, &address, depth + 1, seen, out)?;
        }
        return Ok(true);
    }
    let Some(alias) = r.alias(domain, local)? else { return Ok(false) };
    if !seen.insert(address.clone()) {
        return Ok(true);
    }
    for target in &alias.targets {
        follow(r, target, &address, depth + 1, seen, out)?;
    }
    Ok(true)
}

/// One target of the alias or mailbox `via`: a hosted address is expanded further
/// (exact names only: a target is a deliberate address), an outside one is forwarded to.
fn follow(
    r: &Rtx,
    target: &str,
    via: &str,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Targets,
) -> Result<()> {
    let Some((local, domain)) = target.rsplit_once('@') else { return Ok(()) };
    if !r.hosts(domain)? {
        out.add_outside(target, via);
        return Ok(());
    }
    if depth > MAX_DEPTH {
        tracing::warn!(%target, "alias chain too deep; the rest of it is not followed");
        return Ok(());
    }
    if !expand(r, local, domain, depth, seen, out)? {
        tracing::warn!(%target, "an alias or forward names a hosted address that does not exist");
    }
    Ok(())
}
