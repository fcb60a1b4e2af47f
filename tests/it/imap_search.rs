//! SEARCH as users expect it (issue 34, item 3), over a real socket with Python's imaplib:
//! header fields matched decoded (RFC 2047 words in any charset) in any case, addresses by
//! display name and address, TEXT and BODY inside HTML parts and attached messages, SENT*
//! against the Date field's own day while ON/SINCE/BEFORE keep INTERNALDATE, CHARSET conversions
//! and BADCHARSET for a charset we cannot convert.

use crate::harness::A;
use crate::imap::Fixture;

/// `command(m, piece, ...)`: sends one command on imaplib's connection, text pieces as they are
/// and `lit(b'...')` pieces as synchronizing literals (waiting for the server's `+`); the
/// response lines up to and including the tagged one (a literal read into its line).
const CLIENT: &str = r#"
def lit(b):
    return ('lit', b)
def command(m, *pieces):
    tag = m._new_tag()
    line = tag + b' '
    for p in pieces:
        if isinstance(p, tuple):
            m.send(line + b'{%d}\r\n' % len(p[1]))
            cont = m.readline()
            if not cont.startswith(b'+'):
                return [cont.decode(errors='replace').rstrip('\r\n')]
            line = p[1]
        else:
            line += p.encode() if isinstance(p, str) else p
    m.send(line + b'\r\n')
    lines, cur = [], b''
    while True:
        got = m.readline()
        if not got:
            raise Exception('connection closed')
        cur += got
        n = re.search(rb'\{(\d+)\}\r\n$', got)
        if n:
            cur += m.read(int(n.group(1)))
            continue
        lines.append(cur.decode(errors='replace').rstrip('\r\n'))
        cur = b''
        if got.startswith(tag + b' '):
            return lines
def show(name, lines):
    for l in lines:
        out(name, l)
"#;

/// Five messages, APPENDed in order (sequence numbers 1 to 5) with the INTERNALDATE given.
fn messages() -> Vec<(&'static str, String)> {
    let head = |date: &str, from: &str, subject: &str| {
        format!("Date: {date}\r\nFrom: {from}\r\nTo: sales@{A}\r\nSubject: {subject}\r\n")
    };
    let june = "Sat, 15 Jun 2024 10:00:00 +0000";
    vec![
        (
            "15-Jun-2024 10:00:00 +0000",
            format!(
                "{}\r\nSee you there.\r\n",
                head(june, "Ann <ann@example.org>", "=?ISO-8859-1?Q?R=E9union_caf=E9?=")
            ),
        ),
        (
            "15-Jun-2024 10:00:00 +0000",
            format!(
                "{}\r\nAttached.\r\n",
                head(
                    june,
                    "=?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <jm@example.net>",
                    // "Prüfbericht März"
                    "=?UTF-8?B?UHLDvGZiZXJpY2h0IE3DpHJ6?="
                )
            ),
        ),
        (
            "15-Jun-2024 10:00:00 +0000",
            format!(
                "{}MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n\
                 --a\r\nContent-Type: text/plain\r\n\r\nSee the HTML version.\r\n\
                 --a\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Transfer-Encoding: quoted-printable\r\n\r\n\
                 <p>The <b>pineapple</b> budget =E2=80=94 final</p>\r\n--a--\r\n",
                head(june, "ann@example.org", "plans")
            ),
        ),
        (
            "15-Jun-2024 10:00:00 +0000",
            format!(
                "{}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=o\r\n\r\n\
                 --o\r\nContent-Type: text/plain\r\n\r\nForwarding this.\r\n\
                 --o\r\nContent-Type: message/rfc822\r\n\r\n\
                 From: carl@example.net\r\nSubject: old news\r\nContent-Type: text/plain\r\n\
                 Content-Transfer-Encoding: base64\r\n\r\n\
                 VGhlIHF1YXJ0ZXJseSB3YWxydXMgcmVwb3J0Lg==\r\n--o--\r\n",
                head(june, "ann@example.org", "Fwd: old news")
            ),
        ),
        (
            // Received long before it says it was sent, and sent on the 23rd in its own zone
            // (the 24th in UTC).
            "01-Jan-2020 12:00:00 +0000",
            format!(
                "{}\r\nLate.\r\n",
                head("Mon, 23 Nov 2026 23:30:00 -0800", "ann@example.org", "dated")
            ),
        ),
    ]
}

const SEARCHES: &str = r#"
m = tls()
for date, raw in zip(args[0::2], args[1::2]):
    typ, data = m.append('INBOX', None, '"%s"' % date, raw.encode())
    assert typ == 'OK', data
m.select('INBOX')
def s(name, *pieces):
    show(name, command(m, 'SEARCH ', *pieces))
s('latin-q', 'CHARSET UTF-8 SUBJECT ', lit('réunion CAFÉ'.encode()))
s('no-charset', 'SUBJECT ', lit('Réunion'.encode()))
s('utf8-b', 'CHARSET UTF-8 SUBJECT ', lit('MÄRZ'.encode()))
s('raw-subject', 'SUBJECT "=?utf-8?b?uhl"')
s('from-name', 'CHARSET UTF-8 FROM ', lit('jürgen müller'.encode()))
s('from-address', 'FROM JM@EXAMPLE.NET')
s('header', 'HEADER Subject "old news"')
s('html-body', 'BODY "pineapple budget"')
s('html-text', 'TEXT PINEAPPLE')
s('no-tags', 'BODY "<b>"')
s('attached', 'BODY walrus')
s('attached-header', 'BODY "old news"')
s('senton', 'SENTON 23-Nov-2026')
s('senton-utc', 'SENTON 24-Nov-2026')
s('sentsince', 'SENTSINCE 1-Jan-2025')
s('sentbefore', 'SENTBEFORE 1-Jan-2025')
s('on', 'ON 1-Jan-2020')
s('since', 'SINCE 1-Jan-2024')
s('latin1', 'CHARSET ISO-8859-1 SUBJECT ', lit(b'caf\xe9'))
s('unknown', 'CHARSET X-UNKNOWN SUBJECT x')
show('uid', command(m, 'UID SEARCH CHARSET UTF-8 BODY ', lit('— final'.encode())))
m.literal = 'MÄRZ'.encode()
typ, data = m.search('UTF-8', 'SUBJECT')
out('imaplib', typ, data[0].decode())
# About 1 MB of text: a hundred strings to look for in it are more work than it earns.
big = 'Subject: big\r\n\r\n' + 'lorem ipsum dolor sit amet\r\n' * 40000
m.append('INBOX', None, None, big.encode())
s('budget', ' '.join('NOT TEXT x%d' % i for i in range(100)))
s('affordable', 'NOT TEXT x1 NOT TEXT x2 TEXT LOREM')
"#;

#[test]
fn search_matches_decoded_headers_html_attached_messages_and_sent_dates() {
    let f = Fixture::start();
    let messages = messages();
    let args: Vec<&str> = messages.iter().flat_map(|(d, m)| [*d, m.as_str()]).collect();
    let lines = f.py(&format!("{CLIENT}\n{SEARCHES}"), &args);
    let first = |name: &str| -> String {
        let p = format!("{name} ");
        let found = lines.iter().find_map(|l| l.strip_prefix(p.as_str()));
        found.unwrap_or_else(|| panic!("{name} in {lines:?}")).to_owned()
    };
    let found = |name: &str, want: &str| {
        assert_eq!(first(name), format!("* SEARCH{want}"), "{name}: {lines:?}");
    };
    found("latin-q", " 1");
    found("no-charset", " 1");
    found("utf8-b", " 2");
    found("raw-subject", " 2");
    found("from-name", " 2");
    found("from-address", " 2");
    found("header", " 4");
    found("html-body", " 3");
    found("html-text", " 3");
    found("no-tags", "");
    found("attached", " 4");
    found("attached-header", " 4");
    found("senton", " 5");
    found("senton-utc", "");
    found("sentsince", " 5");
    found("sentbefore", " 1 2 3 4");
    found("on", " 5");
    found("since", " 1 2 3 4");
    found("latin1", " 1");
    let unknown = first("unknown");
    assert!(unknown.contains(" NO [BADCHARSET (UTF-8 US-ASCII)] "), "{lines:?}");
    found("uid", " 3");
    assert_eq!(first("imaplib"), "OK 2", "{lines:?}");
    let budget = first("budget");
    assert!(budget.contains(" NO [LIMIT] search stopped"), "{budget}");
    found("affordable", " 6");
}
