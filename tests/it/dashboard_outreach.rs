//! The outreach pages in Chromium (issue 38 item 6): the sequence builder creates and edits a
//! 3-email sequence that the API then shows; the CSV import page shows the per-row report;
//! the sequence page lists enrollments whose label is set from the page; table headers never
//! break inside a word; and a reply that arrived over SMTP is answered from the reply inbox,
//! arriving at the prospect's sink threaded and from the mailbox the prospect wrote to.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::dashboard_mail::log_in;
use crate::harness::TempDir;
use crate::mail_world::{MailWorld, header};
use crate::smtp_client::Talk;
use crate::webdriver::Browser;

const DAY_MS: u64 = 86_400_000;

/// Types into the field of `css` after clearing it.
fn fill(b: &Browser, css: &str, text: &str) {
    b.execute("document.querySelector(arguments[0]).value = ''", json!([css]));
    b.type_into(&b.find(css), text);
}

/// The header cells of the page whose text wraps onto more than one line.
fn wrapped_headers(b: &Browser) -> Value {
    b.execute(
        "return [...document.querySelectorAll('th')].filter(th => {
            const r = document.createRange(); r.selectNodeContents(th);
            const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
            return tops.size > 1;
        }).map(th => th.textContent)",
        json!([]),
    )
}

fn steps_of(world: &MailWorld, id: &str) -> Value {
    world.api().get(&format!("/v1/sequences/{id}")).expect(200).json()
}

#[test]
fn chromium_builds_edits_imports_labels_and_keeps_header_words_whole() {
    let world = MailWorld::start();
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &world.key);

    // The builder: three emails, waits in days, a B variant, a window, clicks untracked.
    b.goto(&format!("{base}/ui/sequences"));
    b.click(&b.find("a[href=\"/ui/sequences/new\"]"));
    b.wait_until("the builder", |b| b.url().ends_with("/ui/sequences/new"));
    fill(&b, "#name", "Cold intro");
    fill(&b, "#s0_subject", "Hello {{firstName|there}}");
    fill(&b, "#s0_html", "<p>Hi {{firstName|there}}</p>");
    fill(&b, "#s1_wait", "2");
    fill(&b, "#s1_text", "Just following up.");
    fill(&b, "#s2_wait", "3");
    fill(&b, "#s2_subject", "Last try");
    fill(&b, "#s2_html", "<p>A</p>");
    b.click(&b.find("fieldset.step:nth-of-type(3) summary"));
    fill(&b, "#s2_bsubject", "Last try (B)");
    fill(&b, "#s2_btext", "B version");
    for day in ["mon", "tue", "wed", "thu", "fri"] {
        b.click(&b.find(&format!("input[name=days][value={day}]")));
    }
    b.click(&b.find("input[name=clicks]"));
    b.click(&b.find("form.builder button[type=submit]"));
    b.wait_until("the sequence page", |b| b.source().contains("Sequence Cold intro"));
    let id = b.url().rsplit('/').next().unwrap_or_default().to_owned();
    let s = steps_of(&world, &id);
    assert_eq!(s["from"], "sales@alpha.test");
    assert_eq!(s["tracking"], json!({"opens": true, "clicks": false, "unsubscribeFooter": true}));
    assert_eq!(s["sendingWindow"]["days"], json!(["mon", "tue", "wed", "thu", "fri"]));
    let steps = s["steps"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = steps.iter().map(|s| s["type"].as_str().unwrap_or("")).collect();
    assert_eq!(kinds, ["send_email", "delay", "send_email", "delay", "send_email"], "{s}");
    assert_eq!(steps[1]["delayMs"], 2 * DAY_MS);
    assert_eq!(steps[2]["text"], "Just following up.");
    assert_eq!(steps[4]["variants"][1]["subject"], "Last try (B)", "{s}");
    // Per-step rows, one per email.
    assert_eq!(
        b.execute("return document.querySelectorAll('table.steps tbody tr').length", json!([])),
        3
    );

    // Editing: the form comes back filled; a changed wait is saved.
    b.click(&b.find("a[href$=\"/edit\"]"));
    b.wait_until("the edit form", |b| b.url().ends_with("/edit"));
    assert_eq!(b.attribute(&b.find("#s2_bsubject"), "value").as_deref(), Some("Last try (B)"));
    fill(&b, "#s1_wait", "4");
    b.click(&b.find("form.builder button[type=submit]"));
    b.wait_until("the saved notice", |b| b.source().contains("Sequence saved."));
    assert_eq!(steps_of(&world, &id)["steps"][1]["delayMs"], 4 * DAY_MS);

    // A refused edit comes back with the API's message and what was typed.
    b.goto(&format!("{base}/ui/sequences/{id}/edit"));
    fill(&b, "#s0_subject", " ");
    fill(&b, "#s0_html", "");
    b.click(&b.find("form.builder button[type=submit]"));
    b.wait_until("the refusal", |b| b.source().contains("role=\"alert\""));
    assert_eq!(b.attribute(&b.find("#name"), "value").as_deref(), Some("Cold intro"));

    // CSV import: an uploaded file and the per-row report.
    let dir = TempDir::new("csv");
    let path = dir.0.join("leads.csv");
    let csv =
        "email;firstName\r\nada@example.org;Ada\r\nnot-an-address;Bob\r\nbo@example.org;Bo\r\n";
    std::fs::write(&path, csv).expect("write the CSV"); // ok: test
    b.goto(&format!("{base}/ui/contacts"));
    b.click(&b.find("a[href=\"/ui/contacts/import\"]"));
    b.wait_until("the import page", |b| b.url().ends_with("/ui/contacts/import"));
    b.type_into(&b.find("#file"), &path.to_string_lossy());
    b.click(&b.find("form[action=\"/ui/contacts/import\"] button"));
    b.wait_until("the report", |b| b.source().contains("id=\"report\""));
    assert_eq!(b.text(&b.find("dd.created")), "2");
    let row = b.text(&b.find("table.invalid-rows tbody tr"));
    assert!(
        row.contains('3') && row.contains("not-an-address") && row.contains("invalid_email"),
        "{row}"
    );
    // The same file again updates.
    b.type_into(&b.find("#file"), &path.to_string_lossy());
    b.click(&b.find("form[action=\"/ui/contacts/import\"] button"));
    // Read from the page source: an element found on the first report goes stale when the
    // second one loads.
    b.wait_until("the second report", |b| b.source().contains("<dd class=\"updated\">2</dd>"));
    let contacts = world.api().get("/v1/contacts").expect(200).json().to_string();
    assert!(contacts.contains("ada@example.org") && contacts.contains("\"Ada\""), "{contacts}");

    // Enrollments with status, and a label set from the page.
    let enroll = json!({"contacts": [{"email": "ada@example.org"}, {"email": "bo@example.org"}]});
    let done = world.api().post(&format!("/v1/sequences/{id}/enroll"), enroll).expect(200);
    assert_eq!(done.json()["enrolled"], 2, "{}", done.json());
    b.goto(&format!("{base}/ui/sequences/{id}"));
    let rows = b.text(&b.find("table.enrollments tbody"));
    assert!(
        rows.contains("ada@example.org") && rows.contains("bo@example.org"),
        "{rows} {}",
        b.source()
    );
    fill(&b, "input[aria-label=\"Label of ada@example.org\"]", "interested");
    b.click(&b.find("button[aria-label=\"Save the label of ada@example.org\"]"));
    b.wait_until("the label notice", |b| {
        b.source().contains("ada@example.org now has interested.")
    });
    let listed = world.api().get(&format!("/v1/sequences/{id}/enrollments")).expect(200).json();
    let ada =
        listed.as_array().and_then(|l| l.iter().find(|e| e["email"] == "ada@example.org").cloned());
    assert_eq!(ada.map(|e| e["label"].clone()), Some(json!("interested")));

    // Header cells keep their words whole, on a wide and on a middling window.
    for width in [1280, 700] {
        b.window(width, 900);
        for path in ["/ui/domain", "/ui/sequences", &format!("/ui/sequences/{id}")] {
            b.goto(&format!("{base}{path}"));
            let count = b.execute("return document.querySelectorAll('th').length", json!([]));
            assert!(count != 0, "no table on {path}: {}", b.source());
            assert_eq!(wrapped_headers(&b), json!([]), "{path} at {width}px");
        }
    }
}

/// Sends `raw` to the server's MX as `from`.
fn deliver(w: &MailWorld, from: &str, to: &str, raw: &str) {
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail(from, &[to], raw).starts_with("250"));
}

#[test]
fn chromium_answers_a_reply_from_the_inbox_threaded_from_the_mailbox_written_to() {
    let w = MailWorld::start();
    let a = w.api();
    let steps = json!([{"type": "send_email", "subject": "Quick question", "text": "Hi there"}]);
    let body = json!({"name": "Inbox", "from": "sales@alpha.test", "steps": steps});
    let id = a.post("/v1/sequences", body).expect(201).json()["id"].as_str().map(str::to_owned);
    let id = id.expect("id"); // ok: test
    let lead = "prospect@example.org";
    a.post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": [{"email": lead}]}))
        .expect(200);
    let sent = w.sink.wait_for(1, Duration::from_secs(15));
    let parent = header(&sent[0].data, "Message-ID").expect("Message-ID"); // ok: test
    let answer_id = "<answer-1@example.org>";
    let raw = format!(
        "From: Pat Prospect <{lead}>\r\nTo: sales@alpha.test\r\nSubject: Re: Quick question\r\n\
         Message-ID: {answer_id}\r\nIn-Reply-To: {parent}\r\nReferences: {parent}\r\n\
         Date: Fri, 27 Nov 2026 06:00:00 +0000\r\n\r\nYes, tell me more.\r\n"
    );
    deliver(&w, lead, "sales@alpha.test", &raw);
    let deadline = Instant::now() + Duration::from_secs(15);
    while a.get("/v1/replies").expect(200).json().as_array().is_none_or(Vec::is_empty) {
        assert!(Instant::now() < deadline, "the reply was never listed");
        std::thread::sleep(Duration::from_millis(50));
    }

    let base = format!("http://{}", w.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &w.key);
    b.click(&b.find("nav a[href=\"/ui/replies\"]"));
    b.wait_until("the inbox", |b| b.url().ends_with("/ui/replies"));
    let row = b.text(&b.find("table.replies tbody tr"));
    assert!(
        row.contains(lead) && row.contains("Re: Quick question") && row.contains("reply"),
        "{row}"
    );
    assert!(row.contains("sales@alpha.test"), "{row}");
    b.click(&b.find("table.replies a"));
    b.wait_until("the reply page", |b| b.source().contains("Yes, tell me more."));
    b.type_into(&b.find("#text"), "Happy to: are you free on Tuesday?");
    b.click(&b.find("form.card button[type=submit]"));
    b.wait_until("the answer's outcome", |b| {
        b.url().ends_with("/ui/replies") || b.source().contains("role=\"alert\"")
    });
    assert!(b.source().contains("queued."), "{}", b.source());

    let all = w.sink.wait_for(2, Duration::from_secs(15));
    let m = &all[1];
    assert_eq!(m.rcpt_to, [lead]);
    let h = |name: &str| header(&m.data, name).unwrap_or_default();
    assert!(h("From").contains("sales@alpha.test"), "{}", h("From"));
    assert_eq!(h("In-Reply-To"), answer_id);
    let references: Vec<String> = h("References").split_whitespace().map(str::to_owned).collect();
    assert_eq!(references, [parent.clone(), answer_id.to_owned()]);
    assert_eq!(h("Subject"), "Re: Quick question");
    assert!(String::from_utf8_lossy(&m.data).contains("are you free on Tuesday?"));

    // The sequence page counts the step: sent, delivered and replied.
    b.goto(&format!("{base}/ui/sequences/{id}"));
    let cells = b.execute(
        "return [...document.querySelectorAll('table.steps tbody tr td')].map(td => td.textContent)",
        json!([]),
    );
    assert_eq!(cells, json!(["Quick question", "1", "1", "0", "0", "1", "0"]), "{cells}");
}
