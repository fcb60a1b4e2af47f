//! The reply inbox (extensions.md, "Outreach"): a record per received copy that answers
//! sequence or campaign mail, written where inbound links the answer to what we sent, with the
//! classification it computed. Keys are (domain, the copy's email id): ids are time-ordered, so
//! the newest replies are one backward range read away. Lead labels live on the enrollment and
//! are joined into the records as they are read, so changing a label is one write.

use std::ops::{Bound, ControlFlow as Flow};

use super::kv::ReadableTable;

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::sequences::Enrollment;
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};
use crate::autoreply::Classification;

/// The longest label, in characters.
pub const MAX_LABEL: usize = 40;

/// A reply as the inbox lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyRecord {
    pub email_id: String,
    pub mailbox: String,
    pub from: String,
    pub subject: String,
    pub received_at: u64,
    pub sequence_id: Option<String>,
    pub enrollment_id: Option<String>,
    pub classification: Classification,
    /// The enrollment's label, joined in when read (not stored here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A received copy that answers message `original`: its id, mailbox, sender, subject and time.
pub struct Answer<'a> {
    pub email_id: &'a str,
    pub mailbox: &'a str,
    pub from: &'a str,
    pub subject: &'a str,
    pub received_at: u64,
}

impl Wtx<'_> {
    /// Files `answer` in the inbox of the domain that sent `original`, when that was sequence
    /// or campaign mail (other mail of ours has no inbox of replies).
    pub fn file_reply(
        &mut self,
        original: &str,
        answer: &Answer<'_>,
        class: Classification,
    ) -> Result<()> {
        let Some(sent) = self.load_email(original)? else { return Ok(()) };
        if sent.enrollment_id.is_none() && sent.batch_id.is_none() {
            return Ok(());
        }
        let record = ReplyRecord {
            email_id: answer.email_id.to_owned(),
            mailbox: answer.mailbox.to_owned(),
            from: answer.from.to_owned(),
            subject: answer.subject.to_owned(),
            received_at: answer.received_at,
            sequence_id: sent.sequence_id.clone(),
            enrollment_id: sent.enrollment_id.clone(),
            classification: class,
            label: None,
        };
        let key = (sent.domain(), answer.email_id);
        self.tx.open_table(REPLIES)?.insert(key, encode(&record)?.as_slice())?;
        Ok(())
    }

    /// Sets (or with `None` clears) the label of enrollment `id` of sequence `sequence` of
    /// `domain`; 404 for ids that are not the domain's.
    pub fn set_enrollment_label(
        &mut self,
        domain: &str,
        (sequence, id): (&str, &str),
        label: Option<String>,
    ) -> Result<Enrollment> {
        let mut e = self
            .load_enrollment(id)?
            .filter(|e| e.domain == domain && e.sequence_id == sequence)
            .ok_or_else(|| Error::not_found("enrollment"))?;
        e.label = label;
        e.updated_at = crate::ids::now_ms();
        self.save_enrollment(&e)?;
        Ok(e)
    }
}

impl Rtx {
    /// Up to `limit` replies of `domain`, newest first, older than the copy `before`; and
    /// whether more follow. Each carries its enrollment's label.
    pub fn replies_page(
        &self,
        domain: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<ReplyRecord>, bool)> {
        let table = self.tx.open_table(REPLIES)?;
        // Email ids are ASCII letters, digits and `_`: DEL sorts after every one of them.
        let hi = match before {
            Some(id) => Bound::Excluded((domain, id)),
            None => Bound::Included((domain, "\x7f")),
        };
        let mut out: Vec<ReplyRecord> = Vec::new();
        let mut more = false;
        table.scan::<(&str, &str)>(
            (Bound::Included((domain, "")), hi),
            true,
            |(d, _), value| {
                if d != domain {
                    return Ok(Flow::Break(()));
                }
                if out.len() == limit {
                    more = true;
                    return Ok(Flow::Break(()));
                }
                out.push(decode(value)?);
                Ok(Flow::Continue(()))
            },
        )?;
        let enrollments = self.tx.open_table(ENROLLMENTS)?;
        for record in &mut out {
            let Some(id) = &record.enrollment_id else { continue };
            if let Some(v) = enrollments.get(id.as_str())? {
                record.label = decode::<Enrollment>(v.value())?.label;
            }
        }
        Ok((out, more))
    }
}
