//! Outgoing messages: MIME building, the text part derived from HTML, DKIM signing, and
//! messages mail clients submit.

pub mod build;
pub mod headers;
pub mod outbound;
pub mod parsed;
mod rsa;
pub mod sign;
pub mod submitted;
pub mod text;
