//! edgemail: email hosting and sending in one binary.
//!
//! The map, top floor first. A module may import only modules listed below it
//! (`tests/it/layering.rs` holds the crate to this): higher modules register with lower ones
//! (a claimant of received mail, a wake-up handle) instead of being named by them.
//!
//! The binary and its wiring:
//! - `cli`       the command line (a contract: see decisions.md)
//! - `demo`      demo data for a first run
//! - `app`       the life cycle: build state and engines from parts, bind, serve, drain, close
//! - `admin`     domain and key commands, and the socket the CLI reaches a running server by
//!
//! Protocols:
//! - `ui`        the web dashboard: sessions, CSRF, server-rendered pages over the API handlers
//! - `submission` the mail system behind SMTP submission: logins, the bound sender, queueing
//! - `managesieve` ManageSieve (RFC 5804): mail clients managing a mailbox's Sieve scripts
//! - `imap`      IMAP listeners and sessions for mail clients, over the same store as the API
//! - `smtp`      SMTP listeners and the one session: the MX of hosted domains, and submission
//! - `api`       one module per REST resource, and the route table
//! - `http`      accept loop, router, inputs, replies, the one error mapping
//! - `state`     the shared state handlers reach: store, keys, limits, wake-up handles
//!
//! Engines and services (each takes the narrow handles it uses):
//! - `warmup`    mailbox warmup: the ramp, the sending engine, recognizing and answering warmup mail
//! - `sequences` the follow-up engine: due steps, merge fields, threading
//! - `reporting` DMARC and TLS-RPT reports in (claimed from the MX, read under bounds, summed), DMARC reports out
//! - `mailmove`  moving in and out: import from mbox and Maildir, export to mbox and Maildir
//! - `inbound`   what received mail becomes: auth results, inbox copies, DSNs, complaints, replies
//! - `queue`     the durable delivery queue: scheduler, SMTP client and pool, retry policy
//! - `mta_sts`   MTA-STS for outbound delivery: policy discovery, fetch, cache, MX matching
//! - `webhooks`  the webhook dispatcher: signed posts of recorded events, retries, its HTTP client
//! - `health`    domain health: SPF, DKIM, DMARC, MX and blacklist checks
//! - `screening` recipient checks before sending (syntax, suppressions, disposable, MX)
//! - `cluster`   this node among those sharing a store: heartbeat, leader lease, key generations
//! - `certs`     the certificates TLS listeners serve (file, ACME, self-signed), swapped live
//!
//! Building blocks:
//! - `tracking`  signed tokens and link rewriting for opens, clicks and unsubscribes; bounce tags
//! - `junk`      the spam classifier: message features, the Bayes model, scores, trained counts
//! - `filters`   Sieve: compiling scripts under our limits, the runtime delivery runs them in
//! - `mail`      building outgoing MIME, text from HTML, DKIM signing
//! - `dkim`      DKIM key generation and the DNS records to publish
//! - `hosting`   what hosted domains publish: client autoconfig documents, SRV, MTA-STS policy
//! - `auth`      API keys: format, hashing, the in-memory key table
//! - `credentials` mailbox app passwords: argon2 hashes checked off the runtime, login limits
//! - `dns`       hickory resolver: MX verdicts, delivery destinations, public-address checks
//! - `tools`     address checks shared with the public tools (disposable domains)
//! - `ratelimit` per-IP and per-key token buckets
//!
//! The data:
//! - `store`     the redb file: tables, group commit, one module per entity
//!
//! The ground floor:
//! - `listener`  accepting connections with caps, for HTTP, SMTP and IMAP; idle sessions shed
//! - `budget`    a memory budget connections share, in 1 KiB permits (SMTP DATA, IMAP literals)
//! - `mime`      bounded MIME: depth and part limits enforced on a message's bytes before parsing
//! - `metrics`   the Prometheus registry and cheap recording functions for every layer
//! - `logging`   tracing to stderr without blocking requests
//! - `config`    defaults, TOML file, `EDGEMAIL_*` variables and flags into one `Config`
//! - `address`   address, local part and domain syntax
//! - `autoreply` what an answer to our mail is: a reply, an automatic one, out of office, a bounce
//! - `bounce`    bounce classes from enhanced status codes and reply texts
//! - `ids`       time-ordered ids, secrets, the clock
//! - `wake`      wake-up handles for engine loops
//! - `error`     the API's error type (the store has its own, which converts into it)
//! - `shutdown`  the shutdown signal
//!
//! Only the modules the binary, the integration tests, the benches and the fuzz targets reach
//! are `pub`; the engines and their handles stay inside the crate.

pub mod address;
pub mod admin;
pub mod api;
pub mod app;
pub mod auth;
pub mod autoreply;
pub mod bounce;
pub(crate) mod budget;
pub mod certs;
pub mod cli;
pub(crate) mod cluster;
pub mod config;
pub mod credentials;
pub mod demo;
pub mod dkim;
pub(crate) mod dns;
pub mod error;
pub(crate) mod filters;
pub mod health;
pub mod hosting;
pub mod http;
pub mod ids;
pub mod imap;
pub mod inbound;
pub mod junk;
pub(crate) mod listener;
pub mod logging;
pub mod mail;
pub mod mailmove;
pub(crate) mod managesieve;
pub mod metrics;
pub mod mime;
pub(crate) mod mta_sts;
pub(crate) mod queue;
pub(crate) mod ratelimit;
pub mod reporting;
pub(crate) mod screening;
pub(crate) mod sequences;
pub mod shutdown;
pub mod smtp;
pub(crate) mod state;
pub mod store;
pub(crate) mod submission;
pub(crate) mod tools;
pub(crate) mod tracking;
pub mod ui;
pub(crate) mod wake;
pub(crate) mod warmup;
pub(crate) mod webhooks;
