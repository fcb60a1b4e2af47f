//! The text and HTML of a campaign, stored once for all its messages. A campaign of 500
//! recipients is 500 stored emails, and a 138 KB body copied into each took 295 MB of the file;
//! so the copies are stored without their bodies, which live once in `SENT_BODIES`, and reading
//! a copy (`Rtx::email`, `email_by_id`) puts them back. What differs per recipient (tracking
//! links, the unsubscribe header and footer) is rendered at delivery (`queue::compose`), as it
//! always was. `SENT_BODY_REFS` lists the messages sharing a body, which goes with the last of
//! them, as attachments do (`parts`). A body is stored deflated when that saves a tenth or more
//! (HTML mostly does, several times over), with `email_doc`'s compressor.

use serde::{Deserialize, Serialize};

use super::email_doc::{InlineRaw, deflate};
use super::error::{Error, Result};
use super::kv::ReadableTable;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode};

/// A stored body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentBody {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub html: Option<String>,
}

impl Wtx<'_> {
    /// Stores the body of one send request as `body`; `share_sent_body` links its messages.
    pub fn put_sent_body(&mut self, body: &str, sent: &SentBody) -> Result<()> {
        self.tx.open_table(SENT_BODIES)?.insert(body, stored_form(sent)?.as_slice())?;
        Ok(())
    }

    /// Records that email `id`, stored without its text and HTML, has them in `body`.
    pub fn share_sent_body(&mut self, id: &str, body: &str) -> Result<()> {
        self.tx.open_table(SENT_BODY_OF)?.insert(id, body)?;
        self.tx.open_table(SENT_BODY_REFS)?.insert((body, id), ())?;
        Ok(())
    }

    /// Lets go of the body of email `id` (when the email is deleted); the body goes when no
    /// other message uses it.
    pub(super) fn release_sent_body(&mut self, id: &str) -> Result<()> {
        let body = self.tx.open_table(SENT_BODY_OF)?.remove(id)?.map(|v| v.value().to_owned());
        let Some(body) = body else {
            return Ok(());
        };
        let body = body.as_str();
        let mut refs = self.tx.open_table(SENT_BODY_REFS)?;
        refs.remove((body, id))?;
        let mut rest = refs.range((body, "")..)?;
        let shared = rest.next().transpose()?.is_some_and(|(key, _)| key.value().0 == body);
        if !shared {
            self.tx.open_table(SENT_BODIES)?.remove(body)?;
        }
        Ok(())
    }
}

/// The body stored for email `id`, when it was stored apart.
fn sent_body_of(tx: &impl Tables, id: &str) -> Result<Option<SentBody>> {
    let Some(body) = tx.table(SENT_BODY_OF)?.get(id)?.map(|v| v.value().to_owned()) else {
        return Ok(None);
    };
    let bodies = tx.table(SENT_BODIES)?;
    let stored = bodies.get(body.as_str())?;
    stored.map(|v| read_form(v.value())).transpose()
}

/// Tags the deflated form: JSON, the only other form, starts with `{`.
const DEFLATED: u8 = b'D';

/// The bytes stored for a body: its JSON, or `DEFLATED`, the JSON's length (4 bytes,
/// little-endian) and the JSON deflated.
fn stored_form(sent: &SentBody) -> Result<Vec<u8>> {
    let json = encode(sent)?;
    let Some(kept) = deflate(&json) else { return Ok(json) };
    let InlineRaw::Deflated { len, bytes } = kept.as_inline() else { return Ok(json) };
    let Ok(len) = u32::try_from(len) else { return Ok(json) };
    let mut out = Vec::with_capacity(5 + bytes.len());
    out.push(DEFLATED);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(out)
}

fn read_form(stored: &[u8]) -> Result<SentBody> {
    let Some((&DEFLATED, rest)) = stored.split_first() else { return decode(stored) };
    let (len, bytes) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| Error::internal("a stored campaign body does not decode"))?;
    let len = usize::try_from(u32::from_le_bytes(*len))
        .map_err(|_| Error::internal("a stored campaign body does not decode"))?;
    decode(&InlineRaw::Deflated { len, bytes }.to_vec()?)
}

impl Rtx {
    /// The text and HTML of email `id`, when they are stored apart from it.
    pub(super) fn sent_body(&self, id: &str) -> Result<Option<SentBody>> {
        sent_body_of(self, id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Email, Store};
    use super::*;

    #[test]
    fn bodies_are_kept_plain_or_deflated_and_read_back_the_same() {
        let short = SentBody { text: Some("hi".into()), html: None };
        let long = SentBody { text: None, html: Some("<p>the same again</p>".repeat(100)) };
        for body in [short, long] {
            let stored = stored_form(&body).expect("encode"); // ok: test
            assert_eq!(read_form(&stored).expect("decode"), body); // ok: test
        }
        assert_eq!(read_form(b"{}").expect("plain"), SentBody::default()); // ok: test
        assert!(read_form(&[DEFLATED, 1]).is_err());
        assert!(read_form(&[DEFLATED, 9, 0, 0, 0, 1, 2]).is_err());
    }

    #[test]
    fn copies_read_back_whole_and_the_body_goes_with_the_last_of_them() {
        let dir = std::env::temp_dir().join(format!("edgemail-bodies-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        let html = "<p>hello, and hello again</p>".repeat(50);
        let sent = SentBody { text: Some("hello".into()), html: Some(html) };
        let stored = sent.clone();
        store
            .write_blocking(move |w| -> Result<_> {
                w.put_sent_body("body_1", &stored)?;
                for id in ["em_1", "em_2"] {
                    let mut email = Email::default();
                    email.summary.id = id.into();
                    email.summary.mailbox = "a@x.test".into();
                    email.send_type = Some(super::super::SendType::Campaign);
                    w.insert_email(&email)?;
                    w.share_sent_body(id, "body_1")?;
                }
                Ok(())
            })
            .expect("store"); // ok: test
        let read = |id: &'static str| {
            store.read_blocking(move |r| r.email_by_id(id)).expect("read").expect("email") // ok: test
        };
        let (one, two) = (read("em_1"), read("em_2"));
        let size = |r: &Rtx| -> Result<usize> {
            Ok(r.tx.open_table(SENT_BODIES)?.get("body_1")?.map_or(0, |v| v.value().len()))
        };
        assert!(store.read_blocking(size).expect("size") < 200, "stored deflated"); // ok: test
        assert_eq!((one.text, one.html), (sent.text.clone(), sent.html.clone()));
        assert_eq!(two.text, sent.text);
        let bodies = || {
            store
                .read_blocking(|r| -> Result<_> { r.tx.open_table(SENT_BODIES)?.len() })
                .expect("count") // ok: test
        };
        for (id, left) in [("em_1", 1), ("em_2", 0)] {
            // To trash, then for good.
            store.write_blocking(move |w| w.delete_email("x.test", id)).expect("trash"); // ok: test
            store.write_blocking(move |w| w.delete_email("x.test", id)).expect("delete"); // ok: test
            assert_eq!(bodies(), left, "after {id}");
        }
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
