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
//! - a session has at most one claimed or running agent run: the claim passes over a session
//!   with a live run, and the unique index `runs_live_agent_by_session` refuses the second of
//!   two racing claims of one session's runs (23505), which then claims again and passes that
//!   session over. So an uncapped claim is one statement, outside a transaction;
//! - a worker's write on its run is one fenced statement (start, lease renewal, finalize; a
//!   root run's finalize is [`end_root_run`]), or, when it reads before it writes (usage, a
//!   retryable failure's backoff), reads the run with its row locked ([`lock_run`]), so writes
//!   on one run take turns and each sees the last.
//!
//! Same order as SQLite's claim: interactive first, then oldest, then by id, over undelayed
//! runs and delayed ones that are due.

use std::sync::OnceLock;

use super::Session;
use crate::error::Result;
use crate::lease::Claim;
use crate::runs::ClaimLimits;
use crate::schema::runs;

/// The high half of the cap locks' keys ("caps"); the low half is 1 for agent runs, 2 for
/// workflows.
const CAP_LOCK_CLASS: i64 = 0x6361_7073 << 32;

/// Claims the next claimable run for `owner` (see the module doc); `None` when there is none.
/// `now`, the caps and the lease expiry as [`crate::Store::claim_next_run`] gives them.
pub(crate) fn claim_next(
    session: &Session,
    owner: &str,
    now: i64,
    limits: ClaimLimits,
    expiry: i64,
) -> Result<Option<runs::Row>> {
    for (key, kind) in [(1, runs::Kind::Agent), (2, runs::Kind::Workflow)] {
        if limits.cap(kind).is_some() {
            session.execute(
                "SELECT pg_advisory_xact_lock($1)",
                &[&(CAP_LOCK_CLASS | key)],
            )?;
        }
    }
    let (agents, workflows) = (i64::from(limits.agent), i64::from(limits.workflow));
    let mut claimed = None;
    session.each_row(
        claim_sql(limits.capped()),
        &[&owner, &now, &agents, &workflows, &expiry],
        &mut |row| {
            claimed = Some(runs::Row::from_row(row)?);
            Ok(false)
        },
    )?;
    Ok(claimed)
}

/// Ends the run under `claim` with a terminal `status` in one statement, outside a
/// transaction, when it is a root run without a session (nothing else to lock, roll up or
/// mirror): the fenced update, the deletion of its waits, and the notification that its
/// kind's cap has room again (delivered at the statement's commit). `None` when the statement
/// matched nothing: the lease moved, or the run has a parent or a session after all, and the
/// caller takes the general path, which says which.
pub(crate) fn end_root_run(
    session: &Session,
    claim: &Claim,
    status: runs::Status,
    output: Option<&[u8]>,
    error: Option<&[u8]>,
    now: i64,
) -> Result<Option<runs::Row>> {
    static SQL: OnceLock<String> = OnceLock::new();
    let sql = SQL.get_or_init(|| {
        format!(
            "WITH ended AS (UPDATE runs SET status = $5, output_cbor = coalesce($6, output_cbor), \
               error_cbor = coalesce($7, error_cbor), wait_cbor = NULL, not_before = NULL, \
               lease_owner = NULL, lease_expires_at = NULL, finished_at = $8, updated_at = $8 \
               WHERE account_id = $1 AND id = $2 AND lease_owner = $3 AND attempt = $4 \
               AND status IN ('claimed', 'running') \
               AND parent_run_id IS NULL AND session_id IS NULL RETURNING {0}), \
             waits AS (DELETE FROM run_event_waits WHERE run_id IN (SELECT id FROM ended)) \
             SELECT {0} FROM ended CROSS JOIN LATERAL (SELECT pg_notify('{1}', '{2}')) AS woke",
            runs::COLUMN_LIST,
            crate::feed::topic::CHANNEL,
            crate::feed::topic::Topic::Runs.payload(),
        )
    });
    let mut ended = None;
    session.each_row(
        sql,
        &[
            &claim.account_id,
            &claim.run_id,
            &claim.owner,
            &claim.attempt,
            &status.as_str(),
            &output,
            &error,
            &now,
        ],
        &mut |row| {
            ended = Some(runs::Row::from_row(row)?);
            Ok(false)
        },
    )?;
    Ok(ended)
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

/// The claim statement: each of the four candidate branches (a queue's undelayed runs, its
/// due delayed ones) locks its first eligible run, skipping runs other claimers hold, and the
/// first of those in claim order is claimed. With a cap (`capped`), a kind at its cap is not
/// eligible; without one, the live runs are not counted at all.
fn claim_sql(capped: bool) -> &'static str {
    static CAPPED: OnceLock<String> = OnceLock::new();
    static UNCAPPED: OnceLock<String> = OnceLock::new();
    let render = move || {
        let (agents, workflows) = if capped {
            (
                "(SELECT agents FROM busy) < $3",
                "(SELECT workflows FROM busy) < $4",
            )
        } else {
            // Bound all the same, so both statements take the same parameters.
            ("$3 > 0", "$4 > 0")
        };
        let eligible = format!(
            "((r.kind = 'agent' AND {agents} \
             AND (r.session_id IS NULL OR NOT EXISTS (SELECT 1 FROM runs AS s \
             WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running')))) \
             OR (r.kind = 'workflow' AND {workflows}))"
        );
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
        let busy = if capped {
            "busy AS (SELECT \
               coalesce(sum(CASE WHEN kind = 'agent' THEN 1 ELSE 0 END), 0) AS agents, \
               coalesce(sum(CASE WHEN kind = 'workflow' THEN 1 ELSE 0 END), 0) AS workflows \
               FROM runs WHERE status IN ('claimed', 'running')), "
        } else {
            ""
        };
        format!(
            "WITH {busy}candidate AS ({} UNION ALL {} UNION ALL {} UNION ALL {}) \
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
    };
    if capped {
        CAPPED.get_or_init(render)
    } else {
        UNCAPPED.get_or_init(render)
    }
}
