//! The API's error type, which the layers above the store return; `http::error` is the single
//! place that turns it into a status, a stable code and the six-field error object of the spec.
//! The store has its own (`store::Error`), which converts into this one.

use std::fmt;

/// A recipient refused before sending (spec section 2, "Blocked recipient").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Blocked {
    pub email: String,
    pub reason: &'static str,
    pub message: String,
}

#[derive(Debug)]
pub enum Error {
    /// 400: the request is malformed; `hint` tells the caller how to fix it.
    Invalid { message: String, hint: String },
    /// 401
    Unauthorized(&'static str),
    /// 403
    Forbidden(&'static str),
    /// 404; the text names the kind of thing that was not found.
    NotFound(String),
    /// 405; the methods that the path does accept.
    MethodNotAllowed(Vec<&'static str>),
    /// 409
    Conflict(String),
    /// 409 `idempotency_conflict`: the Idempotency-Key was used for another request, or its first
    /// request is still running.
    IdempotencyConflict(String),
    /// 413
    PayloadTooLarge(usize),
    /// 415
    /// A body of a type the route does not take: the type it does take (`application/json`,
    /// `text/csv`).
    UnsupportedMediaType(&'static str),
    /// 408: the request body did not arrive within this time.
    RequestTimeout(std::time::Duration),
    /// 422 with the recipients that were refused.
    Unprocessable { message: String, blocked: Vec<Blocked> },
    /// 429; seconds until a retry can succeed.
    RateLimited { retry_after: u64 },
    /// 503
    Unavailable(String),
    /// 500: never shown in detail to the client; the detail goes to the log.
    Internal(String),
    /// 500 like `Internal`: a fault below the API (the store's), kept whole as the source.
    Storage(Box<dyn std::error::Error + Send + Sync>),
    /// 503 with `Retry-After`: the store's disk is full or failing and writes are refused until
    /// it recovers (by itself); the source is the store's error.
    StorageUnavailable(Box<dyn std::error::Error + Send + Sync>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Invalid { message: message.into(), hint: hint.into() }
    }

    pub fn not_found(what: &str) -> Self {
        Error::NotFound(format!("{what} not found"))
    }

    pub fn internal(detail: impl fmt::Display) -> Self {
        Error::Internal(detail.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid { message, .. } => f.write_str(message),
            Error::Unauthorized(m) | Error::Forbidden(m) => f.write_str(m),
            Error::NotFound(m) | Error::Conflict(m) | Error::Unavailable(m) => f.write_str(m),
            Error::IdempotencyConflict(m) => f.write_str(m),
            Error::MethodNotAllowed(allow) => {
                write!(f, "method not allowed; this path accepts {}", allow.join(", "))
            }
            Error::PayloadTooLarge(limit) => write!(f, "request body exceeds {limit} bytes"),
            Error::UnsupportedMediaType(takes) => write!(f, "request body must be {takes}"),
            Error::RequestTimeout(limit) => {
                write!(f, "the request body did not arrive within {}s", limit.as_secs_f32())
            }
            Error::Unprocessable { message, .. } => f.write_str(message),
            Error::RateLimited { retry_after } => {
                write!(f, "rate limit exceeded; retry in {retry_after}s")
            }
            Error::Internal(detail) => write!(f, "internal error: {detail}"),
            Error::Storage(source) => write!(f, "internal error: {source}"),
            Error::StorageUnavailable(source) => f.write_str(&source.to_string()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Storage(source) | Error::StorageUnavailable(source) => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Seconds a client waits before retrying a write the store refused: about the time the store
/// takes to notice that its disk recovered.
pub const STORAGE_RETRY_AFTER: u64 = 5;

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Internal(format!("io: {e}"))
    }
}
