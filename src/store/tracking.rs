//! Engagement with a sent message, counted per message in `TRACKING`: opens, clicks, the
//! unsubscribe, and replies (recorded by `reports`). The first open and the first click also count
//! for the message's batch or sequence and the day; an unsubscribe for its batch.

use serde::{Deserialize, Serialize};

use super::batches::Event;
use super::error::{Error, Result};
use super::events::{EventType, email_data};
use super::status::EnrollmentStatus;
use super::tables::*;
use super::{Rtx, Wtx, encode, get_json, stats};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tracking {
    pub opens: u32,
    pub clicks: u32,
    pub first_opened_at: Option<u64>,
    pub first_clicked_at: Option<u64>,
    pub unsubscribed_at: Option<u64>,
    #[serde(default)]
    pub replies: u32,
}

impl Wtx<'_> {
    /// Counts an open (`clicked == None`) or a click of a link to `clicked` in a sent message,
    /// and its batch's unique counters the first time.
    pub fn record_engagement(&mut self, id: &str, clicked: Option<&str>, at: u64) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Err(Error::not_found("message"));
        };
        let click = clicked.is_some();
        let kind = if click { EventType::EmailClicked } else { EventType::EmailOpened };
        self.emit_about(&email, kind, || {
            let recipient = email.deliveries.first().map_or("", |d| d.recipient.as_str());
            let mut data = email_data(&email, recipient);
            if let Some(url) = clicked {
                data.insert("url".into(), url.into());
            }
            data.into()
        })?;
        let mut t = self.tracking_of(id)?;
        let first = if click { t.first_clicked_at.is_none() } else { t.first_opened_at.is_none() };
        if click {
            t.clicks = t.clicks.saturating_add(1);
            t.first_clicked_at.get_or_insert(at);
        } else {
            t.opens = t.opens.saturating_add(1);
            t.first_opened_at.get_or_insert(at);
        }
        self.put_tracking(id, &t)?;
        if first {
            self.count(&email, if click { Event::Clicked } else { Event::Opened })?;
        }
        if first && stats::counted(&email) {
            self.bump_day(
                email.domain(),
                at,
                |c| if click { c.clicked += 1 } else { c.opened += 1 },
            )?;
        }
        Ok(())
    }

    /// Unsubscribes `recipient` of message `id` from the message's domain.
    pub fn record_unsubscribe(
        &mut self,
        id: &str,
        recipient: &str,
        source: &str,
        at: u64,
    ) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Err(Error::not_found("message"));
        };
        let domain = email.domain().to_owned();
        self.suppress(&domain, recipient, "unsubscribed", source, at)?;
        self.end_enrollment_of(&email, EnrollmentStatus::Cancelled, at)?;
        let mut t = self.tracking_of(id)?;
        if t.unsubscribed_at.is_none() {
            self.emit_about(&email, EventType::EmailUnsubscribed, || {
                email_data(&email, recipient).into()
            })?;
            t.unsubscribed_at = Some(at);
            self.put_tracking(id, &t)?;
            if let Some(batch) = &email.batch_id {
                self.bump_batch(batch, |b| b.unsubscribed += 1)?;
            }
        }
        Ok(())
    }

    /// The message's counters, zero when nothing was recorded yet.
    pub(super) fn tracking_of(&self, id: &str) -> Result<Tracking> {
        Ok(get_json(self, TRACKING, id)?.unwrap_or_default())
    }

    pub(super) fn put_tracking(&mut self, id: &str, tracking: &Tracking) -> Result<()> {
        self.tx.open_table(TRACKING)?.insert(id, encode(tracking)?.as_slice())?;
        Ok(())
    }
}

impl Rtx {
    pub fn tracking(&self, id: &str) -> Result<Option<Tracking>> {
        get_json(self, TRACKING, id)
    }
}
