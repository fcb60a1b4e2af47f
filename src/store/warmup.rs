//! Warmup enrollments: one record per mailbox holding its settings and counters. The rules that
//! change them live in the warmup engine; this file only reads and writes the records, and prunes
//! the warmup mail the engine no longer needs.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::{Folder, read_doc};
use super::error::Result;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode, get_json, scan_domain};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Warmup {
    /// Full address.
    pub mailbox: String,
    pub enabled: bool,
    pub start_limit: u32,
    pub target_limit: u32,
    pub ramp_days: u32,
    pub reply_rate: f64,
    pub enrolled_at: u64,
    /// The UTC day (days since the Unix epoch) the `*_today` counters belong to.
    pub today: u64,
    pub sent_today: u32,
    pub received_today: u32,
    pub replied_today: u32,
    pub sent_total: u64,
    pub received_total: u64,
    pub replied_total: u64,
    pub delivered_total: u64,
    pub bounced_total: u64,
    pub landed_total: u64,
    /// No new conversation starts before this time.
    pub next_send_at: u64,
    /// Ids of warmup messages sent whose delivery is not final yet.
    pub pending: Vec<String>,
}

impl Warmup {
    fn key(&self) -> (&str, &str) {
        let (local, domain) = self.mailbox.rsplit_once('@').unwrap_or((self.mailbox.as_str(), ""));
        (domain, local)
    }
}

fn warmup(tx: &impl Tables, domain: &str, local: &str) -> Result<Option<Warmup>> {
    get_json(tx, WARMUP, (domain, local))
}

impl Wtx<'_> {
    pub fn warmup(&self, domain: &str, local: &str) -> Result<Option<Warmup>> {
        warmup(self, domain, local)
    }

    pub fn put_warmup(&mut self, record: &Warmup) -> Result<()> {
        self.tx.open_table(WARMUP)?.insert(record.key(), encode(record)?.as_slice())?;
        Ok(())
    }

    /// Drops the enrollment of a mailbox (when the mailbox is deleted).
    pub(super) fn remove_warmup(&mut self, domain: &str, local: &str) -> Result<()> {
        self.tx.open_table(WARMUP)?.remove((domain, local))?;
        Ok(())
    }

    /// Removes up to `limit` of the mailbox's warmup messages created before `before` (those the
    /// queue still holds are kept); returns how many went.
    pub fn prune_warmup_mail(&mut self, mailbox: &str, before: u64, limit: usize) -> Result<usize> {
        let code = Folder::Warmup.code();
        let mut index = self.tx.open_table(EMAIL_INDEX)?;
        let mut old: Vec<(u64, String)> = Vec::new();
        for entry in
            index.range((mailbox, code, 0u64, "")..(mailbox, code, before, ""))?.take(limit)
        {
            let (key, _) = entry?;
            let (_, _, at, id) = key.value();
            old.push((at, id.to_owned()));
        }
        let mut emails = self.tx.open_table(EMAILS)?;
        let mut message_ids = self.tx.open_table(MESSAGE_IDS)?;
        let mut removed = 0;
        for (at, id) in &old {
            let guard = emails.get(id.as_str())?;
            let found = guard.as_ref().map(|v| read_doc(id, v.value())).transpose()?;
            let found = found.map(|(email, _)| email);
            drop(guard);
            let Some(email) = found else {
                index.remove((mailbox, code, *at, id.as_str()))?;
                continue;
            };
            if email.next_attempt_at.is_some() {
                continue;
            }
            if let Some(mid) = &email.message_id {
                let ours = message_ids.get(mid.as_str())?.is_some_and(|v| v.value() == id.as_str());
                if ours {
                    message_ids.remove(mid.as_str())?;
                }
            }
            index.remove((mailbox, code, *at, id.as_str()))?;
            emails.remove(id.as_str())?;
            self.adjust_usage(mailbox, 0, email.summary.size)?;
            self.release_raw(id)?;
            self.release_sent_parts(id)?;
            self.release_sent_body(id)?;
            removed += 1;
        }
        Ok(removed)
    }
}

impl Rtx {
    pub fn warmup(&self, domain: &str, local: &str) -> Result<Option<Warmup>> {
        warmup(self, domain, local)
    }

    /// The domain's enrollments, in local-part order.
    pub fn warmups(&self, domain: &str) -> Result<Vec<Warmup>> {
        scan_domain(&self.tx.open_table(WARMUP)?, domain)
    }

    /// When the mailbox's oldest stored warmup message was created.
    pub fn oldest_warmup_mail(&self, mailbox: &str) -> Result<Option<u64>> {
        let code = Folder::Warmup.code();
        let index = self.tx.open_table(EMAIL_INDEX)?;
        let mut range = index.range((mailbox, code, 0u64, "")..(mailbox, code + 1, 0u64, ""))?;
        Ok(range.next().transpose()?.map(|(key, _)| key.value().2))
    }

    /// Every enrollment of every domain.
    pub fn all_warmups(&self) -> Result<Vec<Warmup>> {
        let table = self.tx.open_table(WARMUP)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, value) = entry?;
            out.push(decode(value.value())?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Email, Store};
    use super::*;

    fn mail(id: &str, at: u64, queued: bool) -> Email {
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = "a@x.test".into();
        e.summary.folder = Folder::Warmup;
        e.summary.created_at = at;
        e.message_id = Some(format!("<{id}@x.test>"));
        e.next_attempt_at = queued.then_some(at);
        e
    }

    #[test]
    fn pruning_removes_old_finished_warmup_mail_only() {
        let dir = std::env::temp_dir().join(format!("edgemail-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let mut inbox = mail("em_inbox", 1, false);
        inbox.summary.folder = Folder::Inbox;
        let all = [
            mail("em_old", 10, false),
            mail("em_queued", 20, true),
            mail("em_new", 500, false),
            inbox,
        ];
        store.write_blocking(move |w| all.iter().try_for_each(|e| w.enqueue(e, 0))).expect("seed"); // ok: test
        let oldest = store.read_blocking(|r| r.oldest_warmup_mail("a@x.test")).expect("read"); // ok: test
        assert_eq!(oldest, Some(10));
        let n = store.write_blocking(|w| w.prune_warmup_mail("a@x.test", 100, 50)).expect("prune"); // ok: test
        assert_eq!(n, 1);
        store
            .read_blocking(|r| -> Result<_> {
                assert!(r.email_by_id("em_old")?.is_none());
                assert!(r.email_by_id("em_queued")?.is_some());
                assert!(r.email_by_id("em_new")?.is_some());
                assert!(r.email_by_id("em_inbox")?.is_some());
                assert_eq!(r.email_for_message_id("<em_old@x.test>")?, None);
                assert_eq!(r.oldest_warmup_mail("a@x.test")?, Some(20));
                Ok(())
            })
            .expect("read"); // ok: test
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
