//! The transaction frame every domain write goes through.
//!
//! Invariant: a write runs inside a `BEGIN IMMEDIATE` transaction (the write lock taken first,
//! so it never fails half way on a lock upgrade), alone or in its own savepoint of a batch, with
//! "now" read once from the store's clock, and it commits only when the operation returns `Ok`:
//! an error or an early return rolls back everything it wrote, and nothing of any other write. The operation sees a plain `&Db`, never the transaction itself,
//! so that the frame batches concurrent operations into one commit (group commit), each in its
//! own savepoint, without any operation knowing.

use std::time::{Duration, Instant};

use crate::db::Db;

use crate::error::Result;
use crate::Store;

impl Store {
    /// Runs `op` in the backend's write frame: SQLite's group-committing writer, or one
    /// PostgreSQL transaction under the store's write lock.
    fn frame<T>(&self, op: impl FnOnce(&Db, i64) -> Result<T>) -> Result<T> {
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            if self.is_read_only() {
                return Err(crate::Error::ReadOnly {
                    path: self.path().to_path_buf(),
                    detail: "the store was opened read-only".into(),
                });
            }
            return pool.write(|session| op(&Db::postgres(session), self.now_ms()));
        }
        self.sqlite_writer()?
            .run(|conn| op(&Db::sqlite(conn), self.now_ms()))
    }

    /// Runs `op` in one write transaction with the current time (epoch milliseconds), committing
    /// what it wrote when it returns `Ok` and rolling it all back otherwise.
    ///
    /// Concurrent writes share one commit ([`crate::commit`]): `op` runs in its own savepoint
    /// when others went before it in the batch, and this returns once the batch is durable.
    pub(crate) fn write<T>(&self, op: impl FnOnce(&Db, i64) -> Result<T>) -> Result<T> {
        self.write_timed(op).map(|(value, _)| value)
    }

    /// [`Store::write`], also returning how long the write took from asking for the writer to
    /// its commit: the time the write lock was wanted or held for it, without the checkpoint that
    /// may follow on a read connection (which holds no lock a writer needs).
    pub(crate) fn write_timed<T>(
        &self,
        op: impl FnOnce(&Db, i64) -> Result<T>,
    ) -> Result<(T, Duration)> {
        let started = Instant::now();
        let outcome = self.frame(op);
        let took = started.elapsed();
        self.checkpoint_if_due();
        outcome.map(|value| (value, took))
    }
}
