//! What `GET /v1/certificates` says of a certificate, read from its DER with x509-parser.

use rustls::pki_types::CertificateDer;
use serde::Serialize;

use crate::error::{Error, Result};

/// The names, issuer and validity of a leaf certificate (times in Unix milliseconds, like
/// every time in the API).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    pub names: Vec<String>,
    pub issuer: String,
    pub not_before: i64,
    pub not_after: i64,
}

/// At most this many names are read from one certificate (ACME servers issue up to 100).
const MAX_NAMES: usize = 1000;

impl Info {
    pub fn read(der: &CertificateDer<'_>) -> Result<Info> {
        use x509_parser::prelude::*;
        let (_, cert) = X509Certificate::from_der(der.as_ref())
            .map_err(|e| Error::internal(format!("certificate: {e}")))?;
        let mut names: Vec<String> = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in san.value.general_names.iter().take(MAX_NAMES) {
                match name {
                    GeneralName::DNSName(n) => names.push(n.to_ascii_lowercase()),
                    GeneralName::IPAddress(ip) => names.extend(ip_text(ip)),
                    _ => {}
                }
            }
        }
        if names.is_empty() {
            let cn = cert.subject().iter_common_name().next().and_then(|c| c.as_str().ok());
            names.extend(cn.map(str::to_ascii_lowercase));
        }
        let validity = cert.validity();
        Ok(Info {
            names,
            issuer: cert.issuer().to_string(),
            not_before: validity.not_before.timestamp().saturating_mul(1000),
            not_after: validity.not_after.timestamp().saturating_mul(1000),
        })
    }
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(|b| std::net::Ipv4Addr::from(b).to_string()),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| std::net::Ipv6Addr::from(b).to_string()),
        _ => None,
    }
}
