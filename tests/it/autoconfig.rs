//! What mail clients and other servers fetch to set themselves up, from one real server with
//! IMAPS, submission and submissions listeners on port 0: Thunderbird's autoconfig, Outlook's
//! Autodiscover and Apple's profile parse (Python's XML and plist readers) and name the ports
//! that listen (or the public port configured for NAT); the MTA-STS policy follows the
//! configuration; `domain add` prints the SRV, `_mta-sts` and `_smtp._tls` records.

use std::io::Write;
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::client::Resp;
use crate::harness::{A, cli};
use crate::mail_world::MailWorld;

/// Runs `script` under python3 with `input` on stdin; its stdout lines.
fn python(script: &str, input: &[u8]) -> Vec<String> {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3"); // ok: test
    child.stdin.take().expect("stdin").write_all(input).expect("write"); // ok: test
    let out = child.wait_with_output().expect("python3 output"); // ok: test
    assert!(out.status.success(), "python3: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

/// The servers of a Thunderbird document, as `kind type host port socketType username`.
fn thunderbird_servers(doc: &[u8]) -> Vec<String> {
    let script = r#"
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == "clientConfig" and root.get("version") == "1.1", root.tag
p = root.find("emailProvider")
print("domain", p.findtext("domain"))
for kind in ("incomingServer", "outgoingServer"):
    for s in p.findall(kind):
        print(kind, s.get("type"), s.findtext("hostname"), s.findtext("port"),
              s.findtext("socketType"), s.findtext("username"))
"#;
    python(script, doc)
}

/// A GET with this Host header (the client's own names the socket address), its answer checked
/// against the API document like every other.
fn get_on_host(w: &MailWorld, path: &str, host: &str) -> Resp {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let resp = w.server.client(None).exchange(request.as_bytes());
    crate::schema::check_response("GET", path, &resp);
    resp
}

fn header<'a>(resp: &'a Resp, name: &str) -> &'a str {
    resp.header(name).unwrap_or("")
}

#[test]
fn clients_and_servers_find_our_settings() {
    let env = [
        ("EDGEMAIL_SMTP_HOSTNAME", "mx.alpha.test"),
        ("EDGEMAIL_AUTOCONFIG_HOST", "mail.alpha.test"),
        ("EDGEMAIL_AUTOCONFIG_SUBMISSION_PORT", "587"),
        ("EDGEMAIL_MTA_STS_POLICY_MODE", "enforce"),
        ("EDGEMAIL_MTA_STS_POLICY_MX", "mx.alpha.test, *.backup.alpha.test"),
        ("EDGEMAIL_MTA_STS_MAX_AGE", "86400s"),
    ];
    let args =
        ["--imaps", "127.0.0.1:0", "--submission", "127.0.0.1:0", "--submissions", "127.0.0.1:0"];
    let w = MailWorld::start_with(&env, &args);
    let port = |name: &str| w.server.listener(name).expect("listener").port(); // ok: test
    let (imaps, submissions) = (port("imaps"), port("submissions"));
    thunderbird(&w, imaps, submissions);
    autodiscover(&w, imaps, submissions);
    mobileconfig(&w, imaps, submissions);
    let policy = mta_sts(&w);
    zone(&w, imaps, submissions, &policy);
}

fn thunderbird(w: &MailWorld, imaps: u16, submissions: u16) {
    let anon = w.server.client(None);
    let resp = anon.get(&format!("/mail/config-v1.1.xml?emailaddress=sales%40{A}")).expect(200);
    assert_eq!(header(&resp, "content-type"), "application/xml");
    let servers = thunderbird_servers(&resp.body);
    assert_eq!(
        servers,
        vec![
            format!("domain {A}"),
            format!("incomingServer imap mail.alpha.test {imaps} SSL %EMAILADDRESS%"),
            format!("outgoingServer smtp mail.alpha.test {submissions} SSL %EMAILADDRESS%"),
            // Behind NAT: the public port configured, not the one bound.
            "outgoingServer smtp mail.alpha.test 587 STARTTLS %EMAILADDRESS%".to_owned(),
        ],
        "no plain IMAP listener runs, so none is named"
    );
    // The well-known location on autoconfig.<domain>, with no address: the Host names it.
    let path = "/.well-known/autoconfig/mail/config-v1.1.xml";
    let known = get_on_host(w, path, "autoconfig.alpha.test").expect(200);
    assert_eq!(thunderbird_servers(&known.body), servers);
    anon.get("/mail/config-v1.1.xml?emailaddress=ann%40elsewhere.test").expect(404);
    get_on_host(w, path, "autoconfig.elsewhere.test").expect(404);
    anon.get("/mail/config-v1.1.xml?emailaddress=nobody").expect(400);
}

fn autodiscover(w: &MailWorld, imaps: u16, submissions: u16) {
    let anon = w.server.client(None);
    let request = |address: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Autodiscover xmlns=\"http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006\">\
             <Request><EMailAddress>{address}</EMailAddress><AcceptableResponseSchema>\
             http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a\
             </AcceptableResponseSchema></Request></Autodiscover>"
        )
    };
    let xml = [("Content-Type", "text/xml")];
    let path = "/autodiscover/autodiscover.xml";
    let body = request(&format!("Sales@{A}"));
    let resp = anon.raw("POST", path, &xml, Some(body.as_bytes())).expect(200);
    let script = r#"
import sys, xml.etree.ElementTree as ET
ns = {"r": "http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a"}
root = ET.fromstring(sys.stdin.buffer.read())
for p in root.iterfind(".//r:Protocol", ns):
    print(*(p.findtext("r:" + f, namespaces=ns) for f in ("Type", "Server", "Port", "LoginName", "Encryption")))
"#;
    assert_eq!(
        python(script, &resp.body),
        vec![
            format!("IMAP mail.alpha.test {imaps} Sales@{A} SSL"),
            format!("SMTP mail.alpha.test {submissions} Sales@{A} SSL"),
        ]
    );
    let other = request("ann@elsewhere.test");
    anon.raw("POST", path, &xml, Some(other.as_bytes())).expect(404);
    // An entity bomb is refused before any entity could be expanded.
    let bomb = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY a \"{}\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>{}",
        "x".repeat(64),
        request("&b;@alpha.test")
    );
    anon.raw("POST", path, &xml, Some(bomb.as_bytes())).expect(400);
    anon.raw("POST", path, &xml, Some(b"not xml at all")).expect(400);
}

fn mobileconfig(w: &MailWorld, imaps: u16, submissions: u16) {
    let resp = w.api().get("/v1/mailboxes/sales/mobileconfig").expect(200);
    assert_eq!(header(&resp, "content-type"), "application/x-apple-aspen-config");
    assert!(header(&resp, "content-disposition").contains("sales@alpha.test.mobileconfig"));
    let script = r#"
import sys, plistlib
p = plistlib.loads(sys.stdin.buffer.read())
a = p["PayloadContent"][0]
print(p["PayloadType"], a["PayloadType"], a["EmailAddress"])
print(a["IncomingMailServerHostName"], a["IncomingMailServerPortNumber"], a["IncomingMailServerUseSSL"])
print(a["OutgoingMailServerHostName"], a["OutgoingMailServerPortNumber"], a["OutgoingMailServerUseSSL"])
print(sorted(k for k in a if "Password" in k and k != "OutgoingPasswordSameAsIncomingPassword"))
"#;
    assert_eq!(
        python(script, &resp.body),
        vec![
            format!("Configuration com.apple.mail.managed sales@{A}"),
            format!("mail.alpha.test {imaps} True"),
            format!("mail.alpha.test {submissions} True"),
            "[]".to_owned(),
        ],
        "no password is inside"
    );
    w.api().get("/v1/mailboxes/nobody/mobileconfig").expect(404);
    w.api().get("/v1/mailboxes/sales@beta.test/mobileconfig").expect(404);
    w.server.client(None).get("/v1/mailboxes/sales/mobileconfig").expect(401);
}

/// The policy served for alpha.test.
fn mta_sts(w: &MailWorld) -> String {
    let path = "/.well-known/mta-sts.txt";
    let resp = get_on_host(w, path, "MTA-STS.alpha.test:443").expect(200);
    assert!(header(&resp, "content-type").starts_with("text/plain"));
    let text = resp.text();
    assert_eq!(
        text,
        "version: STSv1\r\nmode: enforce\r\nmx: mx.alpha.test\r\nmx: *.backup.alpha.test\r\n\
         max_age: 86400\r\n"
    );
    get_on_host(w, path, "mta-sts.elsewhere.test").expect(404);
    get_on_host(w, path, A).expect(404);
    text
}

fn zone(w: &MailWorld, imaps: u16, submissions: u16, policy: &str) {
    let data = w.dir.0.to_str().expect("utf-8 path"); // ok: test
    let (ok, out, err) = cli(&["domain", "add", "gamma.test", "--data", data]);
    assert!(ok, "{out}{err}");
    let has = |line: &str| assert!(out.lines().any(|l| l == line), "{line:?} not in\n{out}");
    has(&format!("_imaps._tcp.gamma.test.\t3600\tIN\tSRV\t0 1 {imaps} mail.alpha.test."));
    has("_imap._tcp.gamma.test.\t3600\tIN\tSRV\t0 0 0 .");
    has(&format!(
        "_submissions._tcp.gamma.test.\t3600\tIN\tSRV\t0 1 {submissions} mail.alpha.test."
    ));
    has("_submission._tcp.gamma.test.\t3600\tIN\tSRV\t10 1 587 mail.alpha.test.");
    has("_autodiscover._tcp.gamma.test.\t3600\tIN\tSRV\t0 1 443 mail.alpha.test.");
    has("autoconfig.gamma.test.\t3600\tIN\tCNAME\tmail.alpha.test.");
    has("mta-sts.gamma.test.\t3600\tIN\tCNAME\tmail.alpha.test.");
    has("_smtp._tls.gamma.test.\t3600\tIN\tTXT\t\"v=TLSRPTv1; rua=mailto:tls-reports@gamma.test\"");
    assert!(out.contains("rua=mailto:dmarc-reports@gamma.test"), "{out}");
    // The id is the policy's hash: it changes when the policy does (unit tested), and names
    // exactly the text gamma.test now serves (its policy is alpha's: the MX list is configured).
    let served =
        get_on_host(w, "/.well-known/mta-sts.txt", "mta-sts.gamma.test").expect(200).text();
    assert_eq!(served, policy);
    let id: String =
        Sha256::digest(served.as_bytes()).iter().take(10).map(|b| format!("{b:02x}")).collect();
    has(&format!("_mta-sts.gamma.test.\t3600\tIN\tTXT\t\"v=STSv1; id={id}\""));
}
