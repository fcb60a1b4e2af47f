//! What Dovecot's imaptest and real clients found wrong (issue 34): every FETCH item answered
//! once and never dropped, sections and structure inside attached messages, ENVELOPE as the
//! message has it, keywords in FLAGS, \Recent never stored, sequence numbers past the end, and
//! another session's expunges told before our own command completes. Each script speaks IMAP
//! over a real socket and prints the response lines it got.

use crate::harness::A;
use crate::imap::{Fixture, PY_RAW as RAW, plain, under};

fn script(body: &str) -> String {
    format!("{RAW}\n{body}")
}

#[test]
fn fetch_answers_each_item_once_and_never_drops_internaldate() {
    let f = Fixture::start();
    f.receive(&plain("once"));
    let lines = f.py(
        &script(
            "m = tls()\nm.select('INBOX')\n\
             show('fetch', raw(m, 'FETCH 1 (FLAGS FLAGS UID INTERNALDATE UID)'))\n",
        ),
        &[],
    );
    let fetch = under(&lines, "fetch");
    assert_eq!(fetch.len(), 2, "{lines:?}");
    let item = &fetch[0];
    assert!(item.starts_with("* 1 FETCH ("), "{item}");
    assert_eq!(item.matches("FLAGS (").count(), 1, "{item}");
    assert_eq!(item.matches("UID 1").count(), 1, "{item}");
    // Received mail is stamped to the millisecond.
    assert!(item.contains("INTERNALDATE \""), "{item}");
    assert!(fetch[1].contains(" OK "), "{lines:?}");
}

/// An attached multipart message, then an attached single-part one.
fn nested(subject: &str) -> String {
    format!(
        "From: Ann <ann@example.org>\r\nTo: sales@{A}\r\nSubject: {subject}\r\n\
         Message-ID: <{subject}@example.org>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=o\r\n\r\n\
         --o\r\nContent-Type: text/plain\r\n\r\nouter text\r\n\
         --o\r\nContent-Type: message/rfc822\r\nContent-ID: <abc@example.org>\r\n\r\n\
         From: =?utf-8?q?B=C3=A9a?= <bea@example.net>\r\nTo: team: carl@example.net;\r\n\
         Subject: inner\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n\
         --i\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n\
         --i\r\nContent-Type: text/html\r\n\r\n<p>x</p>\r\n--i--\r\n\r\n\
         --o\r\nContent-Type: message/rfc822\r\n\r\n\
         From: dan@example.net\r\nSubject: single\r\n\r\nbody a\r\nbody b\r\n--o--\r\n"
    )
}

#[test]
fn attached_messages_are_served_as_messages_of_their_own() {
    let f = Fixture::start();
    f.receive(&nested("nested"));
    let lines = f.py(
        r#"
m = tls()
m.select('INBOX')
for section in ['2.HEADER', '2.TEXT', '2.1', '2.2.MIME', '3.HEADER', '3.1']:
    typ, data = m.fetch('1', '(BODY.PEEK[%s])' % section)
    out('section', section, repr(data[0][1]))
data = m.fetch('1', '(BODYSTRUCTURE)')[1]
whole = b''.join(d if isinstance(d, bytes) else b''.join(d) for d in data)
out('structure', whole.decode(errors='replace'))
"#,
        &[],
    );
    let sections = under(&lines, "section");
    let want = [
        concat!(
            r"2.HEADER b'From: =?utf-8?q?B=C3=A9a?= <bea@example.net>\r\nTo: team: carl@example.net;",
            r"\r\nSubject: inner\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n'"
        ),
        concat!(
            r"2.TEXT b'--i\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n--i\r\n",
            r"Content-Type: text/html\r\n\r\n<p>x</p>\r\n--i--\r\n'"
        ),
        r"2.1 b'line1\r\nline2'",
        r"2.2.MIME b'Content-Type: text/html\r\n\r\n'",
        r"3.HEADER b'From: dan@example.net\r\nSubject: single\r\n\r\n'",
        r"3.1 b'body a\r\nbody b'",
    ];
    assert_eq!(sections, want, "{lines:?}");
    let structure = under(&lines, "structure").concat();
    assert!(structure.contains("\"<abc@example.org>\""), "{structure}");
    assert!(
        structure.contains("(\"=?utf-8?q?B=C3=A9a?=\" NIL \"bea\" \"example.net\")"),
        "{structure}"
    );
    assert!(
        structure.contains(
            "((NIL NIL \"team\" NIL)(NIL NIL \"carl\" \"example.net\")(NIL NIL NIL NIL))"
        ),
        "{structure}"
    );
    assert!(
        structure.contains("(\"TEXT\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7BIT\" 12 2 "),
        "{structure}"
    );
}

#[test]
fn select_names_the_keywords_in_use_and_recent_is_never_stored() {
    let f = Fixture::start();
    f.receive(&plain("k1"));
    f.receive(&plain("k2"));
    let lines = f.py(
        &script(
            r#"
a = tls()
a.select('INBOX')
show('store', raw(a, 'STORE 1 +FLAGS ($Forwarded Junk)'))
show('recent', raw(a, 'STORE 2 +FLAGS (\\Recent \\Flagged)'))
b = tls()
show('select', raw(b, 'SELECT INBOX'))
show('flags', raw(b, 'FETCH 1:* (FLAGS)'))
"#,
        ),
        &[],
    );
    let select = under(&lines, "select");
    let flags = select.iter().find(|l| l.starts_with("* FLAGS (")).expect("FLAGS");
    assert!(flags.contains("$Forwarded") && flags.contains("Junk"), "{select:?}");
    let perm = select.iter().find(|l| l.contains("[PERMANENTFLAGS (")).expect("PERMANENTFLAGS");
    assert!(perm.contains("\\*") && perm.contains("$Forwarded"), "{select:?}");
    let stored = under(&lines, "recent");
    assert!(
        stored.iter().any(|l| l.starts_with("* 2 FETCH (FLAGS (\\Flagged \\Recent))")),
        "{stored:?}"
    );
    let seen_by_b = under(&lines, "flags");
    assert!(!seen_by_b.iter().any(|l| l.contains("\\Recent")), "A selected first: {seen_by_b:?}");
    assert!(seen_by_b.iter().any(|l| l.contains("\\Flagged")), "{seen_by_b:?}");
}

#[test]
fn fetch_past_the_last_message_is_bad_and_unknown_uids_are_nothing() {
    let f = Fixture::start();
    f.receive(&plain("p1"));
    f.receive(&plain("p2"));
    let lines = f.py(
        &script(
            r#"
m = tls()
m.select('INBOX')
show('five', raw(m, 'FETCH 5 (FLAGS)'))
show('range', raw(m, 'FETCH 2:5 (FLAGS)'))
show('all', raw(m, 'FETCH 1:* (FLAGS)'))
show('uid', raw(m, 'UID FETCH 99 (FLAGS)'))
show('uids', raw(m, 'UID FETCH 2:99 (FLAGS)'))
"#,
        ),
        &[],
    );
    let last = |name: &str| under(&lines, name).last().cloned().unwrap_or_default();
    assert!(last("five").contains(" BAD "), "{lines:?}");
    assert_eq!(under(&lines, "five").len(), 1, "{lines:?}");
    assert!(last("range").contains(" BAD "), "{lines:?}");
    assert_eq!(under(&lines, "all").len(), 3, "{lines:?}");
    assert_eq!(under(&lines, "uid").len(), 1, "{lines:?}");
    assert!(last("uid").contains(" OK "), "{lines:?}");
    assert_eq!(under(&lines, "uids").len(), 2, "{lines:?}");
}

#[test]
fn expunges_of_another_session_come_before_our_own_command_completes() {
    let f = Fixture::start();
    for s in ["e1", "e2", "e3", "e4"] {
        f.receive(&plain(s));
    }
    let lines = f.py(
        &script(
            r#"
a = tls()
a.select('INBOX')
b = tls()
b.select('INBOX')
raw(b, 'STORE 1 +FLAGS.SILENT (\\Deleted)')
raw(b, 'EXPUNGE')
raw(a, 'STORE 4 +FLAGS.SILENT (\\Deleted)')
show('expunge', raw(a, 'EXPUNGE'))
raw(b, 'STORE 1 +FLAGS.SILENT (\\Deleted)')
raw(b, 'EXPUNGE')
show('check', raw(a, 'CHECK'))
"#,
        ),
        &[],
    );
    let expunge = under(&lines, "expunge");
    // Ours (the fourth message) first, by the numbers the client knows, then the other's.
    assert!(expunge.len() >= 3, "{lines:?}");
    assert_eq!(expunge[0], "* 4 EXPUNGE", "{lines:?}");
    assert_eq!(expunge[1], "* 1 EXPUNGE", "{lines:?}");
    assert!(expunge.last().is_some_and(|l| l.contains(" OK ")), "{lines:?}");
    let check = under(&lines, "check");
    assert!(check.first().is_some_and(|l| l == "* 1 EXPUNGE"), "{lines:?}");
    assert!(check.last().is_some_and(|l| l.contains(" OK ")), "{lines:?}");
}
