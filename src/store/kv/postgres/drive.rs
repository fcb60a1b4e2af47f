//! Each connection is driven by the thread that waits for its answer. The store's transactions
//! are synchronous, so a caller blocks until PostgreSQL answers anyway; when the connection's
//! task ran on a runtime thread of its own, every round trip also cost two wake-ups across
//! threads (the request to that thread, the answer back) and that thread's own `epoll`:
//! measured, 45 % of a node's samples were in the kernel. Here the waiting thread writes the
//! request, sleeps in `poll` on the socket alone, and reads the answer itself.
//!
//! `Driver::run` is a small executor for one connection: it polls the caller's future and the
//! connection's future in turn until the caller's is done, and sleeps on the socket only when
//! neither can move without it.
//!
//! On a thread of the async runtime the wait is short first and handed off only past
//! `PATIENCE`: see there.

use std::future::Future;
use std::io::{self, IoSlice, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Token};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::super::super::error::{Error, Result};

/// A connection's socket, non-blocking. A read or write that would block answers `Pending`
/// without keeping the waker: the only executor of these sockets (`Driver::run`) sleeps on the
/// socket itself when nothing else can move.
pub(super) enum Sock {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
}

impl Sock {
    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Sock::Tcp(s) => s,
            Sock::Unix(s) => s,
        }
    }

    /// Runs `io` again when interrupted; a would-block is `Pending`.
    fn attempt<T>(
        &mut self,
        mut io: impl FnMut(&mut Sock) -> io::Result<T>,
    ) -> Poll<io::Result<T>> {
        loop {
            match io(self) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                other => return Poll::Ready(other),
            }
        }
    }
}

impl AsyncRead for Sock {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.initialize_unfilled();
        let read = self.get_mut().attempt(|sock| match sock {
            Sock::Tcp(s) => s.read(room),
            Sock::Unix(s) => s.read(room),
        });
        read.map_ok(|n| buf.advance(n))
    }
}

impl AsyncWrite for Sock {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().attempt(|sock| match sock {
            Sock::Tcp(s) => s.write(data),
            Sock::Unix(s) => s.write(data),
        })
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().attempt(|sock| match sock {
            Sock::Tcp(s) => s.write_vectored(data),
            Sock::Unix(s) => s.write_vectored(data),
        })
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(match self.get_mut() {
            Sock::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Sock::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        })
    }
}

/// A connection's own future (tokio-postgres' `Connection`), which moves its messages.
pub(super) type Connection =
    Pin<Box<dyn Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send>>;

/// The only event source of a driver's `Poll`.
const SOCKET: Token = Token(0);

/// The longest sleep in `poll` before polling both futures again. Only a defence: every wait
/// starts after a read or write found the socket empty or full, so its readiness wakes it.
const RECHECK: Duration = Duration::from_secs(1);

/// How long a thread of the async runtime waits on PostgreSQL before it hands the runtime's other
/// tasks to another thread (`tokio::task::block_in_place`) for the rest of the wait. A statement
/// on a healthy server answers well within it, and a hand-off for every read cost thread switches
/// (a tokio thread takes over the core, and one is handed back): once reads stopped handing off,
/// node CPU per send fell from 0.74 to 0.64-0.66 ms (`benches/scaleout.sh`, run b). The runtime
/// has more threads on a shared store for the same reason (`main.rs`), so that reads still
/// overlap. A wait past it (a slow statement, a server that stopped answering) still never stalls
/// the tasks queued behind this one. 1 ms was too short: a node under a CPU quota is paused for
/// tens of milliseconds at a time, and a wait that spans a pause handed off as before.
const PATIENCE: Duration = Duration::from_millis(5);

/// Whether this thread runs the tasks of a multi-threaded runtime, which a long wait here would
/// stall. (A current-thread runtime cannot hand its tasks off; plain threads have none.)
fn on_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Runs `wait`, which may take long (a free connection, a new one), on a runtime's thread after
/// handing that thread's other tasks to another.
pub(super) fn offload<R>(wait: impl FnOnce() -> R) -> R {
    if on_runtime() { tokio::task::block_in_place(wait) } else { wait() }
}

/// Set when a future asks to be polled again (a channel between the caller's future and the
/// connection's moved): then the driver polls again instead of sleeping on the socket.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// One connection's socket readiness and its future.
pub(super) struct Driver {
    poll: mio::Poll,
    events: Events,
    /// `None` before the startup is done, and once the connection ended.
    connection: Option<Connection>,
}

impl Driver {
    /// A driver sleeping on `sock`, registered before it goes to tokio-postgres.
    pub fn new(sock: &mut Sock) -> io::Result<Driver> {
        let poll = mio::Poll::new()?;
        poll.registry().register(sock.source(), SOCKET, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Driver { poll, events: Events::with_capacity(2), connection: None })
    }

    /// The connection's future, once its startup is done.
    pub fn attach(&mut self, connection: Connection) {
        self.connection = Some(connection);
    }

    /// Whether the connection is still open. Nobody drives a connection while it waits in the
    /// pool, so a close by the server (a restart, `idle_session_timeout`, an administrator's
    /// `pg_terminate_backend`) shows only here: one read of what the socket holds, which would
    /// otherwise fail the next transaction's first statement.
    pub fn alive(&mut self) -> bool {
        if let Some(connection) = &mut self.connection
            && connection.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready()
        {
            self.connection = None;
        }
        self.connection.is_some()
    }

    /// Runs `work` on this thread to its end, moving the connection as it needs; `deadline`
    /// bounds the wait (a connection's startup).
    pub fn run<T, F>(&mut self, work: F, deadline: Option<Instant>) -> Result<T>
    where
        F: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut work = std::pin::pin!(work);
        let (started, on_runtime) = (Instant::now(), on_runtime());
        loop {
            flag.0.store(false, Ordering::Release);
            if let Poll::Ready(done) = work.as_mut().poll(&mut cx) {
                return Ok(done?);
            }
            if let Some(connection) = &mut self.connection
                && connection.as_mut().poll(&mut cx).is_ready()
            {
                // It ended (the server closed it, or it failed): dropping it fails whatever the
                // work still waits for, with the connection's error.
                self.connection = None;
                continue;
            }
            if flag.0.load(Ordering::Acquire) {
                continue;
            }
            let mut wait = RECHECK;
            if let Some(deadline) = deadline {
                wait = wait.min(deadline.saturating_duration_since(Instant::now()));
                if wait.is_zero() {
                    return Err(Error::Unavailable("PostgreSQL did not answer in time".into()));
                }
            }
            let waited = started.elapsed();
            if !on_runtime {
                self.sleep(wait)?;
            } else if waited < PATIENCE {
                self.sleep(wait.min(PATIENCE - waited))?;
            } else {
                // Once handed off, later calls find no tasks left to hand and just run.
                tokio::task::block_in_place(|| self.sleep(wait))?;
            }
        }
    }

    /// Sleeps until the socket is ready (or `wait` passed).
    fn sleep(&mut self, wait: Duration) -> Result<()> {
        match self.poll.poll(&mut self.events, Some(wait)) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                // Waiting on this socket is broken: the connection is closed, not used again.
                self.connection = None;
                Err(Error::io("cannot wait for the PostgreSQL connection", e))
            }
            _ => Ok(()),
        }
    }
}
