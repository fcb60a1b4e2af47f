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
    /// Counts an open (`clicked == None`) or a click of a link to `clicked` in a sent message.
    /// The first open (click) is the one that makes the `email.opened` (`email.clicked`) event
    /// and counts for the batch and the day; a later one only adds to the message's counter, so
    /// replaying a link costs no event and no more than this one row.
    pub fn record_engagement(&mut self, id: &str, clicked: Option<&str>, at: u64) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Err(Error::not_found("message"));
        };
        let click = clicked.is_some();
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
        if !first {
            return Ok(());
        }
        let kind = if click { EventType::EmailClicked } else { EventType::EmailOpened };
        self.emit_about(&email, kind, || {
            let recipient = email.deliveries.first().map_or("", |d| d.recipient.as_str());
            let mut data = email_data(&email, recipient);
            if let Some(url) = clicked {
                data.insert("url".into(), url.into());
            }
            data.into()
        })?;
        self.count(&email, if click { Event::Clicked } else { Event::Opened })?;
        if stats::counted(&email) {
            self.bump_day(
                email.domain(),
                at,
                |c| if click { c.clicked += 1 } else { c.opened += 1 },
            )?;
        }
        Ok(())
    }

    /// Adds repeated opens and clicks, `(id, opens, clicks)`, gathered in memory since their
    /// first was recorded: counters only, no events. Messages without a recorded first (gone
    /// meanwhile) are left alone.
    pub fn add_engagement(&mut self, counts: &[(String, u32, u32)]) -> Result<()> {
        for (id, opens, clicks) in counts {
            let Some(mut t) = get_json::<&str, Tracking>(self, TRACKING, id.as_str())? else {
                continue;
            };
            t.opens = t.opens.saturating_add(*opens);
            t.clicks = t.clicks.saturating_add(*clicks);
            self.put_tracking(id, &t)?;
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

#[cfg(test)]
mod tests {
    use super::super::kv::ReadableTable;
    use super::super::webhooks::Webhook;
    use super::super::{Email, Store};
    use super::*;

    #[test]
    fn only_the_first_open_and_click_make_events_and_repeats_only_add_to_the_counters() {
        let dir = std::env::temp_dir().join(format!("edgemail-tracking-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let mut email = Email::default();
        email.summary.id = "em_1".into();
        email.summary.mailbox = "a@x.test".into();
        email.send_type = Some(super::super::status::SendType::Campaign);
        let hook = Webhook {
            id: "wh_1".into(),
            domain: "x.test".into(),
            url: "https://example.com/".into(),
            events: vec!["email.opened".into(), "email.clicked".into()],
            description: None,
            enabled: true,
            secret: "whsec_AAAA".into(),
            created_at: 0,
        };
        store
            .write_blocking(move |w| -> Result<_> {
                w.insert_email(&email)?;
                w.create_webhook(&hook)?;
                for at in 1..=3 {
                    w.record_engagement("em_1", None, at)?;
                    w.record_engagement("em_1", Some("https://a.test/"), at)?;
                }
                w.add_engagement(&[("em_1".into(), 10, 20), ("em_gone".into(), 1, 1)])
            })
            .expect("record"); // ok: test
        let events = store
            .read_blocking(|r| -> Result<_> {
                Ok(r.tx.open_table(WEBHOOK_EVENTS)?.iter()?.count())
            })
            .expect("events"); // ok: test
        assert_eq!(events, 2, "one opened and one clicked event");
        let t = store.read_blocking(|r| r.tracking("em_1")).expect("read").expect("row"); // ok: test
        assert_eq!((t.opens, t.clicks, t.first_opened_at), (13, 23, Some(1)));
        assert!(store.read_blocking(|r| r.tracking("em_gone")).expect("read").is_none()); // ok: test
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
