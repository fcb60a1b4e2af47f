//! Outreach (extensions.md, "Outreach"): merge-field fallbacks and spintax as the prospect
//! receives them, enroll's `skippedDetails` with every reason, and the cross-sequence
//! `contacted` protection with `skipContacted`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mail_world::{MailWorld, body_text, header};

fn create(w: &MailWorld, steps: Value) -> String {
    let body = json!({"name": "Outreach", "from": "sales@alpha.test", "steps": steps});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    created["id"].as_str().expect("id").to_owned() // ok: test
}

fn enroll(w: &MailWorld, id: &str, body: Value) -> Value {
    w.api().post(&format!("/v1/sequences/{id}/enroll"), body).expect(200).json()
}

fn reasons(r: &Value) -> Vec<(String, String)> {
    let list = r["skippedDetails"].as_array().expect("skippedDetails").clone(); // ok: test
    let mut out: Vec<(String, String)> = list
        .iter()
        .map(|d| {
            (
                d["email"].as_str().unwrap_or("").to_owned(),
                d["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn to(w: &MailWorld, address: &str) -> Vec<Vec<u8>> {
    let all = w.sink.messages();
    all.into_iter().filter(|m| m.rcpt_to.iter().any(|r| r == address)).map(|m| m.data).collect()
}

const SPIN: [&str; 3] = ["Hi", "Hello", "Hey"];

#[test]
fn fallbacks_spintax_skip_reasons_and_contacted_protection() {
    let w = MailWorld::start();
    let steps = json!([
        {"type": "send_email", "subject": "{{spin: Hi | Hello | Hey}} {{firstName|there}}",
         "html": "<p>{{spin: Hi | Hello | Hey}} {{firstName|there}} at {{company}}</p>"},
        {"type": "delay", "delayMs": 1000},
        {"type": "send_email", "subject": "", "html": "<p>{{spin: Hi | Hello | Hey}} again</p>"}
    ]);
    let first = create(&w, steps.clone());
    let r = enroll(
        &w,
        &first,
        json!({"contacts": [
            {"email": "ada@example.org", "mergeFields": {"firstName": "Ada", "company": "Acme"}},
            {"email": "bo@example.org", "mergeFields": {"firstName": "", "company": "Beta"}},
            {"email": "cy@example.org", "mergeFields": {"firstName": "Cy"}},
            {"email": "not-an-address", "mergeFields": {"company": "X"}},
            {"email": "x@nullmx.example.com", "mergeFields": {"company": "X"}},
            {"email": "x@mailinator.com", "mergeFields": {"company": "X"}},
            {"email": "ADA@example.org", "mergeFields": {"company": "Again"}},
            {"email": "dee@example.org", "mergeFields": {"company": "Dee"}}
        ]}),
    );
    assert_eq!((r["enrolled"].clone(), r["skipped"].clone()), (json!(3), json!(5)), "{r}");
    let want: Vec<(String, String)> = [
        ("ADA@example.org", "duplicate"),
        ("cy@example.org", "missing_field"),
        ("not-an-address", "invalid_address"),
        ("x@mailinator.com", "disposable"),
        ("x@nullmx.example.com", "no_mx"),
    ]
    .iter()
    .map(|(e, r)| (e.to_string(), r.to_string()))
    .collect();
    assert_eq!(reasons(&r), want, "{r}");
    let again = enroll(
        &w,
        &first,
        json!({"contacts": [{"email": "ada@example.org",
        "mergeFields": {"company": "Acme"}}]}),
    );
    assert_eq!(reasons(&again), [("ada@example.org".to_owned(), "already_enrolled".to_owned())]);

    // Another sequence: active (or replied, or bounced) in one means `contacted` for the next,
    // unless the request says otherwise.
    let second = create(&w, steps.clone());
    let contact = json!({"email": "dee@example.org", "mergeFields": {"company": "Dee"}});
    let r = enroll(&w, &second, json!({"contacts": [contact.clone()]}));
    assert_eq!(reasons(&r), [("dee@example.org".to_owned(), "contacted".to_owned())], "{r}");
    let r = enroll(&w, &second, json!({"contacts": [contact], "skipContacted": false}));
    assert_eq!((r["enrolled"].clone(), r["skippedDetails"].clone()), (json!(1), json!([])), "{r}");
    // The prospects receive filled texts; each keeps its spin pick in its follow-up.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while to(&w, "ada@example.org").len() < 2 || to(&w, "bo@example.org").len() < 2 {
        assert!(std::time::Instant::now() < deadline, "follow-ups never came\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    for (lead, name, company) in
        [("ada@example.org", "Ada", "Acme"), ("bo@example.org", "there", "Beta")]
    {
        let got = to(&w, lead);
        assert_eq!(got.len(), 2, "{lead}: both steps");
        let subject = header(&got[0], "Subject").expect("subject"); // ok: test
        let pick = SPIN.iter().find(|s| subject == format!("{s} {name}"));
        let pick = pick.unwrap_or_else(|| panic!("{lead}: subject {subject:?}")); // ok: test
        let body = body_text(&got[0]);
        assert!(body.contains(&format!("{pick} {name} at {company}")), "{lead}: {body}");
        let follow = body_text(&got[1]);
        assert!(follow.contains(&format!("{pick} again")), "{lead}: stable spin: {follow}");
        assert!(!body.contains("{{") && !follow.contains("{{"), "{body}{follow}");
    }
}
