//! The store's writes: each job goes to the group-commit thread (`writer`) with the isolation
//! it asks for, and once it has committed, what it changed wakes its watchers (the webhook
//! dispatcher, IMAP sessions).

use std::sync::Arc;

use super::error::{Error, JobError, Result};
use super::writer::AheadFn;
use super::{Store, Wtx};

impl Store {
    /// Runs `work` in the next group commit; returns once the write is durable. `work` fails
    /// in its caller's error type, which must carry the store's errors and tell a fault (the
    /// commit is aborted) from a refusal (`JobError`). A closure whose body never names that
    /// type (only `?` and `Ok`) leaves it to be annotated: `|w| -> Result<_> { .. }`.
    pub async fn write<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        self.write_as(work, false, None).await
    }

    /// `write` under snapshot isolation on a shared store: for the hot paths (accepting a send,
    /// claiming and finishing a delivery attempt, counting tracking hits), whose batches would
    /// otherwise lose to each other on PostgreSQL's page locks without sharing a key. Correct
    /// for work whose conflicts with concurrent writers all meet on a key both write: a claim
    /// and its release, a queue entry, an email, the day's counter shard of this node, an
    /// idempotency key. What it cannot see is a concurrent write of keys it only reads: a
    /// send racing the removal of its mailbox may leave the message behind the removal, which
    /// the queue then drops as mail of a gone domain or mailbox (the state one serial order
    /// would also reach, the removal first, but for the orphan row).
    pub async fn write_snapshot<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        self.write_as(work, true, None).await
    }

    /// `write_snapshot` for work whose keys are known before it runs: `ahead` names them (the
    /// `*_ahead` methods), and on a store across a network the keys of every such job of a group
    /// commit are read in one exchange, where each job alone would cost one.
    pub async fn write_snapshot_ahead<A, F, T, E>(&self, ahead: A, work: F) -> Result<T, E>
    where
        A: Fn(&Wtx<'_>) -> Result<()> + Send + 'static,
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        let shard = self.shard.clone();
        let ahead: AheadFn = Box::new(move |tx| {
            let w = Wtx { tx, emitted: false, imap_changed: false, shard: shard.as_deref() };
            // Naming keys only notes them; a failure to read them shows in the work itself.
            let _ = ahead(&w);
        });
        self.write_as(work, true, Some(ahead)).await
    }

    async fn write_as<F, T, E>(
        &self,
        work: F,
        snapshot: bool,
        ahead: Option<AheadFn>,
    ) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        if !self.file.writable() {
            return Err(E::from(self.file.refusal()));
        }
        let (answer, emitted) = self.submit(work, snapshot, ahead);
        let out = answer.await.map_err(|_| E::from(shutting_down()))?;
        self.after_commit(&emitted);
        out
    }

    /// `write` for callers outside the async runtime (command line, test seeding).
    pub fn write_blocking<F, T, E>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        if !self.file.writable() {
            return Err(E::from(self.file.refusal()));
        }
        let (answer, emitted) = self.submit(work, false, None);
        let out = answer.blocking_recv().map_err(|_| E::from(shutting_down()))?;
        self.after_commit(&emitted);
        out
    }

    fn after_commit(&self, flags: &std::sync::atomic::AtomicU8) {
        let flags = flags.load(std::sync::atomic::Ordering::Relaxed);
        if flags & EMITTED != 0 {
            self.events.wake();
        }
        if flags & IMAP_CHANGED != 0 {
            self.mail.wake_all();
        }
    }

    /// Queues `work`; the flags tell, once it has run, whether it recorded a webhook event
    /// (`EMITTED`) and whether it changed a folder IMAP shows (`IMAP_CHANGED`).
    fn submit<F, T, E>(
        &self,
        work: F,
        snapshot: bool,
        ahead: Option<AheadFn>,
    ) -> (Answer<T, E>, Arc<std::sync::atomic::AtomicU8>)
    where
        F: FnOnce(&mut Wtx<'_>) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        let emitted = Arc::new(std::sync::atomic::AtomicU8::new(0));
        let flag = emitted.clone();
        let shard = self.shard.clone();
        let answer = self.writer.submit(
            move |tx| {
                let mut w =
                    Wtx { tx, emitted: false, imap_changed: false, shard: shard.as_deref() };
                let out = work(&mut w);
                let flags =
                    (u8::from(w.emitted) * EMITTED) | (u8::from(w.imap_changed) * IMAP_CHANGED);
                flag.store(flags, std::sync::atomic::Ordering::Relaxed);
                out
            },
            snapshot,
            ahead,
        );
        (answer, emitted)
    }
}

const EMITTED: u8 = 1;
const IMAP_CHANGED: u8 = 2;

type Answer<T, E> = tokio::sync::oneshot::Receiver<Result<T, E>>;

fn shutting_down() -> Error {
    Error::Unavailable("the store is shutting down".into())
}
