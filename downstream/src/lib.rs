//! A stand-in for a server crate: it depends on seed-agents-store like any other crate and uses
//! `query!`, `query_as!` and `derive(Row)` against the store's schema, with no database, cache or
//! network at compile time.

use seed_agents_store::schema::runs;
use seed_agents_store::{query, query_as, Result, Row, Store};

/// The queue's view of a run: a partial projection of `runs`.
#[derive(Debug, Clone, PartialEq, Row)]
#[row(table = "runs")]
pub struct QueuedRun {
    /// The run.
    pub id: String,
    /// Its queue.
    pub queue: runs::Queue,
    /// When it may be claimed.
    pub not_before: Option<i64>,
}

/// A run as a dashboard shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLine {
    /// The run.
    pub id: String,
    /// Its status.
    pub status: runs::Status,
    /// Its title, if any.
    pub title: Option<String>,
}

/// The queued runs of an account, oldest first, through the derived projection.
///
/// # Errors
/// SQLite errors and values outside their declared set.
pub fn queued(store: &Store, account_id: &str) -> Result<Vec<QueuedRun>> {
    let sql = format!(
        "SELECT {} FROM runs WHERE account_id = ?1 AND status = 'queued' ORDER BY created_at, id",
        QueuedRun::COLUMN_LIST
    );
    let conn = store.conn()?;
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([account_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(QueuedRun::from_row(row)?);
    }
    Ok(out)
}

/// The runs of a session as dashboard lines.
///
/// # Errors
/// SQLite errors and values outside their declared set.
pub fn lines(store: &Store, account_id: &str, session_id: &str) -> Result<Vec<RunLine>> {
    query_as!(
        RunLine,
        "SELECT id, status, title FROM runs WHERE account_id = ?1 AND session_id = ?2 ORDER BY created_at, id",
        account_id,
        session_id
    )
    .fetch_all(&store.conn()?)
}

/// How many runs of an account are in each status.
///
/// # Errors
/// SQLite errors and values outside their declared set.
pub fn status_counts(store: &Store, account_id: &str) -> Result<Vec<(runs::Status, i64)>> {
    let rows = query!(
        "SELECT status, CAST(count(*) AS INTEGER) AS n FROM runs WHERE account_id = ?1 GROUP BY status ORDER BY status",
        account_id
    )
    .fetch_all(&store.conn()?)?;
    Ok(rows
        .into_iter()
        .map(|r| (r.status, r.n.unwrap_or(0)))
        .collect())
}
