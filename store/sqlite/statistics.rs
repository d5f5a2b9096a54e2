//! Planner statistics of the tables the hot queries plan over: gathered right after an install
//! or a migration (which write anyway), and on the open of a current file refreshed only where
//! SQLite finds them missing or stale.
//!
//! Invariant: opening a current file with fresh statistics writes nothing, and the check never
//! waits for another connection's write lock: it tries it once and skips the refresh when it is
//! taken (statistics only guide the planner; a later open gathers them).

use crate::error::Result;
use crate::query;
use crate::sqlite::migrate::Outcome;
use rusqlite::Connection;
use std::time::Duration;

/// `ANALYZE` looks at about this many rows per index, so gathering statistics stays fast on
/// large files.
const ANALYSIS_LIMIT: u32 = 400;

/// Statistics as the open's `outcome` needs them: gathered for the new structure after an
/// install or a migration, refreshed where stale on a current file.
pub(crate) fn keep(conn: &mut Connection, outcome: Outcome) -> Result<()> {
    if let Outcome::Current { .. } = outcome {
        return refresh_statistics(conn);
    }
    // One write transaction that takes the write lock first: an ANALYZE in autocommit starts as
    // a read and upgrades, which SQLite answers with an immediate SQLITE_BUSY (no wait) when
    // another process is doing the same.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    gather_statistics(&tx, &ANALYZED)?;
    tx.commit()?;
    Ok(())
}

/// The tables the hot queries plan over, whose planner statistics the store keeps. The
/// append-only logs (session_events, run_journal) are left out: they are large and their
/// queries go by key.
const ANALYZED: [&str; 16] = [
    "accounts",
    "account_authorizations",
    "agents",
    "agent_collaborators",
    "agent_drafts",
    "agent_triggers",
    "mcp_servers",
    "model_providers",
    "run_event_waits",
    "runs",
    "secrets",
    "session_continuations",
    "sessions",
    "tool_documents",
    "trigger_event_claims",
    "trigger_firings",
];

/// Gathers planner statistics for `tables` (names from [`ANALYZED`]), inside the caller's write
/// transaction: right after an install or a migration, and when a current file's are missing or
/// stale. `ANALYZE` looks at about [`ANALYSIS_LIMIT`] rows per index.
fn gather_statistics(conn: &Connection, tables: &[&str]) -> Result<()> {
    conn.pragma_update(None, "analysis_limit", ANALYSIS_LIMIT)?;
    for table in tables {
        conn.execute_batch(&format!("ANALYZE main.\"{table}\""))?;
    }
    Ok(())
}

/// The tables of [`ANALYZED`] whose statistics are missing or stale, by SQLite's own measure
/// (`PRAGMA optimize` in its dry-run mode, `0x10003`: every table, report only, write nothing;
/// it needs the write lock, so `conn` holds it):
/// an index without statistics, or a table 10 times larger or smaller than when it was last
/// analyzed. An empty table without statistics is left out: `ANALYZE` records no statistics for
/// an empty table, so it would be "missing" again on every open, and there is nothing to plan
/// over.
fn stale_tables(conn: &Connection) -> Result<Vec<&'static str>> {
    let mut stmt = conn.prepare_cached("PRAGMA optimize(0x10003)")?;
    let reported = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut stale = Vec::new();
    if reported.is_empty() {
        return Ok(stale);
    }
    let has_stat1 = query!(
        "SELECT CAST(EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat1') AS INTEGER) AS found"
    )
    .fetch_one(conn)?
    .found
        == Some(1);
    for table in ANALYZED {
        let analyze = format!("ANALYZE \"main\".\"{table}\"");
        if !reported.contains(&analyze) {
            continue;
        }
        let has_rows: bool = conn
            .prepare_cached(&format!("SELECT EXISTS (SELECT 1 FROM main.\"{table}\")"))?
            .query_row([], |r| r.get(0))?;
        let has_stats = has_stat1
            && conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM main.sqlite_stat1 WHERE tbl = ?1)")?
                .query_row([table], |r| r.get(0))?;
        if has_rows || has_stats {
            stale.push(table);
        }
    }
    Ok(stale)
}

/// Refreshes missing or stale statistics of a current file, and writes nothing when there are
/// none (the usual open). SQLite's check takes the write lock (without writing), so the lock is
/// tried once, without waiting: when another connection holds it the check is skipped, since
/// statistics only guide the planner and a later open gathers them. When they are fresh the
/// transaction is rolled back: nothing reaches the WAL and nothing is synced.
fn refresh_statistics(conn: &mut Connection) -> Result<()> {
    conn.busy_timeout(Duration::ZERO)?;
    let began = conn.execute_batch("BEGIN IMMEDIATE");
    crate::sqlite::busy::install(conn)?;
    match began {
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => return Ok(()),
        other => other?,
    }
    let refreshed = stale_tables(conn).and_then(|stale| {
        if stale.is_empty() {
            return Ok(false);
        }
        gather_statistics(conn, &stale)?;
        Ok(true)
    });
    match refreshed {
        Ok(true) => conn.execute_batch("COMMIT")?,
        Ok(false) => conn.execute_batch("ROLLBACK")?,
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    }
    Ok(())
}
