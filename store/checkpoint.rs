//! WAL checkpoints, moved off the writer: the pages a batch commits are copied back into the
//! database file by a read connection after the batch, not inside its `COMMIT`.
//!
//! SQLite's automatic checkpoint runs inside the `COMMIT` that takes the log past 1,000 pages,
//! while the writer is held: every operation of that batch, and every one waiting to join the
//! next, waits for the copy and its fsync. The writer instead only notes, in a WAL hook, that
//! the log has grown that far; after its batch, one caller runs the same passive checkpoint on a
//! pooled read connection, while the writer goes on committing.
//!
//! Invariant: the checkpoint is SQLite's own passive one at SQLite's own threshold, so nothing
//! about durability or the file changes, only which connection does the copying and when.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::Result;
use crate::Store;

/// The log size, in pages, past which a checkpoint is due (SQLite's `wal_autocheckpoint`
/// default).
const PAGES: i32 = 1_000;

/// Replaces the writer's automatic checkpoint with a note that one is due; the returned flag
/// is set by every commit that leaves the log at [`PAGES`] or more.
pub(crate) fn watch(writer: &mut Connection) -> Result<Arc<AtomicBool>> {
    let due = Arc::new(AtomicBool::new(false));
    let flag = due.clone();
    writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
        if pages >= PAGES {
            flag.store(true, Ordering::Release);
        }
        Ok(())
    }))?;
    Ok(due)
}

impl Store {
    /// Runs the due checkpoint, if one is due, no other caller took it and a read connection is
    /// idle (otherwise a later write runs it). Best effort, as SQLite's automatic one: a checkpoint that cannot finish (a reader still on an old
    /// snapshot, another process checkpointing) leaves the log for the next commit to flag.
    pub(crate) fn checkpoint_if_due(&self) {
        if !self.checkpoint_due().swap(false, Ordering::AcqRel) {
            return;
        }
        // Never wait for a reader: a write must not stall behind long reads for this.
        match self.idle_conn() {
            Some(conn) => {
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
            None => self.checkpoint_due().store(true, Ordering::Release),
        }
    }
}
