//! edgemail: email hosting and sending in one binary.
//!
//! - `cli`      the command line (a contract: see decisions.md)
//! - `config`   defaults, TOML file, `EDGEMAIL_*` variables and flags into one `Config`
//! - `app`      shared state and the server's life cycle
//! - `http`     accept loop, router, inputs, replies, the one error mapping
//! - `api`      one module per REST resource, and the route table
//! - `auth`     API keys: format, hashing, the in-memory key table
//! - `admin`    domain and key commands, and the socket the CLI reaches a running server by
//! - `store`    the redb file: tables, group commit, one module per entity
//! - `dkim`     DKIM key generation and the DNS records to publish
//! - `smtp`     the inbound SMTP listener and session (the MX of hosted domains)
//! - `inbound`  what received mail becomes: auth results, inbox copies, DSNs, complaints, replies
//! - `queue`    the durable delivery queue: scheduler, SMTP client and pool, retry policy
//! - `mail`     building outgoing MIME, text from HTML, DKIM signing
//! - `screening` recipient checks before sending (syntax, suppressions, disposable, MX)
//! - `sequences` the follow-up engine: due steps, merge fields, threading
//! - `ratelimit` per-IP token buckets for the public tools
//! - `tracking` signed tokens and link rewriting for opens, clicks and unsubscribes
//! - `warmup`   mailbox warmup: the ramp, the sending engine, recognizing and answering warmup mail
//! - `dns`      hickory resolver: MX verdicts and delivery destinations
//! - `tools`    address checks shared with the public tools (disposable domains)
//! - `address`  address, local part and domain syntax
//! - `demo`     demo data for a first run
//! - `listener` accepting connections with a cap, for HTTP and SMTP alike
//! - `logging`  tracing to stderr without blocking requests
//! - `ids`      time-ordered ids, secrets, the clock
//! - `error`    the crate's one error type
//! - `shutdown` the shutdown signal

pub mod address;
pub mod admin;
pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod demo;
pub mod dkim;
pub mod dns;
pub mod error;
pub mod health;
pub mod http;
pub mod ids;
pub mod inbound;
pub mod listener;
pub mod logging;
pub mod mail;
pub mod queue;
pub mod ratelimit;
pub mod screening;
pub mod sequences;
pub mod shutdown;
pub mod smtp;
pub mod state;
pub mod store;
pub mod tools;
pub mod tracking;
pub mod wake;
pub mod warmup;
