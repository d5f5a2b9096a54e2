//! The read connections: a small pool that reads take a connection from and give it back to.
//!
//! Invariant: every pooled connection is `query_only`, so nothing handed out for reading can
//! write, and it goes back to the pool with no transaction open, so no borrower inherits an old
//! snapshot; reads never wait for the writer (WAL gives each its own snapshot), only for a free
//! connection, and that wait is bounded: past it a read fails with [`Error::Busy`] instead of
//! hanging.

use std::ops::Deref;

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Location, Result};

/// Opens one more read connection.
pub(crate) type Opener = Box<dyn Fn() -> Result<Connection> + Send + Sync>;

/// Read connections, opened as needed up to `size`.
pub(crate) struct Pool {
    idle: Mutex<Idle>,
    freed: Condvar,
    size: usize,
    wait: Duration,
    opener: Opener,
}

struct Idle {
    conns: Vec<Connection>,
    /// Connections that exist, idle or handed out.
    opened: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("size", &self.size)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool of at most `size` connections (at least one), starting with `first`.
    pub(crate) fn new(first: Connection, size: usize, wait: Duration, opener: Opener) -> Pool {
        Pool {
            idle: Mutex::new(Idle {
                conns: vec![first],
                opened: 1,
            }),
            freed: Condvar::new(),
            size: size.max(1),
            wait,
            opener,
        }
    }

    /// `conn`, handed out until the [`Reader`] is dropped.
    fn lend<'a>(&'a self, conn: Connection, location: &'a Location) -> Reader<'a> {
        Reader {
            conn: Some(conn),
            pool: self,
            location,
        }
    }

    /// A connection for reading the store at `location` (named in the errors it meets),
    /// returned to the pool when the [`Reader`] is dropped.
    pub(crate) fn get<'a>(&'a self, location: &'a Location) -> Result<Reader<'a>> {
        let deadline = Instant::now() + self.wait;
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(conn) = idle.conns.pop() {
                return Ok(self.lend(conn, location));
            }
            if idle.opened < self.size {
                idle.opened += 1;
                drop(idle);
                return match (self.opener)() {
                    Ok(conn) => Ok(self.lend(conn, location)),
                    Err(e) => {
                        self.idle
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .opened -= 1;
                        Err(e.at(&location.path))
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Busy {
                    path: location.path.to_path_buf(),
                    detail: format!(
                        "all {} read connections stayed in use for {:?}; hold a connection \
                         from `Store::conn` only as long as a read needs it, or open the store \
                         with more (`OpenOptions::read_connections`)",
                        self.size, self.wait
                    ),
                });
            }
            idle = self
                .freed
                .wait_timeout(idle, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A read connection borrowed from the store's pool: use it as a [`Connection`]; the generated
/// helpers and the query macros take `&reader` as they take `&connection`. Dropping it gives it
/// back. It is `query_only`.
pub struct Reader<'a> {
    conn: Option<Connection>,
    pool: &'a Pool,
    location: &'a Location,
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl Deref for Reader<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("held until drop")
    }
}

impl std::borrow::Borrow<Connection> for Reader<'_> {
    fn borrow(&self) -> &Connection {
        self
    }
}

impl Reader<'_> {
    /// The store's file, for classifying what SQLite says on this connection.
    pub(crate) fn location(&self) -> &Location {
        self.location
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A read transaction left open would pin its snapshot for the next borrower.
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            let mut idle = self
                .pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            idle.conns.push(conn);
            drop(idle);
            self.pool.freed.notify_one();
        }
    }
}
