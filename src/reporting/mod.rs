//! Reports in: every hosted domain answers `dmarc-reports@` and `tls-reports@` (the zone
//! `domain add` prints names them in `rua=`). Mail to them is claimed here before any inbox:
//! its DMARC aggregate (XML: plain, gzip or zip) or TLS-RPT (JSON: plain or gzip) attachments
//! are read under bounds (`unpack`, `dmarc`, `tlsrpt`) and stored per domain; everything else
//! sent there is dropped, never filed in a mailbox. The summaries are read by the API.
//!
//! Reports out: the DMARC aggregate reports we send about mail our MX received
//! (`reports.dmarc_send`): `feedback` writes one, `outgoing` sends each when its period ends.

pub mod dmarc;
pub mod feedback;
pub mod outgoing;
pub mod summary;
pub mod tlsrpt;
pub mod unpack;

use mail_parser::{MimeHeaders, PartType};

use crate::error::{Error, Result};
use crate::inbound::{Arrival, Claim, Claimant};
use crate::store::{DmarcReport, Store, TlsReport};

/// The local parts of the report addresses (lower case).
pub const DMARC_LOCAL: &str = "dmarc-reports";
pub const TLS_LOCAL: &str = "tls-reports";
/// Parts of one message looked at; a report message carries one attachment.
const MAX_PARTS: usize = 8;

/// What one message to a report address held.
#[derive(Debug, Default)]
pub struct Found {
    pub dmarc: Vec<DmarcReport>,
    pub tls: Vec<TlsReport>,
    /// Why parts were refused (for the log).
    pub refused: Vec<String>,
}

/// Reads every report in a message's attachments (or its single body), bounded.
pub fn extract(raw: &[u8]) -> Found {
    let mut found = Found::default();
    let bounded = crate::mime::bound(raw);
    let Some(message) = bounded.parse() else {
        found.refused.push("unparseable message".into());
        return found;
    };
    let candidates = message.parts.iter().filter(|p| match &p.body {
        PartType::Binary(_) | PartType::InlineBinary(_) => true,
        PartType::Text(_) => p.content_type().is_some_and(|ct| {
            ct.subtype().is_some_and(|s| s.contains("xml") || s.contains("json"))
        }),
        _ => false,
    });
    for part in candidates.take(MAX_PARTS) {
        let doc = match unpack::document(part.contents(), unpack::MAX_DOCUMENT) {
            Ok(doc) => doc,
            Err(e) => {
                found.refused.push(e.to_string());
                continue;
            }
        };
        // XML starts with `<` (after a byte order mark or blanks), JSON with `{`.
        let first = doc
            .iter()
            .copied()
            .find(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
        let outcome = match first {
            Some(b'<') => dmarc::parse(&doc).map(|r| found.dmarc.push(r)),
            Some(b'{') => tlsrpt::parse(&doc).map(|r| found.tls.push(r)),
            _ => Err("neither XML nor JSON".into()),
        };
        if let Err(why) = outcome {
            found.refused.push(why);
        }
    }
    found
}

/// The claimant of mail to the report addresses.
pub struct Reports {
    store: Store,
}

impl Reports {
    pub fn new(store: Store) -> Reports {
        Reports { store }
    }

    async fn take(&self, arrival: &Arrival<'_>) -> Result<Option<String>> {
        let (mut dmarc_to, mut tls_to, mut others) = (Vec::new(), Vec::new(), false);
        for r in arrival.recipients {
            let local = r.rsplit_once('@').map_or(r.as_str(), |(l, _)| l).to_ascii_lowercase();
            let domain = crate::address::domain_key(r);
            match local.as_str() {
                DMARC_LOCAL if !dmarc_to.contains(&domain) => dmarc_to.push(domain),
                TLS_LOCAL if !tls_to.contains(&domain) => tls_to.push(domain),
                DMARC_LOCAL | TLS_LOCAL => {}
                _ => others = true,
            }
        }
        if dmarc_to.is_empty() && tls_to.is_empty() {
            return Ok(None);
        }
        // Inflating and parsing take CPU time (bounded): off the runtime's threads.
        let raw = arrival.raw.to_vec();
        let found =
            tokio::task::spawn_blocking(move || extract(&raw)).await.map_err(Error::internal)?;
        for why in &found.refused {
            tracing::info!(reason = %why, "report attachment refused");
        }
        let Found { dmarc, tls, .. } = found;
        // A DMARC report sent to tls-reports@ (or the reverse) is not what that address is for.
        let dmarc: Vec<(String, DmarcReport)> = pair(&dmarc_to, dmarc);
        let tls: Vec<(String, TlsReport)> = pair(&tls_to, tls);
        let id = crate::ids::new_id("rp");
        if !dmarc.is_empty() || !tls.is_empty() {
            let now = arrival.now;
            let (found, stored) = self
                .store
                .write(move |w| -> crate::store::Result<(usize, usize)> {
                    let mut stored = 0;
                    for (i, (domain, r)) in dmarc.iter().enumerate() {
                        stored += usize::from(w.add_dmarc_report(
                            domain,
                            &format!("{id}-{i}"),
                            now,
                            r,
                        )?);
                    }
                    for (i, (domain, r)) in tls.iter().enumerate() {
                        stored +=
                            usize::from(w.add_tls_report(domain, &format!("{id}-t{i}"), now, r)?);
                    }
                    Ok((dmarc.len() + tls.len(), stored))
                })
                .await?;
            // A report seen before (the same reporter and id) is not counted twice.
            tracing::info!(found, stored, duplicates = found - stored, "aggregate reports stored");
        }
        // The report addresses are system addresses: other recipients still get their copies.
        Ok((!others).then(|| crate::ids::new_id("em")))
    }
}

/// Each report for each domain it was sent to.
fn pair<T: Clone>(domains: &[String], reports: Vec<T>) -> Vec<(String, T)> {
    domains.iter().flat_map(|d| reports.iter().map(move |r| (d.clone(), r.clone()))).collect()
}

impl Claimant for Reports {
    fn claim<'a>(&'a self, arrival: &'a Arrival<'a>) -> Claim<'a> {
        Box::pin(self.take(arrival))
    }
}
