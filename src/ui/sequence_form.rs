//! The sequence builder's form as data: the posted fields become the JSON body of
//! `POST /v1/sequences` or `PATCH /v1/sequences/{id}`, and a stored sequence becomes the
//! fields that fill the form again. No rule of the API is repeated here: the API checks the
//! body and its message is shown beside the form.
//!
//! The form shows emails, not raw steps: email `i` has a wait before it (days or hours; the
//! first has none), a subject, an HTML and a text body, and an optional B variant. An email
//! whose fields are all empty is left out, so the form can offer empty slots to fill.

use serde_json::{Value, json};

use super::form::Form;

/// Day names the sending window takes, in week order.
pub const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
/// The most email slots the form shows (the API takes up to 50 steps).
pub const MAX_SLOTS: usize = 20;
/// Empty slots offered beyond the emails a sequence has.
pub const SPARE_SLOTS: usize = 3;

const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;

/// The text fields of one email slot, by the suffix of their form names.
pub const SLOT_FIELDS: [&str; 7] =
    ["subject", "html", "text", "bsubject", "bhtml", "btext", "wait"];

/// One email of the form: its fields by suffix, and the unit of its wait.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Slot {
    pub values: Vec<(&'static str, String)>,
    /// `days` or `hours`.
    pub unit: String,
}

impl Slot {
    pub fn get(&self, name: &str) -> &str {
        self.values.iter().find(|(k, _)| *k == name).map_or("", |(_, v)| v.as_str())
    }

    fn set(&mut self, name: &'static str, value: impl Into<String>) {
        self.values.retain(|(k, _)| *k != name);
        self.values.push((name, value.into()));
    }

    fn is_empty(&self) -> bool {
        SLOT_FIELDS.iter().filter(|f| **f != "wait").all(|f| self.get(f).trim().is_empty())
    }
}

/// The form's name of field `suffix` of slot `i`.
pub fn slot_name(i: usize, suffix: &str) -> String {
    format!("s{i}_{suffix}")
}

/// The slots as posted, up to `MAX_SLOTS`.
pub fn posted_slots(form: &Form) -> Vec<Slot> {
    (0..MAX_SLOTS)
        .map(|i| {
            let mut slot = Slot::default();
            for f in SLOT_FIELDS {
                slot.set(f, form.get(&slot_name(i, f)).unwrap_or_default());
            }
            slot.unit = form.text(&slot_name(i, "unit"));
            slot
        })
        .collect()
}

/// A body part as the API takes it: absent when empty.
fn part(step: &mut Value, name: &str, value: &str) {
    if !value.trim().is_empty() {
        step[name] = json!(value);
    }
}

/// The API's `steps` from the slots: a delay step before every email but the first that
/// waits, then the email (with `variants` when a B variant was written).
pub fn steps(slots: &[Slot]) -> Vec<Value> {
    let mut steps = Vec::new();
    for slot in slots.iter().filter(|s| !s.is_empty()) {
        let wait = slot.get("wait").trim().parse::<u64>().unwrap_or(0);
        if !steps.is_empty() && wait > 0 {
            let unit = if slot.unit == "hours" { "delayHours" } else { "delayDays" };
            steps.push(json!({ "type": "delay", unit: wait }));
        }
        let mut step = json!({ "type": "send_email", "subject": slot.get("subject").trim() });
        part(&mut step, "html", slot.get("html"));
        part(&mut step, "text", slot.get("text"));
        let b_given = ["bsubject", "bhtml", "btext"].iter().any(|f| !slot.get(f).trim().is_empty());
        if b_given {
            let mut a = json!({ "subject": slot.get("subject").trim() });
            part(&mut a, "html", slot.get("html"));
            part(&mut a, "text", slot.get("text"));
            let mut b = json!({ "subject": slot.get("bsubject").trim() });
            part(&mut b, "html", slot.get("bhtml"));
            part(&mut b, "text", slot.get("btext"));
            step = json!({ "type": "send_email", "variants": [a, b] });
        }
        steps.push(step);
    }
    steps
}

/// The sending window of the form, or null when no day is ticked.
pub fn window(form: &Form) -> Value {
    let days: Vec<String> =
        form.all("days").into_iter().filter(|d| DAYS.contains(&d.as_str())).collect();
    if days.is_empty() {
        return Value::Null;
    }
    let timezone = form.text("timezone");
    json!({
        "days": days,
        "start": form.text("start"),
        "end": form.text("end"),
        "timezone": if timezone.is_empty() { "UTC".to_owned() } else { timezone },
    })
}

/// The whole body: `editing` sends what PATCH takes (a cleared window as null).
pub fn body(form: &Form, editing: bool) -> Value {
    let mut body = json!({
        "name": form.text("name"),
        "steps": steps(&posted_slots(form)),
        "tracking": {
            "opens": form.get("opens").is_some(),
            "clicks": form.get("clicks").is_some(),
            "unsubscribeFooter": form.get("footer").is_some(),
        },
    });
    let sender = form.text("sender");
    match sender.split_once(':') {
        Some(("group", id)) => body["senderGroupId"] = json!(id),
        Some((_, address)) => body["from"] = json!(address),
        None => body["from"] = json!(sender),
    }
    let window = window(form);
    if editing || !window.is_null() {
        body["sendingWindow"] = window;
    }
    body
}

/// The slots of a stored sequence (`GET /v1/sequences/{id}`): each delay becomes the wait of
/// the email after it, in days when it is whole days, else in hours (rounded up).
pub fn slots_of(sequence: &Value) -> Vec<Slot> {
    let mut slots = Vec::new();
    let mut wait_ms = 0u64;
    let empty = Vec::new();
    for step in sequence["steps"].as_array().unwrap_or(&empty) {
        if step["type"] == "delay" {
            wait_ms = wait_ms.saturating_add(step["delayMs"].as_u64().unwrap_or(0));
            continue;
        }
        let mut slot = Slot { unit: "days".into(), ..Slot::default() };
        if wait_ms > 0 {
            let (n, unit) = if wait_ms.is_multiple_of(DAY_MS) {
                (wait_ms / DAY_MS, "days")
            } else {
                (wait_ms.div_ceil(HOUR_MS), "hours")
            };
            slot.set("wait", n.to_string());
            slot.unit = unit.into();
        }
        wait_ms = 0;
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let variants = step["variants"].as_array().filter(|v| !v.is_empty());
        let (a, b) = match variants {
            Some(v) => (v[0].clone(), v.get(1).cloned()),
            None => (step.clone(), None),
        };
        slot.set("subject", text(&a, "subject"));
        slot.set("html", text(&a, "html"));
        slot.set("text", text(&a, "text"));
        if let Some(b) = b {
            slot.set("bsubject", text(&b, "subject"));
            slot.set("bhtml", text(&b, "html"));
            slot.set("btext", text(&b, "text"));
        }
        slots.push(slot);
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Form {
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", super::super::call::enc(k), super::super::call::enc(v)))
            .collect();
        Form::parse(body.join("&").as_bytes())
    }

    #[test]
    fn three_emails_become_steps_with_day_waits_and_back() {
        let f = form(&[
            ("name", "Intro"),
            ("sender", "mailbox:sales@a.test"),
            ("s0_subject", "Hello {{firstName|there}}"),
            ("s0_html", "<p>Hi</p>"),
            ("s1_wait", "2"),
            ("s1_unit", "days"),
            ("s1_text", "Following up"),
            ("s2_wait", "5"),
            ("s2_unit", "hours"),
            ("s2_subject", "Last one"),
            ("s2_html", "<p>A</p>"),
            ("s2_bsubject", "Last one (B)"),
            ("s2_btext", "B"),
            ("days", "mon"),
            ("days", "fri"),
            ("days", "nope"),
            ("start", "09:00"),
            ("end", "17:00"),
            ("opens", "on"),
        ]);
        let b = body(&f, false);
        assert_eq!(b["from"], "sales@a.test");
        assert_eq!(
            b["tracking"],
            json!({"opens": true, "clicks": false, "unsubscribeFooter": false})
        );
        assert_eq!(b["sendingWindow"]["days"], json!(["mon", "fri"]));
        assert_eq!(b["sendingWindow"]["timezone"], "UTC");
        let steps = b["steps"].as_array().cloned().unwrap_or_default();
        assert_eq!(steps.len(), 5, "{steps:?}");
        assert_eq!(steps[1], json!({"type": "delay", "delayDays": 2}));
        assert_eq!(steps[2], json!({"type": "send_email", "subject": "", "text": "Following up"}));
        assert_eq!(steps[3], json!({"type": "delay", "delayHours": 5}));
        assert_eq!(steps[4]["variants"][1], json!({"subject": "Last one (B)", "text": "B"}));
        // Read back as the API shows it (delays in ms), the same slots come out.
        let mut stored = b["steps"].clone();
        stored[1] = json!({"type": "delay", "delayMs": 2 * DAY_MS});
        stored[3] = json!({"type": "delay", "delayMs": 5 * HOUR_MS});
        let slots = slots_of(&json!({ "steps": stored }));
        assert_eq!(slots.len(), 3);
        assert_eq!((slots[1].get("wait"), slots[1].unit.as_str()), ("2", "days"));
        assert_eq!((slots[2].get("wait"), slots[2].unit.as_str()), ("5", "hours"));
        assert_eq!(slots[2].get("bsubject"), "Last one (B)");
        assert_eq!(slots[0].get("subject"), "Hello {{firstName|there}}");
    }

    #[test]
    fn groups_empty_slots_and_cleared_windows() {
        let f = form(&[
            ("sender", "group:grp_1"),
            ("s0_subject", "Hi"),
            ("s0_text", "x"),
            ("s3_wait", "4"),
        ]);
        let b = body(&f, true);
        assert_eq!(b["senderGroupId"], "grp_1");
        assert!(b.get("from").is_none());
        assert_eq!(b["sendingWindow"], Value::Null);
        assert_eq!(b["steps"].as_array().map(Vec::len), Some(1));
        assert!(body(&f, false).get("sendingWindow").is_none());
    }
}
