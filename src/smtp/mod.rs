//! Inbound SMTP: the MX side of hosted domains.

pub mod data;
pub mod server;
pub mod session;
pub mod tls;
