//! Retention of the audit log, separate from every other retention and off unless called.
//!
//! Invariant: pruning removes a prefix of each chain (its oldest rows, up to the first one not
//! old enough), in batches of one transaction each, and in the same transaction moves that
//! chain's anchor to the last removed row's seq and hash and appends an `audit.prune` event to
//! the chain. So every chain verifies from its anchor after every batch, and its own shortening
//! is on record in it.

use std::time::Duration;

use crate::sql::db::Db;

use super::chain::{append_at, locked_ends};
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
    /// Rows pruned over the log's life: the sum of every chain's anchor seq (with one chain, the
    /// seq its first retained row now chains from), as [`crate::audit::AuditReport::anchor_seq`].
    pub anchor_seq: i64,
}

/// Removes one batch of `chain`: up to `batch_rows` of its oldest rows written before `cutoff`,
/// none past seq `through`. Returns how many.
fn prune_batch(
    conn: &Db,
    now: i64,
    chain: &str,
    cutoff: i64,
    through: i64,
    batch_rows: i64,
) -> Result<u64> {
    let Some(mut ends) = locked_ends(conn, chain)? else {
        return Ok(0);
    };
    // The prefix stops at the first row not old enough, even if later rows are (a clock set
    // back): removing only a prefix keeps the rest chained from one anchor.
    let oldest = query!(
        "SELECT seq, at, hash FROM audit_events WHERE chain = ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3",
        chain,
        through,
        batch_rows
    )
    .fetch_all(conn)?;
    let Some(last) = oldest.iter().take_while(|r| r.at < cutoff).last() else {
        return Ok(0);
    };
    let removed = query!(
        "DELETE FROM audit_events WHERE chain = ?1 AND seq <= ?2",
        chain,
        last.seq
    )
    .execute(conn)?;
    let first = ends.anchor_seq + 1;
    ends.anchor_seq = last.seq;
    ends.anchor_hash = last.hash.clone();
    // The chain of the log before version 36 concerns no one account.
    let account = if chain.is_empty() { STORE_ACTOR } else { chain };
    let mut event = Event::done(
        account,
        Kind::Security,
        "audit.prune",
        format!("audit events {first}..={}", last.seq),
    )
    .detail(format!("{removed} row(s) older than {cutoff} removed"));
    event.actor = STORE_ACTOR;
    // The event's append stores the moved anchor with the new head.
    append_at(conn, now, chain, ends, &event)?;
    Ok(removed as u64)
}

/// The chain after `after` (in chain order) and its head seq; `None` past the last.
fn next_chain(conn: &Db, after: Option<&str>) -> Result<Option<(String, i64)>> {
    // `''` is the least chain, so "after nothing" starts at it inclusive.
    let rows = match after {
        None => query!("SELECT chain, head_seq FROM audit_chain ORDER BY chain LIMIT 1")
            .fetch_optional(conn)?
            .map(|r| (r.chain, r.head_seq)),
        Some(after) => query!(
            "SELECT chain, head_seq FROM audit_chain WHERE chain > ?1 ORDER BY chain LIMIT 1",
            after
        )
        .fetch_optional(conn)?
        .map(|r| (r.chain, r.head_seq)),
    };
    Ok(rows)
}

impl Store {
    /// Removes the audit events older than `older_than` (by their `at`), chain by chain, oldest
    /// first, at most `batch_rows` per transaction so no lock is held long. Every chain stays
    /// verifiable: each batch moves its anchor to the last removed row. Each batch appends an
    /// `audit.prune` event to the chain it pruned (actor `store`), so pruning never empties a
    /// chain. Nothing else prunes the audit log: without this call it keeps everything.
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
        let mut pruned = AuditPruned::default();
        let mut after: Option<String> = None;
        while let Some((chain, through)) = next_chain(&self.reading()?.db(), after.as_deref())? {
            // Only the rows the chain had when its turn came: its own `audit.prune` events are
            // newer.
            loop {
                let removed = self.write(|tx, now| {
                    prune_batch(tx, now, &chain, cutoff, through, i64::from(batch_rows))
                })?;
                if removed == 0 {
                    break;
                }
                pruned.rows += removed;
                pruned.batches += 1;
            }
            after = Some(chain);
        }
        pruned.anchor_seq = query!(
            r#"SELECT CAST(coalesce(sum(anchor_seq), 0) AS INTEGER) AS "pruned!" FROM audit_chain"#
        )
        .fetch_one(&self.reading()?.db())?
        .pruned;
        Ok(pruned)
    }
}
