//! TLS to PostgreSQL on rustls (ring), so that a database on another host can be reached
//! encrypted and authenticated without OpenSSL in the binary: tokio-postgres' TLS traits
//! implemented over tokio-rustls, with libpq's levels of checking the server's certificate.
//!
//! The channel binding (`tls-server-end-point`, RFC 5929) is the hash of the server's
//! certificate, so that SCRAM-SHA-256-PLUS ties the password exchange to this TLS session: a
//! man in the middle holding another certificate cannot relay the login.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::Digest;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_rustls::TlsConnector;

/// What is checked of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Nothing: the session is encrypted but a man in the middle goes unnoticed (libpq's
    /// `prefer` and `require` without a root certificate).
    Nothing,
    /// That a trusted root issued it, whatever host it names (`verify-ca`).
    Chain,
    /// The chain, and that it names the host the URL names (`verify-full`).
    Full,
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The web PKI's roots compiled into the binary (the container image has no trust store).
    System,
    /// The certificates of a PEM file.
    File(String),
}

/// What the TLS connector is built from: the store URL's `sslrootcert`, `sslcert` and `sslkey`
/// and the check its `sslmode` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub check: Check,
    pub roots: Option<Roots>,
    /// The client certificate chain and its key (PEM files), for `cert` authentication.
    pub client: Option<(String, String)>,
}

/// Builds the connector for `settings`; the text of an error names the file at fault.
pub fn connector(settings: &Settings) -> Result<MakeRustls, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match &settings.roots {
        None => None,
        Some(roots) => Some(Arc::new(root_store(roots)?)),
    };
    let verifier = Verifier { roots, names: settings.check == Check::Full, provider };
    let provider = verifier.provider.clone();
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let config = match &settings.client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = certificates(cert, "sslcert")?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| format!("sslkey {key}: {e}"))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("sslcert/sslkey: {e}"))?
        }
    };
    Ok(MakeRustls { config: Arc::new(config) })
}

fn root_store(roots: &Roots) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::System => {
            let builtin = webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned();
            store.add_parsable_certificates(builtin);
        }
        Roots::File(path) => {
            for cert in certificates(path, "sslrootcert")? {
                store.add(cert).map_err(|e| format!("sslrootcert {path}: {e}"))?;
            }
        }
    }
    Ok(store)
}

/// The certificates of the PEM file at `path`: at least one, or an error naming the file.
fn certificates(path: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("{what} {path}: {e}");
    let mut found = Vec::new();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
        found.push(cert.map_err(|e| bad(&e))?);
    }
    if found.is_empty() {
        return Err(bad(&"no PEM certificate in the file"));
    }
    Ok(found)
}

/// libpq's checks of the server's certificate. The handshake's signatures are always verified
/// (a session key the peer does not hold is no session); the certificate only as `check` asks.
#[derive(Debug)]
struct Verifier {
    /// `None`: the certificate is not checked at all.
    roots: Option<Arc<RootCertStore>>,
    names: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            return Ok(ServerCertVerified::assertion());
        };
        let cert = ParsedCertificate::try_from(end_entity)?;
        let algorithms = self.provider.signature_verification_algorithms.all;
        verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, algorithms)?;
        if self.names {
            verify_server_name(&cert, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Makes one TLS connector per connection, for the host that connection goes to.
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = std::convert::Infallible;

    /// Made before the server says whether it speaks TLS at all (never over a Unix socket, where
    /// `host` is empty): a name that cannot be checked fails only a handshake that needs it.
    fn make_tls_connect(&mut self, host: &str) -> Result<Connect, Self::Error> {
        let name = ServerName::try_from(host.to_owned()).ok();
        Ok(Connect { connector: TlsConnector::from(self.config.clone()), name })
    }
}

/// The handshake with one host.
pub struct Connect {
    connector: TlsConnector,
    name: Option<ServerName<'static>>,
}

type Handshake<S> = Pin<Box<dyn Future<Output = io::Result<Stream<S>>> + Send>>;

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = Handshake<S>;

    fn connect(self, socket: S) -> Handshake<S> {
        Box::pin(async move {
            let Some(name) = self.name else {
                let why = "no host name (or IP address) to check the server's certificate against";
                return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
            };
            Ok(Stream(self.connector.connect(name, socket).await?))
        })
    }
}

/// A connection after the handshake.
pub struct Stream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for Stream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        let hash = session.peer_certificates().and_then(|c| c.first()).and_then(end_point_hash);
        match hash {
            Some(hash) => ChannelBinding::tls_server_end_point(hash),
            None => ChannelBinding::none(),
        }
    }
}

/// RFC 5929's `tls-server-end-point`: the certificate hashed with the hash of its own signature
/// algorithm, SHA-256 in place of MD5 and SHA-1. `None` for algorithms without one hash (Ed25519,
/// RSA-PSS): the login then goes without channel binding, unless the URL demands it.
fn end_point_hash(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, parsed) = X509Certificate::from_der(cert.as_ref()).ok()?;
    let der = cert.as_ref();
    match parsed.signature_algorithm.algorithm.to_id_string().as_str() {
        // md5WithRSA, sha1WithRSA, sha256WithRSA, ecdsa-with-SHA1, ecdsa-with-SHA256
        "1.2.840.113549.1.1.4"
        | "1.2.840.113549.1.1.5"
        | "1.2.840.113549.1.1.11"
        | "1.2.840.10045.4.1"
        | "1.2.840.10045.4.3.2" => Some(sha2::Sha256::digest(der).to_vec()),
        // sha384WithRSA, ecdsa-with-SHA384
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => Some(sha2::Sha384::digest(der).to_vec()),
        // sha512WithRSA, ecdsa-with-SHA512
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => Some(sha2::Sha512::digest(der).to_vec()),
        _ => None,
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
