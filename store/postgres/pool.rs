//! The pool of PostgreSQL connections a store keeps, and the write frame on it: one
//! transaction per write at the [`Isolation`] the operation asks for.
//!
//! Invariants: no write takes a store-wide lock. `SERIALIZABLE` writes rely on PostgreSQL to
//! keep every invariant that running writes one at a time keeps, and one it cannot serialize
//! is rolled back and run again; `READ COMMITTED` writes lock the rows their invariants depend
//! on. A connection that failed is closed, never returned to the pool; a lease dropped inside
//! a transaction rolls it back first.

use super::client::{Bounds, Client};
use super::session::{Conflict, Session};
use crate::db::Isolation;
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How many times a write that met a unique key runs again (see [`Conflict::Unique`]): enough
/// for every node of a cluster to have inserted before it once, few enough that a key that was
/// simply taken fails within about half a second.
const UNIQUE_RETRIES: u32 = 16;

/// The store's PostgreSQL connections: up to a bound, opened as needed, reused.
pub(crate) struct Pool {
    writes: AtomicU64,
    /// Whether commits wait for the server's disk (`synchronous_commit`), as
    /// `Store::set_durability` chose.
    synchronous: std::sync::atomic::AtomicBool,
    url: String,
    name: Arc<str>,
    bounds: Bounds,
    idle: Mutex<(Vec<Session>, usize)>,
    freed: Condvar,
    max: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("database", &self.name)
            .field("max", &self.max)
            .finish()
    }
}

impl Pool {
    /// A pool of at most `max` connections to `url` (whose redacted form is `name`), each
    /// session bounded by `bounds`.
    pub(crate) fn new(url: &str, name: &str, max: usize, bounds: Bounds) -> Pool {
        Pool {
            writes: AtomicU64::new(0),
            synchronous: std::sync::atomic::AtomicBool::new(true),
            url: url.to_string(),
            name: Arc::from(name),
            bounds,
            idle: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
            max: max.max(1),
        }
    }

    /// Makes every connection's commits wait for the disk (`true`, the default) or not.
    pub(crate) fn set_synchronous_commit(&self, on: bool) {
        self.synchronous.store(on, Ordering::Relaxed);
    }

    /// A connection, waiting while `max` are in use, its `synchronous_commit` as chosen.
    pub(crate) fn get(&self) -> Result<Lease<'_>> {
        let lease = self.take()?;
        let wanted = self.synchronous.load(Ordering::Relaxed);
        let session = lease.session();
        if session.synchronous.get() != wanted {
            session.batch(if wanted {
                "SET synchronous_commit = on"
            } else {
                "SET synchronous_commit = off"
            })?;
            session.synchronous.set(wanted);
        }
        Ok(lease)
    }

    fn take(&self) -> Result<Lease<'_>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(session) = idle.0.pop() {
                return Ok(Lease {
                    pool: self,
                    session: Some(session),
                    open: None,
                });
            }
            if idle.1 < self.max {
                idle.1 += 1;
                drop(idle);
                return match Client::connect_bounded(&self.url, self.bounds) {
                    Ok(client) => Ok(Lease {
                        pool: self,
                        session: Some(Session {
                            client: RefCell::new(client),
                            in_transaction: std::cell::Cell::new(false),
                            synchronous: std::cell::Cell::new(true),
                            statements: RefCell::new(HashMap::new()),
                            conflicted: std::cell::Cell::new(None),
                            name: self.name.clone(),
                        }),
                        open: None,
                    }),
                    Err(source) => {
                        self.release(None);
                        Err(Error::Postgres {
                            database: self.name.to_string(),
                            source,
                        })
                    }
                };
            }
            idle = self.freed.wait(idle).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn release(&self, session: Option<Session>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        match session {
            Some(s) if !s.client.borrow().is_closed() => idle.0.push(s),
            _ => idle.1 -= 1,
        }
        self.freed.notify_one();
    }

    /// Runs `op` in one write transaction at `isolation`, committing when it returns `Ok` and
    /// rolling back otherwise. A transaction PostgreSQL could not serialize (or that deadlocked)
    /// is rolled back and `op` runs again, after a short random pause, until it commits or the
    /// lock bound (`OpenOptions::busy_timeout`) has passed; then its error, of kind `Busy`,
    /// is returned. One that met a unique key runs again a few times (see
    /// [`Conflict::Unique`]).
    pub(crate) fn write<T>(
        &self,
        isolation: Isolation,
        mut op: impl FnMut(&Session) -> Result<T>,
    ) -> Result<T> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(500);
        let mut unique_retries = 0;
        loop {
            let mut lease = self.get()?;
            lease.session().conflicted.set(None);
            lease.begin(match isolation {
                Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
                // The hot writes' statements are lookups by key: one generic plan each, kept
                // by the connection, instead of a plan per call (the claim's took longer to
                // plan than to run). Sent with the BEGIN, so it costs no round trip.
                Isolation::RowLocks => {
                    "BEGIN ISOLATION LEVEL READ COMMITTED;                      SET LOCAL plan_cache_mode = force_generic_plan"
                }
            })?;
            let outcome = op(lease.session()).and_then(|value| lease.commit().map(|()| value));
            let error = match outcome {
                Ok(value) => {
                    self.writes.fetch_add(1, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(error) => error,
            };
            let again = match lease.session().conflicted.take() {
                Some(Conflict::Serialization) => started.elapsed() < self.bounds.lock,
                Some(Conflict::Unique) => {
                    unique_retries += 1;
                    unique_retries <= UNIQUE_RETRIES && started.elapsed() < self.bounds.lock
                }
                None => false,
            };
            drop(lease); // rolls back
            if !again {
                return Err(error);
            }
            // Random, so that the writes that conflicted do not meet again in step.
            use rand::Rng;
            std::thread::sleep(pause.mul_f64(rand::thread_rng().gen_range(0.5..1.5)));
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }

    /// Writes committed through this pool: each is its own commit (there is no group commit
    /// on PostgreSQL, whose server batches log flushes itself).
    pub(crate) fn stats(&self) -> crate::CommitStats {
        let n = self.writes.load(Ordering::Relaxed);
        crate::CommitStats {
            batches: n,
            operations: n,
        }
    }
}

/// A PostgreSQL connection out of the store's pool (see [`crate::Reading`]), returned when
/// dropped; a transaction it opened is rolled back first.
pub struct Lease<'a> {
    pool: &'a Pool,
    session: Option<Session>,
    /// The transaction this lease opened and has not ended.
    open: Option<()>,
}

impl Lease<'_> {
    /// The connection.
    pub(crate) fn session(&self) -> &Session {
        self.session.as_ref().expect("held until drop")
    }

    /// Opens a transaction (`BEGIN ...`) that dropping the lease rolls back, also when `sql`
    /// fails after its `BEGIN` (a lock wait that timed out): the connection goes back to the
    /// pool out of the aborted transaction, not in it.
    pub(crate) fn begin(&mut self, sql: &str) -> Result<()> {
        self.session().in_transaction.set(true);
        self.open = Some(());
        self.session().batch(sql)
    }

    /// Commits the transaction [`Lease::begin`] opened.
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.open = None;
        self.session().in_transaction.set(false);
        self.session().batch("COMMIT")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut session = self.session.take();
        if self.open.is_some() {
            if let Some(s) = &session {
                s.in_transaction.set(false);
                if s.batch("ROLLBACK").is_err() {
                    // A connection that cannot end its transaction is not reused.
                    session = None;
                }
            }
        }
        self.pool.release(session);
    }
}
