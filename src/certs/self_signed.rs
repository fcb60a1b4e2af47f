//! The offline fallback of every TLS listener: a self-signed leaf certificate (not a CA)
//! generated on first start and kept in the store, so it stays the same across restarts and
//! clients can pin it. Its subject is `smtp.hostname`,
//! it names `localhost`, 127.0.0.1 and ::1 too, and it is valid for a year: a start within
//! 30 days of its end makes a new one.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::{Served, Source};
use crate::error::{Error, Result};
use crate::store::Store;

/// The self-signed certificate of `host`, made and stored on first start (blocking).
pub(super) fn load(host: &str, store: &Store) -> Result<Served> {
    let (certs, key) = self_signed(host, store)?;
    super::served_from_der(certs, &key, Source::SelfSigned)
}

/// How long a self-signed certificate is valid, and how early before its end a start renews it.
const VALID_DAYS: u64 = 365;
const RENEW_DAYS: u64 = 30;

fn self_signed(
    host: &str,
    store: &Store,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    // Earlier releases kept certificates without an end (`smtp_tls:`, `tls_leaf:`): they are
    // replaced. The stored value is the end (Unix seconds) on a line, then the PEM.
    let name = format!("tls_cert:{host}");
    let stored = {
        let name = name.clone();
        store.read_blocking(move |r| r.optional_secret(&name))?
    };
    let now = crate::ids::now_ms() / 1000;
    let renew_after = |until: u64| until.saturating_sub(RENEW_DAYS * 86_400);
    let pem = match stored.as_deref().and_then(split_stored) {
        Some((until, pem)) if now < renew_after(until) => pem.to_vec(),
        _ => {
            let (until, pem) = generate(host)?;
            let value = [format!("{until}\n").into_bytes(), pem.clone()].concat();
            let n = name.clone();
            store.write_blocking(move |w| w.put_secret(&n, &value))?;
            pem
        }
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::internal(format!("stored certificate: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| Error::internal(format!("stored key: {e}")))?;
    Ok((certs, key))
}

/// The end (Unix seconds) and the PEM of a stored certificate.
fn split_stored(value: &[u8]) -> Option<(u64, &[u8])> {
    let line = value.iter().position(|b| *b == b'\n')?;
    let until = std::str::from_utf8(&value[..line]).ok()?.parse().ok()?;
    Some((until, &value[line + 1..]))
}

/// A new self-signed certificate for `host`: its end (Unix seconds) and its PEM (certificate,
/// then key).
fn generate(host: &str) -> Result<(u64, Vec<u8>)> {
    let failed = |e: rcgen::Error| Error::internal(format!("certificate generation: {e}"));
    let mut names: Vec<String> =
        [host, "localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
    names.dedup();
    let mut params = rcgen::CertificateParams::new(names).map_err(failed)?;
    let mut subject = rcgen::DistinguishedName::new();
    subject.push(rcgen::DnType::CommonName, host);
    params.distinguished_name = subject;
    // Whole days in UTC: the certificate runs from midnight yesterday to midnight a year on.
    let today = crate::ids::now_ms() / 1000 / 86_400;
    let date = |day: u64| -> Result<(i32, u8, u8)> {
        let stamp = jiff::Timestamp::from_second((day * 86_400) as i64).map_err(Error::internal)?;
        let d = stamp.to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
        Ok((i32::from(d.year()), d.month() as u8, d.day() as u8))
    };
    let (y, m, d) = date(today.saturating_sub(1))?;
    params.not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = date(today + VALID_DAYS)?;
    params.not_after = rcgen::date_time_ymd(y, m, d);
    let until = (today + VALID_DAYS) * 86_400;
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok((until, format!("{}{}", cert.pem(), key.serialize_pem()).into_bytes()))
}
