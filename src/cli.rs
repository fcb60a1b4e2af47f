//! The command line, a contract that scripts and tests depend on (see decisions.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "edgemail", version, about = "Email hosting and sending in one binary")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server.
    Serve(ServeArgs),
    /// Run the server with a demo domain, mailbox and key, and print commands to try.
    Demo(ServeArgs),
    /// Manage hosted domains.
    Domain {
        #[command(subcommand)]
        command: DomainCommand,
    },
    /// Manage API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Write a consistent copy of the data to FILE (also while `serve` runs on it); an existing
    /// FILE is replaced only with --force.
    Backup {
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        /// Replace FILE when it exists.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Put a backup in place as the data of the data directory (refuses a non-empty directory
    /// without --force, and a directory a server runs on).
    Restore {
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// Replace the data the directory holds.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Copy a whole store to the other backend: a data directory's file into an empty
    /// PostgreSQL database (postgres://...), or back into an empty data directory. Every table
    /// is then summed on both sides (entries and SHA-256) and must agree. Stop the server (every
    /// node) first.
    Migrate {
        /// The store to copy: a data directory, or a postgres:// URL.
        #[arg(long, value_name = "DIR|URL")]
        from: String,
        /// The empty store to copy into: a data directory, or a postgres:// URL.
        #[arg(long, value_name = "DIR|URL")]
        to: String,
    },
    /// Check the integrity of the data file; exits non-zero when it is damaged.
    Check {
        #[command(flatten)]
        common: Common,
    },
    /// Train the junk filter of a mailbox (or, with --global, the model new mailboxes start
    /// from) on directories of messages, one RFC 5322 message per file (also while `serve`
    /// runs: the running server trains).
    Train {
        /// The mailbox whose model learns.
        #[arg(long, value_name = "ADDR", required_unless_present = "global")]
        mailbox: Option<String>,
        /// Train the global model instead of a mailbox's.
        #[arg(long, conflicts_with = "mailbox")]
        global: bool,
        /// A directory of spam messages.
        #[arg(long, value_name = "DIR", required_unless_present = "ham")]
        spam: Option<PathBuf>,
        /// A directory of legitimate messages.
        #[arg(long, value_name = "DIR")]
        ham: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Copy mail into a hosted mailbox from an mbox file, a Maildir or a running IMAP server:
    /// every folder, flags, keywords and internal dates; a second run copies only what is new
    /// (also while `serve` runs: the running server imports).
    #[command(group(clap::ArgGroup::new("source").required(true).args(["mbox", "maildir", "imap"])))]
    Import {
        /// The mailbox to import into.
        #[arg(long, value_name = "ADDR")]
        mailbox: String,
        /// An mbox file (mboxrd or mboxo).
        #[arg(long, value_name = "FILE")]
        mbox: Option<PathBuf>,
        /// A Maildir (Maildir++ subfolders included).
        #[arg(long, value_name = "DIR")]
        maildir: Option<PathBuf>,
        /// An IMAP server: imaps://user@host:port/ (or imap:// with STARTTLS); the password
        /// comes from --password-file or EDGEMAIL_IMPORT_PASSWORD, never the command line.
        #[arg(long, value_name = "URL")]
        imap: Option<String>,
        /// A file whose first line is the IMAP password.
        #[arg(long, value_name = "FILE", requires = "imap")]
        password_file: Option<PathBuf>,
        /// Accept any certificate from the IMAP server (a test server's).
        #[arg(long, requires = "imap")]
        insecure: bool,
        /// Trust the root certificates in this PEM file (besides the web's) for the IMAP server.
        #[arg(long, value_name = "FILE", requires = "imap")]
        ca: Option<PathBuf>,
        /// Fetch at most this many messages a second from the IMAP server (default: as fast
        /// as one connection goes).
        #[arg(long, value_name = "N", requires = "imap")]
        rate: Option<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Write every folder of a mailbox to an mbox file or a Maildir, flags included.
    #[command(group(clap::ArgGroup::new("target").required(true).args(["mbox", "maildir"])))]
    Export {
        /// The mailbox to export.
        #[arg(long, value_name = "ADDR")]
        mailbox: String,
        /// A new mbox file holding every folder.
        #[arg(long, value_name = "FILE")]
        mbox: Option<PathBuf>,
        /// A new (or empty) directory to write a Maildir++ tree into.
        #[arg(long, value_name = "DIR")]
        maildir: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
}

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// TOML configuration file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory (holds the database file and the admin socket).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Keep the data in this PostgreSQL database (postgres://...) instead of the data file,
    /// so that several nodes can share it. TLS as libpq's URL parameters say, e.g.
    /// ?sslmode=verify-full&sslrootcert=/path/ca.pem (see docs/postgresql-and-clusters.md).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// This node's name among the nodes sharing a store (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub common: Common,
    /// HTTP listen address, IP:PORT or HOST:PORT (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// SMTP listen address for inbound mail (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    pub smtp: Option<String>,
    /// SMTP submission listen address for mail clients, with STARTTLS (RFC 6409).
    #[arg(long, value_name = "ADDR")]
    pub submission: Option<String>,
    /// SMTP submission listen address for mail clients, over implicit TLS (RFC 8314).
    #[arg(long, value_name = "ADDR")]
    pub submissions: Option<String>,
    /// IMAP listen address for mail clients, with STARTTLS.
    #[arg(long, value_name = "ADDR")]
    pub imap: Option<String>,
    /// IMAP listen address for mail clients, over implicit TLS.
    #[arg(long, value_name = "ADDR")]
    pub imaps: Option<String>,
    /// ManageSieve listen address (RFC 5804) for managing Sieve filters, with STARTTLS.
    #[arg(long, value_name = "ADDR")]
    pub managesieve: Option<String>,
    /// HTTPS listen address: the HTTP listener's routes over TLS (HTTP/1.1 and HTTP/2), and
    /// ACME's TLS-ALPN-01 challenges.
    #[arg(long, value_name = "ADDR")]
    pub https: Option<String>,
    /// Plain HTTP listener for ACME's HTTP-01 challenges (port 80 in production); every other
    /// request is redirected to HTTPS.
    #[arg(long, value_name = "ADDR")]
    pub http_challenge: Option<String>,
    /// Public base URL of this server, used in links we hand out.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Send all outbound mail through this SMTP relay (smarthost) instead of recipients' MX.
    #[arg(long, value_name = "HOST:PORT")]
    pub relay: Option<String>,
    /// Send every DNS query to this nameserver.
    #[arg(long, value_name = "HOST:PORT")]
    pub nameserver: Option<SocketAddr>,
    /// Create a demo domain, mailbox and key at start and print how to use them.
    #[arg(long)]
    pub demo: bool,
}

#[derive(Debug, Subcommand)]
pub enum DomainCommand {
    /// Add a domain: generates its DKIM keys and prints the DNS records to publish.
    Add {
        name: String,
        #[command(flatten)]
        common: Common,
    },
    /// List hosted domains.
    List {
        #[command(flatten)]
        common: Common,
    },
    /// Remove a domain with its mailboxes, emails, contacts, groups and keys.
    Remove {
        name: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create a key; the secret is printed once, alone on the last line.
    Create {
        #[arg(long)]
        name: String,
        /// Scope the key to one domain.
        #[arg(long, conflicts_with = "org", required_unless_present = "org")]
        domain: Option<String>,
        /// Make an org-wide key (analytics of every domain, no writes).
        #[arg(long)]
        org: bool,
        #[command(flatten)]
        common: Common,
    },
    /// List keys (never their secrets).
    List {
        #[command(flatten)]
        common: Common,
    },
    /// Revoke a key by id; it stops working at once.
    Revoke {
        id: String,
        #[command(flatten)]
        common: Common,
    },
}

impl ServeArgs {
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> Vec<(&'static str, String)> {
        let mut out = self.common.overrides();
        // Addresses are parsed (and host names resolved) with the configuration's, so a bad one
        // is reported like a bad configuration value.
        let addresses = [
            ("http.listen", &self.http),
            ("smtp.listen", &self.smtp),
            ("submission.listen", &self.submission),
            ("submission.tls_listen", &self.submissions),
            ("imap.listen", &self.imap),
            ("imap.tls_listen", &self.imaps),
            ("managesieve.listen", &self.managesieve),
            ("http.tls_listen", &self.https),
            ("acme.http_challenge_listen", &self.http_challenge),
        ];
        for (key, value) in addresses {
            if let Some(addr) = value {
                out.push((key, addr.clone()));
            }
        }
        if let Some(url) = &self.public_url {
            out.push(("http.public_url", url.clone()));
        }
        if let Some(relay) = &self.relay {
            out.push(("delivery.relay", relay.clone()));
        }
        if let Some(ns) = self.nameserver {
            out.push(("delivery.nameserver", ns.to_string()));
        }
        out
    }
}

impl Common {
    pub fn overrides(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(dir) = &self.data {
            out.push(("storage.data_dir", dir.display().to_string()));
        }
        if let Some(url) = &self.store {
            out.push(("store.url", url.clone()));
        }
        if let Some(node) = &self.node {
            out.push(("cluster.node", node.clone()));
        }
        out
    }
}
