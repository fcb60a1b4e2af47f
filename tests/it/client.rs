//! A small blocking HTTP/1.1 client. Every response it receives is validated against the schema
//! that `schema/openapi.yaml` documents for that route and status, so each test also checks the
//! document.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

pub struct Client {
    addr: SocketAddr,
    key: Option<String>,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body))
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the status, printing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Resp {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.text());
        self
    }

    /// Asserts an error answer with this status and code; returns the error object.
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> Value {
        let resp = self.expect(status);
        let body = resp.json();
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(body["status"], status, "{body}");
        for field in ["error", "message", "hint", "documentation_url"] {
            assert!(body[field].as_str().is_some_and(|s| !s.is_empty()), "{field} missing: {body}");
        }
        body
    }
}

impl Client {
    pub fn new(addr: SocketAddr, key: Option<String>) -> Client {
        Client { addr, key }
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, None)
    }

    pub fn delete(&self, path: &str) -> Resp {
        self.request("DELETE", path, None)
    }

    pub fn post(&self, path: &str, body: Value) -> Resp {
        self.request("POST", path, Some(body.to_string().into_bytes()))
    }

    pub fn put(&self, path: &str, body: Value) -> Resp {
        self.request("PUT", path, Some(body.to_string().into_bytes()))
    }

    pub fn patch(&self, path: &str, body: Value) -> Resp {
        self.request("PATCH", path, Some(body.to_string().into_bytes()))
    }

    pub fn request(&self, method: &str, path: &str, body: Option<Vec<u8>>) -> Resp {
        let headers: &[(&str, &str)] =
            if body.is_some() { &[("Content-Type", "application/json")] } else { &[] };
        self.raw(method, path, headers, body.as_deref())
    }

    /// Sends exactly these headers (plus Host, Connection and the key) and body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        if let Some(key) = &self.key {
            req.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(body) = body {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        let resp = self.exchange(&bytes);
        if method != "HEAD" {
            crate::schema::check_response(method, path, &resp);
        }
        resp
    }

    /// Writes raw bytes and parses whatever comes back (no schema check).
    pub fn exchange(&self, request: &[u8]) -> Resp {
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        // The server may answer (413) and close before reading everything we send.
        let _ = stream.write_all(request);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        parse_response(&raw)
    }
}

pub fn parse_response(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if let Some(len) = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        body.truncate(len);
    }
    Resp { status, headers, body }
}
