//! The transaction frame every domain write goes through.
//!
//! Invariant: a write runs inside a `BEGIN IMMEDIATE` transaction (the write lock taken first,
//! so it never fails half way on a lock upgrade), alone or in its own savepoint of a batch, with
//! "now" read once from the store's clock, and it commits only when the operation returns `Ok`:
//! an error or an early return rolls back everything it wrote, and nothing of any other write.
//! The operation sees a plain `&Db`, never the transaction itself, so that the frame batches
//! concurrent operations into one commit (group commit), each in its own savepoint, without any
//! operation knowing.
//!
//! On PostgreSQL a write holds the store's write lock before it reads, so writes of all nodes
//! are serialized as SQLite's are; an operation that reads and writes only one account's rows
//! (`Store::write_account`) holds that lock shared and the account's lock exclusively, so
//! writes of different accounts run at once while every other write still runs alone.

use std::time::{Duration, Instant};

use crate::db::Db;

use crate::error::Result;
use crate::Store;

impl Store {
    /// Runs `op` in the backend's write frame: SQLite's group-committing writer, or one
    /// PostgreSQL transaction under the store's write lock (shared, with `account`'s own lock,
    /// when `op` touches only that account's rows).
    fn frame<T>(&self, account: Option<&str>, op: impl FnOnce(&Db, i64) -> Result<T>) -> Result<T> {
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            if self.is_read_only() {
                return Err(crate::Error::ReadOnly {
                    path: self.path().to_path_buf(),
                    detail: "the store was opened read-only".into(),
                });
            }
            return pool.write(account, |session| op(&Db::postgres(session), self.now_ms()));
        }
        let _ = account; // SQLite has one writer for every account.
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

    /// [`Store::write`] for an operation that reads and writes rows of `account_id` only, and
    /// whose invariants are the account's own (a session's seqs, its agent's rollups). On
    /// PostgreSQL it waits only for writes of the same account and for store-wide ones, so nodes
    /// writing for different accounts do not queue behind each other; on SQLite it is
    /// [`Store::write`].
    pub(crate) fn write_account<T>(
        &self,
        account_id: &str,
        op: impl FnOnce(&Db, i64) -> Result<T>,
    ) -> Result<T> {
        self.write_in(Some(account_id), op).map(|(value, _)| value)
    }

    /// [`Store::write_account`] for an operation that owns what it needs: on SQLite it may run
    /// on the writer thread, back to back with the others queued (see [`crate::commit`]), so a
    /// hot write pays no hand-off per operation. It may run more than once before its batch
    /// commits (again, when another member failed), so it writes only through `&Db`.
    pub(crate) fn write_owned<T, F>(&self, account_id: &str, mut op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Db, i64) -> Result<T> + Send + 'static,
    {
        #[cfg(feature = "postgres")]
        if self.postgres().is_some() {
            return self.write_account(account_id, op);
        }
        let _ = account_id; // SQLite has one writer for every account.
        let clock = self.clock().clone();
        self.sqlite_writer()?
            .run_owned(move |conn| op(&Db::sqlite(conn), clock.now_ms()))
    }

    /// [`Store::write`], also returning how long the write took from asking for the writer to
    /// its commit (a checkpoint that commit ran included).
    pub(crate) fn write_timed<T>(
        &self,
        op: impl FnOnce(&Db, i64) -> Result<T>,
    ) -> Result<(T, Duration)> {
        self.write_in(None, op)
    }

    /// The frame for `account` (see [`Store::frame`]), timed.
    fn write_in<T>(
        &self,
        account: Option<&str>,
        op: impl FnOnce(&Db, i64) -> Result<T>,
    ) -> Result<(T, Duration)> {
        let started = Instant::now();
        let outcome = self.frame(account, op);
        let took = started.elapsed();
        outcome.map(|value| (value, took))
    }
}
