//! WAL checkpoints, moved off the writer: the pages a batch commits are copied back into the
//! database file by a read connection after the batch, not inside its `COMMIT`.
//!
//! SQLite's automatic checkpoint runs inside the `COMMIT` that takes the log past 1,000 pages,
//! while the writer is held: every operation of that batch, and every one waiting to join the
//! next, waits for the copy and its fsync. The writer instead only notes, in a WAL hook, how long
//! the log has grown; after its batch, one caller runs the same passive checkpoint on a pooled
//! read connection, while the writer goes on committing.
//!
//! A checkpoint beside a writer that never pauses always ends a few frames behind it, and SQLite
//! restarts the log from its beginning only once every frame is copied: under a steady stream of
//! writes the log would grow without bound. So once it reaches [`LIMIT`] pages, the checkpoint
//! runs between batches, with the writer held, as SQLite's own would; the next commit then
//! starts the log over.
//!
//! Invariant: the checkpoint is SQLite's own passive one at SQLite's own threshold, so nothing
//! about durability or the file changes, only which connection does the copying and when; and
//! the log stays within about [`LIMIT`] pages plus one batch, unless a reader holds an old
//! snapshot.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::Result;
use crate::Store;

/// The log size, in pages, past which a checkpoint is due (SQLite's `wal_autocheckpoint`
/// default).
const PAGES: i32 = 1_000;

/// The log size, in pages, past which the checkpoint holds the writer: four times the usual
/// threshold (16 MB with 4 KB pages).
pub(crate) const LIMIT: i32 = 4 * PAGES;

/// Replaces the writer's automatic checkpoint with a note of the log's length; the returned
/// count is set by every commit that leaves the log at [`PAGES`] or more, and cleared by the
/// caller that takes the checkpoint.
pub(crate) fn watch(writer: &mut Connection) -> Result<Arc<AtomicI32>> {
    let due = Arc::new(AtomicI32::new(0));
    let pages_noted = due.clone();
    writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
        if pages >= PAGES {
            pages_noted.fetch_max(pages, Ordering::AcqRel);
        }
        Ok(())
    }))?;
    Ok(due)
}

impl Store {
    /// Runs the due checkpoint, if one is due, no other caller took it and a read connection is
    /// idle (otherwise a later write runs it); past [`LIMIT`] pages, on the writer between
    /// batches. Best effort, as SQLite's automatic one: a checkpoint that cannot finish (a reader
    /// still on an old snapshot, another process checkpointing) leaves the log for the next
    /// commit to note.
    pub(crate) fn checkpoint_if_due(&self) {
        let Some(due) = self.checkpoint_due() else {
            return;
        };
        let pages = due.swap(0, Ordering::AcqRel);
        if pages < PAGES {
            return;
        }
        if pages >= LIMIT {
            // Held between batches, no frame is added while the copy runs, so it can finish.
            if let Ok(writer) = self.sqlite_writer() {
                writer.between_batches(passive);
            }
            return;
        }
        // Never wait for a reader: a write must not stall behind long reads for this.
        match self.idle_conn() {
            Some(conn) => passive(&conn),
            None => {
                due.fetch_max(pages, Ordering::AcqRel);
            }
        }
    }
}

/// SQLite's passive checkpoint; best effort, its outcome is SQLite's to retry.
fn passive(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}
