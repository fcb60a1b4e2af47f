//! Group commit. redb has one writer at a time and an fsync per commit; one thread owns the
//! writes, drains every job that queued up while the previous commit was syncing, runs them all in
//! one transaction and answers each caller only after that transaction is durable.

use std::sync::mpsc;
use std::thread::JoinHandle;

use redb::{Database, WriteTransaction};
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// At most this many jobs share a commit, bounding the latency one batch adds to its first job.
const MAX_BATCH: usize = 512;

/// One write: runs inside a shared transaction, answers once the transaction has committed.
trait Job: Send {
    /// Runs the write. A job must do its checks before it writes: an `Err` from a job that
    /// already wrote would be committed with the batch.
    fn run(&mut self, tx: &WriteTransaction);
    /// Whether the job hit a storage failure; the whole batch is then aborted.
    fn failed_storage(&self) -> bool;
    fn finish(self: Box<Self>, commit: Result<()>);
}

struct Pending<F, T> {
    work: Option<F>,
    outcome: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<F, T> Job for Pending<F, T>
where
    F: FnOnce(&WriteTransaction) -> Result<T> + Send,
    T: Send,
{
    fn run(&mut self, tx: &WriteTransaction) {
        if let Some(work) = self.work.take() {
            self.outcome = Some(work(tx));
        }
    }

    fn failed_storage(&self) -> bool {
        matches!(self.outcome, Some(Err(Error::Internal(_))))
    }

    fn finish(self: Box<Self>, commit: Result<()>) {
        let answer = match (commit, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(Error::internal("write job did not run")),
            (Err(e), Some(Err(job_error))) if !matches!(job_error, Error::Internal(_)) => {
                // The job's own refusal stands even when the batch failed: it wrote nothing.
                drop(e);
                Err(job_error)
            }
            (Err(e), _) => Err(e),
        };
        // The caller may have gone away (request cancelled); the write stands regardless.
        let _ = self.reply.send(answer);
    }
}

/// `None` asks the thread to commit what it holds and stop.
type Msg = Option<Box<dyn Job>>;

pub(super) struct Writer {
    tx: mpsc::Sender<Msg>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    pub(super) fn start(db: std::sync::Arc<Database>) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let thread = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || run_writer(&db, rx))?;
        Ok(Writer { tx, thread: std::sync::Mutex::new(Some(thread)) })
    }

    /// Queues `work`; the receiver yields its result once it is durable.
    pub(super) fn submit<F, T>(&self, work: F) -> oneshot::Receiver<Result<T>>
    where
        F: FnOnce(&WriteTransaction) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending { work: Some(work), outcome: None, reply });
        if let Err(mpsc::SendError(Some(job))) = self.tx.send(Some(job)) {
            job.finish(Err(Error::Unavailable("the store is shutting down".into())));
        }
        answer
    }

    /// Lets the thread commit what it holds, stops it and waits for it. Later writes are
    /// refused with 503.
    pub(super) fn close(&self) {
        let _ = self.tx.send(None);
        let thread = match self.thread.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

fn run_writer(db: &Database, rx: mpsc::Receiver<Msg>) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let mut stopping = false;
    while !stopping {
        match rx.recv() {
            Ok(Some(job)) => batch.push(job),
            Ok(None) | Err(_) => break,
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Some(job)) => batch.push(job),
                Ok(None) => {
                    stopping = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let commit = run_batch(db, &mut batch);
        if let Err(e) = &commit {
            tracing::error!(error = %e, jobs = batch.len(), "store commit failed");
        }
        for job in batch.drain(..) {
            job.finish(match &commit {
                Ok(()) => Ok(()),
                Err(e) => Err(Error::internal(e)),
            });
        }
    }
}

fn run_batch(db: &Database, batch: &mut [Box<dyn Job>]) -> Result<()> {
    let tx = db.begin_write()?;
    for job in batch.iter_mut() {
        job.run(&tx);
        if job.failed_storage() {
            tx.abort()?;
            return Err(Error::internal("a write in the batch failed; batch aborted"));
        }
    }
    tx.commit()?;
    Ok(())
}
