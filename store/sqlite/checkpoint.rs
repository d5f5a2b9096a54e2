//! WAL checkpoints: SQLite's own automatic checkpoint on the writer, counted.
//!
//! Once a commit leaves the log at [`PAGES`] pages or more, the writer runs a passive
//! checkpoint right after it, as SQLite's default hook does: nothing writes meanwhile, so the
//! copy catches up, and the next commit starts the log over. A checkpoint beside a busy writer
//! (on a read connection) never caught up with it: every later commit found the log still long
//! and asked for another, each with an fsync of the database file, several times as many as
//! SQLite's own made. The only difference from SQLite's hook is the count kept for
//! [`crate::CommitStats::checkpoints`].
//!
//! Invariant: at most one checkpoint per [`PAGES`] pages written to the log, unless a reader
//! holds an old snapshot (then SQLite's own hook would retry as well); the log stays within
//! about [`PAGES`] pages plus one batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::wal::CheckpointMode;
use rusqlite::Connection;

use crate::error::Result;

/// The log size, in pages, at which a commit runs a checkpoint (SQLite's `wal_autocheckpoint`
/// default).
const PAGES: i32 = 1_000;

/// Installs the checkpoint on the writer connection; returns the count of checkpoints it runs.
pub(crate) fn watch(writer: &mut Connection) -> Result<Arc<AtomicU64>> {
    let count = Arc::new(AtomicU64::new(0));
    let counted = count.clone();
    writer.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
        if pages >= PAGES {
            counted.fetch_add(1, Ordering::Relaxed);
            // Best effort, as SQLite's own: a checkpoint that cannot finish (a reader on an
            // old snapshot, another process checkpointing) leaves the log to the next commit.
            let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
        }
        Ok(())
    }))?;
    Ok(count)
}
