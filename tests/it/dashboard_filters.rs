//! The dashboard pages of hosted mail, driven in a real Chromium: a mailbox's filters (the
//! vacation switch saved through the form and read back from the API; a broken Sieve script
//! refused with the line of its error, a good one saved and made active), aliases (made and
//! deleted through the page, seen in the API), and "Who sends as you" fed by a DMARC aggregate
//! report sent to the MX.

use serde_json::json;

use crate::dashboard_mail::log_in;
use crate::harness::A;
use crate::mail_world::MailWorld;
use crate::webdriver::Browser;

/// Replaces the value of the field with id `id` by typing `text` into it.
fn retype(b: &Browser, id: &str, text: &str) {
    b.execute("document.getElementById(arguments[0]).value = ''", json!([id]));
    b.type_into(&b.find(&format!("#{id}")), text);
}

fn vacation(b: &Browser, world: &MailWorld, base: &str) {
    let api = world.api();
    api.get("/v1/mailboxes/sales/vacation").expect(404);
    b.goto(&format!("{base}/ui/mailboxes/sales@{A}"));
    b.click(&b.find("a[href$=\"/filters\"]"));
    b.wait_until("the filters page", |b| b.title().starts_with("Filters of sales@"));
    b.click(&b.find("input[name=enabled]"));
    b.type_into(&b.find("#subject"), "Out of office");
    b.type_into(&b.find("#text"), "Back on Monday.\nAnn");
    // Date fields take their value as the browser's picker would leave it.
    b.execute("document.getElementById('endAt').value = '2026-12-24'", json!([]));
    retype(b, "days", "3");
    b.click(&b.find("form[action$=\"/filters/vacation\"] button"));
    b.wait_until("the saved notice", |b| b.source().contains("Vacation reply saved: on."));
    let v = api.get("/v1/mailboxes/sales/vacation").expect(200).json();
    assert_eq!(v["enabled"], true, "{v}");
    assert_eq!(v["subject"], "Out of office");
    assert_eq!(v["text"], "Back on Monday.\nAnn");
    assert_eq!(v["days"], 3);
    // The last day is whole: the reply stops at the midnight after 24 December (UTC).
    assert_eq!(v["endAt"], 1_798_156_800_000u64, "{v}");
    assert_eq!(v["startAt"], serde_json::Value::Null);
    // The page shows it back, and a refused value keeps what was typed beside its field.
    assert_eq!(b.attribute(&b.find("#endAt"), "value").as_deref(), Some("2026-12-24"));
    retype(b, "days", "400");
    b.click(&b.find("form[action$=\"/filters/vacation\"] button"));
    b.wait_until("the refused form", |b| b.source().contains("days is between 1 and 365"));
    assert_eq!(api.get("/v1/mailboxes/sales/vacation").expect(200).json()["days"], 3);
    // Every form of the page carries the session's token; one without it changes nothing.
    b.goto(&format!("{base}/ui/mailboxes/sales@{A}/filters"));
    let forms = "return [...document.querySelectorAll('main form')]\
                 .every(f => f.querySelector('input[name=csrf]').value.length > 20)";
    assert_eq!(b.execute(forms, json!([])), true);
    b.execute(
        "document.querySelector('form[action$=\"/vacation\"] input[name=csrf]').value = 'x'",
        json!([]),
    );
    b.click(&b.find("input[name=enabled]"));
    b.click(&b.find("form[action$=\"/filters/vacation\"] button"));
    b.wait_until("the refusal", |b| b.title().starts_with("Request refused"));
    assert_eq!(api.get("/v1/mailboxes/sales/vacation").expect(200).json()["enabled"], true);
    // Reading the console empties it: the 403 is the only error so far, and the one expected.
    let logged = b.console();
    let errors: Vec<_> = logged.iter().filter(|e| e["level"] == "SEVERE").collect();
    assert!(errors.len() == 1 && errors[0]["message"].to_string().contains("403"), "{logged:?}");
}

fn scripts(b: &Browser, world: &MailWorld, base: &str) {
    let api = world.api();
    let broken = "require \"fileinto\";\nif true {\n  fileinto \"x\"\n  keep;\n}\n";
    let refused = api.put("/v1/mailboxes/sales/sieve", json!({"script": broken})).expect(400);
    let api_message = refused.json()["message"].as_str().unwrap_or_default().to_owned();
    let line = api_message.split("line ").nth(1).and_then(|r| r.split([' ', ',']).next());
    let line = format!("line {}", line.expect("the API names the line")); // ok: test
    b.goto(&format!("{base}/ui/mailboxes/sales@{A}/filters"));
    retype(b, "name", "office");
    retype(b, "script-text", broken);
    b.click(&b.find("form[action$=\"/filters/scripts\"] button"));
    b.wait_until("the refused script", |b| b.source().contains("field-error"));
    let error = b.text(&b.find("#script-error"));
    assert!(error.contains(&line) && error.contains("column"), "{error} / {api_message}");
    let field = b.find("#script-text");
    assert_eq!(b.attribute(&field, "aria-invalid").as_deref(), Some("true"));
    let typed = b.execute("return document.getElementById('script-text').value", json!([]));
    assert_eq!(typed.as_str().map(|t| t.replace("\r\n", "\n")), Some(broken.to_owned()));
    api.get("/v1/mailboxes/sales/sieve").expect(404);

    // A good script, saved inactive first, then activated from the list.
    let good = "require [\"fileinto\", \"imap4flags\"];\n\
                if header :contains \"subject\" \"invoice\" { fileinto :flags \"\\\\Flagged\" \"Invoices\"; }\n";
    retype(b, "script-text", good);
    b.click(&b.find("input[name=activate]"));
    b.click(&b.find("form[action$=\"/filters/scripts\"] button"));
    b.wait_until("the saved script", |b| b.source().contains("Script office saved."));
    api.get("/v1/mailboxes/sales/sieve").expect(404);
    b.click(&b.find("button[aria-label=\"Activate office\"]"));
    b.wait_until("the active script", |b| {
        b.source().contains("Script office is now the active one.")
    });
    let shown = api.get("/v1/mailboxes/sales/sieve").expect(200).json();
    assert_eq!(shown["script"], good, "{shown}");
    b.click(&b.find("button[aria-label=\"Delete office\"]"));
    b.wait_until("the deleted script", |b| b.source().contains("Script office deleted."));
    api.get("/v1/mailboxes/sales/sieve").expect(404);
}

fn aliases(b: &Browser, world: &MailWorld, base: &str) {
    let api = world.api();
    b.goto(&format!("{base}/ui/mailboxes"));
    b.click(&b.find("a[href=\"/ui/aliases\"]"));
    b.wait_until("the aliases page", |b| b.url().ends_with("/ui/aliases"));
    b.type_into(&b.find("#address"), "info");
    b.type_into(&b.find("#targets"), &format!("sales@{A}, ann@example.org"));
    b.click(&b.find("form[action=\"/ui/aliases\"] button"));
    b.wait_until("the new alias", |b| b.source().contains(&format!("Alias info@{A} created.")));
    let list = api.get("/v1/aliases").expect(200).json();
    let info = list.as_array().and_then(|l| l.iter().find(|a| a["address"] == format!("info@{A}")));
    let targets = info.map(|a| a["targets"].clone()).expect("info@ listed"); // ok: test
    assert_eq!(targets, json!([format!("sales@{A}"), "ann@example.org"]));
    b.click(&b.find(&format!("button[aria-label=\"Delete info@{A}\"]")));
    b.wait_until("the deleted alias", |b| b.source().contains(&format!("Alias info@{A} deleted.")));
    assert_eq!(api.get("/v1/aliases").expect(200).json(), json!([]));
}

fn senders(b: &Browser, world: &MailWorld, base: &str) {
    b.goto(&format!("{base}/ui/senders"));
    assert!(b.source().contains("No report yet."), "an empty page first");
    let to = format!("dmarc-reports@{A}");
    let report = crate::reports_in::gzip(crate::reports_in::GOOGLE.as_bytes());
    let name = "google.com!alpha.test!1764028800!1764115199.xml.gz";
    let message =
        crate::reports_in::with_attachment(&to, "g-ui", "application/gzip", name, &report);
    let reply =
        crate::smtp_client::send_one(world.server.smtp, "noreply@google.com", &to, &message);
    assert!(reply.starts_with("250"), "{reply}");
    b.goto(&format!("{base}/ui/senders"));
    let summary = world.api().get("/v1/dmarc-reports?days=30").expect(200).json();
    assert_eq!(summary["reports"], 1, "{summary}");
    let page = b.text(&b.find("main"));
    assert!(page.contains("Reported by: google.com (1)"), "{page}");
    for s in summary["sources"].as_array().expect("sources") {
        // ok: test
        let ip = s["sourceIp"].as_str().unwrap_or_default();
        assert!(page.contains(ip), "{ip} missing: {page}");
    }
    let row = b.text(&b.find("tbody tr"));
    assert!(row.starts_with("192.0.2.25 1014"), "busiest first: {row}");
}

#[test]
fn chromium_sets_filters_and_aliases_and_sees_who_sends_as_you() {
    let world = MailWorld::start();
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &world.key);
    vacation(&b, &world, &base);
    scripts(&b, &world, &base);
    aliases(&b, &world, &base);
    senders(&b, &world, &base);
    let errors: Vec<_> =
        b.console().into_iter().filter(|e| e["level"] != "DEBUG" && e["level"] != "INFO").collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
