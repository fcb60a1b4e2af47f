//! Telling the nodes that share a database what was written, so they act at once instead of at
//! their next poll. A write transaction that wrote a watched table (a short list the store names)
//! queues `NOTIFY edgemail_changes, '<table>/<origin>'` ahead of its COMMIT, in the same exchange
//! (`origin` names the process, whose listener drops its own notifications: a process wakes its
//! engines after its own writes directly, as on the file, and a second wake-up is a wasted
//! look at the store per commit, several per message sent). PostgreSQL
//! delivers a notification only if its transaction commits, and one per table per commit (it folds
//! duplicates), so tables nobody waits for cost nothing. Each node keeps one connection of its own
//! (not from the pool, whose connections come and go) that runs `LISTEN` and forwards every
//! notification to a broadcast channel. Notifications sent while that connection is down are lost,
//! so every (re)connection is announced as `Changed::Everything`, and the nodes keep polling, more
//! slowly, as the fallback.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{AsyncMessage, Socket};

/// The channel every node listens on.
const CHANNEL: &str = "edgemail_changes";
/// How the listening connection shows in `pg_stat_activity`, for operators (and the tests that
/// cut it).
const APPLICATION_NAME: &str = "edgemail-listen";
/// Notifications a slow subscriber may fall behind by; one that falls further is told it lagged,
/// which it takes as "everything may have changed".
const CAPACITY: usize = 256;
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A connection cut without a reset (a dead host, a partition) shows no error until written to:
/// the listener asks something this often, and takes a late answer as a cut.
const PING: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// What a notification says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changed {
    /// A committed transaction (of any node, this one included) wrote this table.
    Table(Arc<str>),
    /// The listener (re)connected: what was written meanwhile was not told.
    Everything,
}

impl Changed {
    /// Whether this may concern `table`.
    pub fn touches(&self, table: &str) -> bool {
        match self {
            Changed::Table(name) => &**name == table,
            Changed::Everything => true,
        }
    }
}

/// Refuses a watched list the commit could not name safely: the names go into SQL as literals,
/// and into one 64-bit set.
pub(super) fn check(watched: &[&str]) -> Result<(), String> {
    if watched.len() > 64 {
        return Err(format!("{} watched tables; at most 64", watched.len()));
    }
    match watched
        .iter()
        .find(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    {
        Some(bad) => Err(format!("watched table name {bad:?}: only a-z and _")),
        None => Ok(()),
    }
}

/// A name for this process among those sharing the database, unique enough to tell its own
/// notifications from the others'.
pub(super) fn origin() -> Arc<str> {
    format!("{:016x}", rand::random::<u64>()).into()
}

/// What a notification's payload tells this process (`origin`): nothing when it sent it.
fn told(payload: &str, origin: &str) -> Option<Changed> {
    let (table, from) = payload.split_once('/').unwrap_or((payload, ""));
    (from != origin).then(|| Changed::Table(table.into()))
}

/// The watched tables a write transaction wrote so far.
pub(super) struct Written {
    watched: &'static [&'static str],
    bits: u64,
    origin: Arc<str>,
}

impl Written {
    pub fn new(watched: &'static [&'static str], origin: Arc<str>) -> Written {
        Written { watched, bits: 0, origin }
    }

    pub fn note(&mut self, table: &str) {
        if let Some(at) = self.watched.iter().position(|w| *w == table) {
            self.bits |= 1 << at;
        }
    }

    /// The COMMIT, after one NOTIFY per watched table written: one simple query, so the
    /// notifications cost no exchange of their own.
    pub fn commit(&self) -> Cow<'static, str> {
        if self.bits == 0 {
            return Cow::Borrowed("COMMIT");
        }
        let mut sql = String::new();
        for (at, name) in self.watched.iter().enumerate() {
            if self.bits & (1 << at) != 0 {
                sql.push_str(&format!("NOTIFY {CHANNEL}, '{name}/{}'; ", self.origin));
            }
        }
        sql.push_str("COMMIT");
        Cow::Owned(sql)
    }
}

type Start = Box<dyn FnOnce() + Send>;

/// The listening side: started by its first subscriber, so that commands which never ask (the
/// CLI, `migrate`) open no connection for it.
pub(super) struct Listener {
    sender: broadcast::Sender<Changed>,
    connected: Arc<AtomicBool>,
    start: Mutex<Option<Start>>,
}

impl Listener {
    /// A listener that will connect as `config` says, over `tls`, on the runtime of `handle`.
    pub fn new<T>(
        config: &tokio_postgres::Config,
        tls: T,
        handle: &tokio::runtime::Handle,
        origin: Arc<str>,
    ) -> Self
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send,
        T::TlsConnect: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let (sender, _) = broadcast::channel(CAPACITY);
        let connected = Arc::new(AtomicBool::new(false));
        let mut config = config.clone();
        config.application_name(APPLICATION_NAME).connect_timeout(PING_TIMEOUT);
        let to = Outlet { sender: sender.clone(), origin };
        let (up, handle) = (connected.clone(), handle.clone());
        let start: Start = Box::new(move || {
            handle.spawn(listen(config, tls, to, up));
        });
        Listener { sender, connected, start: Mutex::new(Some(start)) }
    }

    /// The notifications from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        // Subscribed before the start, so the first `Everything` reaches this subscriber too.
        let receiver = self.sender.subscribe();
        let start = self.start.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(start) = start {
            start();
        }
        receiver
    }

    /// Whether the connection listens now.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }
}

/// Listens until the runtime ends, connecting again after a cut with a growing pause.
/// Where notifications go, and whose are dropped.
struct Outlet {
    sender: broadcast::Sender<Changed>,
    origin: Arc<str>,
}

async fn listen<T>(
    config: tokio_postgres::Config,
    tls: T,
    sender: Outlet,
    connected: Arc<AtomicBool>,
) where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (mut backoff, mut sessions) = (BACKOFF_MIN, 0u64);
    loop {
        let why = session(&config, tls.clone(), &sender, &connected, sessions).await;
        if connected.swap(false, Ordering::AcqRel) {
            sessions += 1;
            backoff = BACKOFF_MIN;
        }
        tracing::warn!(error = %why, retry_in = ?backoff, "store notifications: not listening");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// One connection: LISTEN, then forward what comes until it fails; answers why it ended.
/// `sessions`: how many listened before (a later one counts as a reconnection).
async fn session<T>(
    config: &tokio_postgres::Config,
    tls: T,
    outlet: &Outlet,
    connected: &AtomicBool,
    sessions: u64,
) -> String
where
    T: MakeTlsConnect<Socket> + Send,
    T::Stream: Send,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = match config.connect(tls).await {
        Ok(pair) => pair,
        Err(e) => return e.to_string(),
    };
    // The connection is driven here rather than by a task of its own: this is where its
    // notifications come out.
    let forward = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if let Some(changed) = told(n.payload(), &outlet.origin) {
                        crate::metrics::store_notification();
                        // Nobody subscribed is no error: the next subscriber looks anyway.
                        let _ = outlet.sender.send(changed);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "the server closed the connection".to_owned(),
            }
        }
    };
    let subscribe = async {
        if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
            return e.to_string();
        }
        connected.store(true, Ordering::Release);
        if sessions > 0 {
            crate::metrics::store_listener_reconnect();
            tracing::info!("store notifications: listening again");
        }
        let _ = outlet.sender.send(Changed::Everything);
        loop {
            tokio::time::sleep(PING).await;
            match tokio::time::timeout(PING_TIMEOUT, client.batch_execute("SELECT 1")).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return e.to_string(),
                Err(_) => return "no answer to a ping".to_owned(),
            }
        }
    };
    tokio::select! {
        why = forward => why,
        why = subscribe => why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static WATCHED: [&str; 3] = ["api_keys", "queue", "domains"];

    #[test]
    fn a_commit_notifies_each_watched_table_it_wrote_once() {
        let mut w = Written::new(&WATCHED, "o1".into());
        assert_eq!(w.commit(), "COMMIT");
        w.note("emails");
        assert_eq!(w.commit(), "COMMIT");
        w.note("domains");
        w.note("api_keys");
        w.note("domains");
        assert_eq!(
            w.commit(),
            "NOTIFY edgemail_changes, 'api_keys/o1'; NOTIFY edgemail_changes, 'domains/o1'; COMMIT"
        );
    }

    #[test]
    fn a_process_is_not_told_its_own_commits() {
        assert_eq!(told("queue/o2", "o1"), Some(Changed::Table("queue".into())));
        assert_eq!(told("queue/o1", "o1"), None);
        // An older node's payload is the bare table name.
        assert_eq!(told("queue", "o1"), Some(Changed::Table("queue".into())));
    }

    #[test]
    fn names_that_are_not_plain_are_refused() {
        assert!(check(&WATCHED).is_ok());
        assert!(check(&["a'; DROP"]).is_err());
        assert!(check(&[""]).is_err());
    }

    #[test]
    fn everything_touches_every_table() {
        assert!(Changed::Everything.touches("queue"));
        assert!(Changed::Table("queue".into()).touches("queue"));
        assert!(!Changed::Table("queue".into()).touches("api_keys"));
    }
}
