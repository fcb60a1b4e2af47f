//! What can keep a delivery attempt from finishing. Receivers' answers and transport failures
//! are not here: they are delivery outcomes (`store::Outcome`) that the attempt commits. These
//! are the server's own faults, kept with their source; the scheduler retries the message.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// The store could not read the message or commit the attempt.
    Store(crate::store::Error),
    /// The attempt's outcome, or the local copies committed with it, could not be written.
    Commit(crate::error::Error),
    /// Message `email` could not be built or DKIM-signed.
    Compose { email: String, source: crate::error::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Store(e) => write!(f, "store: {e}"),
            Error::Commit(e) => write!(f, "committing: {e}"),
            Error::Compose { email, source } => write!(f, "composing {email}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Store(e) => Some(e),
            Error::Commit(e) => Some(e),
            Error::Compose { source, .. } => Some(source),
        }
    }
}

impl From<crate::store::Error> for Error {
    fn from(e: crate::store::Error) -> Self {
        Error::Store(e)
    }
}
