//! Automatic answers are not replies (extensions.md, "Outreach"). The corpus in
//! `autoreply_corpus/` holds answers as Exchange/Outlook, Gmail, iCloud, Zimbra and Dovecot's
//! Sieve vacation send them, in English, German, French and Spanish, and people's replies that
//! quote such words; each file's name starts with the classification it must get. The corpus is
//! classified directly (with its return dates), then sent as answers to a real sequence: people
//! end their enrollments as `replied`, automatic answers count in `autoReplied` and leave theirs
//! running, paused until the day after a named return date with `outOfOffice: "pause"`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mail_world::{MailWorld, header};
use crate::smtp_client::Talk;

/// The corpus: (file name, expected classification, message with `{{FROM}}`, `{{TO}}`,
/// `{{PARENT}}` and `{{SUBJECT}}` to fill).
fn corpus() -> Vec<(String, String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/autoreply_corpus");
    let mut out = Vec::new();
    let entries = std::fs::read_dir(&dir).expect("corpus dir"); // ok: test
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let expect = name.split("--").next().expect("class prefix").to_owned(); // ok: test
        let text = std::fs::read_to_string(entry.path()).expect("corpus file"); // ok: test
        out.push((name, expect, text));
    }
    out.sort();
    assert!(out.len() >= 20, "the corpus is all there");
    out
}

fn fill(template: &str, from: &str, to: &str, parent: &str, subject: &str) -> String {
    template
        .replace("{{FROM}}", from)
        .replace("{{TO}}", to)
        .replace("{{PARENT}}", parent)
        .replace("{{SUBJECT}}", subject)
}

fn classify(raw: &str, today: jiff::civil::Date) -> edgemail::autoreply::Finding {
    let parsed = mail_parser::MessageParser::default().parse(raw.as_bytes());
    edgemail::autoreply::classify(&parsed.expect("parses"), today) // ok: test
}

fn class_name(c: edgemail::autoreply::Classification) -> String {
    serde_json::to_value(c).expect("names").as_str().expect("a string").to_owned() // ok: test
}

/// The return date each dated out-of-office sample names (read on 2026-11-27).
const BACK_ON: &[(&str, &str)] = &[
    ("out_of_office--dovecot-es.eml", "2026-12-11"),
    ("out_of_office--exchange-de.eml", "2026-12-07"),
    ("out_of_office--exchange-en.eml", "2026-12-07"),
    ("out_of_office--exchange-es.eml", "2026-12-07"),
    ("out_of_office--exchange-fr.eml", "2026-12-07"),
    ("out_of_office--gmail-de-subject-only.eml", "2026-12-03"),
    ("out_of_office--gmail-en.eml", "2026-12-10"),
    ("out_of_office--icloud-en.eml", "2026-12-09"),
    ("out_of_office--zimbra-fr.eml", "2026-12-08"),
];

#[test]
fn the_corpus_is_classified_with_its_return_dates() {
    let today = jiff::civil::date(2026, 11, 27);
    for (name, expect, template) in corpus() {
        let raw = fill(&template, "lead@example.org", "sales@alpha.test", "<m1@alpha.test>", "Hi");
        let found = classify(&raw, today);
        assert_eq!(class_name(found.class), expect, "{name}");
        let back = BACK_ON.iter().find(|(n, _)| *n == name).map(|(_, d)| d.to_string());
        assert_eq!(found.back_on.map(|d| d.to_string()), back, "{name}");
    }
}

fn wait_sequence(w: &MailWorld, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = w.api().get("/v1/sequences").expect(200).json();
        let item = all.as_array().and_then(|a| a.iter().find(|s| s["id"] == id).cloned());
        let item = item.expect("listed"); // ok: test
        if done(&item["stats"]) {
            return item;
        }
        assert!(Instant::now() < deadline, "stats never settled: {item}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sent_to(w: &MailWorld, address: &str) -> Vec<Vec<u8>> {
    let all = w.sink.messages();
    all.into_iter().filter(|m| m.rcpt_to.iter().any(|r| r == address)).map(|m| m.data).collect()
}

#[test]
fn automatic_answers_leave_enrollments_running_and_people_end_them() {
    let w = MailWorld::start();
    let steps = json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hi {{firstName}}</p>"},
        {"type": "delay", "delayMs": 4000},
        {"type": "send_email", "subject": "", "html": "<p>Following up.</p>"}
    ]);
    let body = json!({"name": "Corpus", "from": "sales@alpha.test", "steps": steps,
                      "outOfOffice": "pause"});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    assert_eq!(created["outOfOffice"], "pause", "{created}");
    let id = created["id"].as_str().expect("id").to_owned(); // ok: test
    let corpus = corpus();
    let contacts: Vec<Value> = (0..corpus.len())
        .map(
            |i| json!({"email": format!("lead{i}@example.org"), "mergeFields": {"firstName": "A"}}),
        )
        .collect();
    let r = w.api().post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": contacts}));
    assert_eq!(r.expect(200).json()["enrolled"], corpus.len());
    w.sink.wait_for(corpus.len(), Duration::from_secs(15));
    let today = edgemail::autoreply::utc_day(edgemail::ids::now_ms());
    let mut expected = Vec::new();
    for (i, (name, expect, template)) in corpus.iter().enumerate() {
        let lead = format!("lead{i}@example.org");
        let first = sent_to(&w, &lead).into_iter().next().expect("step 1 reached the lead"); // ok: test
        let parent = header(&first, "Message-ID").expect("Message-ID"); // ok: test
        let raw = fill(template, &lead, "sales@alpha.test", &parent, "Hello");
        // What the server must make of it, on the server's day.
        let finding = classify(&raw, today);
        assert_eq!(&class_name(finding.class), expect, "{name}");
        let (mut s, _) = Talk::open(w.server.smtp);
        s.cmd("EHLO mx.example.org");
        assert!(s.mail(&lead, &["sales@alpha.test"], &raw).starts_with("250"), "{name}");
        expected.push((lead, name.clone(), finding));
    }
    let people = expected.iter().filter(|(_, _, f)| !f.class.is_automatic()).count();
    let automatic = expected.len() - people;
    assert!(people >= 6 && automatic >= 13, "both kinds in the corpus");
    let item = wait_sequence(&w, &id, |s| s["replied"] == people && s["autoReplied"] == automatic);
    assert_eq!(item["stats"]["active"], automatic, "{item}");
    let stats = w.api().get(&format!("/v1/campaign-stats?sequenceId={id}")).expect(200).json();
    let row = &stats["sequences"][0];
    assert_eq!(
        (row["replied"].clone(), row["autoReplied"].clone()),
        (json!(people), json!(automatic))
    );

    let list = w.api().get(&format!("/v1/sequences/{id}/enrollments?limit=100")).expect(200).json();
    let list = list.as_array().expect("array").clone(); // ok: test
    let mut paused = Vec::new();
    for (lead, name, finding) in &expected {
        let e = list.iter().find(|e| e["email"] == lead.as_str()).expect("listed"); // ok: test
        let status = if finding.class.is_automatic() { "active" } else { "replied" };
        assert_eq!(e["status"], status, "{name}: {e}");
        if let Some(until) = finding.pause_until() {
            assert_eq!(e["nextSendAt"], until, "{name} waits for the day after its return: {e}");
            paused.push(lead.clone());
        }
    }
    // Past the delay: the follow-up reaches the automatic answerers not paused, and no one else.
    let running: Vec<&String> = expected
        .iter()
        .filter(|(lead, _, f)| f.class.is_automatic() && !paused.contains(lead))
        .map(|(lead, _, _)| lead)
        .collect();
    assert!(!running.is_empty(), "some answerers named no return date");
    w.sink.wait_for(corpus.len() + running.len(), Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    for (lead, name, _) in &expected {
        let want = if running.contains(&lead) { 2 } else { 1 };
        assert_eq!(sent_to(&w, lead).len(), want, "{name}");
    }
}
