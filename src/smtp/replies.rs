//! The fixed replies of a session: refusals, goodbyes and temporary failures.

pub(super) const TOO_BIG: &str = "552 5.3.4 message exceeds the size limit\r\n";
pub(super) const NO_MEMORY: &str = "452 4.3.1 insufficient system resources, try again later\r\n";
pub(super) const BARE_CR: &str =
    "550 5.6.11 bare CR in the message; lines must end with CRLF (or LF)\r\n";
pub(super) const TOO_MANY_ERRORS: &str = "421 4.7.0 too many errors, closing connection\r\n";
pub(super) const TIMEOUT: &str = "421 4.4.2 timeout, closing connection\r\n";
/// The goodbye of an idle session the listener needs the slot of.
pub(super) const SHED: &str = "421 4.7.0 too many connections, closing an idle one\r\n";
/// The answer to a question left unanswered, and to a message that could not be stored.
pub const TEMPORARY_FAILURE: &str = "451 4.3.0 temporary failure, try again later\r\n";
pub(super) const LOGIN_UNAVAILABLE: &str = "454 4.7.0 temporary authentication failure\r\n";
