//! Webhook URLs: what the API accepts, and where a URL may lead. A URL is checked when it is
//! saved and again on every connection, on the address DNS gave then: a name that resolved to a
//! public address at creation may point inward by the time we post (DNS rebinding).

use std::net::IpAddr;

use crate::dns::Dns;

/// The longest URL accepted.
pub const MAX_URL: usize = 2048;

/// Where a URL posts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// The host name or IP address, without brackets.
    pub host: String,
    pub port: u16,
    /// `host[:port]` as written, for the Host header.
    pub authority: String,
    /// The path and query, at least `/`.
    pub path: String,
}

impl Target {
    /// The key of a connection pool: connections are shared only within one origin.
    pub fn origin(&self) -> String {
        format!("{}://{}", if self.https { "https" } else { "http" }, self.authority)
    }
}

/// Parses an absolute `http` or `https` URL; the error says what is wrong in words.
pub fn parse(url: &str) -> Result<Target, String> {
    if url.len() > MAX_URL {
        return Err(format!("the URL is longer than {MAX_URL} characters"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL contains spaces or control characters".into());
    }
    let uri: hyper::Uri = url.parse().map_err(|_| "the URL is malformed".to_string())?;
    let https = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => true,
        Some("http") => false,
        Some(other) => return Err(format!("the scheme {other:?} is not http or https")),
        None => return Err("the URL must be absolute, starting with http:// or https://".into()),
    };
    let authority = uri.authority().ok_or("the URL has no host")?;
    if authority.as_str().contains('@') {
        return Err("the URL must not carry a user name or password".into());
    }
    let written = authority.host();
    let host = written.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    // hyper's parser lets through hosts no resolver would take ("a*b"): refuse them now, with a
    // reason, rather than at every attempt.
    if host.len() == written.len() && !is_host_name(host) {
        return Err(format!("{host:?} is not a host name or IP address"));
    }
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    if port == 0 {
        return Err("the URL's port is 0".into());
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    Ok(Target {
        https,
        host: host.to_ascii_lowercase(),
        port,
        authority: authority.as_str().to_ascii_lowercase(),
        path: if path.is_empty() { "/".into() } else { path.to_owned() },
    })
}

/// Dot-separated labels of letters, digits and hyphens, 1 to 63 characters each (an IPv4
/// address is such a name too).
fn is_host_name(host: &str) -> bool {
    host.trim_end_matches('.').split('.').all(|label| {
        (1..=63).contains(&label.len())
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// The addresses `target` may be reached at: every address its host resolves to, refused as a
/// whole when one of them is not public (unless `allow_private`), so that no answer can smuggle
/// an inward address next to a public one.
pub async fn addresses(
    dns: &Dns,
    target: &Target,
    allow_private: bool,
) -> Result<Vec<IpAddr>, String> {
    let ips = match target.host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => dns
            .addresses(&target.host)
            .await
            .map_err(|e| format!("{} does not resolve: {e}", target.host))?,
    };
    if ips.is_empty() {
        return Err(format!("{} has no address", target.host));
    }
    if !allow_private && let Some(ip) = ips.iter().find(|ip| !crate::dns::is_public(**ip)) {
        return Err(format!(
            "{} resolves to {ip}, which is not a public address (loopback, private, \
             link-local, unspecified, or an IPv6 form of one)",
            target.host
        ));
    }
    Ok(ips)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_their_parts() {
        let t = parse("https://Hooks.Example.com:8443/in?x=1").expect("valid"); // ok: test
        assert_eq!(
            (t.https, t.host.as_str(), t.port, t.path.as_str()),
            (true, "hooks.example.com", 8443, "/in?x=1")
        );
        let t = parse("http://[::1]:9000").expect("valid"); // ok: test
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 9000, "/"));
        assert_eq!(parse("http://example.com").map(|t| t.port), Ok(80));
        for bad in [
            "ftp://example.com/",
            "example.com/x",
            "http://u:p@example.com/",
            "http://",
            "http://a b/",
            "http://0.0.0.0*",
            "http://a..b/",
            "http://exa_mple.com/",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
