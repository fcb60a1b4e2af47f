//! HTTPS (`--https`): the same routes over TLS, HTTP/2 or HTTP/1.1 as the client's ALPN asks
//! (hyper-util's auto builder). The certificate comes from the shared table (`certs`), so a
//! renewal is served by the next handshake; a handshake asking only for `acme-tls/1` is an ACME
//! server validating a TLS-ALPN-01 challenge: it gets the challenge certificate and no HTTP.
//! Answers over TLS carry `Strict-Transport-Security`, and their cookies are `Secure`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;
use hyper::header::{HeaderValue, SET_COOKIE, STRICT_TRANSPORT_SECURITY};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::idle::{Activity, Watched};

/// A year, the value browsers' preload lists ask for; subdomains are left out, since other
/// hosts of a hosted domain need not be ours.
const HSTS: &str = "max-age=31536000";

/// The auto builder with the HTTP/1.1 settings of the plain listener.
pub(super) fn builder(keep_alive: bool) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().header_read_timeout(None).keep_alive(keep_alive).max_buf_size(64 * 1024);
    // Bounds of a client's streams: as many at once as a browser opens, small header lists.
    builder.http2().max_concurrent_streams(64).max_header_list_size(64 * 1024);
    builder
}

/// One HTTPS connection: the handshake within `limit`, then requests until it ends or idles.
pub(super) async fn connection<S>(
    (acceptor, builder): (TlsAcceptor, auto::Builder<TokioExecutor>),
    stream: TcpStream,
    activity: Arc<Activity>,
    service: S,
    (watcher, limit): (Watcher, Duration),
) where
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = Response<Full<Bytes>>,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    let Ok(Ok(tls)) = tokio::time::timeout(limit, acceptor.accept(stream)).await else {
        return;
    };
    if tls.get_ref().1.alpn_protocol() == Some(crate::certs::ACME_TLS_ALPN) {
        return;
    }
    let io = TokioIo::new(Watched::new(tls, activity.clone()));
    let conn = watcher.watch(builder.serve_connection(io, service));
    tokio::select! {
        biased;
        ended = conn => {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "https connection ended with an error");
            }
        }
        () = super::idle::expired(&activity, limit) => {}
    }
}

/// Marks an answer sent over TLS: HSTS, and `Secure` on each cookie that lacks it.
pub(super) fn secure(response: &mut Response<Full<Bytes>>) {
    let headers = response.headers_mut();
    headers.insert(STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    let cookies: Vec<HeaderValue> = headers.get_all(SET_COOKIE).iter().cloned().collect();
    if cookies.is_empty() {
        return;
    }
    headers.remove(SET_COOKIE);
    for cookie in cookies {
        let secure = cookie
            .to_str()
            .is_ok_and(|c| c.split(';').any(|attr| attr.trim().eq_ignore_ascii_case("secure")));
        let value = if secure {
            Some(cookie)
        } else {
            let mut bytes = cookie.as_bytes().to_vec();
            bytes.extend_from_slice(b"; Secure");
            HeaderValue::from_bytes(&bytes).ok()
        };
        if let Some(v) = value {
            headers.append(SET_COOKIE, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_over_tls_become_secure_once_and_hsts_is_set() {
        let mut response = Response::new(Full::new(Bytes::new()));
        let h = response.headers_mut();
        h.append(SET_COOKIE, HeaderValue::from_static("s=1; HttpOnly; Path=/"));
        h.append(SET_COOKIE, HeaderValue::from_static("c=2; Secure; Path=/"));
        secure(&mut response);
        let cookies: Vec<&str> = response
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().expect("ascii")) // ok: test
            .collect();
        assert_eq!(cookies, ["s=1; HttpOnly; Path=/; Secure", "c=2; Secure; Path=/"]);
        let hsts = response.headers().get(STRICT_TRANSPORT_SECURITY);
        assert_eq!(hsts.map(HeaderValue::as_bytes), Some(HSTS.as_bytes()));
    }
}
