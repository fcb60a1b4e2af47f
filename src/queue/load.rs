//! What a delivery attempt loads before it sends: one read snapshot for the queue entry, the
//! message, its raw bytes or attachments, its domain and which recipients are hosted here. On a
//! shared store the same snapshot says whether this node holds the message's claim (each node
//! claims what it accepts, in the transaction that queues it), so the common attempt needs no
//! write before it sends.

use std::collections::HashSet;

use super::{Deps, Result, local};
use crate::ids::now_ms;
use crate::store::{Domain, Email};

/// What an attempt sends from.
pub(super) struct Loaded {
    pub email: Email,
    pub domain: Domain,
    pub submitted: Option<Vec<u8>>,
    pub parts: Vec<Vec<u8>>,
    pub hosted: HashSet<String>,
}

pub(super) enum Load {
    /// The entry left the queue since the scan that started this attempt: nothing to do.
    Gone,
    /// On a shared store, this node holds no current claim on the message.
    Unclaimed,
    /// The message or its domain was removed: the entry is dropped.
    Orphan,
    Ready(Box<Loaded>),
}

/// Loads entry `(due, id)` for an attempt, in one snapshot.
pub(super) async fn load(app: &Deps, due: u64, id: &str) -> Result<Load> {
    let owned = id.to_owned();
    let node = app.node.is_shared().then(|| (app.node.name().to_owned(), app.node.claim_margin()));
    let loaded = app
        .store
        .read(move |r| -> crate::store::Result<Load> {
            r.attempt_ahead(due, &owned, node.as_ref().map(|(name, _)| name.as_str()))?;
            // The scan that started this attempt may predate the commit of the previous one:
            // only an entry that is still queued in this snapshot is ours to work on.
            if !r.is_queued(due, &owned)? {
                return Ok(Load::Gone);
            }
            // A claim that lapses within the margin is not good enough to start sending on.
            if let Some((name, margin)) = &node
                && !r.holds_claim(&owned, name, now_ms().saturating_add(*margin))?
            {
                return Ok(Load::Unclaimed);
            }
            let Some(email) = r.email_by_id(&owned)? else {
                return Ok(Load::Orphan);
            };
            let recipients = email.deliveries.iter().map(|d| d.recipient.as_str());
            let domains: Vec<String> = recipients
                .map(crate::address::domain_key)
                .chain([email.domain().to_owned()])
                .collect();
            r.domains_ahead(domains.iter().map(String::as_str))?;
            let Some(domain) = r.domain(email.domain())? else {
                return Ok(Load::Orphan);
            };
            let submitted = r.submitted_raw(&owned)?;
            let parts = if email.summary.has_attachments { r.sent_parts(&owned)? } else { vec![] };
            let hosted = local::hosted_domains(r, &email)?;
            Ok(Load::Ready(Box::new(Loaded { email, domain, submitted, parts, hosted })))
        })
        .await?;
    Ok(loaded)
}
