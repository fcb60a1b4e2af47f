//! The one mapping from `Error` to an HTTP status, a stable code and the spec's six-field error
//! object. Nothing else in the crate decides a status or a code for an error.

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{ALLOW, HeaderValue, RETRY_AFTER};
use serde::Serialize;

use super::reply::Reply;
use crate::error::{Blocked, Error};

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    code: &'static str,
    message: &'a str,
    hint: &'a str,
    status: u16,
    documentation_url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked: Option<&'a [Blocked]>,
}

/// Status and code of each error kind, with the hint shown when the error carries none.
fn classify(error: &Error) -> (StatusCode, &'static str, &'static str) {
    match error {
        Error::Invalid { .. } => (StatusCode::BAD_REQUEST, "invalid_request", ""),
        Error::Unauthorized(_) => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "create a key with `edgemail key create` and send it as `Authorization: Bearer <key>`",
        ),
        Error::Forbidden(_) => (
            StatusCode::FORBIDDEN,
            "forbidden",
            "use a key scoped to a domain for this endpoint; org-wide keys may only read analytics",
        ),
        Error::NotFound(_) => (
            StatusCode::NOT_FOUND,
            "not_found",
            "check the path and the id; a key only sees the resources of its own domain",
        ),
        Error::MethodNotAllowed(_) => (
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "use one of the methods listed in the Allow header",
        ),
        Error::Conflict(_) => (
            StatusCode::CONFLICT,
            "conflict",
            "the resource already exists; use it, or choose another name",
        ),
        Error::IdempotencyConflict(_) => (
            StatusCode::CONFLICT,
            "idempotency_conflict",
            "use a new Idempotency-Key for a different request; for the same request, retry once \
             the first has answered",
        ),
        Error::PayloadTooLarge(_) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            "send a smaller body; the limit is set by http.body_limit",
        ),
        Error::UnsupportedMediaType("text/csv") => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request",
            "send the body as CSV with `Content-Type: text/csv`",
        ),
        Error::UnsupportedMediaType(_) => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request",
            "send the body as JSON with `Content-Type: application/json`",
        ),
        Error::RequestTimeout(_) => (
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request",
            "send the whole body promptly; the limit is set by http.body_timeout",
        ),
        Error::Unprocessable { .. } => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "unprocessable_entity",
            "every recipient was refused; see `blocked` for the reason of each. Retrying \
             unchanged gives the same answer",
        ),
        Error::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "wait for the number of seconds in the Retry-After header, then retry",
        ),
        Error::Unavailable(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "the server is starting, stopping or busy; retry shortly",
        ),
        Error::StorageUnavailable(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            "the server cannot write to its disk (full or failing); reads still work. Retry after \
             the seconds in the Retry-After header: writes resume by themselves once it recovers",
        ),
        Error::Internal(_) | Error::Storage(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "retry later; if it keeps failing, report it with the time of the request",
        ),
    }
}

pub fn error_reply(error: &Error, documentation_url: &str) -> Reply {
    let (status, code, default_hint) = classify(error);
    let message = match error {
        Error::Internal(detail) => {
            tracing::error!(%detail, "internal error");
            "internal server error".to_owned()
        }
        Error::Storage(source) => {
            tracing::error!(detail = %source, "internal error");
            "internal server error".to_owned()
        }
        // The detail (a path, an OS error) is the operator's, in the log once per spell.
        Error::StorageUnavailable(_) => "storage unavailable: the write was not stored".to_owned(),
        other => other.to_string(),
    };
    let hint = match error {
        Error::Invalid { hint, .. } => hint.as_str(),
        _ => default_hint,
    };
    let blocked = match error {
        Error::Unprocessable { blocked, .. } => Some(blocked.as_slice()),
        _ => None,
    };
    let body = Body {
        error: &message,
        code,
        message: &message,
        hint,
        status: status.as_u16(),
        documentation_url,
        blocked,
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let mut reply = Reply::json_bytes(status, Bytes::from(bytes));
    match error {
        Error::MethodNotAllowed(allow) => {
            if let Ok(value) = HeaderValue::from_str(&allow.join(", ")) {
                reply.headers.push((ALLOW, value));
            }
        }
        Error::RateLimited { retry_after } => {
            reply.headers.push((RETRY_AFTER, HeaderValue::from(*retry_after)));
        }
        // Starting, stopping, or the budget of request bodies is full: each passes in moments.
        Error::Unavailable(_) => reply.headers.push((RETRY_AFTER, HeaderValue::from(1))),
        Error::StorageUnavailable(_) => {
            let seconds = crate::error::STORAGE_RETRY_AFTER;
            reply.headers.push((RETRY_AFTER, HeaderValue::from(seconds)));
        }
        _ => {}
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_fault_answers_as_an_internal_error_without_its_detail() {
        let internal = error_reply(&Error::internal("disk on fire"), "");
        let storage = error_reply(&Error::Storage("disk on fire".into()), "");
        for reply in [&internal, &storage] {
            assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
            let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("json"); // ok: test
            assert_eq!(body["code"], "internal_error");
            assert_eq!(body["message"], "internal server error");
        }
        assert_eq!(storage.body, internal.body);
    }

    #[test]
    fn a_full_disk_answers_503_storage_unavailable_with_retry_after() {
        let reply = error_reply(&Error::StorageUnavailable("No space left on device".into()), "");
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("json"); // ok: test
        assert_eq!(body["code"], "storage_unavailable");
        assert!(!body["message"].as_str().unwrap_or("").contains("No space"), "{body}");
        let retry = reply.headers.iter().find(|(name, _)| name == RETRY_AFTER);
        assert!(retry.is_some_and(|(_, v)| v.to_str().is_ok_and(|s| s.parse::<u64>().is_ok())));
    }
}
