//! The integration suite: one binary (see Cargo.toml, `autotests = false`) that drives the real
//! `edgemail` process over real sockets.

mod client;
mod dns;
mod harness;
mod schema;
mod smtp_client;
mod smtp_sink;
mod webhook_receiver;

mod amplification;
mod analytics;
mod api_description;
mod api_limits;
mod auth;
mod backup;
mod bounces;
mod cli;
mod contacts;
mod durability;
mod emails;
mod errors;
mod health;
mod idempotency;
mod imap;
mod inbound;
mod layering;
mod logs;
mod mail_world;
mod mailboxes;
mod metrics;
mod paging;
mod security;
mod security_smtp;
mod send;
mod send_fields;
mod sender_groups;
mod sequences;
mod storage_faults;
mod submission;
mod tools;
mod warmup;
mod webhooks;
