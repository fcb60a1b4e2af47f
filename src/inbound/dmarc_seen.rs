//! Noting received mail for the DMARC aggregate reports we send (RFC 7489 section 7.2,
//! `reports.dmarc_send`): what authentication found (`auth::seen`, while it runs) and, once
//! the disposition is decided, one count per hosted domain the message was for, in the current
//! reporting period. Noting is best effort: a store error is logged and the message goes on,
//! as a report is a sample, not a ledger.

use super::auth::Verdict;
use super::disposition::Disposition;
use super::{Envelope, Receiver};
use crate::config::DmarcReject;
use crate::store::DmarcSeen;

/// How harsh a disposition is, to tell a milder one than asked.
fn weight(disposition: &str) -> u8 {
    match disposition {
        "reject" => 2,
        "quarantine" => 1,
        _ => 0,
    }
}

impl Receiver {
    /// Counts the message with what we did to it, for each hosted domain it was for.
    pub(super) async fn note_dmarc(
        &self,
        envelope: &Envelope,
        verdict: &Verdict,
        done: &Disposition,
    ) {
        let (Some(interval), Some(seen)) = (self.dmarc_interval, &verdict.dmarc_seen) else {
            return;
        };
        tracing::debug!(policy = %seen.policy.domain, "received mail noted for DMARC reports");
        let trusted_forwarder = verdict.arc_sealer.as_ref().is_some_and(|sealer| {
            self.inbound.arc_trusted.iter().any(|t| t.eq_ignore_ascii_case(sealer))
        });
        let mut seen = DmarcSeen::clone(seen);
        let applied = match done {
            Disposition::Refuse(_) => "reject",
            Disposition::Junk(_) => "quarantine",
            Disposition::Deliver => "none",
        };
        let asked = std::mem::replace(&mut seen.row.disposition, applied.to_owned());
        seen.row.reason = match weight(applied).cmp(&weight(&asked)) {
            std::cmp::Ordering::Equal => None,
            // A spoof of one of our own domains, refused whatever its record says.
            std::cmp::Ordering::Greater => Some("local_policy"),
            _ if trusted_forwarder => Some("trusted_forwarder"),
            _ if asked == "reject" && self.inbound.dmarc_reject == DmarcReject::Junk => {
                Some("local_policy")
            }
            _ => Some("sampled_out"),
        }
        .map(str::to_owned);
        let mut reporters: Vec<String> = envelope
            .recipients
            .iter()
            .filter_map(|r| r.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase()))
            .collect();
        reporters.sort();
        reporters.dedup();
        let secs = interval.as_secs().max(1);
        let period = crate::ids::now_ms() / 1000 / secs * secs;
        let noted = self
            .store
            .write(move |w| -> crate::store::Result<()> {
                for reporter in &reporters {
                    w.note_dmarc(reporter, period, &seen)?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = noted {
            tracing::warn!(error = %e, "noting a message for DMARC reports");
        }
    }
}
