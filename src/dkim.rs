//! DKIM keys of a hosted domain and the DNS records a customer publishes for it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mail_auth::dkim::generate::DkimKeyPair;

use crate::error::{Error, Result};
use crate::ids::now_ms;
use crate::store::{DkimKey, Domain};

/// A new domain record with fresh RSA-2048 and Ed25519 keys. RSA is what every receiver verifies;
/// Ed25519 (RFC 8463) is the short modern signature added beside it.
pub fn generate(name: &str) -> Result<Domain> {
    let created_at = now_ms();
    let date = civil_date(created_at);
    let rsa = DkimKeyPair::generate_rsa(2048).map_err(Error::internal)?;
    let ed = DkimKeyPair::generate_ed25519().map_err(Error::internal)?;
    Ok(Domain {
        name: name.to_owned(),
        created_at,
        dkim: vec![
            DkimKey {
                selector: format!("em{date}r"),
                algorithm: "rsa-sha256".into(),
                private_key: B64.encode(rsa.private_key()),
                public_key: B64.encode(rsa_spki(rsa.public_key())),
            },
            DkimKey {
                selector: format!("em{date}e"),
                algorithm: "ed25519-sha256".into(),
                private_key: B64.encode(ed.private_key()),
                public_key: B64.encode(ed.public_key()),
            },
        ],
    })
}

/// The records to publish, as zone-file lines.
pub fn zone_lines(domain: &Domain, mx_host: Option<&str>) -> Vec<String> {
    let name = &domain.name;
    let mut lines = vec![format!("; DNS records for {name}: publish these at your DNS provider.")];
    let mx = match mx_host {
        Some(host) => host.to_owned(),
        None => {
            lines.push(format!(
                "; mail.{name} must resolve (A/AAAA) to this server; set smtp.hostname to use \
                 another name."
            ));
            format!("mail.{name}")
        }
    };
    lines.push(format!("{name}.\t3600\tIN\tMX\t10 {mx}."));
    lines.push(format!("{name}.\t3600\tIN\tTXT\t\"v=spf1 mx -all\""));
    for key in &domain.dkim {
        let k = if key.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
        let value = format!("v=DKIM1; k={k}; p={}", key.public_key);
        lines.push(format!(
            "{}._domainkey.{name}.\t3600\tIN\tTXT\t{}",
            key.selector,
            txt_strings(&value)
        ));
    }
    lines.push(format!(
        "_dmarc.{name}.\t3600\tIN\tTXT\t\"v=DMARC1; p=quarantine; adkim=s; aspf=s; \
         rua=mailto:dmarc-reports@{name}\""
    ));
    lines
}

/// Every record a hosted domain publishes: `zone_lines`, then what mail clients and other
/// servers find us by (SRV, MTA-STS, TLS-RPT: `hosting::zone_lines`).
pub fn full_zone(
    domain: &Domain,
    config: &crate::config::Config,
    bound: crate::hosting::Bound,
) -> Vec<String> {
    let mut lines = zone_lines(domain, config.smtp.hostname.as_deref());
    let endpoints = crate::hosting::Endpoints::new(config, bound, &domain.name);
    lines.extend(crate::hosting::zone_lines(&domain.name, config, &endpoints));
    lines
}

/// A TXT value as quoted character-strings of at most 255 bytes each (RFC 1035 3.3.14).
fn txt_strings(value: &str) -> String {
    value
        .as_bytes()
        .chunks(255)
        .map(|chunk| format!("\"{}\"", String::from_utf8_lossy(chunk)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Wraps a PKCS#1 RSAPublicKey in a SubjectPublicKeyInfo, the form DKIM's `p=` tag carries.
fn rsa_spki(pkcs1: &[u8]) -> Vec<u8> {
    const ALGORITHM: &[u8] =
        &[0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
    let mut bit_string = vec![0x00];
    bit_string.extend_from_slice(pkcs1);
    let mut inner = ALGORITHM.to_vec();
    der_element(&mut inner, 0x03, &bit_string);
    let mut out = Vec::with_capacity(inner.len() + 4);
    der_element(&mut out, 0x30, &inner);
    out
}

fn der_element(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
}

/// `yyyymmdd` of a Unix-millisecond time (UTC), for dated selectors.
fn civil_date(ms: u64) -> String {
    // Days-to-civil conversion (proleptic Gregorian), after H. Hinnant's public-domain algorithm.
    let days = (ms / 86_400_000) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "19700101");
        assert_eq!(civil_date(1_795_305_600_000), "20261122");
    }

    #[test]
    fn long_txt_values_are_split() {
        let v = "x".repeat(300);
        assert_eq!(txt_strings(&v), format!("\"{}\" \"{}\"", "x".repeat(255), "x".repeat(45)));
    }

    #[test]
    fn generated_keys_produce_records() {
        let domain = generate("example.com").expect("keys"); // ok: test
        let lines = zone_lines(&domain, Some("mx.example.net"));
        assert!(lines.iter().any(|l| l.contains("IN\tMX\t10 mx.example.net.")));
        assert!(lines.iter().any(|l| l.contains("k=rsa; p=MIIB")), "SPKI starts MIIB: {lines:?}");
        assert!(lines.iter().any(|l| l.contains("k=ed25519")));
        assert!(lines.iter().any(|l| l.starts_with("_dmarc.example.com.")));
    }
}
