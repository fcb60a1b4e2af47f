//! SMTP: the MX side of hosted domains, and submission for mail clients. One protocol
//! implementation with two policies (`command::Policy`), not two servers.
//!
//! - `session`  the protocol as a state machine without I/O: bytes in, actions out
//! - `actions`  what a session and its caller exchange: peer, envelope, actions
//! - `command`  commands out of a byte stream, the replies to syntax errors, the two policies
//! - `auth`     the AUTH PLAIN and LOGIN exchanges (submission, after TLS only)
//! - `data`     the DATA phase: the strict end of a message, the in-flight memory budget
//! - `intake`   the trait that answers "is this recipient ours" and "take this message"
//! - `guard`    what the I/O loop checks besides the session: shedding, limits per address
//! - `replies`  the fixed replies of a session
//! - `server`   the listener, connection caps, the I/O loop around a session, STARTTLS

pub mod actions;
mod auth;
pub mod command;
pub mod data;
mod guard;
pub mod intake;
mod replies;
pub mod server;
pub mod session;

#[cfg(test)]
mod transcript_tests;

pub use command::Policy;
pub use intake::Intake;
