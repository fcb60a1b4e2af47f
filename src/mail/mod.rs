//! Outgoing messages: MIME building, the text part derived from HTML, DKIM signing, messages
//! mail clients submit, and the delivery reports (DSNs) we write to senders.

pub mod arc;
pub mod build;
pub mod dsn;
pub mod headers;
pub mod outbound;
pub mod parsed;
mod rsa;
pub mod sign;
pub mod submitted;
pub mod text;
