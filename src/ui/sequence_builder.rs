//! The sequence builder: create a sequence or edit one (name, sender, emails with their waits
//! and B variants, sending window, tracking) through `POST /v1/sequences` and
//! `PATCH /v1/sequences/{id}`. A refused form comes back as typed with the API's message.

use maud::{Markup, html};
use serde_json::Value;

use super::call::{Call, enc, field, items};
use super::form::Form;
use super::layout::{csrf_field, page, redirect};
use super::sequence_form::{self as sf, DAYS, MAX_SLOTS, SPARE_SLOTS, Slot};
use super::session::User;
use super::{gate, or_page, posted, visitor};
use crate::api::{mailboxes, sender_groups, sequences};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

/// What the form shows: a new sequence's defaults, a stored sequence, or what was posted.
struct Filled {
    name: String,
    sender: String,
    slots: Vec<Slot>,
    days: Vec<String>,
    start: String,
    end: String,
    timezone: String,
    tracking: [bool; 3],
}

impl Filled {
    fn new() -> Filled {
        Filled {
            name: String::new(),
            sender: String::new(),
            slots: Vec::new(),
            days: Vec::new(),
            start: "09:00".into(),
            end: "17:00".into(),
            timezone: "UTC".into(),
            tracking: [true; 3],
        }
    }

    fn of_sequence(s: &Value) -> Filled {
        let sender = match s["senderGroupId"].as_str() {
            Some(group) => format!("group:{group}"),
            None => format!("mailbox:{}", field(s, "from")),
        };
        let w = &s["sendingWindow"];
        let days = items(&w["days"]).iter().filter_map(|d| d.as_str().map(str::to_owned)).collect();
        let t = &s["tracking"];
        let on = |k: &str| t[k].as_bool().unwrap_or(true);
        Filled {
            name: field(s, "name"),
            sender,
            slots: sf::slots_of(s),
            days,
            start: w["start"].as_str().unwrap_or("09:00").to_owned(),
            end: w["end"].as_str().unwrap_or("17:00").to_owned(),
            timezone: w["timezone"].as_str().unwrap_or("UTC").to_owned(),
            tracking: [on("opens"), on("clicks"), on("unsubscribeFooter")],
        }
    }

    fn of_form(form: &Form) -> Filled {
        let mut slots = sf::posted_slots(form);
        while slots.len() > 1
            && slots.last().is_some_and(|s| s.values.iter().all(|(_, v)| v.trim().is_empty()))
        {
            slots.pop();
        }
        Filled {
            name: form.text("name"),
            sender: form.text("sender"),
            slots,
            days: form.all("days"),
            start: form.text("start"),
            end: form.text("end"),
            timezone: form.text("timezone"),
            tracking: [
                form.get("opens").is_some(),
                form.get("clicks").is_some(),
                form.get("footer").is_some(),
            ],
        }
    }
}

/// The senders to choose from: every mailbox, then every sender group.
async fn senders(ctx: &Ctx, user: &User) -> Result<Vec<(String, String)>> {
    let boxes = Call::new(ctx, user).run(handler!(mailboxes::list)).await?;
    let groups = Call::new(ctx, user).run(handler!(sender_groups::list)).await?;
    let mut out: Vec<(String, String)> = items(&boxes)
        .iter()
        .map(|m| (format!("mailbox:{}", field(m, "address")), field(m, "address")))
        .collect();
    out.extend(items(&groups).iter().map(|g| {
        (format!("group:{}", field(g, "id")), format!("Sender group {}", field(g, "name")))
    }));
    Ok(out)
}

fn slot_fields(i: usize, slot: &Slot) -> Markup {
    let n = |suffix: &str| sf::slot_name(i, suffix);
    let area = |suffix: &str, label: &str| {
        html! {
            label for=(n(suffix)) { (label) }
            textarea id=(n(suffix)) name=(n(suffix)) rows="4" { (slot.get(suffix)) }
        }
    };
    html! {
        fieldset.step {
            legend { "Email " (i + 1) }
            @if i > 0 {
                label for=(n("wait")) { "Wait before sending" }
                span.wait {
                    input id=(n("wait")) type="number" min="0" max="366" name=(n("wait")) value=(slot.get("wait"));
                    select name=(n("unit")) aria-label={ "Unit of the wait before email " (i + 1) } {
                        option value="days" selected[slot.unit != "hours"] { "days" }
                        option value="hours" selected[slot.unit == "hours"] { "hours" }
                    }
                }
            }
            label for=(n("subject")) { "Subject" @if i > 0 { " (empty: \"Re:\" the first)" } }
            input id=(n("subject")) type="text" name=(n("subject")) value=(slot.get("subject"));
            (area("html", "HTML body"))
            (area("text", "Text body"))
            details open[!slot.get("bsubject").is_empty() || !slot.get("bhtml").is_empty() || !slot.get("btext").is_empty()] {
                summary { "Variant B (A/B test)" }
                label for=(n("bsubject")) { "Subject B" }
                input id=(n("bsubject")) type="text" name=(n("bsubject")) value=(slot.get("bsubject"));
                (area("bhtml", "HTML body B"))
                (area("btext", "Text body B"))
            }
        }
    }
}

fn builder(
    action: &str,
    user: &User,
    f: &Filled,
    senders: &[(String, String)],
    error: Option<&str>,
) -> Markup {
    let shown = (f.slots.len() + SPARE_SLOTS).clamp(3, MAX_SLOTS);
    let empty = Slot::default();
    html! {
        @if let Some(e) = error { div.notice.error role="alert" { p { (e) } } }
        form.card.builder method="post" action=(action) {
            (csrf_field(&user.csrf))
            label for="name" { "Name" }
            input #name type="text" name="name" required value=(f.name);
            label for="sender" { "Send from" }
            select #sender name="sender" required {
                @for (value, label) in senders {
                    option value=(value) selected[*value == f.sender] { (label) }
                }
            }
            @for i in 0..shown { (slot_fields(i, f.slots.get(i).unwrap_or(&empty))) }
            fieldset {
                legend { "Sending window (none ticked: any time)" }
                @for d in DAYS {
                    label.check { input type="checkbox" name="days" value=(d) checked[f.days.iter().any(|x| x == d)]; " " (d) }
                }
                label for="start" { "From (HH:MM)" }
                input #start type="text" name="start" value=(f.start);
                label for="end" { "To (HH:MM)" }
                input #end type="text" name="end" value=(f.end);
                label for="timezone" { "Time zone" }
                input #timezone type="text" name="timezone" value=(f.timezone);
            }
            fieldset {
                legend { "Tracking" }
                @for (i, (name, label)) in [("opens", "Opens"), ("clicks", "Clicks"), ("footer", "Unsubscribe footer")].iter().enumerate() {
                    label.check { input type="checkbox" name=(name) checked[f.tracking[i]]; " " (label) }
                }
            }
            button type="submit" { "Save sequence" }
        }
    }
}

async fn show(
    ctx: &Ctx,
    user: &User,
    action: &str,
    f: &Filled,
    error: Option<&str>,
) -> Result<Reply> {
    let senders = or_page!(senders(ctx, user).await, user, "/ui/sequences");
    let title = if action == "/ui/sequences" {
        "New sequence".to_owned()
    } else {
        format!("Edit {}", f.name)
    };
    Ok(page(user, "/ui/sequences", &title, builder(action, user, f, &senders, error)))
}

pub async fn new(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    show(&ctx, &user, "/ui/sequences", &Filled::new(), None).await
}

pub async fn edit(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let id = ctx.param("id").to_owned();
    let call = Call::new(&ctx, &user).param("id", id.clone());
    let s = or_page!(call.run(handler!(sequences::get)).await, &user, "/ui/sequences");
    show(&ctx, &user, &format!("/ui/sequences/{}", enc(&id)), &Filled::of_sequence(&s), None).await
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let body = sf::body(&form, false);
    match Call::new(&ctx, &user).body(&body).run(handler!(sequences::create)).await {
        Ok(s) => {
            super::session::notify(
                &user.id,
                super::call::done(format!("Sequence {} created.", field(&s, "name"))),
            );
            Ok(redirect(&format!("/ui/sequences/{}", enc(&field(&s, "id")))))
        }
        Err(e) => {
            show(
                &ctx,
                &user,
                "/ui/sequences",
                &Filled::of_form(&form),
                Some(&super::call::failure(&e).text),
            )
            .await
        }
    }
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let id = ctx.param("id").to_owned();
    let body = sf::body(&form, true);
    let call = Call::new(&ctx, &user).param("id", id.clone()).body(&body);
    let to = format!("/ui/sequences/{}", enc(&id));
    match call.run(handler!(sequences::update)).await {
        Ok(_) => {
            super::session::notify(&user.id, super::call::done("Sequence saved."));
            Ok(redirect(&to))
        }
        Err(e) => {
            show(&ctx, &user, &to, &Filled::of_form(&form), Some(&super::call::failure(&e).text))
                .await
        }
    }
}
