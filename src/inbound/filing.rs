//! Filing a message nobody claimed: each recipient mailbox's spam filter decides its folder and
//! finding, and copies filed alike share one stored message with their `X-Spam-Status` header.

use crate::error::{Error, Result};
use crate::junk::{Features, features_of};
use crate::store::{Email, Prepared, Spam};

use super::auth::Verdict;
use super::filter::{Filed, Filter};
use super::{Envelope, Receiver};

impl Receiver {
    /// The spam filter's decision for each copy, in the order of `copies`.
    pub(super) async fn filed(
        &self,
        envelope: &Envelope,
        verdict: &Verdict,
        message: &mail_parser::Message<'_>,
        copies: &[(String, String)],
        parents: &[String],
        (sender, forced): (&str, Option<String>),
    ) -> Result<Vec<Filed>> {
        if copies.is_empty() {
            return Ok(Vec::new());
        }
        let (asked, mailboxes, from) = (parents.to_vec(), copies.to_vec(), sender.to_owned());
        let (answers, settings) = self
            .store
            .read(move |r| {
                let mut answers = false;
                for parent in &asked {
                    answers |= r.email_for_message_id(parent)?.is_some();
                }
                let mut settings = Vec::with_capacity(mailboxes.len());
                for (_, mailbox) in &mailboxes {
                    let (local, domain) =
                        mailbox.rsplit_once('@').unwrap_or((mailbox.as_str(), ""));
                    let found = r.mailbox(domain, local)?;
                    let history = r.sender_history(mailbox, &from)?;
                    settings.push((found.and_then(|m| m.spam_filter).unwrap_or_default(), history));
                }
                Ok::<_, Error>((answers, settings))
            })
            .await?;
        let evidence = self.filter.evidence(&self.dns, envelope.ip, verdict, answers).await;
        // Made once for every mailbox, from the parse the message had anyway; only when some
        // recipient's filter is on.
        let features = settings.iter().any(|(s, _)| s.enabled).then(|| features(message));
        let mut filed = Vec::with_capacity(copies.len());
        for ((_, mailbox), (settings, history)) in copies.iter().zip(settings) {
            let mut evidence = evidence.clone();
            evidence.extend(Filter::history(sender, history, verdict.aligned()));
            let found = self
                .filter
                .judge(
                    &self.store,
                    mailbox,
                    settings,
                    features.as_ref(),
                    &evidence,
                    forced.as_deref(),
                )
                .await?;
            filed.push(found);
        }
        Ok(filed)
    }
}

/// Messages up to this size are tokenized where the session runs (about 0.1 ms for a typical
/// one); a larger one may take milliseconds, during which the runtime moves other sessions off
/// this thread.
const INLINE_LIMIT: usize = 128 * 1024;

fn features(message: &mail_parser::Message<'_>) -> Features {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if message.raw_message.len() > INLINE_LIMIT && multi {
        tokio::task::block_in_place(|| features_of(message))
    } else {
        features_of(message)
    }
}

/// Copies filed alike: one folder, one finding, one stored message (with its own
/// `X-Spam-Status` header) shared by them.
#[derive(Clone)]
pub(super) struct Group {
    pub template: Email,
    pub copies: Vec<(String, String)>,
    /// The `deliveredTo` of each copy.
    pub delivered: Vec<String>,
    pub raw: Vec<u8>,
    pub prepared: Prepared,
}

/// `full` is the message and the length of our trace headers on top: each copy's
/// `X-Spam-Status` goes right below them.
pub(super) fn groups(
    template: &Email,
    (copies, delivered): (&[(String, String)], &[String]),
    filed: Vec<Filed>,
    (full, trace): (&[u8], usize),
) -> Vec<Group> {
    // Per group: the filing, its copies and their `deliveredTo`.
    type Members = (Vec<(String, String)>, Vec<String>);
    let mut groups: Vec<(Filed, Members)> = Vec::new();
    for ((copy, f), to) in copies.iter().zip(filed).zip(delivered) {
        match groups.iter_mut().find(|(g, _)| g.header == f.header && g.folder == f.folder) {
            Some((_, (members, addresses))) => {
                members.push(copy.clone());
                addresses.push(to.clone());
            }
            None => groups.push((f, (vec![copy.clone()], vec![to.clone()]))),
        }
    }
    groups
        .into_iter()
        .map(|(f, (copies, delivered))| {
            let mut template = template.clone();
            template.summary.folder = f.folder;
            template.spam = f.spam.map(|s| Spam { trained: None, ..s });
            let (ours, theirs) = full.split_at(trace.min(full.len()));
            let raw = [ours, f.header.as_bytes(), theirs].concat();
            template.summary.size = raw.len() as u64;
            let prepared = Prepared::of(&raw, copies.len());
            Group { template, copies, delivered, raw, prepared }
        })
        .collect()
}
