//! The reply inbox (`GET /v1/replies`): answers to sequence and campaign mail from every
//! mailbox, each with its classification and lead label; and answering one from here. The
//! answer goes through `POST /v1/send` (the compose page's path) from the mailbox the prospect
//! wrote to, threaded under the prospect's message: `In-Reply-To` its Message-ID, `References`
//! its own References followed by that Message-ID, and the subject "Re:" once.

use maud::html;
use serde_json::{Value, json};

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::{act_form, gate, or_page, posted, visitor};
use crate::api::{emails, send};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

/// The most message ids a References header carries on: the oldest beyond are dropped (the
/// first one, the thread's root, is kept), so a hostile thread cannot grow the header unbounded.
const MAX_REFERENCES: usize = 20;

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let mut query = "limit=100".to_owned();
    let cursor = ctx.query_value("cursor");
    if let Some(cursor) = &cursor {
        query.push_str(&format!("&cursor={}", enc(cursor)));
    }
    let call = Call::new(&ctx, &user).query(query);
    let (found, next) =
        or_page!(call.run_page(handler!(crate::api::replies::list)).await, &user, "/ui/replies");
    let body = html! {
        table.replies {
            thead { tr { th { "Received" } th { "From" } th { "To mailbox" } th { "Subject" } th { "Kind" } th { "Label" } th { "Actions" } } }
            tbody {
                @for r in items(&found) {
                    @let from = field(r, "from");
                    tr {
                        td { (time_field(r, "receivedAt")) }
                        td { (from) }
                        td { (field(r, "mailbox")) }
                        td { (field(r, "subject")) }
                        td { (field(r, "classification")) }
                        td { (field(r, "label")) }
                        td { a href={ "/ui/replies/" (enc(&field(r, "emailId"))) } aria-label={ "Answer " (from) } { "Answer" } }
                    }
                }
            }
        }
        @if items(&found).is_empty() { p.muted { "No replies yet." } }
        (super::mail::pager("/ui/replies", cursor.is_some(), next.as_deref()))
    };
    Ok(page(&user, "/ui/replies", "Replies", body))
}

/// A message id written in angle brackets, as the headers carry it.
fn bracketed(id: &str) -> String {
    let id = id.trim();
    if id.starts_with('<') { id.to_owned() } else { format!("<{id}>") }
}

/// The subject of the answer: "Re: " once, however many the prospect's subject has.
pub fn re_subject(subject: &str) -> String {
    let s = subject.trim();
    let has = s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:"));
    if has { s.to_owned() } else { format!("Re: {s}") }
}

/// The bare address of a From value (`"Pat" <pat@x.test>` gives `pat@x.test`).
fn address_of(from: &str) -> String {
    let inner = from.rsplit_once('<').and_then(|(_, rest)| rest.split_once('>')).map(|(a, _)| a);
    inner.unwrap_or(from).trim().to_owned()
}

/// The threading headers of an answer to `email` (an `Email` of the API): `None` when the
/// message has no Message-ID to answer.
pub fn threading(email: &Value) -> Option<(String, String)> {
    let id = email["messageId"].as_str().filter(|m| !m.trim().is_empty())?;
    let id = bracketed(id);
    let references = items(&email["headers"])
        .iter()
        .find(|h| h["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case("references")))
        .and_then(|h| h["value"].as_str())
        .unwrap_or_default();
    let mut chain: Vec<&str> =
        references.split_whitespace().filter(|r| r.starts_with('<') && r.ends_with('>')).collect();
    if chain.len() >= MAX_REFERENCES {
        chain.drain(1..chain.len() + 1 - (MAX_REFERENCES - 1));
    }
    let mut all: Vec<String> = chain.into_iter().map(str::to_owned).collect();
    all.push(id.clone());
    Some((id, all.join(" ")))
}

pub async fn show(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let id = ctx.param("id").to_owned();
    let call = Call::new(&ctx, &user).param("id", id.clone());
    let m = or_page!(call.run(handler!(emails::get)).await, &user, "/ui/replies");
    let again = super::session::refill(&user.id, &format!("/ui/replies/{}", enc(&id)), &["text"]);
    let action = format!("/ui/replies/{}", enc(&id));
    let body = html! {
        dl {
            dt { "From" } dd { (field(&m, "from")) }
            dt { "To" } dd { (field(&m, "mailbox")) }
            dt { "Received" } dd { (time_field(&m, "createdAt")) }
        }
        pre.message-text { (field(&m, "text")) }
        h2 { "Answer" }
        form.card method="post" action=(action) {
            (csrf_field(&user.csrf))
            p { "From " strong { (field(&m, "mailbox")) } " to " strong { (field(&m, "from")) } ", subject " strong { (re_subject(&field(&m, "subject"))) } }
            label for="text" { "Message" }
            textarea #text name="text" required aria-invalid=[again.invalid("text")]
                aria-describedby=[again.described("text")] { (again.value("text").unwrap_or_default()) }
            (again.error("text"))
            button type="submit" { "Send answer" }
        }
    };
    Ok(page(&user, "/ui/replies", &format!("Reply: {}", field(&m, "subject")), body))
}

pub async fn answer(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let id = ctx.param("id").to_owned();
    let back = format!("/ui/replies/{}", enc(&id));
    let call = Call::new(&ctx, &user).param("id", id.clone());
    let m = or_page!(call.run(handler!(emails::get)).await, &user, "/ui/replies");
    let mut body = json!({
        "from": field(&m, "mailbox"),
        "to": [address_of(&field(&m, "from"))],
        "subject": re_subject(&field(&m, "subject")),
        "text": form.get("text").unwrap_or_default(),
    });
    if let Some((in_reply_to, references)) = threading(&m) {
        body["headers"] = json!({ "In-Reply-To": in_reply_to, "References": references });
    }
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(send::send)).await;
    let sent = outcome.is_ok();
    act_form(&user, (&back, &form), outcome, |r| {
        done(format!("Answer {} queued.", field(r, "messageId")))
    })
    .await;
    Ok(redirect(if sent { "/ui/replies" } else { &back }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_addresses() {
        assert_eq!(address_of("\"Pat <x>\" <pat@x.test>"), "pat@x.test");
        assert_eq!(address_of(" pat@x.test "), "pat@x.test");
        assert_eq!(address_of("Pat <pat@x.test"), "Pat <pat@x.test");
    }

    #[test]
    fn subjects_get_one_re() {
        assert_eq!(re_subject("Hello"), "Re: Hello");
        assert_eq!(re_subject("RE: Hello"), "RE: Hello");
        assert_eq!(re_subject(" re:Hello "), "re:Hello");
        assert_eq!(re_subject(""), "Re: ");
        assert_eq!(re_subject("é"), "Re: é");
    }

    #[test]
    fn threading_extends_the_references() {
        let m = json!({
            "messageId": "b@x.test",
            "headers": [{"name": "references", "value": "<r@y.test>\r\n <a@y.test> junk"}],
        });
        assert_eq!(
            threading(&m),
            Some(("<b@x.test>".into(), "<r@y.test> <a@y.test> <b@x.test>".into()))
        );
        assert_eq!(threading(&json!({"messageId": null})), None);
        let long: Vec<String> = (0..100).map(|i| format!("<m{i}@x>")).collect();
        let m = json!({"messageId": "<z@x>", "headers": [{"name": "References", "value": long.join(" ")}]});
        let (_, refs) = threading(&m).expect("threads"); // ok: test
        let refs: Vec<&str> = refs.split(' ').collect();
        assert_eq!(refs.len(), MAX_REFERENCES);
        assert_eq!(
            (refs[0], refs[refs.len() - 2], refs[refs.len() - 1]),
            ("<m0@x>", "<m99@x>", "<z@x>")
        );
    }
}
