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
//! An operation that owns what it needs can instead be queued for the writer thread, which runs
//! everything queued back to back in one batch ([`owned`]).
//!
//! Invariants: an operation's writes are committed exactly when it returned `Ok` and its batch's
//! `COMMIT` succeeded, and its caller learns which before returning. No batch is left open
//! without an operation still to come that will close it. A lone operation costs what it did
//! before group commit: `BEGIN IMMEDIATE`, the operation, `COMMIT`, no savepoint.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{ffi, Connection};

use crate::error::{Error, Result};

mod owned;

pub(crate) use owned::Writer;

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

/// The writer connection and the batch open on it: the frame both kinds of operation run in,
/// a borrowed one on its caller's thread, owned ones on the writer thread ([`owned`]).
#[derive(Debug)]
pub(crate) struct Frame {
    state: Mutex<State>,
    /// Which batches have ended, under a lock of its own: members waiting for their batch's
    /// commit wake and leave without contending for the writer with the operations arriving.
    done: Mutex<Done>,
    /// Signalled whenever a batch ends (committed, failed or rolled back).
    ended: Condvar,
    /// Operations that asked for the writer and have not got it yet: while there are any, the
    /// holder leaves the batch open for them.
    arriving: AtomicUsize,
    bounds: Bounds,
    batches: AtomicU64,
    operations: AtomicU64,
    /// The writer connection's `PRAGMA data_version` as last read ([`Frame::data_version`]),
    /// `NO_VERSION` before the first read.
    version: AtomicI64,
    /// Asked for by a look that found a batch open: the batch's closer reads the version after
    /// its commit, so the look never waits for the writer.
    version_wanted: AtomicBool,
}

/// [`Frame::version`] before anything read it.
const NO_VERSION: i64 = i64::MIN;

#[derive(Debug)]
struct State {
    conn: Connection,
    open: Option<Batch>,
    /// The id the next batch takes.
    next_id: u64,
}

#[derive(Debug, Default)]
struct Done {
    /// The id of the last batch that ended (ids grow, so every batch up to it ended).
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
#[derive(Debug, Clone)]
struct Failure {
    batch: u64,
    waiting: usize,
    code: ffi::Error,
    message: Option<String>,
}

impl Failure {
    /// `error`, the failure of batch `batch`, for `waiting` members to take.
    fn new(batch: u64, waiting: usize, error: &rusqlite::Error) -> Failure {
        let (code, message) = match error {
            rusqlite::Error::SqliteFailure(code, message) => (*code, message.clone()),
            other => (ffi::Error::new(ffi::SQLITE_ERROR), Some(other.to_string())),
        };
        Failure {
            batch,
            waiting,
            code,
            message,
        }
    }

    fn error(&self) -> Error {
        rusqlite::Error::SqliteFailure(self.code, self.message.clone()).into()
    }
}

impl Frame {
    fn new(conn: Connection, bounds: Bounds) -> Frame {
        Frame {
            state: Mutex::new(State {
                conn,
                open: None,
                next_id: 1,
            }),
            done: Mutex::new(Done::default()),
            ended: Condvar::new(),
            arriving: AtomicUsize::new(0),
            bounds,
            batches: AtomicU64::new(0),
            operations: AtomicU64::new(0),
            version: AtomicI64::new(NO_VERSION),
            version_wanted: AtomicBool::new(false),
        }
    }

    /// Runs `op` on the writer inside a batch, returning once its writes are durable (or, when
    /// it failed, once they are rolled back).
    fn run<T>(&self, op: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let state = self.arrive();
        self.run_locked(state, op)
    }

    /// The writer, asked for as an operation arriving: while it waits, the holder leaves its
    /// batch open for it.
    fn arrive(&self) -> MutexGuard<'_, State> {
        self.arriving.fetch_add(1, Ordering::SeqCst);
        let state = self.lock();
        self.arriving.fetch_sub(1, Ordering::SeqCst);
        state
    }

    /// [`Frame::run`] with the writer already held.
    fn run_locked<T>(
        &self,
        mut state: MutexGuard<'_, State>,
        op: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let joined = state.open.is_some();
        if !joined {
            open(&mut state)?;
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
            self.end(&mut state, None);
            drop(state);
            rolled_back?;
            return settle(outcome);
        }
        let batch = state.open.as_mut().expect("a batch is open");
        let id = batch.id;
        if succeeded {
            batch.members += 1;
        }
        if !clean || self.due(batch) {
            let waiting = batch.members - usize::from(succeeded);
            let committed = self.close(&mut state, waiting, clean);
            drop(state);
            if succeeded {
                committed?;
            }
            return settle(outcome);
        }
        drop(state);
        if !succeeded {
            return settle(outcome);
        }
        match self.outcome_of(id, 1) {
            Some(failure) => Err(failure.error()),
            None => settle(outcome),
        }
    }

    /// Whether the open batch is to be committed now: nobody is waiting to join it, or it
    /// reached its bounds.
    fn due(&self, batch: &Batch) -> bool {
        self.arriving.load(Ordering::SeqCst) == 0
            || batch.members >= self.bounds.operations
            || batch.opened.elapsed() >= self.bounds.age
    }

    /// Waits until the batch `id` has ended, for `members` of its operations; the failure of
    /// its commit, if it failed.
    fn outcome_of(&self, id: u64, members: usize) -> Option<Failure> {
        let mut done = self.wait_for(id);
        let i = done.failed.iter().position(|f| f.batch == id)?;
        let failure = done.failed[i].clone();
        done.failed[i].waiting -= members;
        if done.failed[i].waiting == 0 {
            done.failed.swap_remove(i);
        }
        Some(failure)
    }

    /// Waits until the batch `id` has ended.
    fn wait_for(&self, id: u64) -> MutexGuard<'_, Done> {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        while done.last_ended < id {
            done = self
                .ended
                .wait(done)
                .unwrap_or_else(PoisonError::into_inner);
        }
        done
    }

    /// The writer, locked between batches.
    fn between(&self) -> MutexGuard<'_, State> {
        loop {
            let state = self.lock();
            let Some(id) = state.open.as_ref().map(|b| b.id) else {
                return state;
            };
            drop(state);
            drop(self.wait_for(id));
        }
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
        f(&self.between().conn)
    }

    /// The writer connection's `PRAGMA data_version`, which moves only when another connection
    /// commits, without ever waiting for the writer: read now when no batch is open; otherwise
    /// the last one read, and the open batch's closer reads it anew after its commit. `None`
    /// until a first read.
    pub(crate) fn data_version(&self) -> rusqlite::Result<Option<i64>> {
        let state = match self.state.try_lock() {
            Ok(state) => Some(state),
            Err(std::sync::TryLockError::Poisoned(state)) => Some(state.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        match state {
            Some(state) if state.open.is_none() => {
                let version = read_version(&state.conn)?;
                self.version.store(version, Ordering::SeqCst);
                Ok(Some(version))
            }
            _ => {
                self.version_wanted.store(true, Ordering::SeqCst);
                let version = self.version.load(Ordering::SeqCst);
                Ok((version != NO_VERSION).then_some(version))
            }
        }
    }

    /// Commits the open batch, or rolls it back when a failed operation could not be undone
    /// alone (`!clean`); on failure keeps the error for the `waiting` members.
    fn close(&self, state: &mut State, waiting: usize, clean: bool) -> rusqlite::Result<()> {
        let committed = if clean {
            control(&state.conn, "COMMIT")
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
        if committed.is_ok() && self.version_wanted.swap(false, Ordering::SeqCst) {
            // A failed read leaves the last version, and the next look asks again.
            if let Ok(version) = read_version(&state.conn) {
                self.version.store(version, Ordering::SeqCst);
            }
        }
        if committed.is_ok() {
            let members = state.open.as_ref().map_or(0, |b| b.members);
            self.batches.fetch_add(1, Ordering::Relaxed);
            self.operations.fetch_add(members as u64, Ordering::Relaxed);
        }
        let mut failure = None;
        if let Err(e) = &committed {
            // A failed COMMIT can leave the transaction open (SQLite rolls back only for some
            // errors); end it so that the next batch starts clean.
            if !state.conn.is_autocommit() {
                let _ = state.conn.execute_batch("ROLLBACK");
            }
            if waiting > 0 {
                let batch = state.open.as_ref().map_or(0, |b| b.id);
                failure = Some(Failure::new(batch, waiting, e));
            }
        }
        self.end(state, failure);
        committed
    }

    /// Ends the open batch and wakes its members (with `failure` for them to take, if any).
    fn end(&self, state: &mut State, failure: Option<Failure>) {
        let Some(batch) = state.open.take() else {
            return;
        };
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        done.last_ended = batch.id;
        done.failed.extend(failure);
        drop(done);
        self.ended.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Operations run under catch_unwind, so a poisoned lock still guards a consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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
    if let Err(e) = control(conn, "SAVEPOINT op") {
        return (Ok(Err(e.into())), true);
    }
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| op(conn)));
    if matches!(outcome, Ok(Ok(_))) {
        match control(conn, "RELEASE op") {
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

/// Opens a batch: `BEGIN IMMEDIATE`, the write lock taken first.
fn open(state: &mut State) -> rusqlite::Result<()> {
    control(&state.conn, "BEGIN IMMEDIATE")?;
    let id = state.next_id;
    state.next_id += 1;
    state.open = Some(Batch {
        id,
        members: 0,
        opened: Instant::now(),
    });
    Ok(())
}

/// Runs one transaction-control statement of the hot path, prepared once per connection.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// `PRAGMA data_version` of `conn`: it moves when another connection commits.
pub(crate) fn read_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))
}

/// The operation's own result, its panic resumed on the caller's thread.
fn settle<T>(outcome: std::thread::Result<Result<T>>) -> Result<T> {
    outcome.unwrap_or_else(|panic| panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests;
