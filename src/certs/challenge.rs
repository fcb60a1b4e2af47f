//! The answers to ACME's challenges. HTTP-01: a plain HTTP listener (`--http-challenge`, port
//! 80 in production) answering `/.well-known/acme-challenge/TOKEN` with the key authorization
//! of a token in flight, and redirecting every other request to HTTPS. TLS-ALPN-01: the
//! self-signed certificate of RFC 8737 that the HTTPS listener serves to a handshake asking for
//! `acme-tls/1` (`Certs` holds it while the challenge runs).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, LOCATION};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::Certs;
use crate::error::{Error, Result};
use crate::shutdown::Shutdown;

const PREFIX: &str = "/.well-known/acme-challenge/";
/// Connections at once, and how long one may take: validation needs one short request.
const MAX_CONNECTIONS: usize = 256;
const CONNECTION_TIME: Duration = Duration::from_secs(10);

/// Serves HTTP-01 answers and redirects until `shutdown`. `https_port` is where the redirects
/// point (the port is left out when it is 443).
pub async fn serve_http_challenges(
    listener: TcpListener,
    certs: Arc<Certs>,
    https_port: Option<u16>,
    mut shutdown: Shutdown,
) {
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(false).max_buf_size(16 * 1024);
    while let Some(crate::listener::Accepted { stream, permit, .. }) =
        crate::listener::next(&listener, &connections, &mut shutdown).await
    {
        let certs = certs.clone();
        let service = service_fn(move |req| {
            let reply = answer(&certs, https_port, &req);
            async move { Ok::<_, Infallible>(reply) }
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONNECTION_TIME, conn).await;
            drop(permit);
        });
    }
}

fn answer<B>(certs: &Certs, https_port: Option<u16>, req: &Request<B>) -> Response<Full<Bytes>> {
    let path = req.uri().path();
    if let Some(token) = path.strip_prefix(PREFIX) {
        return match certs.token(token) {
            Some(authorization) => reply(StatusCode::OK, Bytes::from(authorization), None),
            None => reply(StatusCode::NOT_FOUND, Bytes::from_static(b"no such challenge\n"), None),
        };
    }
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok()).and_then(bare_host);
    let Some(host) = host else {
        return reply(StatusCode::BAD_REQUEST, Bytes::from_static(b"a Host header\n"), None);
    };
    let port = https_port.filter(|p| *p != 443).map(|p| format!(":{p}")).unwrap_or_default();
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let location = HeaderValue::from_str(&format!("https://{host}{port}{target}")).ok();
    reply(StatusCode::MOVED_PERMANENTLY, Bytes::new(), location)
}

/// The host of a Host header without its port, when it is a plausible name or address (the
/// redirect must not carry anything else).
fn bare_host(value: &str) -> Option<&str> {
    let host = match value.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(']') => h,
        _ => value,
    };
    let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-');
    (!host.is_empty() && host.len() <= 253 && host.bytes().all(ok)).then_some(host)
}

fn reply(status: StatusCode, body: Bytes, location: Option<HeaderValue>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    if let Some(location) = location {
        headers.insert(LOCATION, location);
    }
    response
}

/// The TLS-ALPN-01 certificate of `name`: self-signed, naming only `name`, with the critical
/// acmeIdentifier extension holding the SHA-256 of the key authorization.
pub(super) fn alpn_certificate(name: &str, digest: &[u8]) -> Result<Arc<CertifiedKey>> {
    let failed = |e: rcgen::Error| Error::internal(format!("challenge certificate: {e}"));
    if digest.len() != 32 {
        return Err(Error::internal("a key authorization digest that is not SHA-256"));
    }
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(failed)?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest)];
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
        .map_err(|e| Error::internal(format!("challenge key: {e}")))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&der)
        .map_err(|e| Error::internal(format!("challenge key: {e}")))?;
    Ok(Arc::new(CertifiedKey::new(vec![cert.der().clone()], signing)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_name_only_plain_hosts() {
        assert_eq!(bare_host("mail.example.com"), Some("mail.example.com"));
        assert_eq!(bare_host("mail.example.com:8080"), Some("mail.example.com"));
        assert_eq!(bare_host("evil.com/@x"), None);
        assert_eq!(bare_host(""), None);
        assert_eq!(bare_host("a b"), None);
    }

    #[test]
    fn the_alpn_certificate_names_the_host_and_carries_the_digest() {
        let key = alpn_certificate("mail.example.com", &[7u8; 32]).expect("cert"); // ok: test
        let info = super::super::Info::read(&key.cert[0]).expect("parse"); // ok: test
        assert_eq!(info.names, ["mail.example.com"]);
        assert!(alpn_certificate("mail.example.com", &[7u8; 20]).is_err());
    }
}
