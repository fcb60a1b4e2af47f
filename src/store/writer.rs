//! Group commit. redb has one writer at a time and an fsync per commit; one thread owns the
//! writes, drains every job that queued up while the previous commit was syncing, runs them all in
//! one transaction and answers each caller only after that transaction is durable.
//!
//! A commit that fails on the disk (full, EIO) degrades the store: the thread reopens the file
//! (so reads go on), refuses writes at once, and probes with a small write every second until one
//! commits.

use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::error::{Error, JobError, Result};
use super::file::File;
use super::kv::{Backend, Db, WriteTxn};

/// At most this many jobs share a commit, bounding the latency one batch adds to its first job.
const MAX_BATCH: usize = 512;
/// How many times a batch that lost a race with another node's transaction is run again.
const MAX_RETRIES: u32 = 12;
/// A batch smaller than this, after a commit that several jobs shared, waits for more before it
/// commits, as long as the last commit took and at most `MAX_WAIT` (PostgreSQL's `commit_delay`,
/// keyed on the last batch instead of open transactions). A lone writer never waits; a busy one
/// fills its batches by itself. Waiting one commit's time at most doubles a job's wait for the
/// disk; the 1 KB fill (16 sessions, a connection per message) went from about 5,200 to 6,300-
/// 6,800 messages a second with it.
const WAIT_BELOW: usize = 8;
const MAX_WAIT: Duration = Duration::from_millis(1);
/// How often a degraded store tries a write.
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// The small write that proves the disk takes writes again.
pub(super) type Probe = fn(&Db) -> Result<()>;

/// One write: runs inside a shared transaction, answers once the transaction has committed.
trait Job: Send {
    /// Runs the write. A job must do its checks before it writes: an `Err` from a job that
    /// already wrote would be committed with the batch. `again`: the batch may be run once more
    /// (a shared store, where a concurrent transaction can win), so the work is kept.
    fn run(&mut self, tx: &dyn WriteTxn, again: bool);
    /// The job's fault, if it hit one; the whole batch is then aborted.
    fn fault(&self) -> Option<Fault>;
    /// Answers the caller; `commit` is the batch's outcome, shared by all its jobs.
    fn finish(self: Box<Self>, commit: Result<(), Arc<Error>>);
    /// Answers the caller without running: the store refuses writes.
    fn refuse(self: Box<Self>, refusal: Error);
    /// Whether the job runs under snapshot isolation (`Backend::write_snapshot`).
    fn snapshot(&self) -> bool;
    /// Names the keys the job will read (`ReadTxn::read_ahead`), before any job of the batch
    /// runs: a backend across a network then reads the keys of the whole batch in one exchange
    /// instead of one a job.
    fn ahead(&self, tx: &dyn WriteTxn);
}

/// What a job names ahead (see `Job::ahead`).
pub(super) type AheadFn = Box<dyn Fn(&dyn WriteTxn) + Send>;

/// What kind of fault aborted a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Disk,
    /// A concurrent transaction won: the batch runs again.
    Contention,
    Other,
}

struct Pending<F, T, E> {
    snapshot: bool,
    ahead: Option<AheadFn>,
    work: Option<F>,
    outcome: Option<Result<T, E>>,
    reply: oneshot::Sender<Result<T, E>>,
}

impl<F, T, E> Job for Pending<F, T, E>
where
    F: FnOnce(&dyn WriteTxn) -> Result<T, E> + Clone + Send,
    T: Send,
    E: JobError + Send,
{
    fn run(&mut self, tx: &dyn WriteTxn, again: bool) {
        let work = if again { self.work.clone() } else { self.work.take() };
        if let Some(work) = work {
            self.outcome = Some(work(tx));
        }
    }

    fn fault(&self) -> Option<Fault> {
        match &self.outcome {
            Some(Err(e)) if e.is_contention() => Some(Fault::Contention),
            Some(Err(e)) if e.is_fault() => {
                Some(if e.is_disk() { Fault::Disk } else { Fault::Other })
            }
            _ => None,
        }
    }

    fn finish(self: Box<Self>, commit: Result<(), Arc<Error>>) {
        let answer = match (commit, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(Error::internal("write job did not run").into()),
            // The job's own refusal stands even when the batch failed: it wrote nothing. So does
            // its own fault, which is what aborted the batch.
            (Err(_), Some(Err(job_error))) => Err(job_error),
            (Err(batch), _) => Err(Error::Aborted(batch).into()),
        };
        // The caller may have gone away (request cancelled); the write stands regardless.
        let _ = self.reply.send(answer);
    }

    fn refuse(self: Box<Self>, refusal: Error) {
        let _ = self.reply.send(Err(refusal.into()));
    }

    fn snapshot(&self) -> bool {
        self.snapshot
    }

    fn ahead(&self, tx: &dyn WriteTxn) {
        if let Some(ahead) = &self.ahead {
            ahead(tx);
        }
    }
}

/// Work that runs between two commits, with no transaction open: the file then holds exactly the
/// last commit, and holds still until the work returns.
pub(super) type Between = Box<dyn FnOnce(&Db) + Send>;

enum Msg {
    Job(Box<dyn Job>),
    Between(Between),
    /// Commit what the thread holds and stop.
    Stop,
}

pub(super) struct Writer {
    tx: mpsc::Sender<Msg>,
    threads: std::sync::Mutex<Vec<JoinHandle<()>>>,
    closed: std::sync::atomic::AtomicBool,
}

/// Writer threads. One on PostgreSQL too: batches run side by side there lose most races with
/// each other (they all touch the queue, the indexes and the day's counters), and four threads
/// were measured no faster than one (719 against 664 sends/s, `benches/scaleout.sh`) while a
/// send now and then ran out of retries. The threads share one queue of jobs.
const WRITERS: usize = 1;

impl Writer {
    pub(super) fn start(file: Arc<File>, probe: Probe) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let count = WRITERS;
        let mut threads = Vec::with_capacity(count);
        for n in 0..count {
            let (file, rx) = (file.clone(), rx.clone());
            let thread = std::thread::Builder::new()
                .name(format!("store-writer-{n}"))
                .spawn(move || run_writer(&file, probe, &rx))
                .map_err(|e| Error::io("cannot start the store writer thread", e))?;
            threads.push(thread);
        }
        Ok(Writer { tx, threads: std::sync::Mutex::new(threads), closed: false.into() })
    }

    /// Queues `work` (under snapshot isolation when `snapshot`); the receiver yields its result
    /// once it is durable.
    pub(super) fn submit<F, T, E>(
        &self,
        work: F,
        snapshot: bool,
        ahead: Option<AheadFn>,
    ) -> oneshot::Receiver<Result<T, E>>
    where
        F: FnOnce(&dyn WriteTxn) -> Result<T, E> + Clone + Send + 'static,
        T: Send + 'static,
        E: JobError + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending { snapshot, ahead, work: Some(work), outcome: None, reply });
        // Once the thread is gone the job is dropped unrun, closing `answer`: the caller reads
        // that as the store shutting down (503), not as a failed commit.
        let _ = self.tx.send(Msg::Job(job));
        answer
    }

    /// Runs `work` after the commit of every write queued before it, before any queued after.
    /// `false` when the writer is gone (the store is closed).
    pub(super) fn between(&self, work: Between) -> bool {
        self.tx.send(Msg::Between(work)).is_ok()
    }

    /// Whether `close` was called: writes are refused from then on.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Lets the thread commit what it holds, stops it and waits for it. Later writes are
    /// refused with 503.
    pub(super) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::Release);
        let threads = match self.threads.lock() {
            Ok(mut slot) => std::mem::take(&mut *slot),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        // One stop for each thread: each takes one and ends after committing what it holds.
        for _ in &threads {
            let _ = self.tx.send(Msg::Stop);
        }
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

/// Adds the jobs already queued to a batch that has one, up to `MAX_BATCH`; returns the message
/// that ended the batch early (work to run between commits, or the stop), which is not a job.
fn gather(rx: &mpsc::Receiver<Msg>, batch: &mut Vec<Box<dyn Job>>) -> Option<Msg> {
    while !batch.is_empty() && batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(Msg::Job(job)) => batch.push(job),
            Ok(other) => return Some(other),
            Err(_) => return None,
        }
    }
    None
}

fn run_writer(file: &File, probe: Probe, rx: &std::sync::Mutex<mpsc::Receiver<Msg>>) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let (mut last_batch, mut last_commit) = (0, Duration::ZERO);
    let mut stopping = false;
    let mut next_probe = Instant::now();
    let mut between: Option<Between> = None;
    while !stopping {
        if let Some(work) = between.take()
            && let Ok(db) = file.db()
        {
            work(&db);
        }
        // Several threads share the queue on a shared store: one at a time takes a batch.
        let rx = rx.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let first = if file.writable() {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(next_probe.saturating_duration_since(Instant::now()))
        };
        match first {
            Ok(Msg::Job(job)) => batch.push(job),
            Ok(Msg::Between(work)) => between = Some(work),
            Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let mut more = gather(&rx, &mut batch);
        if more.is_none() && (1..WAIT_BELOW).contains(&batch.len()) && last_batch > 1 {
            // The last commit was shared, so writers are about: a short wait lets the ones just
            // behind this job share its commit, whose fsync costs the same for one job or ten.
            std::thread::sleep(last_commit.min(MAX_WAIT));
            more = gather(&rx, &mut batch);
        }
        match more {
            Some(Msg::Between(work)) => between = Some(work),
            Some(Msg::Stop) => stopping = true,
            _ => {}
        }
        drop(rx);
        last_batch = batch.len();
        if !file.writable() && Instant::now() >= next_probe {
            try_probe(file, probe);
            next_probe = Instant::now() + PROBE_EVERY;
        }
        if !file.writable() {
            batch.drain(..).for_each(|job| job.refuse(file.refusal()));
            continue;
        }
        if batch.is_empty() {
            continue;
        }
        let started = Instant::now();
        // Jobs of both isolations share a commit where there is one writer at a time; on a
        // shared store each kind goes in a transaction of its own.
        let mut serializable = Vec::new();
        if file.is_shared() {
            serializable.extend(batch.extract_if(.., |job| !job.snapshot()));
        }
        for (jobs, snapshot) in [(&mut batch, true), (&mut serializable, false)] {
            if !jobs.is_empty() && commit_group(file, jobs, snapshot) {
                next_probe = Instant::now() + PROBE_EVERY;
            }
        }
        last_commit = started.elapsed();
    }
    batch.drain(..).for_each(|job| job.refuse(file.refusal()));
}

/// Commits `jobs` in one transaction (a snapshot one when `snapshot`) and answers them; true
/// when the disk failed and the store degraded.
fn commit_group(file: &File, jobs: &mut Vec<Box<dyn Job>>, snapshot: bool) -> bool {
    let started = Instant::now();
    let again = file.is_shared();
    let commit = file.db().and_then(|db| run_batch(&db, jobs, again, snapshot)).map_err(Arc::new);
    crate::metrics::store_commit(started.elapsed());
    let mut degraded = false;
    if let Err(e) = &commit {
        tracing::error!(error = %e, jobs = jobs.len(), "store commit failed");
        if e.is_disk() {
            file.degrade(e.clone());
            reopen(file);
            degraded = true;
        }
    }
    for job in jobs.drain(..) {
        job.finish(commit.clone());
    }
    degraded
}

/// A handle that met a disk fault fails every later operation, reads too: replace it.
fn reopen(file: &File) {
    if let Err(e) = file.reopen() {
        tracing::error!(error = %e, "store file not reopened; retrying with the next probe");
    }
}

fn try_probe(file: &File, probe: Probe) {
    match file.db().and_then(|db| probe(&db)) {
        Ok(()) => file.recover(),
        Err(e) => {
            tracing::debug!(error = %e, "store probe write failed");
            reopen(file);
        }
    }
}

/// Runs the batch in one transaction. On a shared store (`again`) a batch that lost a race with
/// another node's transaction wrote nothing, and is run again after a random pause, so that the
/// racers do not meet again in step.
fn run_batch(db: &Db, batch: &mut [Box<dyn Job>], again: bool, snapshot: bool) -> Result<()> {
    let mut tries = 0;
    loop {
        match try_batch(db, batch, again, snapshot) {
            Err(e) if again && e.is_contention() && tries < MAX_RETRIES => {
                tries += 1;
                crate::metrics::store_retry();
                let ceiling = 1u64 << tries.min(7);
                std::thread::sleep(Duration::from_millis(1 + rand::random::<u64>() % ceiling));
            }
            done => return done,
        }
    }
}

fn try_batch(db: &Db, batch: &mut [Box<dyn Job>], again: bool, snapshot: bool) -> Result<()> {
    let tx = if snapshot { db.write_snapshot()? } else { db.write()? };
    if tx.reads_ahead() {
        for job in batch.iter() {
            job.ahead(&*tx);
        }
    }
    for job in batch.iter_mut() {
        job.run(&*tx, again);
        if let Some(fault) = job.fault() {
            // The job keeps its own error; the batch's says what became of the others.
            let _ = tx.abort();
            let why = "a write in the batch failed; batch aborted";
            return Err(match fault {
                Fault::Disk => Error::Disk(why.into()),
                Fault::Contention => Error::Contention(why.into()),
                Fault::Other => Error::internal(why),
            });
        }
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests;
