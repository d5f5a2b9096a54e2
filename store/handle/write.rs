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
//! On PostgreSQL no write takes a store-wide lock. A write runs `SERIALIZABLE`: PostgreSQL's
//! serializable snapshot isolation keeps every invariant that running the writes one at a
//! time keeps, and a write it cannot serialize is rolled back and run again (so an operation
//! may run more than once, and does nothing outside its `&Db`). The hot writes
//! ([`Store::write_locking`]: appends, claims) run `READ COMMITTED` and lock the rows their
//! invariants depend on themselves ([`Db::lock_row`], `FOR UPDATE SKIP LOCKED`), so that
//! writes to different sessions and runs neither wait for nor abort each other.
//!
//! The topics a write touched ([`Db::notify`]) are published to the store's subscribers only
//! after its commit returned, and only for the run of the operation that committed.

use std::time::{Duration, Instant};

use crate::feed::topic::Notes;
use crate::sql::db::{Db, Isolation};

use crate::error::Result;
use crate::Store;

impl Store {
    /// Runs `op` in the backend's write frame: SQLite's group-committing writer, or one
    /// PostgreSQL transaction at `isolation`, run again while PostgreSQL cannot serialize it.
    fn frame<T>(
        &self,
        isolation: Isolation,
        mut op: impl FnMut(&Db, i64) -> Result<T>,
    ) -> Result<T> {
        // The topics of the run that committed: each run (a retry included) notes its own.
        let notes = Notes::default();
        let mut noted = |db: Db, now| {
            notes.borrow_mut().clear();
            op(&db.noting(&notes), now)
        };
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            if self.is_read_only() {
                return Err(crate::Error::ReadOnly {
                    path: self.path().to_path_buf(),
                    detail: "the store was opened read-only".into(),
                });
            }
            let value = pool.write(isolation, |session| {
                noted(Db::postgres(session), self.now_ms())
            })?;
            self.feed().publish(notes.borrow().iter());
            return Ok(value);
        }
        let _ = isolation; // SQLite runs every write alone.
        let value = self
            .sqlite_writer()?
            .run(|conn| noted(Db::sqlite(conn), self.now_ms()))
            .map_err(|e| e.located(self.location()))?;
        self.feed().publish(notes.borrow().iter());
        Ok(value)
    }

    /// Runs `op` in one write transaction with the current time (epoch milliseconds), committing
    /// what it wrote when it returns `Ok` and rolling it all back otherwise. On PostgreSQL `op`
    /// may run more than once (see the module doc).
    ///
    /// Concurrent writes share one commit ([`crate::sqlite::commit`]): `op` runs in its own savepoint
    /// when others went before it in the batch, and this returns once the batch is durable.
    pub(crate) fn write<T>(&self, op: impl FnMut(&Db, i64) -> Result<T>) -> Result<T> {
        self.write_timed(op).map(|(value, _)| value)
    }

    /// [`Store::write`] for an operation that locks, before it reads them, the rows its
    /// invariants depend on ([`Db::lock_row`]): on PostgreSQL it runs `READ COMMITTED`, so it
    /// waits only for writes of those rows. On SQLite it is [`Store::write`].
    pub(crate) fn write_locking<T>(&self, op: impl FnMut(&Db, i64) -> Result<T>) -> Result<T> {
        self.write_in(Isolation::RowLocks, op)
            .map(|(value, _)| value)
    }

    /// [`Store::write`] for an operation that writes with one statement, whose conditions
    /// (a fence, say) keep its invariants: on PostgreSQL it runs outside a transaction, so it
    /// costs one round trip. On SQLite it is [`Store::write`]: every write there is one commit.
    pub(crate) fn write_statement<T>(&self, op: impl FnMut(&Db, i64) -> Result<T>) -> Result<T> {
        #[cfg(feature = "postgres")]
        let isolation = Isolation::Statement;
        #[cfg(not(feature = "postgres"))]
        let isolation = Isolation::RowLocks;
        self.write_in(isolation, op).map(|(value, _)| value)
    }

    /// [`Store::write_locking`] for an operation that owns what it needs: on SQLite it may run
    /// on the writer thread, back to back with the others queued (see [`crate::sqlite::commit`]), so a
    /// hot write pays no hand-off per operation. It may run more than once before its batch
    /// commits (again, when another member failed), so it writes only through `&Db`.
    pub(crate) fn write_owned<T, F>(&self, mut op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Db, i64) -> Result<T> + Send + 'static,
    {
        #[cfg(feature = "postgres")]
        if self.postgres().is_some() {
            return self.write_locking(op);
        }
        let clock = self.clock().clone();
        let (value, notes) = self
            .sqlite_writer()?
            .run_owned(move |conn| {
                let notes = Notes::default();
                let value = op(&Db::sqlite(conn).noting(&notes), clock.now_ms())?;
                Ok((value, notes.into_inner()))
            })
            .map_err(|e| e.located(self.location()))?;
        self.feed().publish(notes.iter());
        Ok(value)
    }

    /// [`Store::write`], also returning how long the write took from asking for the writer to
    /// its commit (a checkpoint that commit ran included).
    pub(crate) fn write_timed<T>(
        &self,
        op: impl FnMut(&Db, i64) -> Result<T>,
    ) -> Result<(T, Duration)> {
        self.write_in(Isolation::Serializable, op)
    }

    /// The frame at `isolation` (see [`Store::frame`]), timed.
    fn write_in<T>(
        &self,
        isolation: Isolation,
        op: impl FnMut(&Db, i64) -> Result<T>,
    ) -> Result<(T, Duration)> {
        let started = Instant::now();
        let outcome = self.frame(isolation, op);
        let took = started.elapsed();
        outcome.map(|value| (value, took))
    }
}
