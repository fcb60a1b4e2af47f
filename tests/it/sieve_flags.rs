//! imap4flags seen over IMAP: flags and keywords a Sieve script sets at delivery (`fileinto
//! :flags`, `addflag`, `setflag`) are on the message an IMAP client FETCHes, and the folder's
//! FLAGS and PERMANENTFLAGS at SELECT name the keywords.

use std::time::Duration;

use serde_json::json;

use crate::imap::{Fixture, plain};

/// SELECTs `folder` and prints its FLAGS, its PERMANENTFLAGS and each message's FLAGS.
const SHOW: &str = r#"
m = tls()
typ, _ = m.select(args[0])
assert typ == 'OK', typ
out('FLAGS', m.response('FLAGS')[1])
oks = [x.decode() for x in (m.untagged_responses.get('OK') or []) if b'PERMANENTFLAGS' in x]
out('PERMANENT', oks)
typ, data = m.fetch('1:*', '(FLAGS)')
for d in data:
    out('MSG', d.decode() if isinstance(d, bytes) else d)
m.logout()
"#;

/// The lines the SHOW script prints for `folder` once `subject` is there.
fn shown(f: &Fixture, folder: &str, subject: &str) -> Vec<String> {
    for _ in 0..200 {
        if f.listed(folder).iter().any(|(_, s)| s == subject) {
            return f.py(SHOW, &[folder]);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{subject:?} never reached {folder}: {}", f.world.server.log());
}

fn line<'a>(lines: &'a [String], tag: &str) -> &'a str {
    lines.iter().find(|l| l.starts_with(tag)).map_or("", String::as_str)
}

#[test]
fn flags_and_keywords_set_by_sieve_are_seen_by_an_imap_client() {
    let f = Fixture::start();
    let api = f.world.api();
    api.post("/v1/mailboxes/sales/folders", json!({"name": "Work"})).expect(201);
    let filing = "require [\"fileinto\", \"imap4flags\"];\n\
                  if header :contains \"subject\" \"work\" {\n\
                  fileinto :flags \"\\\\Flagged $Important\" \"Work\";\n  stop;\n}\n";
    api.put("/v1/mailboxes/sales/sieve", json!({"script": filing})).expect(200);
    f.receive(&plain("work-plan"));
    let work = shown(&f, "Work", "work-plan");
    let msg = line(&work, "MSG");
    assert!(msg.contains("\\Flagged") && msg.contains("$Important"), "{work:?}");
    assert!(line(&work, "FLAGS").contains("$Important"), "FLAGS at SELECT: {work:?}");
    assert!(line(&work, "PERMANENT").contains("$Important"), "PERMANENTFLAGS: {work:?}");

    // setflag replaces the variable's flags, addflag adds to them; the implicit keep files
    // the message into INBOX with what is left.
    let keywords = "require [\"imap4flags\"];\n\
                    setflag \"$Old\";\n\
                    setflag [\"$Todo\", \"\\\\Flagged\"];\n\
                    addflag \"$Later\";\n";
    api.put("/v1/mailboxes/sales/sieve", json!({"script": keywords})).expect(200);
    f.receive(&plain("keyword-mail"));
    let inbox = shown(&f, "INBOX", "keyword-mail");
    let msg = line(&inbox, "MSG");
    assert!(
        msg.contains("$Todo") && msg.contains("$Later") && msg.contains("\\Flagged"),
        "{inbox:?}"
    );
    assert!(!msg.contains("$Old"), "setflag replaced $Old: {inbox:?}");
    let flags = line(&inbox, "FLAGS");
    assert!(flags.contains("$Todo") && flags.contains("$Later"), "FLAGS at SELECT: {inbox:?}");
    assert!(line(&inbox, "PERMANENT").contains("$Todo"), "PERMANENTFLAGS: {inbox:?}");

    // The API shows the same flags on the stored copy.
    let id = f.listed("inbox").into_iter().find(|(_, s)| s == "keyword-mail").map(|(id, _)| id);
    let full = api.get(&format!("/v1/emails/{}", id.expect("listed"))).expect(200).json(); // ok: test
    assert!(full["flags"].to_string().contains("$Later"), "{full}");
}
