//! The run queue's own statements on PostgreSQL: the claim, with which nodes claim at once,
//! each taking a different queued run, and the row lock a worker's write takes on its run.
//!
//! Invariants, each held by a lock on what it guards, never a store-wide one (the claim runs
//! `READ COMMITTED`, so each statement sees what was committed before it started):
//! - a queued run is claimed at most once: the candidates are locked `FOR UPDATE SKIP LOCKED`,
//!   so concurrent claimers pass over each other's and take the next;
//! - a kind's cap is exact: a claimer with a cap on a kind holds that kind's lock (an advisory
//!   transaction lock, [`CAP_LOCK_CLASS`]) before it counts, so capped claims of one kind count
//!   in turn; a claimer without a cap waits for nobody;
//! - a session has at most one claimed or running run: after claiming an agent run of a
//!   session, the claimer locks the session's row and counts its live runs again. Every claim
//!   of a session's run takes that lock ([`crate::Store::claim_run`] before it checks), so the
//!   second of two racing claims sees the first: its write is rolled back and runs again, and
//!   then passes that session over;
//! - a worker's write on its run (start, lease renewal, usage, finalize) reads the run with
//!   its row locked ([`lock_run`]), so writes on one run take turns and each sees the last.
//!
//! Same order as SQLite's claim: interactive first, then oldest, then by id, over undelayed
//! runs and delayed ones that are due.

use std::sync::OnceLock;

use super::Session;
use crate::db::{Db, LockedRow};
use crate::error::Result;
use crate::schema::runs;

/// The high half of the cap locks' keys ("caps"); the low half is 1 for agent runs, 2 for
/// workflows.
const CAP_LOCK_CLASS: i64 = 0x6361_7073 << 32;

/// A cap as the claim binds it (`u32::MAX` is no cap).
fn capped(cap: u32) -> bool {
    cap != u32::MAX
}

/// Claims the next claimable run for `owner` (see the module doc); `None` when there is none.
/// `now`, the caps and the lease expiry as [`crate::Store::claim_next_run`] gives them.
pub(crate) fn claim_next(
    session: &Session,
    owner: &str,
    now: i64,
    agent_cap: u32,
    workflow_cap: u32,
    expiry: i64,
) -> Result<Option<runs::Row>> {
    for (kind, cap) in [(1, agent_cap), (2, workflow_cap)] {
        if capped(cap) {
            session.execute(
                "SELECT pg_advisory_xact_lock($1)",
                &[&(CAP_LOCK_CLASS | kind)],
            )?;
        }
    }
    let (agents, workflows) = (i64::from(agent_cap), i64::from(workflow_cap));
    let mut claimed = None;
    session.each_row(
        claim_sql(),
        &[&owner, &now, &agents, &workflows, &expiry],
        &mut |row| {
            claimed = Some(runs::Row::from_row(row)?);
            Ok(false)
        },
    )?;
    if let Some(runs::Row {
        kind: runs::Kind::Agent,
        session_id: Some(session_id),
        ..
    }) = &claimed
    {
        if !alone_in_session(session, session_id)? {
            // Another claimer committed a run of this session first: this write is rolled back
            // and runs again, and its claim then sees that one and passes the session over.
            return Err(session.conflict(format!(
                "another node claimed a run of session {session_id} first"
            )));
        }
    }
    Ok(claimed)
}

/// The run `id` of `account_id`, read with its row locked until the write ends.
pub(crate) fn lock_run(session: &Session, account_id: &str, id: &str) -> Result<Option<runs::Row>> {
    static SQL: OnceLock<String> = OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "SELECT {} FROM runs WHERE account_id = $1 AND id = $2 FOR UPDATE",
            runs::COLUMN_LIST
        )
    });
    let mut run = None;
    session.each_row(sql, &[&account_id, &id], &mut |row| {
        run = Some(runs::Row::from_row(row)?);
        Ok(false)
    })?;
    Ok(run)
}

/// Whether, once `session_id`'s row is locked, the run just claimed is its only live run.
fn alone_in_session(session: &Session, session_id: &str) -> Result<bool> {
    Db::postgres(session).lock_row(LockedRow::Session, session_id)?;
    let mut live = 0i64;
    session.each_row(
        "SELECT count(*) FROM runs WHERE session_id = $1 AND status IN ('claimed', 'running')",
        &[&session_id],
        &mut |row| {
            live = match row.value(0)? {
                rusqlite::types::ValueRef::Integer(n) => n,
                _ => 0,
            };
            Ok(false)
        },
    )?;
    Ok(live <= 1)
}

/// The claim statement: each of the four candidate branches (a queue's undelayed runs, its
/// due delayed ones) locks its first eligible run, skipping runs other claimers hold, and the
/// first of those in claim order is claimed.
fn claim_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let eligible = "((r.kind = 'agent' AND (SELECT agents FROM busy) < $3 \
             AND (r.session_id IS NULL OR NOT EXISTS (SELECT 1 FROM runs AS s \
             WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running')))) \
             OR (r.kind = 'workflow' AND (SELECT workflows FROM busy) < $4))";
        let branch = |alias: &str, q: u8, queue: &str, due: &str, order: &str| {
            format!(
                "SELECT * FROM (SELECT r.id, {q} AS q, r.created_at FROM runs AS r \
                 WHERE r.status = 'queued' AND r.queue = '{queue}' AND {due} AND {eligible} \
                 ORDER BY {order} LIMIT 1 FOR UPDATE OF r SKIP LOCKED) AS {alias}"
            )
        };
        let undelayed = "r.not_before IS NULL";
        let due = "r.not_before <= $2";
        // The order of `runs_dispatch` as PostgreSQL holds it (NULLs first, SQLite's order), so
        // the index serves it and a claim reads one entry, not the whole queue.
        let by_index = "r.not_before NULLS FIRST, r.created_at, r.id";
        let by_age = "r.created_at, r.id";
        format!(
            "WITH busy AS (SELECT \
               coalesce(sum(CASE WHEN kind = 'agent' THEN 1 ELSE 0 END), 0) AS agents, \
               coalesce(sum(CASE WHEN kind = 'workflow' THEN 1 ELSE 0 END), 0) AS workflows \
               FROM runs WHERE status IN ('claimed', 'running')), \
             candidate AS ({} UNION ALL {} UNION ALL {} UNION ALL {}) \
             UPDATE runs SET status = 'claimed', lease_owner = $1, lease_expires_at = $5, \
               attempt = attempt + 1, updated_at = $2 \
             WHERE id = (SELECT id FROM candidate ORDER BY q, created_at, id LIMIT 1) \
             RETURNING {}",
            branch("interactive_now", 0, "interactive", undelayed, by_index),
            branch("interactive_due", 0, "interactive", due, by_age),
            branch("background_now", 1, "background", undelayed, by_index),
            branch("background_due", 1, "background", due, by_age),
            runs::COLUMN_LIST,
        )
    })
}
