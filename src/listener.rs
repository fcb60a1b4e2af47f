//! Accepting connections the same way on every listener: at most `limit` open at once (at the cap
//! we stop accepting, so the kernel's backlog pushes back on clients), shutdown honoured while
//! waiting, and accept errors (such as running out of descriptors) paused on rather than spun on.
//! A per-address count keeps a few clients from holding every slot.
//!
//! A listener may also keep a registry of its live sessions (`Sessions`), for when many clients
//! hold connections without using them (each address under its own cap, but together every
//! slot): from 3/4 of the cap on, the listener is under pressure and sessions that may be shed
//! wait for their client a short time only (Postfix's stress mode); at the cap, the session that
//! has waited longest for its client is asked to close before the next connection is taken, so
//! real clients get in while silent ones are turned over.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::shutdown::Shutdown;

pub struct Accepted {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// Held for the life of the connection.
    pub permit: OwnedSemaphorePermit,
}

/// The next connection, with TCP_NODELAY set; `None` once shutdown is requested.
pub async fn next(
    listener: &TcpListener,
    limit: &Arc<Semaphore>,
    shutdown: &mut Shutdown,
) -> Option<Accepted> {
    let permit = tokio::select! {
        permit = limit.clone().acquire_owned() => permit.ok()?,
        _ = shutdown.wait() => return None,
    };
    accept(listener, permit, shutdown).await
}

async fn accept(
    listener: &TcpListener,
    permit: OwnedSemaphorePermit,
    shutdown: &mut Shutdown,
) -> Option<Accepted> {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return Some(Accepted { stream, peer, permit });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.wait() => return None,
        }
    }
}

/// `next` for a listener that keeps a registry of its sessions: at the cap, the longest-idle
/// session that may be shed is asked to close to make room; the connection comes with its
/// entry in the registry.
pub async fn next_shedding(
    listener: &TcpListener,
    sessions: &Arc<Sessions>,
    shutdown: &mut Shutdown,
) -> Option<(Accepted, Presence)> {
    let permit = loop {
        if let Ok(permit) = sessions.limit.clone().try_acquire_owned() {
            break permit;
        }
        // Asked or not, look again a little later: the session asked may be slow to go, and one
        // may have become idle long enough meanwhile.
        sessions.shed_idlest();
        tokio::select! {
            permit = sessions.limit.clone().acquire_owned() => break permit.ok()?,
            _ = tokio::time::sleep(MIN_IDLE) => {}
            _ = shutdown.wait() => return None,
        }
    };
    let accepted = accept(listener, permit, shutdown).await?;
    Some((accepted, sessions.join()))
}

/// Only a session that has waited this long for its client is shed: one between two commands
/// of a client that is talking is not.
const MIN_IDLE: Duration = Duration::from_secs(1);

/// The live sessions of one listener, and its cap.
pub struct Sessions {
    limit: Arc<Semaphore>,
    cap: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    live: HashMap<u64, Entry>,
}

struct Entry {
    /// Since when the session waits for its client; `None` while it works.
    idle_since: Option<Instant>,
    /// Whether it may be shed (an IMAP session that logged in may not).
    sheddable: bool,
    /// Whether it has been asked to close already.
    asked: bool,
    shed: Arc<Notify>,
}

impl Sessions {
    /// A registry for a listener of at most `cap` connections.
    pub fn new(cap: usize) -> Arc<Sessions> {
        Arc::new(Sessions {
            limit: Arc::new(Semaphore::new(cap)),
            cap,
            table: Mutex::new(Table::default()),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether 3/4 of the cap or more are taken.
    pub fn under_pressure(&self) -> bool {
        self.table().live.len().saturating_mul(4) >= self.cap.saturating_mul(3)
    }

    fn join(self: &Arc<Self>) -> Presence {
        let shed = Arc::new(Notify::new());
        let mut table = self.table();
        let id = table.next_id;
        table.next_id += 1;
        let entry = Entry { idle_since: None, sheddable: true, asked: false, shed: shed.clone() };
        table.live.insert(id, entry);
        Presence { sessions: self.clone(), id, shed }
    }

    /// Asks the session that has waited longest for its client (at least `MIN_IDLE`) to close;
    /// whether there was one.
    fn shed_idlest(&self) -> bool {
        let now = Instant::now();
        let mut table = self.table();
        let idlest = table
            .live
            .values_mut()
            .filter(|e| e.sheddable && !e.asked)
            .filter_map(|e| e.idle_since.filter(|at| now - *at >= MIN_IDLE).map(|at| (at, e)))
            .min_by_key(|(at, _)| *at);
        let Some((_, entry)) = idlest else { return false };
        entry.asked = true;
        entry.shed.notify_one();
        true
    }
}

/// A session's entry in its listener's registry, removed when dropped.
pub struct Presence {
    sessions: Arc<Sessions>,
    id: u64,
    shed: Arc<Notify>,
}

/// How a wait for the client ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited<T> {
    Done(T),
    /// The client said nothing for the time allowed.
    TimedOut,
    /// The listener needs the slot: the session should say goodbye and close.
    Shed,
}

impl Presence {
    /// Whether the session may be shed from now on.
    pub fn set_sheddable(&self, sheddable: bool) {
        if let Some(entry) = self.sessions.table().live.get_mut(&self.id) {
            entry.sheddable = sheddable;
        }
    }

    fn set_idle(&self, since: Option<Instant>) -> bool {
        let mut table = self.sessions.table();
        let Some(entry) = table.live.get_mut(&self.id) else { return false };
        entry.idle_since = since;
        entry.sheddable
    }

    /// Waits for the client (`io`, a read or a handshake) at most `limit`, or `stressed` while
    /// the listener is under pressure and the session may be shed; pressure that starts during
    /// the wait shortens it too (it is looked at again every `stressed`).
    pub async fn wait<F: Future>(
        &self,
        io: F,
        limit: Duration,
        stressed: Duration,
    ) -> Waited<F::Output> {
        let start = Instant::now();
        let sheddable = self.set_idle(Some(start));
        let stressed = stressed.min(limit).max(Duration::from_millis(1));
        tokio::pin!(io);
        let waited = loop {
            let allowed =
                if sheddable && self.sessions.under_pressure() { stressed } else { limit };
            let deadline = start + allowed;
            let now = Instant::now();
            if now >= deadline {
                break Waited::TimedOut;
            }
            tokio::select! {
                out = &mut io => break Waited::Done(out),
                _ = self.shed.notified(), if sheddable => break Waited::Shed,
                _ = tokio::time::sleep_until(deadline.min(now + stressed)) => {}
            }
        };
        self.set_idle(None);
        waited
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.sessions.table().live.remove(&self.id);
    }
}

/// Open connections per client address; an entry leaves with its last connection.
#[derive(Default)]
pub struct PerIp(Mutex<HashMap<IpAddr, usize>>);

/// One counted connection; dropping it frees the slot.
pub struct IpSlot(Arc<PerIp>, IpAddr);

impl PerIp {
    /// A slot for `ip`, or `None` when it already has `max` connections open.
    pub fn enter(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut map = match self.0.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let count = map.entry(ip).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(IpSlot(self.clone(), ip))
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut map = match self.0.0.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(count) = map.get_mut(&self.1) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_slots_are_counted_and_freed() {
        let per_ip = Arc::new(PerIp::default());
        let ip: IpAddr = [192, 0, 2, 1].into();
        let a = per_ip.enter(ip, 2);
        let b = per_ip.enter(ip, 2);
        assert!(a.is_some() && b.is_some());
        assert!(per_ip.enter(ip, 2).is_none());
        assert!(per_ip.enter([192, 0, 2, 2].into(), 2).is_some(), "another address");
        drop(a);
        assert!(per_ip.enter(ip, 2).is_some());
        drop(b);
        assert!(per_ip.0.lock().map(|m| m.is_empty()).unwrap_or(false));
    }

    #[tokio::test]
    async fn the_longest_idle_sheddable_session_is_asked_to_go() {
        let sessions = Sessions::new(4);
        let (old, logged_in, young) = (sessions.join(), sessions.join(), sessions.join());
        assert!(sessions.under_pressure(), "3 of 4");
        logged_in.set_sheddable(false);
        let (long, short) = (Duration::from_secs(30), Duration::from_millis(2500));
        let never = std::future::pending::<()>;
        let (a, b, c, ()) = tokio::join!(
            old.wait(never(), long, long),
            logged_in.wait(never(), short, Duration::from_millis(100)),
            async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                young.wait(never(), long, long).await
            },
            async {
                tokio::time::sleep(Duration::from_millis(1200)).await;
                assert!(sessions.shed_idlest(), "the first has waited long enough");
                assert!(!sessions.shed_idlest(), "the third not yet");
                tokio::time::sleep(Duration::from_millis(500)).await;
                assert!(sessions.shed_idlest(), "now the third");
                assert!(!sessions.shed_idlest(), "never one that logged in");
            },
        );
        assert_eq!((a, c), (Waited::Shed, Waited::Shed));
        assert_eq!(b, Waited::TimedOut, "the logged-in one waits its own time, pressure or not");
        drop((old, young));
        assert!(!sessions.under_pressure(), "entries leave with their sessions");
    }

    #[tokio::test]
    async fn pressure_shortens_the_wait_of_sheddable_sessions() {
        let sessions = Sessions::new(4);
        let quiet = sessions.join();
        let (limit, stressed) = (Duration::from_millis(900), Duration::from_millis(200));
        let timed = |_: ()| async {
            let started = Instant::now();
            let waited = quiet.wait(std::future::pending::<()>(), limit, stressed).await;
            (waited, started.elapsed())
        };
        let (waited, took) = timed(()).await;
        assert!(waited == Waited::TimedOut && took >= limit, "no pressure: {took:?}");
        let others: Vec<Presence> = (0..2).map(|_| sessions.join()).collect();
        let (waited, took) = timed(()).await;
        assert!(waited == Waited::TimedOut && took < limit / 2, "3 of 4: {took:?}");
        let answered = quiet.wait(async { 7 }, limit, stressed).await;
        assert_eq!(answered, Waited::Done(7));
        drop(others);
    }
}
