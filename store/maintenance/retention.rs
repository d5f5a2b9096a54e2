//! Retention policies (`retention_policies`): which kinds of rows pruning may remove, and from
//! what age.
//!
//! Invariants:
//! - no row for a kind means that kind is never pruned; a policy is opt-in, set per kind;
//! - the policies live in the database, so the CLI and every server process on the file prune
//!   with the same ones;
//! - a policy has an age of at least one millisecond, and a count only where one fits (session
//!   events), of at least 1; anything else is refused with [`Error::Invalid`](crate::Error::Invalid) before a write.
//!
//! What "old" means, per kind (`cutoff` is the prune's start time minus `max_age_ms`):
//!
//! | kind | removes | when |
//! |---|---|---|
//! | `session_events` | a session's events, all but its newest `keep_count` (default 1) | the session was last touched (`sessions.updated_at`, moved by every append) before `cutoff`, and so was every session of its continuation chain |
//! | `run_journal` | the journal of an ended run (the run row stays) | the run is terminal and ended (`finished_at`) before `cutoff` |
//! | `runs` | a whole run tree (`root_run_id`): its runs, their journals and waits | every run of the tree is terminal and ended before `cutoff` |
//! | `action_idempotency` | an idempotency row | it was recorded (`created_at`) before `cutoff`: `max_age_ms` is the replay window |
//!
//! What stays whatever its age, because something live needs it:
//! - a non-terminal run (queued, claimed, running, waiting), its journal and its waits; and every
//!   run of a tree holding one, with its journal (a live parent reads its children's results, a
//!   continue-as-new successor shares its predecessor's tree);
//! - the events of a session that a live run uses (its own runs or a child session's), or that
//!   belongs to a continuation chain with a recently touched session or a live run;
//! - an event that a continuation from or to its session names as its initiating event;
//! - the newest event of every session, so the next append continues the session's `seq`
//!   instead of starting again at 1 (a replay after a seq stays correct);
//! - an idempotency row inside its replay window.
//!
//! Left out on purpose: trigger firings and event claims (their unique keys are what make a
//! firing exactly-once; removing one would let the same activity fire again), sessions and
//! agents themselves (a user deletes them), and the audit log (its own retention).

use crate::sql::db::Db;

use crate::error::Result;
use crate::query_as;
use crate::schema::retention_policies::{self, Row};
use crate::values::check::invalid;
use crate::Store;

pub use crate::schema::retention_policies::Kind;

/// How long a kind of row is kept, and for session events how many of a session's newest stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// How old a row (or what it hangs off) must be before pruning may remove it, in
    /// milliseconds; at least 1.
    pub max_age_ms: i64,
    /// For [`Kind::SessionEvents`] only: how many of an old session's newest events stay (at
    /// least 1; `None` keeps 1). Any other kind refuses a count.
    pub keep_count: Option<i64>,
}

impl RetentionPolicy {
    /// A policy by age alone.
    pub fn max_age(max_age_ms: i64) -> Self {
        Self {
            max_age_ms,
            keep_count: None,
        }
    }
}

fn check(kind: Kind, policy: &RetentionPolicy) -> Result<()> {
    if policy.max_age_ms < 1 {
        return Err(invalid(
            "policy.max_age_ms",
            format!("is {}, and must be at least 1", policy.max_age_ms),
        ));
    }
    match (kind, policy.keep_count) {
        (_, None) => Ok(()),
        (Kind::SessionEvents, Some(n)) if n >= 1 => Ok(()),
        (Kind::SessionEvents, Some(n)) => Err(invalid(
            "policy.keep_count",
            format!("is {n}, and must be at least 1: a session keeps its newest event for its seq"),
        )),
        (kind, Some(_)) => Err(invalid(
            "policy.keep_count",
            format!("applies to session_events only, not to {}", kind.as_str()),
        )),
    }
}

/// Every policy row, by kind, read on `conn`.
pub(crate) fn policies(conn: &Db) -> Result<Vec<Row>> {
    query_as!(
        Row,
        "SELECT kind, max_age_ms, keep_count, updated_at FROM retention_policies ORDER BY kind"
    )
    .fetch_all(conn)
}

impl Store {
    /// Sets the retention policy of `kind`, replacing any earlier one, and returns the stored
    /// row. Pruning ([`Store::prune`]) applies it from then on, in every process on the file.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`policy.max_age_ms` under 1, `policy.keep_count` under 1 or given for
    /// a kind other than session events); [`Error::Sqlite`] otherwise.
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::retention::{Kind, RetentionPolicy};
    /// use seed_agents_store::Store;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("agents.sqlite"))?;
    /// const DAY_MS: i64 = 24 * 60 * 60 * 1000;
    /// store.set_retention_policy(Kind::ActionIdempotency, &RetentionPolicy::max_age(7 * DAY_MS))?;
    /// assert_eq!(store.retention_policies()?[0].max_age_ms, 7 * DAY_MS);
    /// assert!(store.clear_retention_policy(Kind::ActionIdempotency)?);
    /// assert!(store.retention_policies()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Error::Invalid`]: crate::Error::Invalid
    /// [`Error::Sqlite`]: crate::Error::Sqlite
    pub fn set_retention_policy(&self, kind: Kind, policy: &RetentionPolicy) -> Result<Row> {
        check(kind, policy)?;
        self.write(|tx, now| {
            let row = Row {
                kind,
                max_age_ms: policy.max_age_ms,
                keep_count: policy.keep_count,
                updated_at: now,
            };
            if retention_policies::update(tx, &row)? == 0 {
                retention_policies::insert(tx, &row)?;
            }
            Ok(row)
        })
    }

    /// Every retention policy set, ordered by kind; a kind without a row is never pruned.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    ///
    /// [`Error::Sqlite`]: crate::Error::Sqlite
    pub fn retention_policies(&self) -> Result<Vec<Row>> {
        policies(&self.reading()?.db())
    }

    /// Removes the retention policy of `kind`, so that kind is kept forever again; `false` when
    /// it had none.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    ///
    /// [`Error::Sqlite`]: crate::Error::Sqlite
    pub fn clear_retention_policy(&self, kind: Kind) -> Result<bool> {
        self.write(|tx, _| Ok(retention_policies::delete(tx, kind)? > 0))
    }
}
