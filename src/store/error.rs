//! The store's own error. It keeps what the store decides (not found, conflict, invalid,
//! unavailable) apart from faults of the file beneath it, and keeps each fault's source, without
//! a redb type in any signature. The mapping onto the API's error is here, not in `error`: that
//! is the ground floor and does not name `store`.

use std::fmt;
use std::sync::Arc;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub enum Error {
    /// The text names what was not found.
    NotFound(String),
    Conflict(String),
    /// A request the store refuses as it stands; `hint` tells the caller how to fix it.
    Invalid {
        message: String,
        hint: String,
    },
    /// The store cannot serve now: the file is open elsewhere, newer than this build, or the
    /// store is shutting down.
    Unavailable(String),
    /// redb failed; the source is its error.
    Storage(Box<dyn std::error::Error + Send + Sync>),
    /// A concurrent transaction changed what this one read or wrote (PostgreSQL's
    /// serialization failure, or a deadlock): nothing was written, and the writer runs the work
    /// again.
    Contention(Box<dyn std::error::Error + Send + Sync>),
    /// The file beneath failed (a full disk, an I/O error, or redb's latch after one); the
    /// source is redb's error. The store turns degraded when a commit meets one.
    Disk(Box<dyn std::error::Error + Send + Sync>),
    /// The store refuses writes until a probe write commits again; the source is the fault
    /// that started it.
    Degraded(Arc<Error>),
    /// A record did not encode, or a stored one did not decode.
    Codec(serde_json::Error),
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A state the store should never reach (a secret or a raw message missing).
    Internal(String),
    /// The write's own work succeeded, but the group commit it shared failed or was aborted by
    /// another job's fault; the source is the batch's error, shared by all its jobs.
    Aborted(Arc<Error>),
    /// The blocking task running a read panicked or was cancelled.
    Task(tokio::task::JoinError),
}

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

    pub(super) fn io(context: impl fmt::Display, source: std::io::Error) -> Self {
        Error::Io { context: context.to_string(), source }
    }

    /// Whether this is a fault rather than an answer: after a fault, a write transaction may be
    /// left half done, so the writer aborts the batch.
    pub fn is_fault(&self) -> bool {
        !matches!(
            self,
            Error::NotFound(_)
                | Error::Conflict(_)
                | Error::Invalid { .. }
                | Error::Unavailable(_)
                | Error::Degraded(_)
        )
    }

    pub fn is_contention(&self) -> bool {
        match self {
            Error::Contention(_) => true,
            Error::Aborted(batch) => batch.is_contention(),
            _ => false,
        }
    }

    /// See `JobError::is_transient`.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Contention(_) | Error::Aborted(_) | Error::Storage(_) | Error::Unavailable(_)
        )
    }

    /// Whether the disk is at fault (full, failing), so that a retry once it recovers can
    /// succeed: the store degrades, and callers answer "try later".
    pub fn is_disk(&self) -> bool {
        match self {
            Error::Disk(_) | Error::Degraded(_) => true,
            Error::Aborted(batch) => batch.is_disk(),
            _ => false,
        }
    }
}

/// Display carries the source's text too, so that a one-line log of the error is complete.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound(m) | Error::Conflict(m) | Error::Unavailable(m) => f.write_str(m),
            Error::Invalid { message, .. } => f.write_str(message),
            Error::Storage(e) => write!(f, "storage: {e}"),
            Error::Contention(e) => write!(f, "a concurrent write won: {e}"),
            Error::Disk(e) => write!(f, "the disk failed: {e}"),
            Error::Degraded(e) => {
                write!(f, "storage unavailable: writes are refused until the disk recovers ({e})")
            }
            Error::Codec(e) => write!(f, "a record does not encode or decode: {e}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Internal(m) => f.write_str(m),
            Error::Aborted(e) => write!(f, "the group commit of this write failed: {e}"),
            Error::Task(e) => write!(f, "the read task failed: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Storage(e) | Error::Disk(e) | Error::Contention(e) => Some(e.as_ref()),
            Error::Degraded(e) => Some(e.as_ref()),
            Error::Codec(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::Aborted(e) => Some(e.as_ref()),
            Error::Task(e) => Some(e),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Codec(e)
    }
}

/// What the error of a write job must offer the writer: a way to carry the store's own failures,
/// and whether it is a fault, which aborts the group commit, or an answer (a refusal), after which
/// the other jobs' writes still commit.
pub trait JobError: From<Error> {
    fn is_fault(&self) -> bool;
    /// Whether the fault is the disk's: the store then degrades.
    fn is_disk(&self) -> bool;
    /// Whether a concurrent transaction won: the work is run again in a new transaction.
    fn is_contention(&self) -> bool;
    /// Whether the write did not commit for a reason that passes: a race lost more often than
    /// the writer retries, a batch another job's fault aborted, or a shared store out of reach
    /// for a moment (a COMMIT whose answer was lost may have committed: work run again must
    /// find that out, as the queue's claim check does).
    fn is_transient(&self) -> bool;
}

impl JobError for Error {
    fn is_fault(&self) -> bool {
        Error::is_fault(self)
    }

    fn is_disk(&self) -> bool {
        Error::is_disk(self)
    }

    fn is_contention(&self) -> bool {
        Error::is_contention(self)
    }

    fn is_transient(&self) -> bool {
        Error::is_transient(self)
    }
}

/// The API's error: the store's answers keep their meaning (404, 409, 400, 503); the disk's
/// faults become `StorageUnavailable` (503, try later); other faults become `Storage`, a 500.
/// Both keep this error as their source.
impl From<Error> for crate::error::Error {
    fn from(e: Error) -> Self {
        use crate::error::Error as Api;
        match e {
            Error::NotFound(m) => Api::NotFound(m),
            Error::Conflict(m) => Api::Conflict(m),
            Error::Invalid { message, hint } => Api::Invalid { message, hint },
            Error::Unavailable(m) => Api::Unavailable(m),
            disk if disk.is_disk() => Api::StorageUnavailable(Box::new(disk)),
            fault => Api::Storage(Box::new(fault)),
        }
    }
}

/// In a write job that returns the API's error, a fault is what it was before there was a
/// store error: `Internal` (raised by the job itself) or `Storage` and `StorageUnavailable`
/// (from the store).
impl JobError for crate::error::Error {
    fn is_fault(&self) -> bool {
        use crate::error::Error as Api;
        matches!(self, Api::Internal(_) | Api::Storage(_) | Api::StorageUnavailable(_))
    }

    fn is_disk(&self) -> bool {
        matches!(self, crate::error::Error::StorageUnavailable(_))
    }

    fn is_contention(&self) -> bool {
        match self {
            crate::error::Error::Storage(e) => {
                e.downcast_ref::<Error>().is_some_and(Error::is_contention)
            }
            _ => false,
        }
    }

    fn is_transient(&self) -> bool {
        use crate::error::Error as Api;
        match self {
            Api::Storage(e) => e.downcast_ref::<Error>().is_some_and(Error::is_transient),
            Api::Unavailable(_) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::error::Error as Api;

    #[test]
    fn a_storage_fault_reaches_the_api_error_with_its_source() {
        let fault = std::io::Error::new(std::io::ErrorKind::InvalidData, "page 7");
        let api = Api::from(Error::Storage(Box::new(fault)));
        assert!(matches!(api, Api::Storage(_)));
        assert!(JobError::is_fault(&api), "a storage fault aborts the batch");
        let store = api.source().expect("the store error"); // ok: test
        assert!(store.source().is_some_and(|e| e.to_string().contains("page 7")));
        assert!(api.to_string().starts_with("internal error: storage: "), "{api}");
    }

    #[test]
    fn answers_keep_their_api_meaning() {
        let cases = [
            (Error::not_found("domain"), "NotFound"),
            (Error::Conflict("taken".into()), "Conflict"),
            (Error::invalid("bad", "fix it"), "Invalid"),
            (Error::Unavailable("closing".into()), "Unavailable"),
        ];
        for (error, want) in cases {
            assert!(!error.is_fault(), "{error}");
            let api = Api::from(error);
            let got = match &api {
                Api::NotFound(m) if m == "domain not found" => "NotFound",
                Api::Conflict(m) if m == "taken" => "Conflict",
                Api::Invalid { message, hint } if message == "bad" && hint == "fix it" => "Invalid",
                Api::Unavailable(m) if m == "closing" => "Unavailable",
                _ => "something else",
            };
            assert_eq!(got, want, "{api:?}");
            assert!(!JobError::is_fault(&api));
        }
        let codec = serde_json::from_slice::<u32>(b"x").map_err(Error::from);
        assert!(codec.is_err_and(|e| e.is_fault() && e.source().is_some()));
    }
}
