//! The SMTP listeners' settings (`[smtp]`): the MX, whose session limits and certificate the
//! submission listeners share.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Smtp {
    /// The inbound listener (this server is the MX of its domains).
    pub listen: SocketAddr,
    /// The name this server answers to as a mail exchanger; MX records point at it.
    pub hostname: Option<String>,
    pub max_message_size: usize,
    pub max_recipients: usize,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// RFC 5321 4.5.3.2: at least 5 minutes for a command, 10 for the end of DATA.
    pub command_timeout: Duration,
    pub data_timeout: Duration,
    /// The silence allowed instead of both while a listener holds 3/4 of `max_connections` or
    /// more (Postfix's stress mode): idle sessions then make room sooner.
    pub stress_timeout: Duration,
    /// Bad commands tolerated before the connection is closed.
    pub max_errors: usize,
    /// Bytes of message data all sessions together may hold in memory while receiving; a
    /// message that would pass it is refused with a temporary error.
    pub max_inflight_bytes: usize,
    /// Message bytes the MX takes from one client address (an IPv6 /64) a minute, 0 for no
    /// limit; past it messages are refused with a temporary error. A message as large as
    /// `max_message_size` always fits a full allowance.
    pub max_bytes_per_ip_per_minute: usize,
    /// Recipients the MX refuses one client address (an IPv6 /64) a minute, over all its
    /// sessions, 0 for no limit; past it every recipient from there is deferred unchecked, so
    /// guessing which mailboxes exist stays slow however many sessions ask.
    pub max_refused_recipients_per_ip_per_minute: u32,
    /// The pause before answering a refused recipient, from the third one in a session on: it
    /// slows down address harvesting.
    pub error_delay: Duration,
    /// Domains whose authenticated feedback reports (ARF) are trusted even when the report's
    /// From domain is another one (feedback-loop services that sign with their own domain).
    pub feedback_senders: Vec<String>,
    /// PEM certificate chain and key for STARTTLS; a self-signed pair is made when absent.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Sub-addressing: `local<sep>tag@domain` reaches what `local@domain` reaches when no
    /// mailbox or alias has the whole name. Empty turns it off.
    pub subaddress_separator: String,
}

impl Smtp {
    /// The host name used in greetings and headers.
    pub fn host(&self) -> &str {
        self.hostname.as_deref().unwrap_or("localhost")
    }
}

impl Default for Smtp {
    fn default() -> Self {
        Smtp {
            listen: SocketAddr::from(([127, 0, 0, 1], 2525)),
            hostname: None,
            max_message_size: 25 * 1024 * 1024,
            max_recipients: 100,
            max_connections: 1000,
            max_connections_per_ip: 20,
            command_timeout: Duration::from_secs(300),
            data_timeout: Duration::from_secs(600),
            stress_timeout: Duration::from_secs(10),
            max_errors: 10,
            max_inflight_bytes: 256 * 1024 * 1024,
            max_bytes_per_ip_per_minute: 256 * 1024 * 1024,
            max_refused_recipients_per_ip_per_minute: 60,
            error_delay: Duration::from_secs(1),
            feedback_senders: Vec::new(),
            tls_cert: None,
            tls_key: None,
            subaddress_separator: "+".to_owned(),
        }
    }
}

/// What every hosted mailbox gets unless it says otherwise (`[mailbox]`).
#[derive(Debug, Clone)]
pub struct Mailbox {
    /// Bytes of mail a mailbox may hold (its own `quotaBytes` wins), 0 for no limit. The MX
    /// refuses mail past it (552 5.2.2), and IMAP APPEND too.
    pub quota_bytes: u64,
}

impl Default for Mailbox {
    fn default() -> Self {
        Mailbox { quota_bytes: 5 << 30 }
    }
}
