//! Noting received mail for the DMARC aggregate reports we send (RFC 7489 section 7.2,
//! `reports.dmarc_send`): what authentication found (`seen`, while it runs) and, once the
//! disposition is decided, one count per hosted domain the message was for, in the current
//! reporting period. Noting is best effort: a store error is logged and the message goes on,
//! as a report is a sample, not a ledger.

use std::net::IpAddr;

use mail_auth::dmarc::Policy;
use mail_auth::{DkimOutput, SpfOutput};

use super::auth::{Verdict, dkim_result_word, spf_word};
use super::disposition::Disposition;
use super::dmarc::Outcome;
use super::{Envelope, Receiver};
use crate::config::DmarcReject;
use crate::store::{DmarcPolicy, DmarcSeen, SeenDkim, SeenRow};

/// Signatures one row lists: a message may carry many, a report needs a few.
const MAX_SIGNATURES: usize = 8;

/// The report row of a message, its disposition still the one the policy asks for.
/// `spf_domain`: the domain SPF checked, and whether it was the HELO name (null sender).
/// `facts`: the client's address, the MAIL FROM and the From domain.
pub(super) fn seen(
    policy: DmarcPolicy,
    outcome: &Outcome,
    dkim: &[DkimOutput<'_>],
    spf: &SpfOutput,
    spf_domain: (&str, bool),
    facts: (IpAddr, &str, &str),
) -> DmarcSeen {
    let (ip, mail_from, header_from) = facts;
    let asks = match (outcome.result, outcome.policy) {
        ("fail", Policy::Reject) => "reject",
        ("fail", Policy::Quarantine) => "quarantine",
        _ => "none",
    };
    let signatures = dkim
        .iter()
        .filter_map(|d| {
            let signature = d.signature()?;
            Some(SeenDkim {
                domain: signature.d.to_ascii_lowercase(),
                selector: signature.s.clone(),
                result: dkim_result_word(d.result()).to_owned(),
            })
        })
        .take(MAX_SIGNATURES)
        .collect();
    let scope = if spf_domain.1 { "helo" } else { "mfrom" };
    DmarcSeen {
        policy,
        row: SeenRow {
            source_ip: ip.to_string(),
            header_from: header_from.to_owned(),
            envelope_from: mail_from.rsplit_once('@').map_or("", |(_, d)| d).to_ascii_lowercase(),
            disposition: asks.to_owned(),
            reason: None,
            dkim_aligned: outcome.dkim_aligned,
            spf_aligned: outcome.spf_aligned,
            dkim: signatures,
            spf: (
                spf_domain.0.to_ascii_lowercase(),
                scope.to_owned(),
                spf_word(spf.result()).to_owned(),
            ),
        },
    }
}

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
