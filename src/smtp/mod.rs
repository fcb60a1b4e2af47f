//! Inbound SMTP: the MX side of hosted domains.
//!
//! - `session`  the protocol as a state machine without I/O: bytes in, actions out
//! - `command`  commands out of a byte stream, and the replies to syntax errors
//! - `data`     the DATA phase: the strict end of a message, the in-flight memory budget
//! - `intake`   the trait that answers "is this recipient ours" and "take this message"
//! - `server`   the listener, connection caps, the I/O loop around a session, STARTTLS
//! - `tls`      the STARTTLS certificate

pub mod command;
pub mod data;
pub mod intake;
pub mod server;
pub mod session;
pub mod tls;

#[cfg(test)]
mod transcript_tests;

pub use intake::Intake;
