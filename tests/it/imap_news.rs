//! What one IMAP session hears of the others: flag changes, moves and expunges made by another
//! session or by the API, pushed to a client that idles or asks with NOOP; \Recent as RFC 3501
//! has it (new mail is recent for the first session that selects the folder, kept across
//! restarts); and FETCH BODY, the non-extensible BODYSTRUCTURE.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::imap::{Fixture, plain, with_attachment};

/// Session A idles in INBOX until it has heard a FETCH and an EXPUNGE, then waits for a line on
/// stdin and asks with NOOP.
const WATCHER: &str = r#"
m = tls()
m.select('INBOX')
tag = m._new_tag()
m.send(tag + b' IDLE\r\n')
out('cont', m.readline().decode().strip())
out('idling')
m.sock.settimeout(15)
heard = []
while not (any(b'FETCH' in l for l in heard) and any(b'EXPUNGE' in l for l in heard)):
    heard.append(m.readline().strip())
    out('news', heard[-1].decode())
m.send(b'DONE\r\n')
while True:
    line = m.readline()
    if line.startswith(tag):
        out('done', line.decode().strip())
        break
out('waiting')
sys.stdin.readline()
m.noop()
out('noop-expunge', repr(m.untagged_responses.get('EXPUNGE')))
out('noop-fetch', repr(m.untagged_responses.get('FETCH')))
"#;

/// Reads the watcher's lines up to and including `until`.
fn read_until(out: &mut impl BufRead, until: &str, seen: &mut Vec<String>) {
    loop {
        let mut line = String::new();
        out.read_line(&mut line).expect("line");
        assert!(!line.is_empty(), "watcher ended early: {seen:?}");
        seen.push(line.trim().to_owned());
        if line.trim() == until {
            return;
        }
    }
}

#[test]
fn flags_moves_and_deletes_of_other_sessions_reach_an_idling_client_and_noop() {
    let f = Fixture::start();
    for s in ["one", "two", "three"] {
        f.receive(&plain(s));
    }
    let mut command = f.command(WATCHER, &[]);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("python3");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    read_until(&mut out, "idling", &mut seen);

    // Another session flags one message and moves another away while A idles.
    f.py("m = tls()\nm.select('INBOX')\nm.store('1', '+FLAGS', '\\\\Flagged')\nm.uid('MOVE', '2', 'Trash')\n", &[]);
    read_until(&mut out, "waiting", &mut seen);
    let news: Vec<&str> = seen.iter().filter_map(|l| l.strip_prefix("news ")).collect();
    assert!(
        news.iter().any(|l| l.starts_with("* 1 FETCH (FLAGS (\\Flagged") && l.contains("UID 1")),
        "{seen:?}"
    );
    assert!(news.contains(&"* 2 EXPUNGE"), "{seen:?}");
    assert!(seen.iter().any(|l| l.starts_with("done ") && l.contains("OK")), "{seen:?}");

    // Then, while A is not idling: an API delete, and a flag set by another session.
    let one = f.listed("inbox").into_iter().find(|(_, s)| s == "one").expect("one").0;
    f.world.api().delete(&format!("/v1/emails/{one}")).expect(200);
    f.py("m = tls()\nm.select('INBOX')\nm.uid('STORE', '3', '+FLAGS', '\\\\Answered')\n", &[]);
    child.stdin.take().expect("stdin").write_all(b"go\n").expect("go");
    let rest: Vec<String> = out.lines().map_while(Result::ok).collect();
    assert!(child.wait().expect("wait").success(), "{seen:?} {rest:?}\n{}", f.world.server.log());
    assert!(rest.contains(&"noop-expunge [b'1']".to_owned()), "{rest:?}");
    let fetch = rest.iter().find_map(|l| l.strip_prefix("noop-fetch ")).expect("fetch");
    assert!(fetch.contains("1 (FLAGS (\\\\Answered") && fetch.contains("UID 3)"), "{rest:?}");
}

#[test]
fn new_mail_is_recent_for_the_first_session_that_selects_its_folder() {
    let mut f = Fixture::start();
    f.receive(&plain("r1"));
    f.receive(&plain("r2"));
    let select = r#"
m = tls()
out('status', m.status('INBOX', '(MESSAGES RECENT)')[1][0].decode())
m.select('INBOX', readonly=(args[0] == 'examine'))
out('recent', m.untagged_responses['RECENT'][0].decode())
out('search', m.search(None, 'RECENT')[1][0].decode())
out('new', m.search(None, 'NEW')[1][0].decode())
out('flags', ' | '.join(d.decode() for d in m.fetch('1:*', '(FLAGS)')[1]))
"#;
    let examined = f.py(select, &["examine"]);
    assert!(examined.contains(&"status INBOX (MESSAGES 2 RECENT 2)".to_owned()), "{examined:?}");
    assert!(examined.contains(&"recent 2".to_owned()), "EXAMINE shows them: {examined:?}");
    let first = f.py(select, &["select"]);
    assert!(first.contains(&"recent 2".to_owned()), "EXAMINE did not take them: {first:?}");
    assert!(first.contains(&"search 1 2".to_owned()), "{first:?}");
    assert!(first.contains(&"new 1 2".to_owned()), "{first:?}");
    assert!(first.iter().any(|l| l.starts_with("flags ") && l.contains("\\Recent")), "{first:?}");
    let second = f.py(select, &["select"]);
    for want in ["status INBOX (MESSAGES 2 RECENT 0)", "recent 0", "search ", "new "] {
        assert!(second.contains(&want.to_owned()), "{want} in {second:?}");
    }
    assert!(!second.iter().any(|l| l.contains("\\Recent")), "{second:?}");

    f.receive(&plain("r3"));
    f.world.crash_and_restart();
    let after = f.py(select, &["select"]);
    assert!(after.contains(&"recent 1".to_owned()), "{after:?}");
    assert!(after.contains(&"search 3".to_owned()), "{after:?}");
    let again = f.py(select, &["select"]);
    assert!(again.contains(&"recent 0".to_owned()), "kept across a restart: {again:?}");
}

#[test]
fn fetch_body_has_no_extension_data_and_bodystructure_keeps_it() {
    let f = Fixture::start();
    f.receive(&with_attachment("report"));
    let lines = f.py(
        r#"
m = tls()
m.select('INBOX')
out('body', m.fetch('1', '(BODY)')[1][0].decode())
out('structure', m.fetch('1', '(BODYSTRUCTURE)')[1][0].decode())
"#,
        &[],
    );
    let get = |p: &str| lines.iter().find_map(|l| l.strip_prefix(p)).expect(p).to_owned();
    let body = get("body ");
    assert!(body.contains("\"BASE64\" 12) \"mixed\"))"), "{body}");
    assert!(!body.contains("attachment") && !body.contains("boundary"), "{body}");
    let structure = get("structure ");
    assert!(structure.contains("(\"attachment\" (\"filename\" \"report.pdf\"))"), "{structure}");
    assert!(structure.contains("\"boundary\" \"sep\""), "{structure}");
}
