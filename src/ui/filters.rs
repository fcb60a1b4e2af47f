//! A mailbox's filters: the vacation switch (subject, text, dates, days between replies),
//! saved through the API's vacation handler, and its Sieve scripts (the named scripts
//! ManageSieve keeps, one of them active): list, upload or edit in a textarea, activate,
//! delete. A script is checked by the same compiler check as the API's upload, so a refused
//! one comes back with the line and column of its first error and is never stored.

use bytes::Bytes;
use maud::{Markup, html};
use serde_json::{Value, json};

use super::call::{Call, done, enc, failure, field, time_field};
use super::fields::Refill;
use super::form::Form;
use super::layout::{csrf_field, page, redirect};
use super::session::{Notice, User, notify, refill};
use super::{act_form, gate, or_page, posted, visitor};
use crate::api::sieve;
use crate::error::{Error, Result};
use crate::handler;
use crate::http::{Ctx, Reply};
use crate::ids::now_ms;
use crate::store::SieveScript;

/// The page of a mailbox's filters.
fn base(address: &str) -> String {
    format!("/ui/mailboxes/{}/filters", enc(address))
}

/// The mailbox's full address, checked to be on the user's domain, as the API checks it.
async fn mailbox_of(ctx: &Ctx, user: &User) -> Result<String> {
    let as_user = Ctx {
        app: ctx.app.clone(),
        principal: Some(user.principal.clone()),
        params: vec![("address", ctx.param("address").to_owned())],
        query: None,
        body: Bytes::new(),
        peer: ctx.peer,
        headers: hyper::HeaderMap::new(),
    };
    crate::api::mailboxes::mailbox_address(&as_user).await
}

pub async fn page_of(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let mailbox = or_page!(mailbox_of(&ctx, &user).await, &user, "/ui/mailboxes");
    let call = Call::new(&ctx, &user).param("address", mailbox.clone());
    // No vacation set yet is an empty form, not an error.
    let vacation = match call.run(handler!(sieve::get_vacation)).await {
        Ok(v) => v,
        Err(Error::NotFound(_)) => Value::Null,
        Err(e) => return Ok(super::layout::error_page(&user, "/ui/mailboxes", &e)),
    };
    let listed = mailbox.clone();
    let scripts = or_page!(
        ctx.app.store.read(move |r| r.sieve_scripts(&listed)).await.map_err(Error::from),
        &user,
        "/ui/mailboxes"
    );
    let here = base(&mailbox);
    let body = html! {
        p { "Filters run on each message delivered to " code { (mailbox) } ", after the spam filter." }
        h2 { "Vacation reply" }
        (vacation_form(&user, &here, &vacation))
        h2 { "Sieve scripts" }
        (script_table(&user, &here, &scripts))
        h2 { "Upload or edit a script" }
        (script_form(&user, &here, &scripts))
        p { a href={ "/ui/mailboxes/" (enc(&mailbox)) } { "Back to the mailbox" } }
    };
    Ok(page(&user, "/ui/mailboxes", &format!("Filters of {mailbox}"), body))
}

fn vacation_form(user: &User, here: &str, v: &Value) -> Markup {
    let action = format!("{here}/vacation");
    let again = refill(&user.id, &action, &["subject", "text", "startAt", "endAt", "days"]);
    let typed = |name: &str, stored: String| again.value(name).map_or(stored, str::to_owned);
    let enabled = match again.value("subject") {
        Some(_) => again.chose("enabled", "on"),
        None => v["enabled"].as_bool().unwrap_or(false),
    };
    let days = typed("days", v["days"].as_u64().map_or_else(|| "7".into(), |d| d.to_string()));
    html! {
        @if !v.is_null() {
            p.muted {
                "The vacation reply is " strong { @if enabled { "on" } @else { "off" } }
                " (saved " (time_field(v, "updatedAt")) ")."
            }
        }
        form.card method="post" action=(action) {
            (csrf_field(&user.csrf))
            label {
                input type="checkbox" name="enabled" value="on" checked[enabled];
                " Answer mail with this reply"
            }
            (labelled(&again, "text", "subject", "Subject", &typed("subject", field(v, "subject"))))
            label for="text" { "Text" }
            textarea #text name="text" rows="6" required aria-invalid=[again.invalid("text")]
                aria-describedby=[again.described("text")] { (typed("text", field(v, "text"))) }
            (again.error("text"))
            (labelled(&again, "date", "startAt", "First day (optional, UTC)", &typed("startAt", day_of(&v["startAt"], 0))))
            (labelled(&again, "date", "endAt", "Last day (optional, UTC)", &typed("endAt", day_of(&v["endAt"], 1))))
            (labelled(&again, "number", "days", "Days between two replies to one sender", &days))
            button type="submit" { "Save vacation reply" }
        }
    }
}

/// A labelled input holding `value`, marked when the API refused it.
fn labelled(again: &Refill, kind: &str, name: &str, label: &str, value: &str) -> Markup {
    html! {
        label for=(name) { (label) }
        input id=(name) type=(kind) name=(name) value=(value) aria-invalid=[again.invalid(name)]
            aria-describedby=[again.described(name)] autofocus[again.focus(name)];
        (again.error(name))
    }
}

fn script_table(user: &User, here: &str, scripts: &[SieveScript]) -> Markup {
    html! {
        @if scripts.is_empty() {
            p { "No script yet. Upload one below, or with a ManageSieve client." }
        } @else {
            table {
                thead { tr { th { "Name" } th { "State" } th { "Updated" } th { "Actions" } } }
                tbody {
                    @for s in scripts {
                        @let path = format!("{here}/scripts/{}", enc(&s.name));
                        tr {
                            td { a href={ (here) "?edit=" (enc(&s.name)) "#script" } { (s.name) } }
                            td { @if s.active { strong { "active" } } @else { "inactive" } }
                            td { (super::call::when(s.updated_at)) }
                            td {
                                @if !s.active {
                                    form.inline method="post" action={ (path) "/activate" } {
                                        (csrf_field(&user.csrf))
                                        button type="submit" aria-label={ "Activate " (s.name) } { "Activate" }
                                    }
                                }
                                form.inline method="post" action={ (path) "/delete" } {
                                    (csrf_field(&user.csrf))
                                    button type="submit" aria-label={ "Delete " (s.name) } { "Delete" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn script_form(user: &User, here: &str, scripts: &[SieveScript]) -> Markup {
    let action = format!("{here}/scripts");
    let again = refill(&user.id, &action, &["name", "script"]);
    // A refused upload comes back as typed; otherwise the active script is there to edit.
    let shown = scripts.iter().find(|s| s.active).or(scripts.first());
    let name = again.value("name").map(str::to_owned).or_else(|| shown.map(|s| s.name.clone()));
    let text = again.value("script").map(str::to_owned).or_else(|| shown.map(|s| s.script.clone()));
    let activate = again.value("name").is_none() || again.chose("activate", "on");
    html! {
        form.card #script method="post" action=(action) {
            (csrf_field(&user.csrf))
            (labelled(&again, "text", "name", "Script name", name.as_deref().unwrap_or("main")))
            label for="script-text" { "Script (RFC 5228 Sieve)" }
            textarea #script-text name="script" rows="14" spellcheck="false" required
                aria-invalid=[again.invalid("script")] aria-describedby=[again.described("script")] {
                (text.unwrap_or_default())
            }
            (again.error("script"))
            label {
                input type="checkbox" name="activate" value="on" checked[activate];
                " Make it the active script"
            }
            button type="submit" { "Save script" }
        }
    }
}

/// A date field's value (`YYYY-MM-DD`, UTC) for a time in ms; `back` days earlier (the last day
/// of a vacation is stored as the midnight that ends it).
fn day_of(ms: &Value, back: i64) -> String {
    let Some(ms) = ms.as_u64() else { return String::new() };
    let days = i64::try_from(ms / 86_400_000).unwrap_or(0) - back;
    let (y, m, d) = crate::mailmove::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The midnight (UTC, in ms) starting a `YYYY-MM-DD` date, `after` days later; `None` when
/// empty, an error naming the field when not a date.
fn day_ms(name: &str, text: &str, after: i64) -> Result<Option<u64>> {
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || Error::invalid(format!("`{name}` is not a date: {text}"), "write it YYYY-MM-DD");
    let mut parts = text.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d))) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let days = crate::mailmove::days_from_civil(y, m as u32, d as u32);
    if crate::mailmove::civil_from_days(days) != (y, m as u32, d as u32) {
        return Err(bad());
    }
    Ok(u64::try_from(days + after).ok().map(|d| d * 86_400_000))
}

/// The API's vacation body for the posted form.
fn vacation_body(form: &Form) -> Result<Value> {
    let mut body = json!({
        "enabled": form.get("enabled") == Some("on"),
        "subject": form.text("subject"),
        "text": form.get("text").unwrap_or("").replace("\r\n", "\n"),
    });
    if let Some(start) = day_ms("startAt", &form.text("startAt"), 0)? {
        body["startAt"] = json!(start);
    }
    // The last day is whole: the vacation ends at the midnight after it.
    if let Some(end) = day_ms("endAt", &form.text("endAt"), 1)? {
        body["endAt"] = json!(end);
    }
    let days = form.text("days");
    if !days.is_empty() {
        let n: u32 = days
            .parse()
            .map_err(|_| Error::invalid(format!("`days` is not a number: {days}"), "1 to 365"))?;
        body["days"] = json!(n);
    }
    Ok(body)
}

pub async fn save_vacation(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mailbox = or_page!(mailbox_of(&ctx, &user).await, &user, "/ui/mailboxes");
    let here = base(&mailbox);
    let outcome = match vacation_body(&form) {
        Ok(body) => {
            let call = Call::new(&ctx, &user).param("address", mailbox.clone()).body(&body);
            call.run(handler!(sieve::put_vacation)).await
        }
        Err(e) => Err(e),
    };
    act_form(&user, (&format!("{here}/vacation"), &form), outcome, |v| {
        let state = if v["enabled"].as_bool() == Some(true) { "on" } else { "off" };
        done(format!("Vacation reply saved: {state}."))
    })
    .await;
    Ok(redirect(&here))
}

/// Script names as ManageSieve takes them (RFC 5804 1.6): 1 to 128 characters, no control
/// characters.
fn script_name(name: &str) -> Result<String> {
    if name.is_empty() || name.chars().count() > 128 || name.chars().any(char::is_control) {
        return Err(Error::invalid(
            format!("invalid `name`: {:?}", name.chars().take(40).collect::<String>()),
            "1 to 128 characters, no control characters",
        ));
    }
    Ok(name.to_owned())
}

pub async fn save_script(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mailbox = or_page!(mailbox_of(&ctx, &user).await, &user, "/ui/mailboxes");
    let here = base(&mailbox);
    // Browsers send a textarea's lines with CRLF; the script is kept as the API would keep it.
    let text = form.get("script").unwrap_or("").replace("\r\n", "\n");
    let activate = form.get("activate") == Some("on");
    let outcome = async {
        let name = script_name(&form.text("name"))?;
        // The API's own check: size and the compiler, whose message names line and column.
        sieve::check_script(&text).map_err(|e| match e {
            Error::Invalid { message, hint } => {
                Error::Invalid { message: format!("`script`: {message}"), hint }
            }
            other => other,
        })?;
        let (at, now) = (mailbox.clone(), now_ms());
        let stored =
            ctx.app.store.write(move |w| w.put_sieve(&at, &name, &text, now, activate)).await?;
        Ok(json!({ "name": stored.name, "active": stored.active }))
    }
    .await;
    act_form(&user, (&format!("{here}/scripts"), &form), outcome, |s| {
        let state = if s["active"].as_bool() == Some(true) { " and active" } else { "" };
        done(format!("Script {} saved{state}.", field(s, "name")))
    })
    .await;
    Ok(redirect(&format!("{here}#script")))
}

pub async fn activate(ctx: Ctx) -> Result<Reply> {
    script_action(ctx, true).await
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    script_action(ctx, false).await
}

/// Activates (`true`) or deletes a named script.
async fn script_action(ctx: Ctx, activate: bool) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let mailbox = or_page!(mailbox_of(&ctx, &user).await, &user, "/ui/mailboxes");
    let name = ctx.param("name").to_owned();
    let (at, which) = (mailbox.clone(), name.clone());
    let outcome = ctx
        .app
        .store
        .write(move |w| match activate {
            true => w.set_active_sieve(&at, Some(&which)),
            false => w.delete_sieve(&at, &which),
        })
        .await;
    let notice: Notice = match outcome {
        Ok(()) if activate => done(format!("Script {name} is now the active one.")),
        Ok(()) => done(format!("Script {name} deleted.")),
        Err(e) => failure(&Error::from(e)),
    };
    notify(&user.id, notice);
    Ok(redirect(&base(&mailbox)))
}

#[cfg(test)]
mod tests {
    use super::super::fields::Echo;
    use super::*;

    #[test]
    fn dates_round_trip_and_bad_ones_are_refused() {
        let start = day_ms("startAt", "2026-12-24", 0).expect("a date"); // ok: test
        assert_eq!(start, Some(1_798_070_400_000));
        let end = day_ms("endAt", "2026-12-24", 1).expect("a date"); // ok: test
        assert_eq!(end, Some(1_798_070_400_000 + 86_400_000));
        assert_eq!(day_of(&json!(start), 0), "2026-12-24");
        assert_eq!(day_of(&json!(end), 1), "2026-12-24");
        assert_eq!(day_ms("startAt", "", 0).expect("empty"), None); // ok: test
        for bad in ["2026-02-30", "2026-13-01", "x-1-1", "2026-12", "99999-1-1", "-1-1-1"] {
            let e = day_ms("startAt", bad, 0).expect_err(bad); // ok: test
            assert!(e.to_string().contains("startAt"), "{e}");
        }
    }

    #[test]
    fn the_vacation_form_becomes_the_api_body() {
        let form =
            Form::parse(b"enabled=on&subject=Away&text=Back+soon&startAt=&endAt=2026-12-24&days=3");
        let body = vacation_body(&form).expect("a body"); // ok: test
        assert_eq!(body["enabled"], true);
        assert_eq!(body["days"], 3);
        assert!(body.get("startAt").is_none());
        assert_eq!(body["endAt"], 1_798_070_400_000u64 + 86_400_000);
        let off = vacation_body(&Form::parse(b"subject=Away&text=x")).expect("a body"); // ok: test
        assert_eq!(off["enabled"], false);
        assert!(vacation_body(&Form::parse(b"subject=a&text=b&days=many")).is_err());
    }

    #[test]
    fn script_names_follow_managesieve() {
        assert!(script_name("main").is_ok());
        assert!(script_name("").is_err());
        assert!(script_name("a\nb").is_err());
        assert!(script_name(&"x".repeat(129)).is_err());
    }

    #[test]
    fn echo_names_the_script_field() {
        let e = Echo::new("/x", &Form::parse(b"csrf=t&name=a&script=b"), "`script`: line 2");
        assert_eq!(e.named, ["script"]);
        assert!(e.values.iter().all(|(k, _)| k != "csrf"));
    }
}
