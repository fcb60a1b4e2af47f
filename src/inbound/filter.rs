//! The spam filter of received mail, per recipient mailbox: the mailbox's classifier (over the
//! global model it starts from) scores the message, with evidence that costs little to know:
//! what SPF, DKIM and DMARC proved, the DNS blacklists that list the connecting client, and
//! whether the message answers mail sent from here, and the mailbox's history with the sender
//! (a correspondent the mailbox wrote to, or whose mail it kept, is not a spammer: mox's
//! reputation idea). Each copy gets a score, a verdict and the reasons, and an
//! `X-Spam-Status` header of its own; spam goes to Junk.

use std::net::IpAddr;

use crate::config::Inbound;
use crate::dns::Dns;
use crate::error::Result;
use crate::junk::{Features, Models, Thresholds};
use crate::store::{Folder, SenderHistory, Spam, SpamFilter, Store};

use super::auth::Verdict;
use super::dnsbl::Blacklists;

/// Points of each piece of evidence, on the classifier's scale (5.0 junks by default).
const LISTED: f64 = 2.5;
const SPF_FAIL: f64 = 1.5;
const SPF_SOFTFAIL: f64 = 0.5;
const DKIM_FAIL: f64 = 1.0;
const DMARC_FAIL: f64 = 2.0;
const ALIGNED: f64 = -1.0;
const ANSWERS_OUR_MAIL: f64 = -6.0;
const WRITTEN_TO: f64 = -4.0;
const KEPT_BEFORE: f64 = -3.0;
const JUNKED_BEFORE: f64 = 3.0;

/// The filter's handles and settings.
pub struct Filter {
    pub models: Models,
    blacklists: Blacklists,
}

/// What the filter decided for one recipient mailbox.
#[derive(Debug, Clone)]
pub struct Filed {
    pub folder: Folder,
    pub spam: Option<Spam>,
    /// The `X-Spam-Status` header line (with CRLF) for this copy.
    pub header: String,
    pub reject: bool,
}

impl Filed {
    /// A copy the filter did not judge (mail of this server): the inbox, no finding.
    pub fn inbox() -> Filed {
        Filed { folder: Folder::Inbox, spam: None, header: String::new(), reject: false }
    }
}

impl Filter {
    pub fn new(models: Models, config: &Inbound) -> Filter {
        Filter { models, blacklists: Blacklists::new(config.dnsbl.clone(), config.dnsbl_timeout) }
    }

    /// The evidence about a message that is the same for every recipient.
    pub async fn evidence(
        &self,
        dns: &Dns,
        ip: IpAddr,
        verdict: &Verdict,
        answers_our_mail: bool,
    ) -> Vec<(String, f64)> {
        let mut evidence = Vec::new();
        for zone in self.blacklists.listing(dns, ip).await {
            evidence.push((format!("DNSBL: {ip} listed by {zone}"), LISTED));
        }
        let r = &verdict.results;
        match r.spf {
            "fail" => evidence.push(("SPF: fail".to_owned(), SPF_FAIL)),
            "softfail" => evidence.push(("SPF: softfail".to_owned(), SPF_SOFTFAIL)),
            _ => {}
        }
        if r.dkim == "fail" {
            evidence.push(("DKIM: signature does not verify".to_owned(), DKIM_FAIL));
        }
        if r.dmarc == "fail" {
            evidence.push((format!("DMARC: fail for {}", verdict.from_domain), DMARC_FAIL));
        } else if verdict.aligned() {
            evidence.push((format!("authenticated as {}", verdict.from_domain), ALIGNED));
        }
        if answers_our_mail {
            evidence.push(("answers mail sent from here".to_owned(), ANSWERS_OUR_MAIL));
        }
        evidence
    }

    /// The evidence of a mailbox's history with the message's sender (its From address). Only
    /// an authenticated From (`aligned`) earns trust: anyone can write a correspondent's
    /// address into From. Having junked the sender's mail counts either way.
    pub fn history(
        sender: &str,
        history: Option<SenderHistory>,
        aligned: bool,
    ) -> Vec<(String, f64)> {
        let Some(h) = history else { return Vec::new() };
        let mut evidence = Vec::new();
        if aligned && h.wrote > 0 {
            evidence.push((
                format!("the mailbox wrote to {sender} ({} messages)", h.wrote),
                WRITTEN_TO,
            ));
        }
        if aligned && h.ham > h.spam {
            evidence.push((
                format!("mail from {sender} kept before ({} messages)", h.ham),
                KEPT_BEFORE,
            ));
        }
        if h.spam > h.ham {
            evidence.push((
                format!("mail from {sender} junked before ({} messages)", h.spam),
                JUNKED_BEFORE,
            ));
        }
        evidence
    }

    /// The verdict for `mailbox` under its `settings`, on the message's `features` (`None`
    /// when no recipient's filter is on, so they were not made); `forced`: a reason DMARC already sent the
    /// message to Junk.
    pub async fn judge(
        &self,
        store: &Store,
        mailbox: &str,
        settings: SpamFilter,
        features: Option<&Features>,
        evidence: &[(String, f64)],
        forced: Option<&str>,
    ) -> Result<Filed> {
        let Some(features) = features.filter(|_| settings.enabled) else {
            let header = match forced {
                Some(why) => format!("X-Spam-Status: Yes, {}\r\n", printable(why)),
                None => "X-Spam-Status: No, filter off for this mailbox\r\n".to_owned(),
            };
            let folder = if forced.is_some() { Folder::Junk } else { Folder::Inbox };
            let spam = forced.map(|why| Spam {
                score: 0.0,
                verdict: "spam".into(),
                reasons: vec![why.to_owned()],
                trained: None,
            });
            return Ok(Filed { folder, spam, header, reject: false });
        };
        let t = Thresholds { junk: settings.junk_threshold, reject: settings.reject_threshold };
        let found = self.models.classify_features(store, mailbox, features, evidence, &t).await?;
        let mut reasons = found.reasons.clone();
        if let Some(why) = forced {
            reasons.insert(0, why.to_owned());
        }
        let spam = found.spam || forced.is_some();
        let header = format!("X-Spam-Status: {}\r\n", found.header(settings.junk_threshold));
        let header = match (forced, found.spam) {
            // The classifier said ham but DMARC sends it to Junk: the header says Yes all the same.
            (Some(_), false) => header.replacen("X-Spam-Status: No", "X-Spam-Status: Yes", 1),
            _ => header,
        };
        Ok(Filed {
            folder: if spam { Folder::Junk } else { Folder::Inbox },
            spam: Some(Spam {
                score: found.score,
                verdict: if spam { "spam" } else { "ham" }.into(),
                reasons,
                trained: None,
            }),
            header,
            reject: found.reject,
        })
    }
}

fn printable(text: &str) -> String {
    text.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(200).collect()
}
