//! The certificate of every SMTP listener (STARTTLS and implicit TLS): the configured PEM files,
//! or a self-signed leaf certificate (not a CA) generated on first start and kept in the store,
//! so it stays the same across restarts and clients can pin it. It names `smtp.hostname`,
//! `localhost`, 127.0.0.1 and ::1.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::Smtp;
use crate::error::{Error, Result};
use crate::store::Store;

pub fn acceptor(cfg: &Smtp, store: &Store) -> Result<TlsAcceptor> {
    let (certs, key) = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| Error::internal(format!("{}: {e}", cert.display())))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| Error::internal(format!("{}: {e}", key.display())))?;
            (certs, key)
        }
        _ => self_signed(cfg.host(), store)?,
    };
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::internal(format!("TLS certificate: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn self_signed(
    host: &str,
    store: &Store,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    // Certificates of earlier releases (`smtp_tls:`) named the host only.
    let name = format!("tls_leaf:{host}");
    let stored = {
        let name = name.clone();
        store.read_blocking(move |r| r.optional_secret(&name))?
    };
    let pem = match stored {
        Some(pem) => pem,
        None => {
            let names = [host, "localhost", "127.0.0.1", "::1"];
            let mut names: Vec<String> = names.map(str::to_owned).to_vec();
            names.dedup();
            let generated = rcgen::generate_simple_self_signed(names)
                .map_err(|e| Error::internal(format!("certificate generation: {e}")))?;
            let pem = format!("{}{}", generated.cert.pem(), generated.signing_key.serialize_pem())
                .into_bytes();
            let (n, p) = (name.clone(), pem.clone());
            store.write_blocking(move |w| w.put_secret(&n, &p))?;
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
