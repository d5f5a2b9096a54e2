//! One bounded step of pruning per kind of row: find what a policy makes old, skip what
//! something live needs, and remove (or, for a dry run, count) at most a budget of rows.
//!
//! Invariants:
//! - a step removes at most its budget of rows, whatever the kind, and visits a bounded number
//!   of candidate sessions or runs, so the one write it runs in stays short;
//! - liveness is checked inside the same transaction as the delete (the caller's write), so a run
//!   that starts, or a session that is touched, between two steps is seen by the next;
//! - rows that others reference go after what references them (journals and waits before their
//!   run, a child run before its parent), so every foreign key holds after every step;
//! - a dry run walks the same candidates with the same checks and counts instead of deleting.
//!
//! What each kind calls old and live is documented in [`super::retention`].

use std::collections::BTreeMap;

use crate::sql::db::Db;

use crate::error::Result;
use crate::query;
use crate::retention::Kind;

// The statements the plan tests pin (`crate::plans::hot_queries`), as macros so that the
// registry reads the very SQL that runs.

/// One batch of idempotency rows recorded before `$cutoff`, oldest first.
macro_rules! idempotency_batch_query {
    ($cutoff:expr, $budget:expr) => {
        $crate::query!(
            "DELETE FROM action_idempotency WHERE (account_id, action, client_request_id) IN \
             (SELECT account_id, action, client_request_id FROM action_idempotency \
              INDEXED BY action_idempotency_by_created WHERE created_at < ?1 \
              ORDER BY created_at LIMIT ?2)",
            $cutoff,
            $budget
        )
    };
}

/// One batch of a session's events: all but its newest `$keep`, and none a continuation of the
/// session names, oldest first.
macro_rules! session_events_batch_query {
    ($session:expr, $keep:expr, $budget:expr) => {
        $crate::query!(
            "DELETE FROM session_events WHERE session_id = ?1 AND seq IN \
             (SELECT seq FROM session_events WHERE session_id = ?1 \
              AND seq <= (SELECT MAX(seq) FROM session_events WHERE session_id = ?1) - ?2 \
              AND id NOT IN (SELECT initiating_event_id FROM session_continuations \
                             WHERE (predecessor_session_id = ?1 OR successor_session_id = ?1) \
                             AND initiating_event_id IS NOT NULL) \
              ORDER BY seq LIMIT ?3)",
            $session,
            $keep,
            $budget
        )
    };
}

/// Terminal runs that ended before `$cutoff`, from `($at, $id)` on, by `runs_by_finished`.
macro_rules! ended_runs_query {
    ($cutoff:expr, $at:expr, $id:expr, $chunk:expr) => {
        $crate::query!(
            r#"SELECT id, finished_at AS "finished_at!" FROM runs INDEXED BY runs_by_finished
               WHERE finished_at IS NOT NULL AND finished_at < ?1 AND (finished_at, id) >= (?2, ?3)
               AND status IN ('succeeded', 'failed', 'canceled')
               ORDER BY finished_at, id LIMIT ?4"#,
            $cutoff,
            $at,
            $id,
            $chunk
        )
    };
}

/// Root runs that ended before `$cutoff`, from `($at, $id)` on, by `runs_by_finished`.
macro_rules! ended_roots_query {
    ($cutoff:expr, $at:expr, $id:expr, $chunk:expr) => {
        $crate::query!(
            r#"SELECT id, finished_at AS "finished_at!" FROM runs INDEXED BY runs_by_finished
               WHERE finished_at IS NOT NULL AND finished_at < ?1 AND (finished_at, id) >= (?2, ?3)
               AND status IN ('succeeded', 'failed', 'canceled') AND id = root_run_id
               ORDER BY finished_at, id LIMIT ?4"#,
            $cutoff,
            $at,
            $id,
            $chunk
        )
    };
}

/// One batch of the journal entries of a tree's runs.
macro_rules! tree_journal_batch_query {
    ($root:expr, $budget:expr) => {
        $crate::query!(
            "DELETE FROM run_journal WHERE (run_id, seq) IN \
             (SELECT j.run_id, j.seq FROM runs AS r INDEXED BY runs_by_root \
              JOIN run_journal AS j ON j.run_id = r.id WHERE r.root_run_id = ?1 LIMIT ?2)",
            $root,
            $budget
        )
    };
}

pub(crate) use {
    ended_roots_query, ended_runs_query, idempotency_batch_query, session_events_batch_query,
    tree_journal_batch_query,
};

/// How many candidate sessions or runs one query fetches.
const CHUNK: i64 = 256;

/// Rows removed (or that would be), per table.
pub(crate) type Tally = BTreeMap<&'static str, u64>;

/// The tables a kind removes rows from, so a report lists each even when nothing went.
pub(crate) fn tables(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::SessionEvents => &["session_events"],
        Kind::RunJournal => &["run_journal"],
        Kind::Runs => &["run_journal", "run_event_waits", "runs"],
        Kind::ActionIdempotency => &["action_idempotency"],
    }
}

/// Where a kind's walk resumes: at a candidate (inclusive: it may have rows left) or after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Position {
    /// At this key, inclusive (the start is at the smallest key).
    At(i64, String),
    /// Past this key.
    After(i64, String),
}

impl Position {
    pub(crate) fn start() -> Self {
        Position::At(i64::MIN, String::new())
    }
}

/// One kind's pass over the file: its policy, resolved to a cutoff, and where it is.
#[derive(Debug, Clone)]
pub(crate) struct Pass {
    pub(crate) kind: Kind,
    /// Rows (or what they hang off) older than this, epoch milliseconds, are old.
    pub(crate) cutoff: i64,
    /// How many of a session's newest events stay (session events only).
    pub(crate) keep: i64,
    /// For the journal pass: the cutoff of the `runs` policy, when there is one. A real prune
    /// removes those trees first, journals and all; a dry run must not count their journals
    /// twice, so the journal pass leaves them to the runs pass.
    pub(crate) trees_cutoff: Option<i64>,
    pub(crate) position: Position,
}

/// What one step did: rows per table, where the next step resumes, and whether the kind is done.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) tally: Tally,
    pub(crate) position: Position,
    pub(crate) done: bool,
}

/// How a step treats what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Delete, at most `budget` rows in all, visiting at most `budget` candidates.
    Delete { budget: i64 },
    /// Count everything, without limit.
    Count,
}

impl Mode {
    fn budget(self) -> i64 {
        match self {
            Mode::Delete { budget } => budget,
            Mode::Count => i64::MAX,
        }
    }
}

/// Runs one step of `pass` on `conn` from `pass.position`.
pub(crate) fn step(conn: &Db, pass: &Pass, mode: Mode) -> Result<Step> {
    match pass.kind {
        Kind::ActionIdempotency => idempotency(conn, pass, mode),
        Kind::SessionEvents => walk(conn, pass, mode, sessions_after, session_events),
        Kind::RunJournal => walk(conn, pass, mode, ended_runs_after, journal_of_run),
        Kind::Runs => walk(conn, pass, mode, ended_roots_after, run_tree),
    }
}

fn idempotency(conn: &Db, pass: &Pass, mode: Mode) -> Result<Step> {
    let n = match mode {
        Mode::Delete { budget } => {
            idempotency_batch_query!(pass.cutoff, budget).execute(conn)? as i64
        }
        Mode::Count => query!(
            r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM action_idempotency WHERE created_at < ?1"#,
            pass.cutoff
        )
        .fetch_one(conn)?
        .n,
    };
    Ok(Step {
        tally: Tally::from([("action_idempotency", n as u64)]),
        position: pass.position.clone(),
        // The deleted rows are gone from the range, so a short step found the last of them.
        done: n < mode.budget(),
    })
}

/// The candidates after a position, in key order: `(sort key, id)` pairs.
type Candidates = fn(&Db, &Pass, &Position) -> Result<Vec<(i64, String)>>;
/// Removes (or counts) at most `budget` rows of one candidate; returns the rows per table and
/// whether the candidate has none left that this kind removes.
type Remove = fn(&Db, &Pass, &str, Mode, i64) -> Result<(Tally, bool)>;

/// Walks the candidates of a kind from `pass.position` until the budget of rows or of visits is
/// spent, or none is left.
fn walk(
    conn: &Db,
    pass: &Pass,
    mode: Mode,
    candidates: Candidates,
    remove: Remove,
) -> Result<Step> {
    let mut tally = Tally::new();
    let mut left = mode.budget();
    let mut visits = mode.budget();
    let mut position = pass.position.clone();
    loop {
        let chunk = candidates(conn, pass, &position)?;
        if chunk.is_empty() {
            return Ok(Step {
                tally,
                position,
                done: true,
            });
        }
        for (key, id) in chunk {
            let (removed, finished) = remove(conn, pass, &id, mode, left)?;
            for (table, n) in removed {
                *tally.entry(table).or_default() += n;
                left -= n as i64;
            }
            visits -= 1;
            position = if finished {
                Position::After(key, id)
            } else {
                Position::At(key, id)
            };
            if left <= 0 || visits <= 0 {
                return Ok(Step {
                    tally,
                    position,
                    done: false,
                });
            }
        }
    }
}

/// Sessions last touched before the cutoff, by id (the sort key is unused: 0).
fn sessions_after(conn: &Db, pass: &Pass, position: &Position) -> Result<Vec<(i64, String)>> {
    let rows = match position {
        Position::At(_, id) => query!(
            "SELECT id FROM sessions WHERE id >= ?1 AND updated_at < ?2 ORDER BY id LIMIT ?3",
            id,
            pass.cutoff,
            CHUNK
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (0, r.id))
        .collect(),
        Position::After(_, id) => query!(
            "SELECT id FROM sessions WHERE id > ?1 AND updated_at < ?2 ORDER BY id LIMIT ?3",
            id,
            pass.cutoff,
            CHUNK
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (0, r.id))
        .collect(),
    };
    Ok(rows)
}

/// Whether something live needs the events of the old session `session`: a live run in it or in
/// one of its child sessions, or a session of its continuation chain touched since the cutoff
/// or holding a live run.
fn session_needed(conn: &Db, pass: &Pass, session: &str) -> Result<bool> {
    let live_run = query!(
        "SELECT id FROM runs WHERE session_id = ?1 \
         AND status IN ('queued', 'claimed', 'running', 'waiting') LIMIT 1",
        session
    )
    .fetch_optional(conn)?
    .is_some()
        || query!(
            "SELECT r.id FROM sessions AS c JOIN runs AS r ON r.session_id = c.id \
             WHERE c.parent_session_id = ?1 \
             AND r.status IN ('queued', 'claimed', 'running', 'waiting') LIMIT 1",
            session
        )
        .fetch_optional(conn)?
        .is_some();
    if live_run {
        return Ok(true);
    }
    let origin = query!(
        "SELECT origin_session_id FROM session_continuations WHERE successor_session_id = ?1",
        session
    )
    .fetch_optional(conn)?
    .map_or_else(|| session.to_owned(), |edge| edge.origin_session_id);
    Ok(query!(
        "SELECT m.id FROM sessions AS m \
         WHERE (m.id = ?1 OR m.id IN \
                (SELECT successor_session_id FROM session_continuations WHERE origin_session_id = ?1)) \
         AND (m.updated_at >= ?2 OR EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = m.id \
              AND r.status IN ('queued', 'claimed', 'running', 'waiting'))) \
         LIMIT 1",
        origin,
        pass.cutoff
    )
    .fetch_optional(conn)?
    .is_some())
}

/// The events of an old session, all but its newest `keep` and any a continuation names.
fn session_events(
    conn: &Db,
    pass: &Pass,
    session: &str,
    mode: Mode,
    budget: i64,
) -> Result<(Tally, bool)> {
    if session_needed(conn, pass, session)? {
        return Ok((Tally::new(), true));
    }
    let n = match mode {
        Mode::Delete { .. } => {
            session_events_batch_query!(session, pass.keep, budget).execute(conn)? as i64
        }
        Mode::Count => query!(
            r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM session_events WHERE session_id = ?1
               AND seq <= (SELECT MAX(seq) FROM session_events WHERE session_id = ?1) - ?2
               AND id NOT IN (SELECT initiating_event_id FROM session_continuations
                              WHERE (predecessor_session_id = ?1 OR successor_session_id = ?1)
                              AND initiating_event_id IS NOT NULL)"#,
            session,
            pass.keep
        )
        .fetch_one(conn)?
        .n,
    };
    Ok((Tally::from([("session_events", n as u64)]), n < budget))
}

/// Terminal runs that ended before the cutoff, by `(finished_at, id)`.
fn ended_runs_after(conn: &Db, pass: &Pass, position: &Position) -> Result<Vec<(i64, String)>> {
    let rows = match position {
        Position::At(at, id) => ended_runs_query!(pass.cutoff, at, id, CHUNK)
            .fetch_all(conn)?
            .into_iter()
            .map(|r| (r.finished_at, r.id))
            .collect(),
        Position::After(at, id) => query!(
            r#"SELECT id, finished_at AS "finished_at!" FROM runs INDEXED BY runs_by_finished
               WHERE finished_at IS NOT NULL AND finished_at < ?1 AND (finished_at, id) > (?2, ?3)
               AND status IN ('succeeded', 'failed', 'canceled')
               ORDER BY finished_at, id LIMIT ?4"#,
            pass.cutoff,
            at,
            id,
            CHUNK
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (r.finished_at, r.id))
        .collect(),
    };
    Ok(rows)
}

/// Root runs (`id = root_run_id`) that ended before the cutoff, by `(finished_at, id)`.
fn ended_roots_after(conn: &Db, pass: &Pass, position: &Position) -> Result<Vec<(i64, String)>> {
    let rows = match position {
        Position::At(at, id) => ended_roots_query!(pass.cutoff, at, id, CHUNK)
            .fetch_all(conn)?
            .into_iter()
            .map(|r| (r.finished_at, r.id))
            .collect(),
        Position::After(at, id) => query!(
            r#"SELECT id, finished_at AS "finished_at!" FROM runs INDEXED BY runs_by_finished
               WHERE finished_at IS NOT NULL AND finished_at < ?1 AND (finished_at, id) > (?2, ?3)
               AND status IN ('succeeded', 'failed', 'canceled') AND id = root_run_id
               ORDER BY finished_at, id LIMIT ?4"#,
            pass.cutoff,
            at,
            id,
            CHUNK
        )
        .fetch_all(conn)?
        .into_iter()
        .map(|r| (r.finished_at, r.id))
        .collect(),
    };
    Ok(rows)
}

/// Whether the tree rooted at `root` holds a live run.
fn tree_live(conn: &Db, root: &str) -> Result<bool> {
    Ok(query!(
        "SELECT id FROM runs INDEXED BY runs_by_root WHERE root_run_id = ?1 \
         AND status IN ('queued', 'claimed', 'running', 'waiting') LIMIT 1",
        root
    )
    .fetch_optional(conn)?
    .is_some())
}

/// The journal of one ended run, unless its tree holds a live run.
fn journal_of_run(
    conn: &Db,
    pass: &Pass,
    run: &str,
    mode: Mode,
    budget: i64,
) -> Result<(Tally, bool)> {
    let root = query!("SELECT root_run_id FROM runs WHERE id = ?1", run).fetch_optional(conn)?;
    let Some(root) = root else {
        return Ok((Tally::new(), true));
    };
    if tree_live(conn, &root.root_run_id)? {
        return Ok((Tally::new(), true));
    }
    if let (Mode::Count, Some(cutoff)) = (mode, pass.trees_cutoff) {
        if tree_removable(conn, &root.root_run_id, cutoff)? {
            return Ok((Tally::new(), true));
        }
    }
    let n =
        match mode {
            Mode::Delete { .. } => query!(
                "DELETE FROM run_journal WHERE run_id = ?1 AND seq IN \
             (SELECT seq FROM run_journal WHERE run_id = ?1 ORDER BY seq LIMIT ?2)",
                run,
                budget
            )
            .execute(conn)? as i64,
            Mode::Count => query!(
                r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM run_journal WHERE run_id = ?1"#,
                run
            )
            .fetch_one(conn)?
            .n,
        };
    Ok((Tally::from([("run_journal", n as u64)]), n < budget))
}

/// Whether every run of the tree rooted at `root` is terminal and ended before `cutoff`.
fn tree_removable(conn: &Db, root: &str, cutoff: i64) -> Result<bool> {
    Ok(query!(
        "SELECT id FROM runs INDEXED BY runs_by_root WHERE root_run_id = ?1 \
         AND (status IN ('queued', 'claimed', 'running', 'waiting') \
              OR finished_at IS NULL OR finished_at >= ?2) LIMIT 1",
        root,
        cutoff
    )
    .fetch_optional(conn)?
    .is_none())
}

/// A whole ended tree rooted at `root`, when every run of it ended before the cutoff: journals,
/// then waits, then runs deepest first, at most `budget` rows in all.
fn run_tree(conn: &Db, pass: &Pass, root: &str, mode: Mode, budget: i64) -> Result<(Tally, bool)> {
    if !tree_removable(conn, root, pass.cutoff)? {
        return Ok((Tally::new(), true));
    }
    let mut tally = Tally::new();
    let mut left = budget;
    let (journal, waits, runs) = match mode {
        Mode::Delete { .. } => {
            let journal = tree_journal_batch_query!(root, left).execute(conn)? as i64;
            left -= journal;
            let waits = query!(
                "DELETE FROM run_event_waits WHERE (run_id, wait_id) IN \
                 (SELECT w.run_id, w.wait_id FROM runs AS r INDEXED BY runs_by_root \
                  JOIN run_event_waits AS w ON w.run_id = r.id WHERE r.root_run_id = ?1 LIMIT ?2)",
                root,
                left
            )
            .execute(conn)? as i64;
            left -= waits;
            // Deepest first: a run goes only once no child references it.
            let runs = query!(
                "DELETE FROM runs WHERE id IN (SELECT id FROM runs INDEXED BY runs_by_root \
                 WHERE root_run_id = ?1 ORDER BY depth DESC LIMIT ?2)",
                root,
                left
            )
            .execute(conn)? as i64;
            left -= runs;
            (journal, waits, runs)
        }
        Mode::Count => {
            let n = query!(
                r#"SELECT
                     CAST((SELECT count(*) FROM runs AS r JOIN run_journal AS j ON j.run_id = r.id
                           WHERE r.root_run_id = ?1) AS INTEGER) AS "journal!",
                     CAST((SELECT count(*) FROM runs AS r JOIN run_event_waits AS w ON w.run_id = r.id
                           WHERE r.root_run_id = ?1) AS INTEGER) AS "waits!",
                     CAST((SELECT count(*) FROM runs WHERE root_run_id = ?1) AS INTEGER) AS "runs!""#,
                root
            )
            .fetch_one(conn)?;
            (n.journal, n.waits, n.runs)
        }
    };
    tally.insert("run_journal", journal as u64);
    tally.insert("run_event_waits", waits as u64);
    tally.insert("runs", runs as u64);
    Ok((tally, left > 0))
}
