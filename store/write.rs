//! The transaction frame every domain write goes through.
//!
//! Invariant: a write is one `BEGIN IMMEDIATE` transaction (the write lock taken first, so it
//! never fails half way on a lock upgrade), with "now" read once from the store's clock, and it
//! commits only when the operation returns `Ok`: an error or an early return rolls back
//! everything it wrote. The operation sees a plain `&Connection`, never the transaction itself,
//! so the frame can later batch several operations into one commit (group commit), each in its
//! own savepoint, without any operation changing.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::Result;
use crate::Store;

impl Store {
    /// Runs `op` in one write transaction with the current time (epoch milliseconds), committing
    /// what it wrote when it returns `Ok` and rolling it all back otherwise.
    pub(crate) fn write<T>(&mut self, op: impl FnOnce(&Connection, i64) -> Result<T>) -> Result<T> {
        let now = self.now_ms();
        let tx = self
            .writer()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = op(&tx, now)?;
        tx.commit()?;
        Ok(out)
    }
}
