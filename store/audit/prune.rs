//! Retention of the audit log, separate from every other retention and off unless called.
//!
//! Invariant: pruning removes a prefix of the log (the oldest rows, up to the first one not old
//! enough), in batches of one transaction each, and in the same transaction moves the chain's
//! anchor to the last removed row's seq and hash and appends an `audit.prune` event. So the
//! retained log verifies from its anchor after every batch, and its own shortening is on record.

use std::time::Duration;

use crate::db::Db;

use super::chain::{ends, store_ends};
use super::{Event, STORE_ACTOR};
use crate::error::{Error, Result};
use crate::schema::audit_events::Kind;
use crate::{query, Store};

/// What [`Store::prune_audit_log`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AuditPruned {
    /// Rows removed.
    pub rows: u64,
    /// Batches (transactions) it took.
    pub batches: u64,
    /// The seq the first retained row now chains from.
    pub anchor_seq: i64,
}

/// Removes one batch: up to `batch_rows` of the oldest rows written before `cutoff`, none past
/// seq `through`. Returns how many.
fn prune_batch(conn: &Db, now: i64, cutoff: i64, through: i64, batch_rows: i64) -> Result<u64> {
    let Some(mut ends) = ends(conn)? else {
        return Ok(0);
    };
    // The prefix stops at the first row not old enough, even if later rows are (a clock set
    // back): removing only a prefix keeps the rest chained from one anchor.
    let oldest = query!(
        "SELECT seq, at, hash FROM audit_events WHERE seq <= ?1 ORDER BY seq LIMIT ?2",
        through,
        batch_rows
    )
    .fetch_all(conn)?;
    let Some(last) = oldest.iter().take_while(|r| r.at < cutoff).last() else {
        return Ok(0);
    };
    let removed = query!("DELETE FROM audit_events WHERE seq <= ?1", last.seq).execute(conn)?;
    let first = ends.anchor_seq + 1;
    ends.anchor_seq = last.seq;
    ends.anchor_hash = last.hash.clone();
    store_ends(conn, &ends)?;
    Event::done(
        STORE_ACTOR,
        Kind::Security,
        "audit.prune",
        format!("audit events {first}..={}", last.seq),
    )
    .detail(format!("{removed} row(s) older than {cutoff} removed"))
    .record(conn, now)?;
    Ok(removed as u64)
}

impl Store {
    /// Removes the audit events older than `older_than` (by their `at`), oldest first, at most
    /// `batch_rows` per transaction so the write lock is never held long. The chain stays
    /// verifiable: each batch moves its anchor to the last removed row. Each batch appends an
    /// `audit.prune` event (account and actor `store`), so pruning never empties the log.
    /// Nothing else prunes the audit log: without this call it keeps everything.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`batch_rows`) for 0; [`Error::Sqlite`] otherwise (the batches
    /// committed before stay committed, and the log verifies).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
    /// store.set_secret("acct-1", "api-key", b"s3cret", None)?;
    /// // A year's retention: nothing is that old yet.
    /// let pruned = store.prune_audit_log(Duration::from_secs(365 * 86_400), 1_000)?;
    /// assert_eq!(pruned.rows, 0);
    /// assert!(store.verify_audit_log()?.is_intact());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prune_audit_log(&self, older_than: Duration, batch_rows: u32) -> Result<AuditPruned> {
        if batch_rows == 0 {
            return Err(Error::Invalid {
                field: "batch_rows",
                reason: "must be at least 1".into(),
            });
        }
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        let cutoff = self.now_ms().saturating_sub(age);
        // Only the rows there were when it started: its own `audit.prune` events are newer.
        let through = ends(&self.reading()?.db())?.map_or(0, |e| e.head_seq);
        let mut pruned = AuditPruned::default();
        loop {
            let removed =
                self.write(|tx, now| prune_batch(tx, now, cutoff, through, i64::from(batch_rows)))?;
            if removed == 0 {
                break;
            }
            pruned.rows += removed;
            pruned.batches += 1;
        }
        pruned.anchor_seq = ends(&self.reading()?.db())?.map_or(0, |e| e.anchor_seq);
        Ok(pruned)
    }
}
