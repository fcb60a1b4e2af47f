//! The certificate verifier of MTA-STS: the web PKI roots compiled into the binary (the
//! container image has no trust store of its own), plus the CA certificates of `mta_sts.ca_file`.
//! The same roots check the policy host and the mail exchangers of a policy.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_rustls::TlsConnector;

/// A connector that verifies servers against the web PKI and the certificates in `ca_file`.
pub fn connector(ca_file: Option<&Path>) -> Result<TlsConnector, String> {
    let mut roots = rustls::RootCertStore::empty();
    let (_, unusable) =
        roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    if unusable > 0 {
        tracing::debug!(unusable, "built-in root certificates skipped");
    }
    if let Some(path) = ca_file {
        let bad = |e: &dyn std::fmt::Display| format!("mta_sts.ca_file {}: {e}", path.display());
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(&"no certificate in the file"));
        }
    }
    let config =
        rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}
