//! How sequences spread their sending: a sender group's mailboxes taking turns (each enrollment
//! keeps its own), a sending window in IANA time zones that keeps a step waiting, and A/B variants
//! split evenly with per-variant campaign stats; the checks on each new field.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::World;
use crate::mail_world::{MailWorld, header, html_part};
use crate::smtp_sink::Received;

const DAY_MS: u64 = 86_400_000;
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The UTC day name `days` days after the UTC day of `at` (1970-01-01 was a Thursday).
fn day_name(at: u64, days: u64) -> &'static str {
    DAYS[((at / DAY_MS + days + 3) % 7) as usize]
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned() // ok: test
}

fn enroll(w: &MailWorld, id: &str, contacts: Value) -> Value {
    let r = w.api().post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": contacts}));
    r.expect(200).json()
}

fn enrollments(w: &MailWorld, id: &str) -> Vec<Value> {
    let list = w.api().get(&format!("/v1/sequences/{id}/enrollments")).expect(200).json();
    list.as_array().cloned().unwrap_or_default()
}

/// The address in a From header such as `"Sales" <sales@alpha.test>`.
fn from_address(m: &Received) -> String {
    let from = header(&m.data, "From").unwrap_or_default();
    let from = from.rsplit('<').next().unwrap_or(&from);
    from.trim_end_matches('>').trim().to_ascii_lowercase()
}

fn error_names(resp: crate::client::Resp, field: &str) {
    let err = resp.expect_error(400, "invalid_request");
    let message = err["message"].as_str().unwrap_or("");
    assert!(message.contains(field), "the error names `{field}`: {message}");
}

#[test]
fn a_sender_group_rotates_across_enrollments_and_each_keeps_its_mailbox() {
    let w = MailWorld::start();
    let api = w.api();
    for local in ["ann", "bob"] {
        api.post("/v1/mailboxes", json!({"address": local})).expect(201);
    }
    let team = ["sales@alpha.test", "ann@alpha.test", "bob@alpha.test"];
    let group = api.post("/v1/sender-groups", json!({"name": "Team", "mailboxes": team}));
    let group = id_of(&group.expect(201).json());
    let steps = json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"},
        {"type": "delay", "delayMs": 1000},
        {"type": "send_email", "subject": "", "html": "<p>Following up.</p>"}
    ]);
    let body = json!({"name": "Spread", "senderGroupId": group, "steps": steps});
    let created = api.post("/v1/sequences", body).expect(201).json();
    assert_eq!(
        (created["from"].clone(), created["senderGroupId"].clone()),
        (Value::Null, json!(group))
    );
    let id = id_of(&created);
    // Five contacts: a mailbox chosen afresh for each step would differ from the first one (the
    // turn has moved on by five, not a multiple of three), so sticking to it is visible.
    let contacts: Vec<Value> =
        (0..5).map(|i| json!({"email": format!("c{i}@example.org")})).collect();
    assert_eq!(enroll(&w, &id, json!(contacts))["enrolled"], 5);

    let got = w.sink.wait_for(10, Duration::from_secs(20));
    assert_eq!(got.len(), 10, "two steps for five contacts");
    let mut by_contact: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in &got {
        by_contact.entry(m.rcpt_to[0].clone()).or_default().push(from_address(m));
    }
    let mut per_mailbox: BTreeMap<String, usize> = BTreeMap::new();
    for (contact, senders) in &by_contact {
        assert_eq!(senders.len(), 2, "{contact}: {senders:?}");
        assert_eq!(senders[0], senders[1], "{contact} hears from one mailbox: {senders:?}");
        *per_mailbox.entry(senders[0].clone()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> =
        team.iter().zip([2, 2, 1]).map(|(m, n)| (m.to_string(), n)).collect();
    assert_eq!(per_mailbox, expected, "round-robin over the group's three mailboxes");
    for e in enrollments(&w, &id) {
        let contact = e["email"].as_str().unwrap_or("");
        assert_eq!(e["mailbox"], json!(by_contact[contact][0]), "the enrollment shows it: {e}");
    }
}

#[test]
fn a_step_due_outside_the_sending_window_waits_for_it_in_the_contacts_zone() {
    let w = MailWorld::start();
    // Not right at a UTC midnight, so the test and the server agree on the day.
    while (now_ms() + 60_000) % DAY_MS < 120_000 {
        std::thread::sleep(Duration::from_secs(1));
    }
    let now = now_ms();
    // Three days ahead is neither yesterday, today nor tomorrow anywhere on Earth: closed now.
    let day = day_name(now, 3);
    let window = json!({"days": [day], "start": "09:00", "end": "17:00", "timezone": "UTC"});
    let steps = json!([{"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"}]);
    let body = json!({"name": "Office hours", "from": "sales@alpha.test", "steps": steps,
                      "sendingWindow": window});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    assert_eq!(created["sendingWindow"], window, "{created}");
    let id = id_of(&created);
    enroll(
        &w,
        &id,
        json!([{"email": "utc@example.org"}, {"email": "tokyo@example.org", "timezone": "Asia/Tokyo"}]),
    );
    let midnight = (now / DAY_MS + 3) * DAY_MS;
    // 09:00 UTC on that day; in Tokyo (UTC+9, no daylight saving) 09:00 is midnight UTC.
    let want = BTreeMap::from([
        ("utc@example.org".to_owned(), midnight + 9 * 3_600_000),
        ("tokyo@example.org".to_owned(), midnight),
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen = loop {
        let list = enrollments(&w, &id);
        let due: BTreeMap<String, u64> = list
            .iter()
            .filter_map(|e| Some((e["email"].as_str()?.to_owned(), e["nextSendAt"].as_u64()?)))
            .collect();
        if due.values().all(|&t| t > now + 3_600_000) && due.len() == 2 {
            break (list, due);
        }
        assert!(Instant::now() < deadline, "never rescheduled: {list:?}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(seen.1, want, "each waits for the window's opening in its zone: {:?}", seen.0);
    for e in &seen.0 {
        assert_eq!((e["status"].clone(), e["step"].clone()), (json!("active"), json!(0)), "{e}");
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(w.sink.messages().is_empty(), "nothing goes while the window is closed");

    // The same window opened to every day and hour lets the step go at once.
    let all_day = json!({"days": DAYS, "start": "00:00", "end": "24:00", "timezone": "UTC"});
    w.api().patch(&format!("/v1/sequences/{id}"), json!({"sendingWindow": all_day})).expect(200);
    enroll(&w, &id, json!([{"email": "late@example.org"}]));
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    assert_eq!(got[0].rcpt_to, ["late@example.org"], "only the new enrollment's step was due");
}

#[test]
fn variants_split_evenly_and_campaign_stats_count_each() {
    let w = MailWorld::start();
    let variants = json!([
        {"subject": "Alpha offer", "html": "<p>A for {{email}}</p>"},
        {"subject": "Beta offer", "html": "<p>B for {{email}}</p>"}
    ]);
    let steps = json!([{"type": "send_email", "variants": variants}]);
    let body = json!({"name": "A/B", "from": "sales@alpha.test", "steps": steps});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    assert_eq!(created["steps"][0]["variants"], variants, "{created}");
    let id = id_of(&created);
    let contacts: Vec<Value> =
        (0..10).map(|i| json!({"email": format!("v{i}@example.org")})).collect();
    enroll(&w, &id, json!(contacts));
    let got = w.sink.wait_for(10, Duration::from_secs(20));
    let subject = |m: &Received| header(&m.data, "Subject").unwrap_or_default();
    let alpha: Vec<&Received> = got.iter().filter(|m| subject(m) == "Alpha offer").collect();
    let beta = got.iter().filter(|m| subject(m) == "Beta offer").count();
    assert_eq!((alpha.len(), beta), (5, 5), "an even split at the sink");
    assert!(html_part(&alpha[0].data).contains("A for "), "the variant's own body");

    // Two opens of Alpha messages: counted for the sequence and for that variant only.
    let anonymous = w.server.client(None);
    for m in &alpha[..2] {
        let html = html_part(&m.data);
        let at = html.find("/t/o/").expect("open pixel"); // ok: test
        let path = html[at..].split(['"', '\'', '>', ' ']).next().unwrap_or("");
        anonymous.get(path).expect(200);
    }
    let url = format!("/v1/campaign-stats?type=sequence&sequenceId={id}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let row = loop {
        let stats = w.api().get(&url).expect(200).json();
        let row = stats["sequences"][0].clone();
        if row["delivered"] == 10 && row["opened"] == 2 {
            break row;
        }
        assert!(Instant::now() < deadline, "stats never settled: {stats}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let rows = row["variants"].as_array().cloned().unwrap_or_default();
    let pick = |k: &str| rows.iter().map(|r| r[k].clone()).collect::<Vec<_>>();
    assert_eq!(pick("subject"), [json!("Alpha offer"), json!("Beta offer")], "{row}");
    assert_eq!(pick("step"), [json!(0), json!(0)]);
    assert_eq!(pick("variant"), [json!(0), json!(1)]);
    assert_eq!(pick("sent"), [json!(5), json!(5)]);
    assert_eq!(pick("delivered"), [json!(5), json!(5)]);
    assert_eq!(pick("opened"), [json!(2), json!(0)]);
    assert_eq!(pick("openRate"), [json!(0.4), json!(0.0)]);
    // The message records which variant it was.
    let sent = w.api().get("/v1/emails?mailbox=sales@alpha.test&folder=sent").expect(200).json();
    let first = sent[0]["id"].as_str().unwrap_or("").to_owned();
    let email = w.api().get(&format!("/v1/emails/{first}")).expect(200).json();
    assert_eq!(email["variant"]["step"], 0, "{email}");
}

#[test]
fn the_new_fields_are_checked_and_each_refusal_names_its_field() {
    let w = World::start();
    let (a, b) = (w.alpha(), w.beta());
    a.post("/v1/mailboxes", json!({"address": "sales"})).expect(201);
    b.post("/v1/mailboxes", json!({"address": "sales"})).expect(201);
    let theirs =
        b.post("/v1/sender-groups", json!({"name": "B", "mailboxes": ["sales@beta.test"]}));
    let theirs = id_of(&theirs.expect(201).json());
    let ours = a.post("/v1/sender-groups", json!({"name": "A", "mailboxes": ["sales@alpha.test"]}));
    let ours = id_of(&ours.expect(201).json());
    let step = json!([{"type": "send_email", "subject": "Hi", "html": "<p>Hi</p>"}]);
    let seq = |extra: Value| {
        let mut body = json!({"name": "S", "steps": step});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        a.post("/v1/sequences", body)
    };
    error_names(seq(json!({})), "senderGroupId");
    error_names(seq(json!({"from": "sales@alpha.test", "senderGroupId": ours})), "senderGroupId");
    error_names(seq(json!({"senderGroupId": theirs})), "senderGroupId");
    error_names(seq(json!({"senderGroupId": "sg_nothing"})), "senderGroupId");
    let ok = |change: Value| {
        let mut w = json!({"days": ["mon"], "start": "09:00", "end": "17:00", "timezone": "UTC"});
        for (k, v) in change.as_object().cloned().unwrap_or_default() {
            w[k] = v;
        }
        w
    };
    let windowed = |w: Value| seq(json!({"from": "sales@alpha.test", "sendingWindow": ok(w)}));
    error_names(windowed(json!({"timezone": "Mars/Olympus"})), "sendingWindow.timezone");
    error_names(windowed(json!({"days": ["monday"]})), "sendingWindow.days[0]");
    error_names(windowed(json!({"days": []})), "sendingWindow.days");
    error_names(windowed(json!({"start": "17:00", "end": "09:00"})), "sendingWindow.end");
    error_names(windowed(json!({"start": "12:00", "end": "12:00"})), "sendingWindow.end");
    error_names(windowed(json!({"start": "9am"})), "sendingWindow.start");
    error_names(windowed(json!({"hours": 3})), "hours");
    let made = windowed(json!({"timezone": "europe/berlin", "days": ["MON", "mon"]}));
    let made = made.expect(201).json();
    assert_eq!(made["sendingWindow"]["timezone"], "Europe/Berlin", "{made}");
    assert_eq!(made["sendingWindow"]["days"], json!(["mon"]), "{made}");
    let id = id_of(&made);

    let one = |v: Value| json!([{"type": "send_email", "variants": v}]);
    let v = |s: &str| json!({"subject": s, "html": "<p>x</p>"});
    let with_steps = |steps: Value| {
        a.post("/v1/sequences", json!({"name": "S", "from": "sales@alpha.test", "steps": steps}))
    };
    error_names(with_steps(one(json!([v("A")]))), "steps[0].variants");
    error_names(with_steps(one(json!([v("A"), v("")]))), "steps[0].variants[1].subject");
    let no_html = json!([v("A"), {"subject": "B", "html": " "}]);
    error_names(with_steps(one(no_html)), "steps[0].variants[1].html");
    // The spec's subject and html beside variants: one of them, or the first variant.
    let again = json!([{"type": "send_email", "subject": "A", "html": "<p>x</p>",
                        "variants": [v("A"), v("B")]}]);
    let made = with_steps(again).expect(201).json();
    assert_eq!(made["steps"][0]["variants"], json!([v("A"), v("B")]), "{made}");
    assert_eq!(
        (&made["steps"][0]["subject"], &made["steps"][0]["html"]),
        (&json!("A"), &json!("<p>x</p>"))
    );
    let spec = json!([{"type": "send_email", "subject": "S", "html": "<p>s</p>",
                       "variants": [v("A"), v("B")]}]);
    let made = with_steps(spec).expect(201).json();
    let first = json!({"subject": "S", "html": "<p>s</p>"});
    assert_eq!(made["steps"][0]["variants"], json!([first, v("A"), v("B")]), "{made}");
    assert_eq!(made["steps"][0]["subject"], "S", "{made}");
    let half = json!([{"type": "send_email", "subject": "S", "variants": [v("A"), v("B")]}]);
    error_names(with_steps(half), "steps[0].html");
    let first = json!({"type": "send_email", "subject": "A", "html": "<p>a</p>"});
    let on_delay = json!([first, {"type": "delay", "delayMs": 5, "variants": [v("A"), v("B")]}]);
    error_names(with_steps(on_delay), "steps[1]");

    // Updates: the sender and the window, with the same checks; null removes the window.
    let path = format!("/v1/sequences/{id}");
    error_names(a.patch(&path, json!({})), "status");
    error_names(a.patch(&path, json!({"senderGroupId": theirs})), "senderGroupId");
    error_names(a.patch(&path, json!({"from": "x@alpha.test", "senderGroupId": ours})), "from");
    a.patch(&path, json!({"senderGroupId": ours, "sendingWindow": null})).expect(200);
    let listed = a.get("/v1/sequences").expect(200).json();
    let item = listed.as_array().and_then(|l| l.iter().find(|s| s["id"] == id.as_str()).cloned());
    let item = item.expect("listed"); // ok: test
    assert_eq!(
        (item["from"].clone(), item["senderGroupId"].clone(), item["sendingWindow"].clone()),
        (Value::Null, json!(ours), Value::Null),
        "{item}"
    );
    let enroll = |c: Value| a.post(&format!("{path}/enroll"), json!({"contacts": [c]}));
    error_names(
        enroll(json!({"email": "x@example.org", "timezone": "Nowhere/Land"})),
        "contacts[0].timezone",
    );
    a.get(&format!("{path}/enrollments?limit=0")).expect_error(400, "invalid_request");
    b.get(&format!("{path}/enrollments")).expect_error(404, "not_found");
}
