//! The pool of PostgreSQL connections a store keeps, and the write frame on it: one
//! transaction per write at the [`Isolation`] the operation asks for.
//!
//! Invariants: no write takes a store-wide lock. `SERIALIZABLE` writes rely on PostgreSQL to
//! keep every invariant that running writes one at a time keeps, and one it cannot serialize
//! is rolled back and run again; `READ COMMITTED` writes lock the rows their invariants depend
//! on. A connection that failed is closed, never returned to the pool; a lease dropped inside
//! a transaction rolls it back first.

use super::connections::{self, Bounds, Runtime};
use super::session::{Conflict, Session, Setting, Shared};
use crate::error::{Error, Result};
use crate::sql::db::Isolation;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How many times a write that met a unique key runs again (see [`Conflict::Unique`]): enough
/// for every node of a cluster to have inserted before it once, few enough that a key that was
/// simply taken fails within about half a second.
const UNIQUE_RETRIES: u32 = 16;

/// The store's PostgreSQL connections (a `deadpool-postgres` pool: up to a bound, opened as
/// needed, reused, recycled) and the write frame on them.
pub(crate) struct Pool {
    // Before `shared`, whose runtime the connections' tasks run on.
    connections: connections::Pool,
    shared: Arc<Shared>,
    writes: AtomicU64,
    /// Whether commits wait for the server's disk (`synchronous_commit`), as
    /// `Store::set_durability` chose.
    synchronous: AtomicBool,
    bounds: Bounds,
    /// Runs this store claimed that have neither a parent nor a session (by id and attempt):
    /// their finalize can be one statement. A hint only, bounded: the statement checks again.
    roots: std::sync::Mutex<std::collections::HashSet<(String, i64)>>,
    /// What every connection opens with.
    config: tokio_postgres::Config,
}

/// How many claimed root runs [`Pool::claimed_root`] remembers at most (a worker that never
/// finalizes what it claims does not grow the store without bound).
const ROOTS: usize = 4096;

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("database", &self.shared.name)
            .field("max", &self.connections.status().max_size)
            .finish()
    }
}

impl Pool {
    /// A pool of at most `max` connections to `url` (whose redacted form is `name`), each
    /// session bounded by `bounds`. Nothing connects yet.
    pub(crate) fn new(url: &str, name: &str, max: usize, bounds: Bounds) -> Result<Pool> {
        let runtime = Runtime::start(name)?;
        let config = connections::config(url, name, bounds)?;
        let connections = connections::pool(config.clone(), name, max, bounds)?;
        Ok(Pool {
            connections,
            shared: Arc::new(Shared::new(runtime, Arc::from(name))),
            writes: AtomicU64::new(0),
            synchronous: AtomicBool::new(true),
            bounds,
            roots: std::sync::Mutex::new(std::collections::HashSet::new()),
            config,
        })
    }

    /// The settings the store's connections open with (for its listening connection).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The database, its URL without a password, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// Makes every write's commit wait for the disk (`true`, the default) or not.
    pub(crate) fn set_synchronous_commit(&self, on: bool) {
        self.synchronous.store(on, Ordering::Relaxed);
    }

    /// A connection, waiting while `max` are in use (`Busy` after the busy timeout), its
    /// `synchronous_commit` as chosen.
    pub(crate) fn get(&self) -> Result<Lease<'_>> {
        self.lease(false)
    }

    /// [`Pool::get`], its statements planned once (`hot`) or as PostgreSQL decides.
    fn lease(&self, hot: bool) -> Result<Lease<'_>> {
        use deadpool::managed::PoolError;
        let object = self
            .shared
            .runtime
            .block(self.connections.get())
            .map_err(|e| match e {
                PoolError::Backend(source) => Error::Postgres {
                    database: self.shared.name.to_string(),
                    source,
                },
                PoolError::Timeout(_) => Error::Busy {
                    path: std::path::PathBuf::from(self.shared.name.to_string()),
                    detail: format!(
                        "no PostgreSQL connection came free within {:?}: all {} are in use",
                        self.bounds.lock,
                        self.connections.status().max_size
                    ),
                },
                other => Error::Io {
                    path: std::path::PathBuf::from(self.shared.name.to_string()),
                    source: std::io::Error::other(format!("the connection pool: {other}")),
                },
            })?;
        let session = Session::new(object, self.shared.clone());
        // The store's choices, on every connection it hands out (sent with its first statement).
        let synchronous = self.synchronous.load(Ordering::Relaxed);
        session.set(Setting::SynchronousCommit, synchronous);
        session.set(Setting::GenericPlans, hot);
        Ok(Lease {
            pool: std::marker::PhantomData,
            session: Some(session),
            open: false,
        })
    }

    /// Remembers that this store claimed `row`, when it has neither a parent nor a session.
    pub(crate) fn claimed_root(&self, row: &crate::schema::runs::Row) {
        if row.parent_run_id.is_some() || row.session_id.is_some() {
            return;
        }
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        if roots.len() >= ROOTS {
            roots.clear();
        }
        roots.insert((row.id.clone(), row.attempt));
    }

    /// Whether this store claimed the run `id` at `attempt` as a root run (forgetting it).
    pub(crate) fn take_root(&self, id: &str, attempt: i64) -> bool {
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        roots.remove(&(id.to_owned(), attempt))
    }

    /// Round trips so far: each time one of the store's sessions waited for the server.
    pub(crate) fn flights(&self) -> u64 {
        self.shared.flights.load(Ordering::Relaxed)
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
            // The hot writes' statements are lookups by key: generic plans.
            let mut lease = self.lease(isolation != Isolation::Serializable)?;
            lease.session().conflicted.set(None);
            let begin = match isolation {
                Isolation::Serializable => Some("BEGIN ISOLATION LEVEL SERIALIZABLE"),
                Isolation::RowLocks => Some("BEGIN ISOLATION LEVEL READ COMMITTED"),
                Isolation::Statement => None,
            };
            // Sent with the write's first statement, costing no round trip of its own.
            if let Some(begin) = begin {
                lease.begin(begin)?;
            }
            let outcome = op(lease.session()).and_then(|value| {
                if begin.is_some() {
                    lease.commit()?;
                }
                Ok(value)
            });
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
/// dropped; a transaction it opened is rolled back first, and a connection that cannot end it,
/// or that was closed, is dropped from the pool rather than returned.
pub struct Lease<'a> {
    /// Leased from the pool: a lease does not outlive it.
    pool: std::marker::PhantomData<&'a Pool>,
    session: Option<Session>,
    /// Whether this lease opened a transaction it has not ended.
    open: bool,
}

impl Lease<'_> {
    /// The connection.
    pub(crate) fn session(&self) -> &Session {
        self.session.as_ref().expect("held until drop")
    }

    /// Opens a transaction (`BEGIN ...`, sent with its first statement) that dropping the
    /// lease rolls back, also when a statement in it fails (a lock wait that timed out): the
    /// connection goes back to the pool out of the aborted transaction, not in it.
    pub(crate) fn begin(&mut self, sql: &str) -> Result<()> {
        self.open = true;
        self.session().begin(sql);
        Ok(())
    }

    /// Commits the transaction [`Lease::begin`] opened.
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.open = false;
        self.session().commit()
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        // What was never sent is dropped either way (a rollback drops it too), so the
        // connection's settings stay as the server has them.
        let ended = if self.open {
            session.rollback().is_ok()
        } else {
            session.drop_pending();
            true
        };
        if !ended || session.is_closed() {
            // Not reused: the pool opens another in its place.
            drop(connections::Object::take(session.client));
        }
    }
}
