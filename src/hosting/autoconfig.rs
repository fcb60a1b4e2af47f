//! The three documents mail clients configure themselves from: Thunderbird's autoconfig
//! (`config-v1.1.xml`), Microsoft's POX Autodiscover answer, and an Apple configuration profile
//! (`.mobileconfig`). Each names only listeners that run, at their public host and ports, and
//! never carries a password: the user types an app password (or the profile asks for it).

use std::fmt::Write;

use sha2::{Digest, Sha256};

use super::xml::{element, escaped, first_text};
use super::{Endpoints, Security};

/// The largest Autodiscover request we read; real ones are a few hundred bytes.
pub const MAX_AUTODISCOVER_REQUEST: usize = 16 * 1024;

/// Thunderbird's `clientConfig` 1.1 for `domain`: every IMAP and submission listener that runs,
/// implicit TLS first (RFC 8314), the full address as the login name.
pub fn thunderbird(domain: &str, e: &Endpoints) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str("<clientConfig version=\"1.1\">\n");
    let _ = writeln!(out, "  <emailProvider id=\"{}\">", escaped(domain));
    element(&mut out, 4, "domain", domain);
    element(&mut out, 4, "displayName", &format!("{domain} mail"));
    element(&mut out, 4, "displayShortName", domain);
    let servers = [
        ("incomingServer", "imap", e.imaps, Security::Tls),
        ("incomingServer", "imap", e.imap, Security::StartTls),
        ("outgoingServer", "smtp", e.submissions, Security::Tls),
        ("outgoingServer", "smtp", e.submission, Security::StartTls),
    ];
    for (tag, kind, port, security) in servers {
        let Some(port) = port else { continue };
        let _ = writeln!(out, "    <{tag} type=\"{kind}\">");
        element(&mut out, 6, "hostname", &e.host);
        element(&mut out, 6, "port", &port.to_string());
        let socket = if security == Security::Tls { "SSL" } else { "STARTTLS" };
        element(&mut out, 6, "socketType", socket);
        element(&mut out, 6, "authentication", "password-cleartext");
        element(&mut out, 6, "username", "%EMAILADDRESS%");
        let _ = writeln!(out, "    </{tag}>");
    }
    out.push_str("  </emailProvider>\n</clientConfig>\n");
    out
}

/// The `EMailAddress` of a POX Autodiscover request (a DTD or a body over
/// `MAX_AUTODISCOVER_REQUEST` is refused).
pub fn autodiscover_address(body: &[u8]) -> Result<String, String> {
    if body.len() > MAX_AUTODISCOVER_REQUEST {
        return Err(format!("request over {MAX_AUTODISCOVER_REQUEST} bytes"));
    }
    let found = first_text(body, "EMailAddress", 256)?;
    let address = found.ok_or("no EMailAddress in the request")?;
    if address.len() > 254 || !address.contains('@') {
        return Err("EMailAddress is not an address".into());
    }
    Ok(address)
}

/// The POX Autodiscover answer (the Outlook response schema 2006a) for `address`: one IMAP
/// and one SMTP protocol, the preferred listener of each.
pub fn autodiscover(address: &str, e: &Endpoints) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str(
        "<Autodiscover xmlns=\"http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006\">\n",
    );
    out.push_str(
        "  <Response xmlns=\"http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a\">\n",
    );
    out.push_str("    <Account>\n");
    element(&mut out, 6, "AccountType", "email");
    element(&mut out, 6, "Action", "settings");
    for (kind, endpoint) in [("IMAP", e.incoming()), ("SMTP", e.outgoing())] {
        let Some((port, security)) = endpoint else { continue };
        out.push_str("      <Protocol>\n");
        element(&mut out, 8, "Type", kind);
        element(&mut out, 8, "Server", &e.host);
        element(&mut out, 8, "Port", &port.to_string());
        element(&mut out, 8, "LoginName", address);
        element(&mut out, 8, "DomainRequired", "off");
        element(&mut out, 8, "SPA", "off");
        let (ssl, encryption) = match security {
            Security::Tls => ("on", "SSL"),
            Security::StartTls => ("on", "TLS"),
        };
        element(&mut out, 8, "SSL", ssl);
        element(&mut out, 8, "Encryption", encryption);
        element(&mut out, 8, "AuthRequired", "on");
        out.push_str("      </Protocol>\n");
    }
    out.push_str("    </Account>\n  </Response>\n</Autodiscover>\n");
    out
}

/// The content type Apple devices install a configuration profile from.
pub const MOBILECONFIG_TYPE: &str = "application/x-apple-aspen-config";

/// An Apple configuration profile with one mail account (`com.apple.mail.managed`) for
/// `address`; `None` when neither IMAP nor submission runs. No password: the device asks.
/// Its UUIDs are derived from the address, so installing it again replaces the account.
pub fn mobileconfig(address: &str, e: &Endpoints) -> Option<String> {
    let (Some((imap_port, imap_sec)), Some((smtp_port, smtp_sec))) = (e.incoming(), e.outgoing())
    else {
        return None;
    };
    let domain = address.rsplit_once('@').map_or("", |(_, d)| d);
    let reversed: Vec<&str> = domain.rsplit('.').collect();
    let identifier = format!("{}.mail.{}", reversed.join("."), address.replace('@', "."));
    let mut account = Plist::default();
    account.string("EmailAccountDescription", address);
    account.string("EmailAccountType", "EmailTypeIMAP");
    account.string("EmailAddress", address);
    account.string("IncomingMailServerAuthentication", "EmailAuthPassword");
    account.string("IncomingMailServerHostName", &e.host);
    account.integer("IncomingMailServerPortNumber", imap_port);
    account.boolean("IncomingMailServerUseSSL", imap_sec == Security::Tls);
    account.string("IncomingMailServerUsername", address);
    account.string("OutgoingMailServerAuthentication", "EmailAuthPassword");
    account.string("OutgoingMailServerHostName", &e.host);
    account.integer("OutgoingMailServerPortNumber", smtp_port);
    account.boolean("OutgoingMailServerUseSSL", smtp_sec == Security::Tls);
    account.string("OutgoingMailServerUsername", address);
    account.boolean("OutgoingPasswordSameAsIncomingPassword", true);
    account.string("PayloadDisplayName", &format!("Mail: {address}"));
    account.string("PayloadIdentifier", &format!("{identifier}.account"));
    account.string("PayloadType", "com.apple.mail.managed");
    account.string("PayloadUUID", &uuid(address, "account"));
    account.integer("PayloadVersion", 1);
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
         \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n",
    );
    out.push_str("  <key>PayloadContent</key>\n  <array>\n    <dict>\n");
    out.push_str(&account.0);
    out.push_str("    </dict>\n  </array>\n");
    let mut top = Plist::default();
    top.string("PayloadDescription", &format!("Settings for the mailbox {address}"));
    top.string("PayloadDisplayName", &format!("{domain} mail"));
    top.string("PayloadIdentifier", &identifier);
    top.boolean("PayloadRemovalDisallowed", false);
    top.string("PayloadType", "Configuration");
    top.string("PayloadUUID", &uuid(address, "profile"));
    top.integer("PayloadVersion", 1);
    out.push_str(&top.0.replace("      <", "  <"));
    out.push_str("</dict>\n</plist>\n");
    Some(out)
}

/// Key-value lines of a plist `dict`, indented for the inner dict.
#[derive(Default)]
struct Plist(String);

impl Plist {
    fn key(&mut self, key: &str) {
        let _ = writeln!(self.0, "      <key>{}</key>", escaped(key));
    }
    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        let _ = writeln!(self.0, "      <string>{}</string>", escaped(value));
    }
    fn integer(&mut self, key: &str, value: u16) {
        self.key(key);
        let _ = writeln!(self.0, "      <integer>{value}</integer>");
    }
    fn boolean(&mut self, key: &str, value: bool) {
        self.key(key);
        let _ = writeln!(self.0, "      <{}/>", if value { "true" } else { "false" });
    }
}

/// A UUID (version 4 layout) taken from the SHA-256 of the address and a purpose.
fn uuid(address: &str, purpose: &str) -> String {
    let d = Sha256::digest(format!("{purpose}\0{address}").as_bytes());
    let mut b: [u8; 16] = [0; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints() -> Endpoints {
        Endpoints {
            host: "mx.example.net".into(),
            imap: Some(143),
            imaps: Some(993),
            submission: None,
            submissions: Some(465),
        }
    }

    #[test]
    fn thunderbird_names_running_listeners_and_escapes_the_domain() {
        let doc = thunderbird("a<b>.example", &endpoints());
        assert!(doc.contains("<emailProvider id=\"a&lt;b&gt;.example\">"), "{doc}");
        assert!(doc.contains("<port>993</port>\n      <socketType>SSL</socketType>"), "{doc}");
        assert!(doc.contains("<port>143</port>\n      <socketType>STARTTLS</socketType>"), "{doc}");
        assert!(doc.contains("<port>465</port>"), "{doc}");
        assert_eq!(doc.matches("<outgoingServer").count(), 1, "submission does not run: {doc}");
    }

    #[test]
    fn autodiscover_reads_the_address_and_refuses_dtds_and_size() {
        let ok = b"<?xml version=\"1.0\"?><Autodiscover xmlns=\"x\"><Request>\
            <EMailAddress>ann@example.com</EMailAddress></Request></Autodiscover>";
        assert_eq!(autodiscover_address(ok).as_deref(), Ok("ann@example.com"));
        let bomb = b"<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY a \"aaaa\">]>\
            <Autodiscover><Request><EMailAddress>&a;</EMailAddress></Request></Autodiscover>";
        assert!(autodiscover_address(bomb).is_err());
        assert!(autodiscover_address(&vec![b' '; MAX_AUTODISCOVER_REQUEST + 1]).is_err());
        assert!(autodiscover_address(b"<a><b>no address</b></a>").is_err());
        let answer = autodiscover("ann@example.com", &endpoints());
        assert!(answer.contains("<Type>IMAP</Type>") && answer.contains("<Port>993</Port>"));
        assert!(answer.contains("<Type>SMTP</Type>") && answer.contains("<Port>465</Port>"));
    }

    #[test]
    fn a_profile_needs_both_services_and_has_stable_uuids() {
        let doc = mobileconfig("ann@example.com", &endpoints()).expect("profile"); // ok: test
        assert!(doc.contains("<string>com.apple.mail.managed</string>"));
        assert!(!doc.to_ascii_lowercase().contains("password</key>\n      <string>"));
        assert_eq!(Some(doc), mobileconfig("ann@example.com", &endpoints()));
        let mut none = endpoints();
        none.submissions = None;
        assert_eq!(mobileconfig("ann@example.com", &none), None);
    }
}
