//! HTTP: the accept loop, routing, inputs, replies and the error mapping.

pub mod body;
pub mod error;
pub mod idempotency;
mod idle;
mod nulls;
mod numbers;
pub mod reply;
pub mod request;
pub mod router;
pub mod server;
mod tls;

pub use reply::Reply;
pub use request::Ctx;
pub use router::{Access, Route, Router};
