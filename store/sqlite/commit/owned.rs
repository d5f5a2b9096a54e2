//! The writer: borrowed operations run on their caller's thread, owned ones on a writer thread
//! that runs every queued operation back to back in one batch.
//!
//! A borrowed operation (a closure over its caller's data) can only run on its caller's thread,
//! which takes the writer, joins or opens a batch and waits for its commit: a mutex hand-off and
//! a wake-up per operation. An operation that owns what it needs (`Send + 'static`, as every
//! hot write can) is queued instead, and one writer thread takes everything queued, runs it in
//! one batch, commits and hands each caller its result: as a plain group-commit loop does,
//! nothing stands between two members of a batch. The queued operations share one savepoint,
//! not one each: when one fails, the others are rolled back to it and run again without it. A lone caller
//! that finds the writer idle and nothing queued runs its operation itself, as a borrowed one,
//! and pays no hand-off.
//!
//! Invariants, the frame's ([`super`]): a caller gets its result only once its batch ended, an
//! operation that failed or panicked is undone alone (its panic resumes on its caller's thread),
//! and both kinds of operation take turns on one connection.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock, PoisonError, TryLockError};

use rusqlite::{ffi, Connection};

use super::{control, open, settle, Bounds, CommitStats, Failure, Frame};
use crate::error::{Error, Result};

/// The writer connection of a store, shared by every thread and task that writes.
#[derive(Debug)]
pub(crate) struct Writer {
    frame: Arc<Frame>,
    /// Owned operations queued or running on the writer thread. Counted once sent, so it may
    /// dip below zero for a moment when the writer thread ends an operation before its caller
    /// counted it.
    queued: Arc<AtomicIsize>,
    /// The writer thread, started by the first operation queued.
    thread: OnceLock<Option<Thread>>,
}

#[derive(Debug)]
struct Thread {
    jobs: mpsc::Sender<Queued>,
    handle: std::thread::JoinHandle<()>,
}

impl Writer {
    pub(crate) fn new(conn: Connection, bounds: Bounds) -> Writer {
        Writer {
            frame: Arc::new(Frame::new(conn, bounds)),
            queued: Arc::new(AtomicIsize::new(0)),
            thread: OnceLock::new(),
        }
    }

    /// Runs the borrowed `op` on this thread inside a batch, returning once its writes are
    /// durable (or, when it failed, once they are rolled back).
    pub(crate) fn run<T>(&self, op: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.frame.run(op)
    }

    /// Runs the owned `op` inside a batch, on the writer thread unless the writer is idle, and
    /// returns as [`Writer::run`] does. `op` may run more than once before its batch commits
    /// (again, after another member failed), so it must do nothing outside the transaction.
    pub(crate) fn run_owned<T, F>(&self, mut op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T> + Send + 'static,
    {
        if self.queued.load(Ordering::SeqCst) == 0 {
            let idle = match self.frame.state.try_lock() {
                Ok(state) => Some(state),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(state) = idle {
                return self.frame.run_locked(state, |conn| op(conn));
            }
        }
        let pending = Arc::new(Pending {
            work: Mutex::new((op, None)),
            reply: Mutex::new(None),
            answered: Condvar::new(),
        });
        let job = Queued(Some(pending.clone()));
        let unsent = match self.thread() {
            Some(thread) => thread.jobs.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        match unsent {
            None => {
                self.queued.fetch_add(1, Ordering::SeqCst);
            }
            // No writer thread (none could be started): the batch runs here.
            Some(job) => {
                self.frame.run_jobs(job, std::iter::empty());
            }
        }
        settle(pending.wait())
    }

    /// The writer thread, started on first use; `None` when none could be started.
    fn thread(&self) -> Option<&Thread> {
        self.thread
            .get_or_init(|| {
                let (jobs, queue) = mpsc::channel::<Queued>();
                let frame = self.frame.clone();
                let queued = self.queued.clone();
                let most = frame.bounds.operations.max(1);
                let handle = std::thread::Builder::new()
                    .name("seed-agents-writer".into())
                    .spawn(move || {
                        while let Ok(first) = queue.recv() {
                            let n = frame.run_jobs(first, queue.try_iter().take(most - 1));
                            queued.fetch_sub(n as isize, Ordering::SeqCst);
                        }
                    })
                    .ok()?;
                Some(Thread { jobs, handle })
            })
            .as_ref()
    }

    /// What has been committed so far.
    pub(crate) fn stats(&self) -> CommitStats {
        self.frame.stats()
    }

    /// Runs `f` on the writer between batches (a pragma that may not run in a transaction).
    pub(crate) fn between_batches<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        self.frame.between_batches(f)
    }

    /// The writer's `PRAGMA data_version`, without waiting for it (see
    /// [`Frame::data_version`](super::Frame::data_version)).
    pub(crate) fn data_version(&self) -> rusqlite::Result<Option<i64>> {
        self.frame.data_version()
    }

    /// Operations waiting for the writer, for tests that hold one until all arrived.
    #[cfg(test)]
    pub(crate) fn arriving(&self) -> usize {
        self.frame.arriving.load(Ordering::SeqCst)
    }

    /// Owned operations sent to the writer thread and not yet ended, for tests that hold the
    /// writer until all arrived.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> isize {
        self.queued.load(Ordering::SeqCst)
    }

    /// The writer connection itself, between batches, for tests that write raw rows.
    #[cfg(test)]
    pub(crate) fn raw(&self) -> super::Raw<'_> {
        super::Raw(self.frame.between())
    }
}

impl Drop for Writer {
    /// Stops the writer thread once it has run what is queued (nothing is, with no handle left
    /// to queue it), so that the connection closes with the store.
    fn drop(&mut self) {
        if let Some(Some(Thread { jobs, handle })) = self.thread.take() {
            drop(jobs);
            // An operation that held the last handle is dropped on the writer thread itself.
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

/// The error a caller gets when the writer thread ended without answering it.
fn stopped() -> Error {
    stopped_error().into()
}

fn stopped_error() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_ABORT),
        Some("the writer thread stopped before the operation's batch ended".into()),
    )
}

/// A queued operation and the way back to its caller.
trait Job: Send + Sync {
    /// Runs the operation, catching a panic; whether it succeeded. It runs again when another
    /// member of its batch failed after it (see [`run_group`]).
    fn run(&self, conn: &Connection) -> bool;
    /// The operation failed after all: its savepoint could not be opened or released, or its
    /// lone batch not rolled back.
    fn fail(&self, error: Error);
    /// Hands the caller its outcome once the batch ended: the commit's failure instead of a
    /// value when the commit failed.
    fn end(&self, failure: Option<&Failure>);
}

/// An owned operation, shared by its caller and the writer thread: one allocation per
/// operation, where a boxed job and a reply channel took three.
struct Pending<T, F> {
    /// The operation and its latest outcome: the writer's alone, so never contended.
    work: Mutex<(F, Option<Outcome<T>>)>,
    /// The outcome handed to the caller once the batch ended.
    reply: Mutex<Option<Outcome<T>>>,
    answered: Condvar,
}

type Outcome<T> = std::thread::Result<Result<T>>;

impl<T, F> Pending<T, F> {
    /// Waits for the outcome [`Job::end`] hands over.
    fn wait(&self) -> Outcome<T> {
        let mut reply = self.reply.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(outcome) = reply.take() {
                return outcome;
            }
            reply = self
                .answered
                .wait(reply)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn answer(&self, outcome: Outcome<T>) {
        *self.reply.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.answered.notify_one();
    }
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> Result<T> + Send,
{
    fn run(&self, conn: &Connection) -> bool {
        let mut work = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        let (op, outcome) = &mut *work;
        let ran = panic::catch_unwind(AssertUnwindSafe(|| op(conn)));
        let ok = matches!(ran, Ok(Ok(_)));
        *outcome = Some(ran);
        ok
    }

    fn fail(&self, error: Error) {
        self.work.lock().unwrap_or_else(PoisonError::into_inner).1 = Some(Ok(Err(error)));
    }

    fn end(&self, failure: Option<&Failure>) {
        let outcome = self
            .work
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .take();
        self.answer(match (outcome, failure) {
            (Some(Ok(Ok(_))) | None, Some(failure)) => Ok(Err(failure.error())),
            (Some(outcome), _) => outcome,
            (None, None) => Ok(Err(stopped())),
        });
    }
}

/// A job on its way through the writer. Ended exactly once: by the batch, or, when the writer
/// thread drops it unanswered (it unwound), with [`stopped`], so no caller waits forever.
struct Queued(Option<Arc<dyn Job>>);

impl Queued {
    fn run(&self, conn: &Connection) -> bool {
        self.0.as_ref().is_some_and(|job| job.run(conn))
    }

    fn fail(&self, error: Error) {
        if let Some(job) = &self.0 {
            job.fail(error);
        }
    }

    fn end(mut self, failure: Option<&Failure>) {
        if let Some(job) = self.0.take() {
            job.end(failure);
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if let Some(job) = self.0.take() {
            job.end(Some(&Failure::new(0, 0, &stopped_error())));
        }
    }
}

impl Frame {
    /// Runs `first` and the operations queued behind it, taken once the writer is held so that
    /// all that arrived meanwhile join, in one batch (joining one left open for an arriving
    /// borrowed operation), each in its own savepoint unless it is alone; ends each once the
    /// batch ended. Returns how many it ran.
    fn run_jobs(&self, first: Queued, queued: impl Iterator<Item = Queued>) -> usize {
        let mut state = self.arrive();
        let mut jobs: Vec<Queued> = std::iter::once(first).chain(queued).collect();
        let n = jobs.len();
        let joined = state.open.is_some();
        if !joined {
            if let Err(e) = open(&mut state) {
                drop(state);
                let failure = Failure::new(0, 0, &e);
                jobs.into_iter().for_each(|job| job.end(Some(&failure)));
                return n;
            }
        }
        let alone = !joined && jobs.len() == 1;
        let (succeeded, clean) = if alone {
            (usize::from(jobs[0].run(&state.conn)), true)
        } else if joined {
            run_group(&state.conn, &mut jobs)
        } else {
            match run_own_batch(&state.conn, &mut jobs) {
                Some(succeeded) => (succeeded, true),
                None => {
                    // The transaction could not be started again: the batch is over.
                    self.end(&mut state, None);
                    drop(state);
                    jobs.into_iter().for_each(|job| job.end(None));
                    return n;
                }
            }
        };
        if alone && succeeded == 0 {
            // Nobody joins while the writer is held: the whole batch is this operation's.
            let rolled_back = control(&state.conn, "ROLLBACK");
            self.end(&mut state, None);
            drop(state);
            if let Err(e) = rolled_back {
                jobs[0].fail(e.into());
            }
            jobs.into_iter().for_each(|job| job.end(None));
            return n;
        }
        let batch = state.open.as_mut().expect("a batch is open");
        let id = batch.id;
        batch.members += succeeded;
        let failure = if !clean || self.due(batch) {
            let waiting = batch.members - succeeded;
            let committed = self.close(&mut state, waiting, clean);
            drop(state);
            committed.err().map(|e| Failure::new(id, 0, &e))
        } else {
            drop(state);
            self.outcome_of(id, succeeded)
        };
        for job in jobs {
            job.end(failure.as_ref());
        }
        n
    }
}

/// The members of a batch that have not failed, run pass after pass: when one fails (or
/// panics), what the pass wrote is undone and the others run again without it. Each pass drops
/// at least one member, so there are at most as many passes as members.
struct Passes {
    failed: Vec<bool>,
}

impl Passes {
    fn new(jobs: &[Queued]) -> Passes {
        Passes {
            failed: vec![false; jobs.len()],
        }
    }

    /// Runs every member still in; whether one failed.
    fn run(&mut self, conn: &Connection, jobs: &mut [Queued]) -> bool {
        let mut one_failed = false;
        for (job, failed) in jobs.iter_mut().zip(self.failed.iter_mut()) {
            if !*failed && !job.run(conn) {
                *failed = true;
                one_failed = true;
            }
        }
        one_failed
    }

    fn survivors(&self) -> usize {
        self.failed.iter().filter(|f| !**f).count()
    }

    /// Fails every member still in with `error` (the batch could not go on).
    fn fail_survivors(&self, jobs: &mut [Queued], error: &rusqlite::Error) {
        let failure = Failure::new(0, 0, error);
        for (job, _) in jobs.iter_mut().zip(&self.failed).filter(|(_, f)| !**f) {
            job.fail(failure.error());
        }
    }
}

/// Runs `jobs` as the whole of the batch they opened, with no savepoint at all (a savepoint
/// copies every page its members touch into its journal): after a pass with a failure the
/// transaction is rolled back and begun again. Returns how many succeeded, or `None` when the
/// transaction could not be begun again (every member left then failed with that error, and no
/// transaction is open).
fn run_own_batch(conn: &Connection, jobs: &mut [Queued]) -> Option<usize> {
    let mut passes = Passes::new(jobs);
    while passes.run(conn, jobs) {
        if let Err(e) = control(conn, "ROLLBACK").and_then(|()| control(conn, "BEGIN IMMEDIATE")) {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            passes.fail_survivors(jobs, &e);
            return None;
        }
        if passes.survivors() == 0 {
            break;
        }
    }
    Some(passes.survivors())
}

/// Runs `jobs` in a batch another operation opened, in one savepoint for all of them rather than
/// one each: after a pass with a failure the group goes back to the savepoint. A batch without
/// failures pays two statements, not two per member. Returns how many succeeded, and `false`
/// when a failure could not be undone (the whole batch must be).
fn run_group(conn: &Connection, jobs: &mut [Queued]) -> (usize, bool) {
    let mut passes = Passes::new(jobs);
    loop {
        if let Err(e) = control(conn, "SAVEPOINT jobs") {
            passes.fail_survivors(jobs, &e);
            return (0, true);
        }
        if !passes.run(conn, jobs) {
            return match control(conn, "RELEASE jobs") {
                Ok(()) => (passes.survivors(), true),
                Err(e) => {
                    let undone = conn.execute_batch("ROLLBACK TO jobs; RELEASE jobs").is_ok();
                    passes.fail_survivors(jobs, &e);
                    (0, undone)
                }
            };
        }
        if conn
            .execute_batch("ROLLBACK TO jobs; RELEASE jobs")
            .is_err()
        {
            // The failed member's writes cannot be undone alone: the batch is rolled back.
            return (passes.survivors(), false);
        }
        if passes.survivors() == 0 {
            return (0, true);
        }
    }
}
