//! SORT, SORT=DISPLAY and THREAD (RFC 5256, RFC 5957) as Python's imaplib drives them over a
//! real socket: the capabilities advertised, sort keys with REVERSE and ties, a search in front
//! of the sort, UID SORT answering UIDs, and REFERENCES threading a reply to a message that is
//! not in the folder.

use crate::imap::Fixture;

/// Four messages APPENDed in order (sequence numbers 1 to 4), with the INTERNALDATE given.
const SCRIPT: &str = r#"
m = tls()
msgs = [
    ('01-Feb-2024 10:00:00 +0000', 'Date: Thu, 1 Feb 2024 09:00:00 +0000\r\nFrom: Zed <ann@x.test>\r\nSubject: Re: plans\r\nMessage-ID: <b@x>\r\nReferences: <a@x>\r\n\r\nreply\r\n'),
    ('01-Jan-2024 10:00:00 +0000', 'Date: Mon, 1 Jan 2024 09:00:00 +0000\r\nFrom: bob@x.test\r\nSubject: plans\r\nMessage-ID: <a@x>\r\n\r\nfirst, and much longer than any of the other messages in this folder\r\n'),
    ('01-Mar-2024 10:00:00 +0000', 'Date: Fri, 1 Mar 2024 09:00:00 +0000\r\nFrom: =?utf-8?q?Am=C3=A9lie?= <carl@x.test>\r\nSubject: [list] Fwd: budget\r\nMessage-ID: <c@x>\r\nIn-Reply-To: <gone@x>\r\n\r\nfwd\r\n'),
    ('01-Apr-2024 10:00:00 +0000', 'Date: Mon, 1 Apr 2024 09:00:00 +0000\r\nFrom: dan@x.test\r\nSubject: budget\r\nMessage-ID: <d@x>\r\nReferences: <gone@x>\r\n\r\nx\r\n'),
]
for date, raw in msgs:
    typ, data = m.append('INBOX', None, '"%s"' % date, raw.encode())
    assert typ == 'OK', data
typ, caps = m.capability()
out('caps', caps[0].decode())
m.select('INBOX')
def run(name, answer):
    typ, data = answer
    out(name, typ, (data[0] or b'').decode())
run('subject', m.sort('(SUBJECT)', 'UTF-8', 'ALL'))
run('reverse-date', m.sort('(REVERSE DATE)', 'UTF-8', 'ALL'))
run('arrival', m.sort('(ARRIVAL)', 'UTF-8', 'ALL'))
run('from', m.sort('(FROM)', 'UTF-8', 'ALL'))
run('displayfrom', m.sort('(DISPLAYFROM)', 'UTF-8', 'ALL'))
run('size-searched', m.sort('(REVERSE SIZE)', 'UTF-8', 'SUBJECT', 'plans'))
run('uid', m.uid('SORT', '(DATE)', 'UTF-8', 'ALL'))
run('references', m.thread('REFERENCES', 'UTF-8', 'ALL'))
run('orderedsubject', m.thread('ORDEREDSUBJECT', 'UTF-8', 'ALL'))
"#;

#[test]
fn sort_and_thread_answer_as_rfc_5256_orders() {
    let f = Fixture::start();
    let lines = f.py(SCRIPT, &[]);
    let first = |name: &str| -> String {
        let p = format!("{name} ");
        let found = lines.iter().find_map(|l| l.strip_prefix(p.as_str()));
        found.unwrap_or_else(|| panic!("{name} in {lines:?}")).to_owned()
    };
    let caps = first("caps");
    for cap in ["SORT", "SORT=DISPLAY", "THREAD=ORDEREDSUBJECT", "THREAD=REFERENCES"] {
        assert!(caps.split(' ').any(|c| c == cap), "{cap} in {caps}");
    }
    let found = |name: &str, want: &str| {
        assert_eq!(first(name), format!("OK {want}"), "{name}: {lines:?}");
    };
    // Base subjects: BUDGET (3, 4), PLANS (1, 2); ties by sequence number.
    found("subject", "3 4 1 2");
    found("reverse-date", "4 3 1 2");
    found("arrival", "2 1 3 4");
    // Local parts: ann, bob, carl, dan.
    found("from", "1 2 3 4");
    // Display names: Amélie, bob@x.test, dan@x.test, Zed.
    found("displayfrom", "3 2 4 1");
    found("size-searched", "2 1");
    found("uid", "2 1 3 4");
    // 1 replies to 2; 3 and 4 reply to a message not in the folder: a dummy holds them.
    found("references", "(2 1)((3)(4))");
    found("orderedsubject", "(2 1)(3 4)");
}
