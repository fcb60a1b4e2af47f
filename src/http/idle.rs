//! How long a connection may sit without a request: a client must send a whole request head
//! within `http.header_timeout` of the connection going idle (accepted, or its last answer
//! written), and must keep reading an answer it is sent. Slow or silent clients (slowloris) are
//! cut off, and idle keep-alive connections are closed.
//!
//! One timer per connection, re-armed once a period at most, in place of hyper's header timer:
//! that one was armed and cancelled for every request (a timer-wheel insert and removal and a
//! boxed sleep each time), a fiftieth of the API's read path.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// What a connection is doing, as its requests and writes report it. The connection's own task
/// is the only writer, so plain stores suffice.
pub struct Activity {
    opened: Instant,
    /// A request is being answered: its body is read under `http.body_timeout`, the rest is ours.
    busy: AtomicBool,
    /// When the connection last made progress, in microseconds after `opened`.
    last: AtomicU64,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity { opened: Instant::now(), busy: false.into(), last: 0.into() })
    }

    /// A request head has arrived.
    pub fn request(&self) {
        self.busy.store(true, Ordering::Relaxed);
    }

    /// The request's answer is ready, at `at`; writing it is progress too.
    pub fn answered(&self, at: std::time::Instant) {
        self.touch(Instant::from_std(at));
        self.busy.store(false, Ordering::Relaxed);
    }

    fn touch(&self, at: Instant) {
        let micros = at.saturating_duration_since(self.opened).as_micros();
        self.last.store(u64::try_from(micros).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Since when the connection has been idle, or `None` while a request is answered.
    fn idle_since(&self) -> Option<Instant> {
        if self.busy.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.opened + Duration::from_micros(self.last.load(Ordering::Relaxed)))
    }
}

/// Completes once the connection has been idle for `limit`.
pub async fn expired(activity: &Activity, limit: Duration) {
    let mut deadline = Instant::now() + limit;
    loop {
        tokio::time::sleep_until(deadline).await;
        let now = Instant::now();
        match activity.idle_since() {
            None => deadline = now + limit,
            Some(since) if since + limit <= now => return,
            Some(since) => deadline = since + limit,
        }
    }
}

/// A connection's stream, reporting each write that makes progress to its `Activity`.
pub struct Watched<T> {
    io: T,
    activity: Arc<Activity>,
}

impl<T> Watched<T> {
    pub fn new(io: T, activity: Arc<Activity>) -> Watched<T> {
        Watched { io, activity }
    }

    fn wrote(&self, written: &Poll<std::io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = written
            && *n > 0
        {
            self.activity.touch(Instant::now());
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Timers never fire early, so the bounds below hold on a loaded machine too.
    #[tokio::test]
    async fn idle_time_counts_from_the_last_answer_and_not_while_one_is_made() {
        let limit = Duration::from_millis(100);
        let activity = Activity::new();
        expired(&activity, limit).await;
        assert!(
            activity.opened.elapsed() >= limit,
            "silent from the start: the limit after opening"
        );

        let activity = Activity::new();
        let watch = expired(&activity, limit);
        tokio::pin!(watch);
        activity.request();
        tokio::select! {
            () = &mut watch => panic!("expired while a request was answered"),
            () = tokio::time::sleep(limit * 3) => {}
        }
        let answer = Instant::now();
        activity.answered(answer.into_std());
        watch.await;
        assert!(answer.elapsed() >= limit, "the limit runs again from the answer");
    }
}
