//! IMAP extensions of issue 34 item 4, over a real socket with raw commands: BINARY (RFC 3516)
//! fetches and literal8 APPENDs, STATUS SIZE, DELETED and DELETED-STORAGE, QUOTA (RFC 9208).

use serde_json::json;

use crate::harness::A;
use crate::imap::{Fixture, plain};

/// `raw(m, command)`: the response lines of a command sent on imaplib's connection, up to and
/// including the tagged one (a literal is read into the line that announced it).
/// `literal(m, head, data, eight)`: `head` then `data` as a literal (a literal8 when `eight`),
/// sent after the server's go-ahead; the lines that answer it.
const RAW: &str = r#"
def collect(m, tag, first=b''):
    lines, cur = [], first
    while True:
        line = m.readline()
        if not line:
            raise Exception('connection closed')
        cur += line
        lit = re.search(rb'~?\{(\d+)\}\r\n$', line)
        if lit:
            cur += m.read(int(lit.group(1)))
            continue
        lines.append(cur.decode('latin-1').rstrip('\r\n'))
        cur = b''
        if line.startswith(tag + b' '):
            return lines
def raw(m, command):
    tag = m._new_tag()
    m.send(tag + b' ' + command.encode() + b'\r\n')
    return collect(m, tag)
def literal(m, head, data, eight):
    tag = m._new_tag()
    mark = b'~' if eight else b''
    m.send(tag + b' ' + head.encode() + b' ' + mark + b'{%d}\r\n' % len(data))
    line = m.readline()
    if not line.startswith(b'+'):
        return [line.decode(errors='replace').rstrip('\r\n')]
    m.send(data + b'\r\n')
    return collect(m, tag)
def show(name, lines):
    for l in lines:
        out(name, ascii(l))
"#;

fn run(f: &Fixture, body: &str) -> Vec<String> {
    f.py(&format!("{RAW}\n{body}"), &[])
}

/// The lines printed under `name`, without it, as one string.
fn under(lines: &[String], name: &str) -> String {
    let p = format!("{name} ");
    lines.iter().filter_map(|l| l.strip_prefix(p.as_str())).collect::<Vec<_>>().concat()
}

#[test]
fn capabilities_name_the_extensions() {
    let f = Fixture::start();
    let lines = run(&f, "m = tls()\nshow('caps', raw(m, 'CAPABILITY'))\n");
    let caps = under(&lines, "caps");
    let words: Vec<&str> = caps.split([' ', '\'']).collect();
    for cap in ["BINARY", "STATUS=SIZE", "QUOTA", "QUOTA=RES-STORAGE"] {
        assert!(words.contains(&cap), "{cap} missing: {caps}");
    }
}

#[test]
fn status_counts_size_and_deleted_messages() {
    let f = Fixture::start();
    f.receive(&plain("one"));
    f.receive(&plain("two"));
    let lines = run(
        &f,
        r#"
m = tls()
m.select('INBOX')
sizes = raw(m, 'FETCH 1:* (RFC822.SIZE)')
found = [int(x) for x in re.findall(r'RFC822.SIZE (\d+)', ''.join(sizes))]
out('total', sum(found))
out('second', found[1])
raw(m, 'STORE 2 +FLAGS (\\Deleted)')
show('status', raw(m, 'STATUS INBOX (MESSAGES SIZE DELETED DELETED-STORAGE)'))
show('none', raw(m, 'STATUS Drafts (SIZE DELETED)'))
"#,
    );
    let (total, second) = (under(&lines, "total"), under(&lines, "second"));
    let status = under(&lines, "status");
    assert!(status.contains(&format!("SIZE {total}")), "{total} {status}");
    assert!(status.contains("DELETED 1") && status.contains("MESSAGES 2"), "{status}");
    assert!(status.contains(&format!("DELETED-STORAGE {second}")), "{second} {status}");
    assert!(under(&lines, "none").contains("(SIZE 0 DELETED 0)"), "{lines:?}");
}

#[test]
fn quota_roots_report_storage_in_kib_and_setquota_is_refused() {
    let f = Fixture::start();
    f.world.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": 1_048_576})).expect(200);
    f.receive(&plain("one"));
    let lines = run(
        &f,
        r#"
m = tls()
show('root', raw(m, 'GETQUOTAROOT INBOX'))
show('get', raw(m, 'GETQUOTA ""'))
show('other', raw(m, 'GETQUOTA "elsewhere"'))
show('set', raw(m, 'SETQUOTA "" (STORAGE 10)'))
show('missing', raw(m, 'GETQUOTAROOT nowhere'))
"#,
    );
    let root = under(&lines, "root");
    assert!(root.contains(r#"* QUOTAROOT INBOX """#), "{root}");
    assert!(root.contains(r#"* QUOTA "" (STORAGE 1 1024)"#), "{root}");
    assert!(under(&lines, "get").contains(r#"* QUOTA "" (STORAGE 1 1024)"#), "{lines:?}");
    assert!(under(&lines, "other").contains(" NO [NONEXISTENT]"), "{lines:?}");
    assert!(under(&lines, "set").contains(" NO [NOPERM]"), "{lines:?}");
    assert!(under(&lines, "missing").contains(" NO [NONEXISTENT]"), "{lines:?}");

    // Without a limit there is no quota root.
    f.world.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": 0})).expect(200);
    let lines = run(
        &f,
        r#"
m = tls()
show('root', raw(m, 'GETQUOTAROOT INBOX'))
show('get', raw(m, 'GETQUOTA ""'))
"#,
    );
    let root = under(&lines, "root");
    assert!(root.contains("* QUOTAROOT INBOX'") && !root.contains("* QUOTA "), "{root}");
    assert!(under(&lines, "get").contains(" NO [NONEXISTENT]"), "{lines:?}");
}

#[test]
fn an_append_or_copy_past_the_quota_is_refused_with_overquota() {
    let f = Fixture::start();
    f.world.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": 4000})).expect(200);
    let lines = run(
        &f,
        r#"
m = tls()
small = b'Subject: small\r\n\r\n' + b'x' * 2500 + b'\r\n'
big = b'Subject: big\r\n\r\n' + b'x' * 8000 + b'\r\n'
show('small', literal(m, 'APPEND INBOX', small, False))
show('big', literal(m, 'APPEND INBOX', big, False))
m.select('INBOX')
show('copy', raw(m, 'COPY 1 Drafts'))
show('status', raw(m, 'STATUS INBOX (MESSAGES)'))
show('drafts', raw(m, 'STATUS Drafts (MESSAGES)'))
"#,
    );
    assert!(under(&lines, "small").contains(" OK [APPENDUID "), "{lines:?}");
    assert!(under(&lines, "big").contains(" NO [OVERQUOTA]"), "{lines:?}");
    assert!(under(&lines, "copy").contains(" NO [OVERQUOTA]"), "{lines:?}");
    assert!(under(&lines, "status").contains("(MESSAGES 1)"), "{lines:?}");
    assert!(under(&lines, "drafts").contains("(MESSAGES 0)"), "{lines:?}");
}

#[test]
fn binary_gives_parts_decoded() {
    let f = Fixture::start();
    let message = format!(
        "From: Ann <ann@example.org>\r\nTo: sales@{A}\r\nSubject: bin\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\
         hi\r\n--b\r\nContent-Type: application/octet-stream\r\n\
         Content-Transfer-Encoding: base64\r\n\r\naGVsbG8gd29ybGQ=\r\n--b\r\n\
         Content-Transfer-Encoding: x-unknown\r\n\r\nzz\r\n--b\r\n\
         Content-Transfer-Encoding: quoted-printable\r\n\r\na=3Db=00c\r\n--b--\r\n"
    );
    f.receive(&message);
    let lines = run(
        &f,
        r#"
m = tls()
m.select('INBOX')
show('bin', raw(m, 'FETCH 1 (BINARY.SIZE[2] BINARY.PEEK[2])'))
show('part', raw(m, 'FETCH 1 (BINARY.PEEK[2]<6.5>)'))
show('nul', raw(m, 'FETCH 1 (BINARY.PEEK[4] BINARY.SIZE[4])'))
show('unknown', raw(m, 'FETCH 1 (BINARY.PEEK[3])'))
show('peeked', raw(m, 'FETCH 1 (FLAGS)'))
show('read', raw(m, 'FETCH 1 (BINARY[1])'))
"#,
    );
    let bin = under(&lines, "bin");
    assert!(bin.contains("BINARY.SIZE[2] 11"), "{bin}");
    assert!(bin.contains("BINARY[2] {11}\\r\\nhello world"), "{bin}");
    // imap-types has no origin for a BINARY item: the part comes as RFC 3516's grammar has it.
    assert!(under(&lines, "part").contains("BINARY[2] {5}\\r\\nworld"), "{lines:?}");
    let nul = under(&lines, "nul");
    assert!(nul.contains("BINARY[4] ~{5}\\r\\na=b\\x00c") && nul.contains("SIZE[4] 5"), "{nul}");
    assert!(under(&lines, "unknown").contains(" NO [UNKNOWN-CTE]"), "{lines:?}");
    assert!(!under(&lines, "peeked").contains("Seen"), "peeks leave \\Seen: {lines:?}");
    assert!(under(&lines, "read").contains("\\\\Seen"), "BINARY sets \\Seen: {lines:?}");
}

#[test]
fn a_literal8_append_keeps_nul_bytes_and_a_plain_literal_may_not_carry_them() {
    let f = Fixture::start();
    let lines = run(
        &f,
        r#"
m = tls()
msg = (b'From: user@domain.org\r\nContent-Type: application/octet-stream\r\n'
       b'Content-Transfer-Encoding: binary\r\n\r\n\x00-\xe4\n\r\n\n')
show('append', literal(m, 'APPEND INBOX', msg, True))
show('plain', literal(m, 'APPEND INBOX', msg, False))
show('alive', raw(m, 'NOOP'))
m.select('INBOX')
show('body', raw(m, 'FETCH 1 (BODY.PEEK[1])'))
show('binary', raw(m, 'FETCH 1 (BINARY.SIZE[1] BINARY.PEEK[1])'))
show('count', raw(m, 'STATUS INBOX (MESSAGES)'))
"#,
    );
    assert!(under(&lines, "append").contains(" OK [APPENDUID "), "{lines:?}");
    assert!(under(&lines, "plain").contains(" BAD "), "{lines:?}");
    assert!(under(&lines, "alive").contains(" OK "), "{lines:?}");
    // Stored in base64, so BODY[1] can show it; BINARY[1] gives the bytes back.
    assert!(under(&lines, "body").contains("BODY[1] {14}\\r\\nAC3kCg0KCg==\\r\\n"), "{lines:?}");
    let binary = under(&lines, "binary");
    assert!(
        binary.contains("BINARY.SIZE[1] 7 BINARY[1] ~{7}\\r\\n\\x00-\\xe4\\n\\r\\n\\n"),
        "{binary}"
    );
    assert!(under(&lines, "count").contains("(MESSAGES 1)"), "{lines:?}");
}
