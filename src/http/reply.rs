//! A handler's answer: status, body, and the few headers an answer may add.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde::Serialize;

use crate::error::{Error, Result};

pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: Bytes,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Reply {
    pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Result<Reply> {
        let body = serde_json::to_vec(value).map_err(Error::internal)?;
        Ok(Reply::json_bytes(status, Bytes::from(body)))
    }

    pub fn ok<T: Serialize>(value: &T) -> Result<Reply> {
        Reply::json(StatusCode::OK, value)
    }

    pub fn created<T: Serialize>(value: &T) -> Result<Reply> {
        Reply::json(StatusCode::CREATED, value)
    }

    /// A body that is already JSON (documents joined straight from the store).
    pub fn json_bytes(status: StatusCode, body: Bytes) -> Reply {
        Reply { status, content_type: "application/json", body, headers: Vec::new() }
    }

    pub fn raw(content_type: &'static str, body: Bytes) -> Reply {
        Reply { status: StatusCode::OK, content_type, body, headers: Vec::new() }
    }

    pub fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        for (name, value) in self.headers {
            // Each cookie is its own header line; any other header given twice keeps the last.
            if name == hyper::header::SET_COOKIE {
                headers.append(name, value);
            } else {
                headers.insert(name, value);
            }
        }
        response
    }
}
