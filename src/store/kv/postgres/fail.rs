//! PostgreSQL's failures as the store's errors: a lost race (serialization failure, deadlock) is
//! contention, which the writer runs again.

use tokio_postgres::error::SqlState;

use super::super::super::error::Error;

/// Whether PostgreSQL refused the statement because a concurrent transaction won.
pub(super) fn lost_race(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        if lost_race(&e) { Error::Contention(Box::new(e)) } else { Error::Storage(Box::new(e)) }
    }
}
