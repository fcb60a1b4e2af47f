//! Outgoing messages: MIME building, the text part derived from HTML, and DKIM signing.

pub mod build;
pub mod headers;
pub mod outbound;
pub mod sign;
pub mod text;
