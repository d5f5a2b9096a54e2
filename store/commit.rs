//! Group commit: the one writer connection, shared by every thread and task that writes.
//!
//! A write operation locks the writer and runs on it inside a transaction. The first operation
//! of a batch opens the transaction (`BEGIN IMMEDIATE`); an operation that finds a batch open
//! joins it inside its own savepoint, so one that fails is rolled back alone and the others keep
//! what they wrote. After its operation, whoever holds the writer commits the batch when no
//! other operation is waiting to join, or when the batch reached its bound (count or age);
//! otherwise it leaves the transaction open for the next one and waits. One `COMMIT`, so one
//! fsync, makes the whole batch durable, and every member returns only after that.
//!
//! Invariants: an operation's writes are committed exactly when it returned `Ok` and its batch's
//! `COMMIT` succeeded, and its caller learns which before returning. No batch is left open
//! without an operation still to come that will close it. A lone operation costs what it did
//! before group commit: `BEGIN IMMEDIATE`, the operation, `COMMIT`, no savepoint.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{ffi, Connection};

use crate::error::{Error, Result};

/// How large a batch may grow before it is committed, whoever is still waiting to join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The most operations one batch holds; 1 turns group commit off.
    pub(crate) operations: usize,
    /// The longest a batch stays open for more operations to join.
    pub(crate) age: Duration,
}

/// What the writer has committed since the store was opened: with [`Store::commit_stats`], the
/// average batch (`operations / batches`) shows how much group commit saves (one fsync per
/// batch).
///
/// [`Store::commit_stats`]: crate::Store::commit_stats
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitStats {
    /// Batches committed, each one transaction and one fsync.
    pub batches: u64,
    /// Operations whose writes those batches committed.
    pub operations: u64,
}

/// The writer connection and the batch open on it.
#[derive(Debug)]
pub(crate) struct Writer {
    state: Mutex<State>,
    /// Signalled whenever a batch ends (committed, failed or rolled back).
    ended: Condvar,
    /// Operations that asked for the writer and have not got it yet: while there are any, the
    /// holder leaves the batch open for them.
    arriving: AtomicUsize,
    bounds: Bounds,
    batches: AtomicU64,
    operations: AtomicU64,
}

#[derive(Debug)]
struct State {
    conn: Connection,
    open: Option<Batch>,
    /// The id of the last batch that ended.
    last_ended: u64,
    /// Batches whose `COMMIT` failed, until every member has taken the failure.
    failed: Vec<Failure>,
}

#[derive(Debug)]
struct Batch {
    id: u64,
    /// Operations whose writes wait for this batch's commit.
    members: usize,
    opened: Instant,
}

/// A failed commit, kept for the members that wait on it (a `rusqlite::Error` is not `Clone`).
#[derive(Debug)]
struct Failure {
    batch: u64,
    waiting: usize,
    code: ffi::Error,
    message: Option<String>,
}

impl Failure {
    fn error(&self) -> Error {
        rusqlite::Error::SqliteFailure(self.code, self.message.clone()).into()
    }
}

impl Writer {
    pub(crate) fn new(conn: Connection, bounds: Bounds) -> Writer {
        Writer {
            state: Mutex::new(State {
                conn,
                open: None,
                last_ended: 0,
                failed: Vec::new(),
            }),
            ended: Condvar::new(),
            arriving: AtomicUsize::new(0),
            bounds,
            batches: AtomicU64::new(0),
            operations: AtomicU64::new(0),
        }
    }

    /// Runs `op` on the writer inside a batch, returning once its writes are durable (or, when
    /// it failed, once they are rolled back).
    pub(crate) fn run<T>(&self, op: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.arriving.fetch_add(1, Ordering::SeqCst);
        let mut state = self.lock();
        self.arriving.fetch_sub(1, Ordering::SeqCst);
        let joined = state.open.is_some();
        if !joined {
            state.conn.execute_batch("BEGIN IMMEDIATE")?;
            let id = state.last_ended + 1;
            state.open = Some(Batch {
                id,
                members: 0,
                opened: Instant::now(),
            });
        }
        let (outcome, clean) = if joined {
            in_savepoint(&state.conn, op)
        } else {
            (
                panic::catch_unwind(AssertUnwindSafe(|| op(&state.conn))),
                true,
            )
        };
        let succeeded = matches!(outcome, Ok(Ok(_)));
        if !joined && !succeeded {
            // Alone in its batch (nobody joins while the writer is held): roll it all back.
            let rolled_back = state.conn.execute_batch("ROLLBACK");
            self.end(&mut state);
            drop(state);
            rolled_back?;
            return settle(outcome);
        }
        let batch = state.open.as_mut().expect("a batch is open");
        let id = batch.id;
        if succeeded {
            batch.members += 1;
        }
        if !clean
            || self.arriving.load(Ordering::SeqCst) == 0
            || batch.members >= self.bounds.operations
            || batch.opened.elapsed() >= self.bounds.age
        {
            let waiting = batch.members - usize::from(succeeded);
            let committed = self.close(&mut state, waiting, clean);
            drop(state);
            if succeeded {
                committed?;
            }
            return settle(outcome);
        }
        if !succeeded {
            return settle(outcome);
        }
        while state.last_ended < id {
            state = self
                .ended
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(i) = state.failed.iter().position(|f| f.batch == id) {
            let error = state.failed[i].error();
            state.failed[i].waiting -= 1;
            if state.failed[i].waiting == 0 {
                state.failed.swap_remove(i);
            }
            return Err(error);
        }
        settle(outcome)
    }

    /// What has been committed so far.
    pub(crate) fn stats(&self) -> CommitStats {
        CommitStats {
            batches: self.batches.load(Ordering::Relaxed),
            operations: self.operations.load(Ordering::Relaxed),
        }
    }

    /// Runs `f` on the writer between batches (a pragma that may not run in a transaction).
    pub(crate) fn between_batches<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        let mut state = self.lock();
        while state.open.is_some() {
            state = self
                .ended
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        f(&state.conn)
    }

    /// Commits the open batch, or rolls it back when a failed operation could not be undone
    /// alone (`!clean`); on failure keeps the error for the `waiting` members.
    fn close(&self, state: &mut State, waiting: usize, clean: bool) -> rusqlite::Result<()> {
        let committed = if clean {
            state.conn.execute_batch("COMMIT")
        } else {
            state
                .conn
                .execute_batch("ROLLBACK")
                .and(Err(rusqlite::Error::SqliteFailure(
                    ffi::Error::new(ffi::SQLITE_ABORT),
                    Some(
                        "the batch was rolled back: an operation in it could not be undone alone"
                            .into(),
                    ),
                )))
        };
        if committed.is_ok() {
            let members = state.open.as_ref().map_or(0, |b| b.members);
            self.batches.fetch_add(1, Ordering::Relaxed);
            self.operations.fetch_add(members as u64, Ordering::Relaxed);
        }
        if let Err(e) = &committed {
            // A failed COMMIT can leave the transaction open (SQLite rolls back only for some
            // errors); end it so that the next batch starts clean.
            if !state.conn.is_autocommit() {
                let _ = state.conn.execute_batch("ROLLBACK");
            }
            if waiting > 0 {
                let (code, message) = match e {
                    rusqlite::Error::SqliteFailure(code, message) => (*code, message.clone()),
                    other => (ffi::Error::new(ffi::SQLITE_ERROR), Some(other.to_string())),
                };
                state.failed.push(Failure {
                    batch: state.open.as_ref().map_or(0, |b| b.id),
                    waiting,
                    code,
                    message,
                });
            }
        }
        self.end(state);
        committed
    }

    fn end(&self, state: &mut State) {
        if let Some(batch) = state.open.take() {
            state.last_ended = batch.id;
        }
        self.ended.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Operations run under catch_unwind, so a poisoned lock still guards a consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer connection itself, between batches, for tests that write raw rows.
    #[cfg(test)]
    pub(crate) fn raw(&self) -> Raw<'_> {
        let mut state = self.lock();
        while state.open.is_some() {
            state = self
                .ended
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Raw(state)
    }
}

/// The writer connection, held (see [`Writer::raw`]).
#[cfg(test)]
pub(crate) struct Raw<'a>(MutexGuard<'a, State>);

#[cfg(test)]
impl std::ops::Deref for Raw<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.0.conn
    }
}

/// Runs `op` inside a savepoint, rolled back when it fails or panics. `false` when a failed
/// operation's writes could not be rolled back alone, so the whole batch must be.
fn in_savepoint<T>(
    conn: &Connection,
    op: impl FnOnce(&Connection) -> Result<T>,
) -> (std::thread::Result<Result<T>>, bool) {
    if let Err(e) = conn.execute_batch("SAVEPOINT op") {
        return (Ok(Err(e.into())), true);
    }
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| op(conn)));
    if matches!(outcome, Ok(Ok(_))) {
        match conn.execute_batch("RELEASE op") {
            Ok(()) => return (outcome, true),
            Err(e) => {
                let undone = conn.execute_batch("ROLLBACK TO op; RELEASE op").is_ok();
                return (Ok(Err(e.into())), undone);
            }
        }
    }
    let undone = conn.execute_batch("ROLLBACK TO op; RELEASE op").is_ok();
    (outcome, undone)
}

/// The operation's own result, its panic resumed on the caller's thread.
fn settle<T>(outcome: std::thread::Result<Result<T>>) -> Result<T> {
    outcome.unwrap_or_else(|panic| panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests;
