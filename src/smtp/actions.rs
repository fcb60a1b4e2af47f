//! What a session and its caller exchange: who the client is, the envelope of a message, and
//! the actions the session asks of the caller.

use std::net::IpAddr;
use std::time::Duration;

/// The client, as far as the session cares.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub ip: IpAddr,
    /// Whether STARTTLS can be offered.
    pub tls_available: bool,
}

/// The envelope of a message handed over at the end of DATA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub ip: IpAddr,
    pub helo: String,
    pub from: String,
    pub recipients: Vec<String>,
    /// Whether the message came over TLS.
    pub tls: bool,
    /// The mailbox the client logged in as (submission).
    pub login: Option<String>,
}

/// What the caller does next.
pub enum Action<'a> {
    /// Write these bytes and flush them.
    Write(&'a [u8]),
    /// Read, then `feed` what came, or call `timed_out` when nothing came within the duration.
    /// End of input ends the session.
    Read(Duration),
    /// Wait this long before going on (refused recipients are slowed down).
    Pause(Duration),
    /// Is this recipient ours? Answer with `recipient_checked`.
    CheckRecipient(String),
    /// Take this message. Answer with `delivered`.
    Deliver(Envelope, Vec<u8>),
    /// Are these credentials good? Answer with `logged_in`.
    LogIn { user: String, password: String },
    /// The `220` is written; upgrade the stream, then call `secured` and go on.
    StartTls,
    /// Everything is written; close the connection.
    Close,
}

/// Like a derived `Debug`, but a password is never printed.
impl std::fmt::Debug for Action<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Write(bytes) => f.debug_tuple("Write").field(bytes).finish(),
            Action::Read(limit) => f.debug_tuple("Read").field(limit).finish(),
            Action::Pause(pause) => f.debug_tuple("Pause").field(pause).finish(),
            Action::CheckRecipient(address) => {
                f.debug_tuple("CheckRecipient").field(address).finish()
            }
            Action::Deliver(envelope, message) => {
                f.debug_tuple("Deliver").field(envelope).field(&message.len()).finish()
            }
            Action::LogIn { user, .. } => {
                f.debug_struct("LogIn").field("user", user).finish_non_exhaustive()
            }
            Action::StartTls => f.write_str("StartTls"),
            Action::Close => f.write_str("Close"),
        }
    }
}
