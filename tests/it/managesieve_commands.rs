//! Every ManageSieve command (RFC 5804) besides the PUTSCRIPT that `sieve.rs` drives with
//! sieve-connect, spoken by a raw socket peer (Python's socket and ssl): the greeting and
//! CAPABILITY before and after STARTTLS, NOOP, AUTHENTICATE PLAIN (refused before TLS, with a
//! wrong password, accepted with the mailbox's app password), HAVESPACE, CHECKSCRIPT and
//! PUTSCRIPT of a script with a syntax error (refused with its line), LISTSCRIPTS, SETACTIVE
//! (seen in the API), GETSCRIPT, RENAMESCRIPT, DELETESCRIPT (the active one refused) and LOGOUT.

use crate::harness::A;
use crate::imap::Fixture;

const PEER: &str = r#"
import socket, ssl, sys, base64
port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sock = socket.create_connection(('127.0.0.1', port), timeout=20)
f = sock.makefile('rb')

def answer():
    """Lines up to the final OK/NO/BYE line, literals read whole."""
    out = b''
    while True:
        line = f.readline()
        assert line, 'connection closed; so far: %r' % out
        out += line
        text = line.rstrip(b'\r\n')
        if text.endswith(b'}') and b'{' in text:
            n = int(text[text.rindex(b'{') + 1:-1].rstrip(b'+'))
            out += f.read(n)
            if text[:2] in (b'OK', b'NO') or text[:3] == b'BYE':
                # A final reply whose text is a literal ends with it.
                return out.decode() + f.readline().decode()
            continue
        if text[:2] in (b'OK', b'NO') or text[:3] == b'BYE':
            return out.decode()

def send(data):
    sock.sendall(data.encode() if isinstance(data, str) else data)

def cmd(line):
    send(line + '\r\n')
    return answer()

def literal(text):
    return '{%d+}\r\n%s' % (len(text.encode()), text)

def expect(reply, start, *parts):
    lines = [l for l in reply.strip().split('\r\n') if l[:2] in ('OK', 'NO') or l[:3] == 'BYE']
    last = lines[-1] if lines else reply
    assert last.startswith(start), 'wanted %s: %r' % (start, reply)
    for p in parts:
        assert p in reply, 'wanted %r in %r' % (p, reply)
    print(start, last, flush=True)

greeting = answer()
expect(greeting, 'OK', '"STARTTLS"', '"SASL" ""', 'fileinto', 'vacation', 'imap4flags')
expect(cmd('CAPABILITY'), 'OK', '"IMPLEMENTATION" "edgemail"', '"VERSION" "1.0"')
expect(cmd('NOOP "t1"'), 'OK', '(TAG "t1")')
plain = base64.b64encode(('\0%s\0%s' % (user, password)).encode()).decode()
expect(cmd('AUTHENTICATE "PLAIN" "%s"' % plain), 'NO')
expect(cmd('STARTTLS'), 'OK')
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
sock = ctx.wrap_socket(sock, server_hostname='localhost')
f = sock.makefile('rb')
again = answer()
expect(again, 'OK', '"SASL" "PLAIN"')
assert '"STARTTLS"' not in again, again
wrong = base64.b64encode(('\0%s\0not-the-password' % user).encode()).decode()
expect(cmd('AUTHENTICATE "PLAIN" "%s"' % wrong), 'NO')
expect(cmd('AUTHENTICATE "PLAIN" "%s"' % plain), 'OK')
expect(cmd('HAVESPACE "one" 1000'), 'OK')
expect(cmd('HAVESPACE "one" 999999999'), 'NO', 'QUOTA/MAXSIZE')
bad = 'require "fileinto";\r\nfileinto "x"\r\nkeep;\r\n'
expect(cmd('CHECKSCRIPT ' + literal(bad)), 'NO', 'line ')
expect(cmd('PUTSCRIPT "broken" ' + literal(bad)), 'NO', 'line ')
one = 'require "fileinto";\r\nif header :contains "subject" "one" { fileinto "One"; }\r\n'
two = 'keep;\r\n'
expect(cmd('CHECKSCRIPT ' + literal(one)), 'OK')
expect(cmd('PUTSCRIPT "one" ' + literal(one)), 'OK')
expect(cmd('PUTSCRIPT "two" ' + literal(two)), 'OK')
listed = cmd('LISTSCRIPTS')
expect(listed, 'OK', '"one"', '"two"')
assert 'ACTIVE' not in listed and 'broken' not in listed, listed
expect(cmd('SETACTIVE "one"'), 'OK')
expect(cmd('LISTSCRIPTS'), 'OK', '"one" ACTIVE')
expect(cmd('GETSCRIPT "one"'), 'OK', 'fileinto "One"')
expect(cmd('GETSCRIPT "nope"'), 'NO', 'NONEXISTENT')
expect(cmd('RENAMESCRIPT "two" "three"'), 'OK')
renamed = cmd('LISTSCRIPTS')
expect(renamed, 'OK', '"three"')
assert '"two"' not in renamed, renamed
expect(cmd('DELETESCRIPT "one"'), 'NO', 'ACTIVE')
expect(cmd('DELETESCRIPT "three"'), 'OK')
expect(cmd('LOGOUT'), 'OK')
print('done', flush=True)
"#;

#[test]
fn every_managesieve_command_answers_as_rfc_5804_says() {
    let f = Fixture::start_with(&[("EDGEMAIL_MANAGESIEVE_LISTEN", "127.0.0.1:0")]);
    let port = f.port("managesieve").to_string();
    let user = format!("sales@{A}");
    let out = std::process::Command::new("python3")
        .args(["-c", PEER, &port, &user, &f.password])
        .output()
        .expect("python3"); // ok: test
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("done"), "{text}");
    // The active script is the one the API shows.
    let shown = f.world.api().get("/v1/mailboxes/sales/sieve").expect(200).json();
    assert!(shown["script"].as_str().is_some_and(|s| s.contains("fileinto \"One\"")), "{shown}");
}
