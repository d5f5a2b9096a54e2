//! The run queue and the run tree: every execution is a row of `runs`, and `runs_dispatch` is the
//! queue.
//!
//! This module owns the life cycle of a run (enqueue, claim, start, park, wake, requeue, finalize,
//! cancel, lease renewal, continue-as-new, the boot sweep) and the session status mirror
//! (`mirror_session`). Invariants, each kept inside one `BEGIN IMMEDIATE` transaction:
//!
//! - a queued run is claimed at most once: the claim is one `UPDATE ... RETURNING` whose
//!   candidate comes from `runs_dispatch` and whose write lock is taken before it reads, so two
//!   claimers (threads or processes) serialize on SQLite's write lock and the second sees the
//!   first's claim;
//! - at most one claimed or running agent run per session, and per-kind concurrency caps, are
//!   checked by that same statement;
//! - `sessions.status` is re-derived from `runs` in the transaction of every run change that
//!   touches a session, so it can never disagree with the runs table;
//! - a run that becomes terminal loses its waits, its lease, and rolls its usage into its parent
//!   in the transaction that ends it.
//!
//! No transaction is held across anything but SQLite.

use rand::Rng;
use rusqlite::{Connection, TransactionBehavior};

use crate::accounts::new_id;
use crate::cbor::Cbor;
use crate::error::{Error, Result};
use crate::lease::{fence, Claim};
use crate::payload::{
    Ipld, OpenMap, RunBudget, RunErrorInfo, RunInput, RunOutput, RunUsage, RunWait,
};
use crate::schema::runs::{self, Kind, Origin, Queue, Status};
use crate::Store;
use crate::{query, query_as};

/// How long a claim's lease lasts: sixty seconds from the claim or the last renewal.
pub const LEASE_MS: i64 = 60_000;
/// The first retry backoff: five seconds, doubling per attempt.
pub const BACKOFF_BASE_MS: i64 = 5_000;
/// The retry backoff never exceeds five minutes (before jitter).
pub const BACKOFF_CAP_MS: i64 = 300_000;
/// At most this much random jitter is added to a retry backoff.
pub const BACKOFF_JITTER_MS: i64 = 1_000;

/// A run to enqueue. Build it with [`NewRun::new`] and set what differs from the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// A caller-chosen id: enqueueing the same id twice returns the first row. `None` draws one.
    pub id: Option<String>,
    /// The owning account (created when missing).
    pub account_id: String,
    /// Agent turn or workflow.
    pub kind: Kind,
    /// Who enqueues it.
    pub origin: Origin,
    /// The run's title; required, stored trimmed.
    pub title: String,
    /// The parent run (same account), which sets root and depth.
    pub parent_run_id: Option<String>,
    /// The parent's delegate call that spawned this run.
    pub parent_tool_call_id: Option<String>,
    /// The agent.
    pub agent_id: Option<String>,
    /// The transcript session of an agent run.
    pub session_id: Option<String>,
    /// The trigger firing that started it.
    pub trigger_firing_id: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// A script run's module digest.
    pub source_cid: Option<String>,
    /// A script run's module.
    pub source_text: Option<String>,
    /// The run's input.
    pub input: RunInput,
    /// Interactive runs are claimed before background ones.
    pub queue: Queue,
    /// How many attempts a retryable failure may use (at least 1).
    pub max_attempts: i64,
    /// Not claimed before this time.
    pub not_before: Option<i64>,
    /// The run's budget.
    pub budget: Option<RunBudget>,
}

impl NewRun {
    /// A root run with an empty input, one attempt, on the background queue.
    pub fn new(
        account_id: impl Into<String>,
        kind: Kind,
        origin: Origin,
        title: impl Into<String>,
    ) -> Self {
        NewRun {
            id: None,
            account_id: account_id.into(),
            kind,
            origin,
            title: title.into(),
            parent_run_id: None,
            parent_tool_call_id: None,
            agent_id: None,
            session_id: None,
            trigger_firing_id: None,
            model: None,
            source_cid: None,
            source_text: None,
            input: RunInput::default(),
            queue: Queue::Background,
            max_attempts: 1,
            not_before: None,
            budget: None,
        }
    }
}

/// Per-kind concurrency caps of [`Store::claim_next_run`]: a kind is not claimed while this many
/// of its runs are claimed or running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// Cap on claimed or running agent runs.
    pub agent: u32,
    /// Cap on claimed or running workflow runs.
    pub workflow: u32,
}

impl Default for ClaimLimits {
    /// No cap beyond the one-agent-run-per-session rule.
    fn default() -> Self {
        ClaimLimits {
            agent: u32::MAX,
            workflow: u32::MAX,
        }
    }
}

/// How a run ends, for [`Store::finalize_run`].
// Built once per run end and moved straight into the store: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// It succeeded with this output (which may carry `unmetObligations`).
    Succeeded(RunOutput),
    /// It failed; a retryable error with attempts left requeues it with backoff.
    Failed(RunErrorInfo),
    /// It was canceled.
    Canceled,
}

/// What [`Store::finalize_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finalized {
    /// The run is now terminal.
    Finished(runs::Row),
    /// A retryable failure with attempts left: the run is queued again after a backoff.
    Retrying(runs::Row),
    /// The run was already canceled; canceled is sticky and nothing was written.
    AlreadyCanceled(runs::Row),
}

/// What [`Store::resolve_child`] did to the parent.
// Returned once per resolution; boxing the row would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ChildResolution {
    /// Other children are still awaited (their delegate call ids).
    Pending(Vec<String>),
    /// That was the last awaited child: the parent is queued again.
    Requeued(runs::Row),
    /// The parent does not wait for that child (not waiting on children, or not for this call);
    /// nothing was written.
    NotAwaited,
}

/// What [`Store::cancel_run_tree`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancelReport {
    /// Queued and waiting members now canceled.
    pub canceled: Vec<String>,
    /// Claimed and running members: a worker holds them, and it must stop them and finalize
    /// them as canceled.
    pub live: Vec<String>,
}

/// Which rows the boot sweep may take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepMode {
    /// One service process: every claimed or running row was left by the previous process.
    SingleProcess,
    /// Several processes share the file: only rows whose lease has expired, so a live peer's
    /// work is never stolen.
    MultiProcess,
}

/// A continue-as-new: the current run ends succeeded and a successor starts with a fresh journal.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinueAsNew {
    /// The ending run's output.
    pub output: RunOutput,
    /// The state the successor carries.
    pub input: RunInput,
    /// The successor's title; `None` keeps the predecessor's.
    pub title: Option<String>,
}

// The hot statements below are each written once, as a `macro_rules!` around a checked `query!`
// or `query_as!`: the store runs them with real arguments and [`hot_queries`] reads their checked
// SQL (`Query::sql`) with placeholder arguments, so the plan tests pin exactly what runs.

/// The claim: one statement. `busy` counts live runs per kind through `runs_dispatch`; each of
/// the four candidate branches walks `runs_dispatch` for one queue, either the undelayed rows
/// (`not_before IS NULL`, already in created_at order in the index) or the delayed rows that are
/// due (few: backoffs and timers). The interactive branches win, then created_at, then id.
/// ?1 owner, ?2 now, ?3 agent cap, ?4 workflow cap, ?5 lease expiry. Returns the claimed row.
macro_rules! claim_next_query {
    ($owner:expr, $now:expr, $agents:expr, $workflows:expr, $expiry:expr) => {
        query_as!(
            runs::Row,
            "WITH busy AS (
       SELECT coalesce(sum(kind = 'agent'), 0) AS agents, coalesce(sum(kind = 'workflow'), 0) AS workflows
       FROM runs INDEXED BY runs_dispatch WHERE status IN ('claimed', 'running')
     ),
     candidate(id, q, created_at) AS (
       SELECT * FROM (SELECT r.id, 0, r.created_at FROM runs AS r INDEXED BY runs_dispatch
         WHERE r.status = 'queued' AND r.queue = 'interactive' AND r.not_before IS NULL
           AND ((r.kind = 'agent' AND (SELECT agents FROM busy) < ?3 AND (r.session_id IS NULL OR NOT EXISTS (
                  SELECT 1 FROM runs AS s INDEXED BY runs_by_session WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running'))))
             OR (r.kind = 'workflow' AND (SELECT workflows FROM busy) < ?4))
         ORDER BY r.created_at, r.id LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT r.id, 0, r.created_at FROM runs AS r INDEXED BY runs_dispatch
         WHERE r.status = 'queued' AND r.queue = 'interactive' AND r.not_before <= ?2
           AND ((r.kind = 'agent' AND (SELECT agents FROM busy) < ?3 AND (r.session_id IS NULL OR NOT EXISTS (
                  SELECT 1 FROM runs AS s INDEXED BY runs_by_session WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running'))))
             OR (r.kind = 'workflow' AND (SELECT workflows FROM busy) < ?4))
         ORDER BY r.created_at, r.id LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT r.id, 1, r.created_at FROM runs AS r INDEXED BY runs_dispatch
         WHERE r.status = 'queued' AND r.queue = 'background' AND r.not_before IS NULL
           AND ((r.kind = 'agent' AND (SELECT agents FROM busy) < ?3 AND (r.session_id IS NULL OR NOT EXISTS (
                  SELECT 1 FROM runs AS s INDEXED BY runs_by_session WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running'))))
             OR (r.kind = 'workflow' AND (SELECT workflows FROM busy) < ?4))
         ORDER BY r.created_at, r.id LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT r.id, 1, r.created_at FROM runs AS r INDEXED BY runs_dispatch
         WHERE r.status = 'queued' AND r.queue = 'background' AND r.not_before <= ?2
           AND ((r.kind = 'agent' AND (SELECT agents FROM busy) < ?3 AND (r.session_id IS NULL OR NOT EXISTS (
                  SELECT 1 FROM runs AS s INDEXED BY runs_by_session WHERE s.session_id = r.session_id AND s.status IN ('claimed', 'running'))))
             OR (r.kind = 'workflow' AND (SELECT workflows FROM busy) < ?4))
         ORDER BY r.created_at, r.id LIMIT 1)
     )
     UPDATE runs SET status = 'claimed', lease_owner = ?1, lease_expires_at = ?5, attempt = attempt + 1, updated_at = ?2
     WHERE id = (SELECT id FROM candidate ORDER BY q, created_at, id LIMIT 1) AND status = 'queued'
     RETURNING id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at",
            $owner,
            $now,
            $agents,
            $workflows,
            $expiry
        )
    };
}

/// Claims one specific queued run (same lease rules, same one-agent-run-per-session rule).
/// ?1 account, ?2 id, ?3 owner, ?4 now, ?5 lease expiry. Returns the claimed row.
macro_rules! claim_one_query {
    ($account:expr, $id:expr, $owner:expr, $now:expr, $expiry:expr) => {
        query_as!(
            runs::Row,
            "UPDATE runs SET status = 'claimed', lease_owner = ?3, lease_expires_at = ?5, attempt = attempt + 1, updated_at = ?4
     WHERE account_id = ?1 AND id = ?2 AND status = 'queued'
       AND (kind <> 'agent' OR session_id IS NULL OR NOT EXISTS (
         SELECT 1 FROM runs AS s INDEXED BY runs_by_session
         WHERE s.session_id = runs.session_id AND s.status IN ('claimed', 'running')))
     RETURNING id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at",
            $account,
            $id,
            $owner,
            $now,
            $expiry
        )
    };
}

/// The session status mirror, one statement: streaming iff a non-terminal agent run references
/// the session, error when its latest run failed, idle otherwise (canceled included).
/// ?1 account, ?2 session.
macro_rules! mirror_session_query {
    ($account:expr, $session:expr) => {
        query!(
            "UPDATE sessions SET status = CASE
       WHEN EXISTS (SELECT 1 FROM runs INDEXED BY runs_by_session WHERE session_id = ?2 AND kind = 'agent'
                    AND status IN ('queued', 'claimed', 'running', 'waiting')) THEN 'streaming'
       WHEN (SELECT status FROM runs INDEXED BY runs_by_session WHERE session_id = ?2
             ORDER BY created_at DESC LIMIT 1) = 'failed' THEN 'error'
       ELSE 'idle' END
     WHERE account_id = ?1 AND id = ?2",
            $account,
            $session
        )
    };
}

/// Timer waits that are due (the kind is checked after decoding `wait_cbor`). ?1 now.
macro_rules! due_timers_query {
    ($now:expr) => {
        query!(
            "SELECT account_id, id FROM runs INDEXED BY runs_dispatch
     WHERE status = 'waiting' AND queue IN ('interactive', 'background') AND not_before <= ?1",
            $now
        )
    };
}

/// Claimed and running runs, for the boot sweep.
macro_rules! live_runs_query {
    () => {
        query!(
            "SELECT account_id, id, lease_expires_at FROM runs INDEXED BY runs_dispatch
     WHERE status IN ('claimed', 'running')"
        )
    };
}

/// A run and all its descendants. ?1 account, ?2 id.
macro_rules! tree_members_query {
    ($account:expr, $id:expr) => {
        query!(
            "WITH RECURSIVE tree(id) AS (
       SELECT id FROM runs WHERE account_id = ?1 AND id = ?2
       UNION
       SELECT r.id FROM runs AS r INDEXED BY runs_by_parent JOIN tree ON r.parent_run_id = tree.id
     )
     SELECT id FROM tree",
            $account,
            $id
        )
    };
}

/// A tree by its root, oldest first. ?1 account, ?2 root.
macro_rules! run_tree_query {
    ($account:expr, $root:expr) => {
        query_as!(
            runs::Row,
            "SELECT id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at FROM runs INDEXED BY runs_by_root WHERE root_run_id = ?2 AND account_id = ?1
     ORDER BY created_at, id",
            $account,
            $root
        )
    };
}

/// A session's runs, newest first. ?1 account, ?2 session.
macro_rules! session_runs_query {
    ($account:expr, $session:expr) => {
        query_as!(
            runs::Row,
            "SELECT id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at FROM runs INDEXED BY runs_by_session WHERE session_id = ?2 AND account_id = ?1
     ORDER BY created_at DESC, id",
            $account,
            $session
        )
    };
}

/// The child of a parent's delegate call. ?1 account, ?2 parent, ?3 tool call.
macro_rules! child_by_tool_call_query {
    ($account:expr, $parent:expr, $call:expr) => {
        query_as!(
            runs::Row,
            "SELECT id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at FROM runs INDEXED BY runs_by_parent_tool_call
     WHERE parent_run_id = ?2 AND parent_tool_call_id = ?3 AND account_id = ?1
     ORDER BY created_at, id LIMIT 1",
            $account,
            $parent,
            $call
        )
    };
}

/// The hot statements of the execution-state modules by name, with the index each must use:
/// what the query-plan tests run `EXPLAIN QUERY PLAN` on. Each is the checked SQL of the
/// statement the store runs. Not a stable API.
#[doc(hidden)]
pub fn hot_queries() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (
            "claim next",
            claim_next_query!("", 0_i64, 0_i64, 0_i64, 0_i64).sql(),
            "runs_dispatch",
        ),
        (
            "claim one",
            claim_one_query!("", "", "", 0_i64, 0_i64).sql(),
            "runs_by_session",
        ),
        (
            "session mirror",
            mirror_session_query!("", "").sql(),
            "runs_by_session",
        ),
        (
            "due timers",
            due_timers_query!(0_i64).sql(),
            "runs_dispatch",
        ),
        ("boot sweep", live_runs_query!().sql(), "runs_dispatch"),
        (
            "tree members",
            tree_members_query!("", "").sql(),
            "runs_by_parent",
        ),
        ("run tree", run_tree_query!("", "").sql(), "runs_by_root"),
        (
            "session runs",
            session_runs_query!("", "").sql(),
            "runs_by_session",
        ),
        (
            "child by tool call",
            child_by_tool_call_query!("", "", "").sql(),
            "runs_by_parent_tool_call",
        ),
        (
            "journal size",
            crate::journal::journal_size_sql(),
            "PRIMARY KEY",
        ),
        (
            "waits by timeout",
            crate::waits::timeout_sweep_sql(),
            "run_event_waits_by_timeout",
        ),
        (
            "firings by trigger",
            crate::triggers::firings::list_firings_sql(),
            "trigger_firings_by_trigger",
        ),
    ]
}

/// Inserts the account row when missing (foreign keys need it), through the accounts module.
/// Re-derives `sessions.status` of `session_id` from the runs table (see the module doc). Runs
/// inside the caller's transaction.
pub(crate) fn mirror_session(conn: &Connection, account_id: &str, session_id: &str) -> Result<()> {
    mirror_session_query!(account_id, session_id).execute(conn)?;
    Ok(())
}

/// The run, or [`Error::NotFound`].
pub(crate) fn load_run(conn: &Connection, account_id: &str, id: &str) -> Result<runs::Row> {
    runs::get(conn, account_id, id)?.ok_or_else(|| Error::NotFound {
        what: "run",
        id: id.to_owned(),
    })
}

/// Whether `status` is terminal.
pub fn is_terminal(status: Status) -> bool {
    matches!(
        status,
        Status::Succeeded | Status::Failed | Status::Canceled
    )
}

/// The retry delay before attempt `attempt + 1` (without jitter): 5 s doubling, capped at 5 min.
pub fn backoff_ms(attempt: i64) -> i64 {
    let exponent = attempt.saturating_sub(1).clamp(0, 16) as u32;
    BACKOFF_BASE_MS
        .saturating_mul(1_i64 << exponent)
        .min(BACKOFF_CAP_MS)
}

/// Sets `row` queued again (from waiting), wait and lease cleared.
fn requeue_in_place(row: &mut runs::Row, now: i64) {
    row.status = Status::Queued;
    row.wait_cbor = None;
    row.not_before = None;
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.updated_at = now;
}

/// Requeues the waiting run `row` inside the caller's transaction (signal delivery, timeouts,
/// children) and mirrors its session.
pub(crate) fn requeue_waiting(conn: &Connection, row: &mut runs::Row, now: i64) -> Result<()> {
    requeue_in_place(row, now);
    runs::update(conn, row)?;
    if let Some(session) = &row.session_id {
        mirror_session(conn, &row.account_id, session)?;
    }
    Ok(())
}

/// Deletes every wait of a run.
pub(crate) fn delete_waits(conn: &Connection, run_id: &str) -> Result<()> {
    query!("DELETE FROM run_event_waits WHERE run_id = ?1", run_id).execute(conn)?;
    Ok(())
}

/// Ends `row` with `status` inside the caller's transaction: terminal fields, waits deleted,
/// usage rolled into the parent, session mirrored.
pub(crate) fn terminate(
    conn: &Connection,
    row: &mut runs::Row,
    status: Status,
    output: Option<RunOutput>,
    error: Option<RunErrorInfo>,
    now: i64,
) -> Result<()> {
    row.status = status;
    if let Some(output) = output {
        row.output_cbor = Some(Cbor::encode(&output)?);
    }
    if let Some(error) = error {
        row.error_cbor = Some(Cbor::encode(&error)?);
    }
    row.wait_cbor = None;
    row.not_before = None;
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.finished_at = Some(now);
    row.updated_at = now;
    runs::update(conn, row)?;
    delete_waits(conn, &row.id)?;
    if let Some(parent_id) = row.parent_run_id.clone() {
        roll_usage_into_parent(conn, row, &parent_id, now)?;
    }
    if let Some(session) = &row.session_id {
        mirror_session(conn, &row.account_id, session)?;
    }
    Ok(())
}

/// Adds a number to a number: integers stay integers, anything with a float becomes a float.
fn add_numbers(a: &Ipld, b: &Ipld) -> Option<Ipld> {
    match (a, b) {
        (Ipld::Integer(x), Ipld::Integer(y)) => Some(Ipld::Integer(x.saturating_add(*y))),
        (Ipld::Integer(x), Ipld::Float(y)) | (Ipld::Float(y), Ipld::Integer(x)) => {
            Some(Ipld::Float(*x as f64 + y))
        }
        (Ipld::Float(x), Ipld::Float(y)) => Some(Ipld::Float(x + y)),
        _ => None,
    }
}

/// Adds every numeric entry of `from` into `into`.
fn add_usage(into: &mut OpenMap, from: &OpenMap) {
    for (key, value) in from {
        if key == "children" {
            continue;
        }
        let sum = match into.get(key) {
            Some(existing) => add_numbers(existing, value),
            None => add_numbers(&Ipld::Integer(0), value),
        };
        if let Some(sum) = sum {
            into.insert(key.clone(), sum);
        }
    }
}

/// Rolls a terminal child's usage (its own numbers plus its own `children` roll-up) into the
/// parent's `children` map of `usage_cbor`.
fn roll_usage_into_parent(
    conn: &Connection,
    child: &runs::Row,
    parent_id: &str,
    now: i64,
) -> Result<()> {
    let Some(child_usage) = &child.usage_cbor else {
        return Ok(());
    };
    let child_usage = child_usage.decode()?;
    let Some(mut parent) = runs::get(conn, &child.account_id, parent_id)? else {
        return Ok(());
    };
    let mut usage = match &parent.usage_cbor {
        Some(u) => u.decode()?,
        None => RunUsage::default(),
    };
    let mut children = match usage.get("children") {
        Some(Ipld::Map(map)) => map.clone(),
        _ => OpenMap::new(),
    };
    add_usage(&mut children, &child_usage);
    if let Some(Ipld::Map(grandchildren)) = child_usage.get("children") {
        add_usage(&mut children, grandchildren);
    }
    usage.insert("children".into(), Ipld::Map(children));
    parent.usage_cbor = Some(Cbor::encode(&usage)?);
    parent.updated_at = now;
    runs::update(conn, &parent)?;
    Ok(())
}

/// Refuses a state transition the run's status does not allow.
fn wrong_status(row: &runs::Row, doing: &str) -> Error {
    Error::Conflict {
        what: "run",
        key: row.id.clone(),
        reason: format!("cannot {doing} a run that is {}", row.status),
    }
}

impl Store {
    /// Enqueues a run. The title is required and trimmed; a child takes its root and depth from
    /// its parent, which must exist in the same account. With a caller-chosen id, a second
    /// enqueue writes nothing and returns the existing row.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty title or `max_attempts < 1`, [`Error::NotFound`] for a
    /// parent, agent, session or trigger firing not in the account, [`Error::Conflict`] when the chosen id belongs to another
    /// account, [`Error::Sqlite`] otherwise (for example an unknown agent or session).
    pub fn enqueue_run(&mut self, new: &NewRun) -> Result<runs::Row> {
        let title = new.title.trim();
        if title.is_empty() {
            return Err(Error::Invalid {
                field: "title",
                reason: "must not be empty".into(),
            });
        }
        if new.max_attempts < 1 {
            return Err(Error::Invalid {
                field: "max_attempts",
                reason: format!("must be at least 1, got {}", new.max_attempts),
            });
        }
        if let Some(id) = &new.id {
            if id.trim().is_empty() {
                return Err(Error::Invalid {
                    field: "id",
                    reason: "must not be empty".into(),
                });
            }
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(id) = &new.id {
            let owner = query!("SELECT account_id FROM runs WHERE id = ?1", id)
                .fetch_optional(&tx)?
                .map(|r| r.account_id);
            match owner {
                Some(owner) if owner == new.account_id => {
                    return load_run(&tx, &new.account_id, id);
                }
                Some(_) => {
                    return Err(Error::Conflict {
                        what: "run",
                        key: id.clone(),
                        reason: "the id is taken".into(),
                    })
                }
                None => {}
            }
        }
        let id = new.id.clone().unwrap_or_else(new_id);
        let (root_run_id, depth) = match &new.parent_run_id {
            Some(parent_id) => {
                let parent =
                    runs::get(&tx, &new.account_id, parent_id)?.ok_or_else(|| Error::NotFound {
                        what: "parent run",
                        id: parent_id.clone(),
                    })?;
                (parent.root_run_id, parent.depth + 1)
            }
            None => (id.clone(), 0),
        };
        // Foreign keys check existence only: the agent, session and firing must also be the
        // account's own.
        if let Some(agent_id) = &new.agent_id {
            if crate::schema::agents::get(&tx, &new.account_id, agent_id)?.is_none() {
                return Err(Error::NotFound {
                    what: "agent",
                    id: agent_id.clone(),
                });
            }
        }
        if let Some(session_id) = &new.session_id {
            if crate::schema::sessions::get(&tx, &new.account_id, session_id)?.is_none() {
                return Err(Error::NotFound {
                    what: "session",
                    id: session_id.clone(),
                });
            }
        }
        if let Some(firing_id) = &new.trigger_firing_id {
            if crate::schema::trigger_firings::get(&tx, &new.account_id, firing_id)?.is_none() {
                return Err(Error::NotFound {
                    what: "trigger firing",
                    id: firing_id.clone(),
                });
            }
        }
        crate::accounts::touch(&tx, &new.account_id, now)?;
        let created_at = next_created_at(&tx, new.session_id.as_deref(), now)?;
        let row = runs::Row {
            id,
            account_id: new.account_id.clone(),
            root_run_id,
            parent_run_id: new.parent_run_id.clone(),
            parent_tool_call_id: new.parent_tool_call_id.clone(),
            continued_from_run_id: None,
            depth,
            kind: new.kind,
            agent_id: new.agent_id.clone(),
            session_id: new.session_id.clone(),
            trigger_firing_id: new.trigger_firing_id.clone(),
            origin: new.origin,
            title: Some(title.to_owned()),
            model: new.model.clone(),
            source_cid: new.source_cid.clone(),
            source_text: new.source_text.clone(),
            input_cbor: Cbor::encode(&new.input)?,
            output_cbor: None,
            error_cbor: None,
            status: Status::Queued,
            wait_cbor: None,
            attempt: 0,
            max_attempts: new.max_attempts,
            not_before: new.not_before,
            queue: new.queue,
            lease_owner: None,
            lease_expires_at: None,
            budget_cbor: new.budget.as_ref().map(Cbor::encode).transpose()?,
            usage_cbor: None,
            plan_cbor: None,
            created_at,
            started_at: None,
            finished_at: None,
            updated_at: now,
        };
        runs::insert(&tx, &row)?;
        if let Some(session) = &row.session_id {
            mirror_session(&tx, &row.account_id, session)?;
        }
        tx.commit()?;
        Ok(row)
    }

    /// Claims the next due queued run for `owner`: interactive queue first, then oldest, then by
    /// id; a kind at its cap in `limits` is skipped, and so is an agent run whose session already
    /// has a claimed or running agent run. Sets the lease (now + 60 s) and increments `attempt`.
    /// `None` when nothing is claimable.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty owner, [`Error::Sqlite`] otherwise.
    pub fn claim_next_run(
        &mut self,
        owner: &str,
        limits: ClaimLimits,
    ) -> Result<Option<runs::Row>> {
        if owner.is_empty() {
            return Err(Error::Invalid {
                field: "owner",
                reason: "must not be empty".into(),
            });
        }
        let now = self.now_ms();
        // IMMEDIATE takes the write lock before the statement reads, so a claimer never works
        // from a snapshot another claimer has already changed (and waits on the busy timeout
        // instead of failing with a stale snapshot).
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row = claim_next_query!(
            owner,
            now,
            i64::from(limits.agent),
            i64::from(limits.workflow),
            now + LEASE_MS
        )
        .fetch_optional(&tx)?;
        tx.commit()?;
        Ok(row)
    }

    /// Claims the queued run `id` for `owner` (lease, attempt + 1), unless its session already
    /// has a claimed or running agent run. `None` when it is not claimable.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the run is not in the account, [`Error::Sqlite`] otherwise.
    pub fn claim_run(
        &mut self,
        account_id: &str,
        id: &str,
        owner: &str,
    ) -> Result<Option<runs::Row>> {
        if owner.is_empty() {
            return Err(Error::Invalid {
                field: "owner",
                reason: "must not be empty".into(),
            });
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        load_run(&tx, account_id, id)?;
        let row =
            claim_one_query!(account_id, id, owner, now, now + LEASE_MS).fetch_optional(&tx)?;
        tx.commit()?;
        Ok(row)
    }

    /// Marks a claimed run running; the first `started_at` is kept across attempts.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run (see [`crate::lease`]),
    /// [`Error::NotFound`] when it is not in the account.
    pub fn start_run(&mut self, claim: &Claim) -> Result<runs::Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = fence(&tx, claim)?;
        row.status = Status::Running;
        row.started_at.get_or_insert(now);
        row.updated_at = now;
        runs::update(&tx, &row)?;
        tx.commit()?;
        Ok(row)
    }

    /// Parks the claimed or running run with `wait`: the lease is cleared and `not_before` is
    /// the wake time (a timer's `wakeAt`, an event wait's `timeoutAt`, none otherwise).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a children wait without ids, [`Error::LeaseLost`] when `claim` no
    /// longer holds the run, [`Error::NotFound`] when it is not in the account.
    pub fn park_run(&mut self, claim: &Claim, wait: &RunWait) -> Result<runs::Row> {
        if let RunWait::Children(children) = wait {
            if children.tool_call_ids.is_empty() {
                return Err(Error::Invalid {
                    field: "wait.toolCallIds",
                    reason: "a children wait needs at least one child".into(),
                });
            }
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row = park_in_tx(&tx, claim, wait, now)?;
        tx.commit()?;
        Ok(row)
    }

    /// Requeues every run waiting on a timer whose `wakeAt` is due. Event waits are woken by the
    /// wait timeout sweep instead (it journals the timeout), so they are left alone here.
    /// Returns the ids requeued.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or [`Error::Cbor`].
    pub fn wake_due_timers(&mut self) -> Result<Vec<String>> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let due = due_timers_query!(now).fetch_all(&tx)?;
        let mut woken = Vec::new();
        for timer in due {
            let mut row = load_run(&tx, &timer.account_id, &timer.id)?;
            let is_timer = matches!(
                row.wait_cbor.as_ref().map(Cbor::decode).transpose()?,
                Some(RunWait::Timer(_))
            );
            if is_timer {
                requeue_waiting(&tx, &mut row, now)?;
                woken.push(timer.id);
            }
        }
        tx.commit()?;
        Ok(woken)
    }

    /// Requeues a waiting run (any wait), clearing its wait and deleting its event waits.
    ///
    /// # Errors
    /// [`Error::Conflict`] when the run is not waiting, [`Error::NotFound`] when it is not in the
    /// account.
    pub fn requeue_run(&mut self, account_id: &str, id: &str) -> Result<runs::Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = load_run(&tx, account_id, id)?;
        if row.status != Status::Waiting {
            return Err(wrong_status(&row, "requeue"));
        }
        delete_waits(&tx, id)?;
        requeue_waiting(&tx, &mut row, now)?;
        tx.commit()?;
        Ok(row)
    }

    /// Resolves the child spawned by `tool_call_id` of a parent parked on a children wait: the
    /// call leaves the wait, and the last one requeues the parent.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the parent is not in the account, [`Error::Sqlite`] or
    /// [`Error::Cbor`] otherwise.
    pub fn resolve_child(
        &mut self,
        account_id: &str,
        parent_id: &str,
        tool_call_id: &str,
    ) -> Result<ChildResolution> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = load_run(&tx, account_id, parent_id)?;
        let wait = row.wait_cbor.as_ref().map(Cbor::decode).transpose()?;
        let outcome = match (row.status, wait) {
            (Status::Waiting, Some(RunWait::Children(mut children)))
                if children.tool_call_ids.iter().any(|c| c == tool_call_id) =>
            {
                children.tool_call_ids.retain(|c| c != tool_call_id);
                if children.tool_call_ids.is_empty() {
                    requeue_waiting(&tx, &mut row, now)?;
                    ChildResolution::Requeued(row)
                } else {
                    let pending = children.tool_call_ids.clone();
                    row.wait_cbor = Some(Cbor::encode(&RunWait::Children(children))?);
                    row.updated_at = now;
                    runs::update(&tx, &row)?;
                    ChildResolution::Pending(pending)
                }
            }
            _ => ChildResolution::NotAwaited,
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// Resumes a run parked on a budget pause: it is queued again.
    ///
    /// # Errors
    /// [`Error::Conflict`] when the run is not parked on a budget pause, [`Error::NotFound`]
    /// when it is not in the account.
    pub fn resume_budget_pause(&mut self, account_id: &str, id: &str) -> Result<runs::Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = load_run(&tx, account_id, id)?;
        let wait = row.wait_cbor.as_ref().map(Cbor::decode).transpose()?;
        if row.status != Status::Waiting || !matches!(wait, Some(RunWait::BudgetPause(_))) {
            return Err(wrong_status(&row, "resume a budget pause of"));
        }
        requeue_waiting(&tx, &mut row, now)?;
        tx.commit()?;
        Ok(row)
    }

    /// Records the claimed run's usage at a turn boundary (replacing the stored value; the
    /// `children` roll-up is kept when `usage` has none).
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run, [`Error::NotFound`] when it is
    /// not in the account.
    pub fn record_run_usage(&mut self, claim: &Claim, usage: &RunUsage) -> Result<runs::Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = fence(&tx, claim)?;
        let mut usage = usage.clone();
        if !usage.contains_key("children") {
            if let Some(old) = row.usage_cbor.as_ref().map(Cbor::decode).transpose()? {
                if let Some(children) = old.get("children") {
                    usage.insert("children".into(), children.clone());
                }
            }
        }
        row.usage_cbor = Some(Cbor::encode(&usage)?);
        row.updated_at = now;
        runs::update(&tx, &row)?;
        tx.commit()?;
        Ok(row)
    }

    /// Ends the claimed run. A retryable failure (`retryable: true`) with attempts left is
    /// queued again after 5 s doubling per attempt (at most 5 min) plus up to 1 s of jitter.
    /// Canceled is sticky: finalizing a canceled run writes nothing. A terminal run loses its
    /// waits and lease, rolls its usage into its parent's `children`, and its session is
    /// mirrored.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run (swept, reclaimed or ended),
    /// [`Error::NotFound`] when it is not in the account.
    pub fn finalize_run(&mut self, claim: &Claim, outcome: RunOutcome) -> Result<Finalized> {
        let now = self.now_ms();
        let jitter = rand::thread_rng().gen_range(0..=BACKOFF_JITTER_MS);
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = load_run(&tx, &claim.account_id, &claim.run_id)?;
        if row.status == Status::Canceled {
            return Ok(Finalized::AlreadyCanceled(row));
        }
        if !claim.holds(&row) {
            return Err(claim.lost());
        }
        let (account_id, id) = (claim.account_id.as_str(), claim.run_id.as_str());
        let done = match outcome {
            RunOutcome::Succeeded(output) => {
                terminate(&tx, &mut row, Status::Succeeded, Some(output), None, now)?;
                Finalized::Finished(row)
            }
            RunOutcome::Canceled => {
                terminate(&tx, &mut row, Status::Canceled, None, None, now)?;
                Finalized::Finished(row)
            }
            RunOutcome::Failed(error)
                if error.retryable == Some(true) && row.attempt < row.max_attempts =>
            {
                row.status = Status::Queued;
                row.error_cbor = Some(Cbor::encode(&error)?);
                row.wait_cbor = None;
                row.lease_owner = None;
                row.lease_expires_at = None;
                row.not_before = Some(now + backoff_ms(row.attempt) + jitter);
                row.updated_at = now;
                runs::update(&tx, &row)?;
                delete_waits(&tx, id)?;
                if let Some(session) = &row.session_id {
                    mirror_session(&tx, account_id, session)?;
                }
                Finalized::Retrying(row)
            }
            RunOutcome::Failed(error) => {
                terminate(&tx, &mut row, Status::Failed, None, Some(error), now)?;
                Finalized::Finished(row)
            }
        };
        tx.commit()?;
        Ok(done)
    }

    /// Cancels the tree under `id` (itself and every descendant): queued and waiting members are
    /// canceled; claimed and running members are reported as live for their workers to stop.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the run is not in the account.
    pub fn cancel_run_tree(&mut self, account_id: &str, id: &str) -> Result<CancelReport> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        load_run(&tx, account_id, id)?;
        let members = tree_members_query!(account_id, id).fetch_all(&tx)?;
        let mut report = CancelReport::default();
        for member in members.into_iter().map(|m| m.id) {
            let mut row = load_run(&tx, account_id, &member)?;
            match row.status {
                Status::Queued | Status::Waiting => {
                    terminate(&tx, &mut row, Status::Canceled, None, None, now)?;
                    report.canceled.push(member);
                }
                Status::Claimed | Status::Running => report.live.push(member),
                Status::Succeeded | Status::Failed | Status::Canceled => {}
            }
        }
        tx.commit()?;
        Ok(report)
    }

    /// Extends the lease `claim` holds to now + 60 s and returns the new expiry.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run (the run was swept, requeued,
    /// finished or claimed by another worker), [`Error::NotFound`] when it is not in the account.
    pub fn renew_lease(&mut self, claim: &Claim) -> Result<i64> {
        let now = self.now_ms();
        let expiry = now + LEASE_MS;
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        fence(&tx, claim)?;
        query!(
            "UPDATE runs SET lease_expires_at = ?3, updated_at = ?4 WHERE account_id = ?1 AND id = ?2",
            claim.account_id,
            claim.run_id,
            expiry,
            now
        )
        .execute(&tx)?;
        tx.commit()?;
        Ok(expiry)
    }

    /// Ends the claimed run as succeeded and enqueues its successor in one transaction: same
    /// tree position, kind, agent, session, source and queue, `continued_from_run_id` set, a
    /// fresh journal (the successor has its own id). Returns the successor.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run, [`Error::NotFound`] when it is
    /// not in the account.
    pub fn continue_as_new(&mut self, claim: &Claim, next: &ContinueAsNew) -> Result<runs::Row> {
        if let Some(title) = &next.title {
            if title.trim().is_empty() {
                return Err(Error::Invalid {
                    field: "title",
                    reason: "must not be empty".into(),
                });
            }
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = fence(&tx, claim)?;
        let created_at = next_created_at(&tx, row.session_id.as_deref(), now)?;
        let successor = runs::Row {
            id: new_id(),
            continued_from_run_id: Some(row.id.clone()),
            title: next
                .title
                .as_ref()
                .map(|t| t.trim().to_owned())
                .or_else(|| row.title.clone()),
            input_cbor: Cbor::encode(&next.input)?,
            output_cbor: None,
            error_cbor: None,
            status: Status::Queued,
            wait_cbor: None,
            attempt: 0,
            not_before: None,
            lease_owner: None,
            lease_expires_at: None,
            usage_cbor: None,
            plan_cbor: None,
            created_at,
            started_at: None,
            finished_at: None,
            updated_at: now,
            ..row.clone()
        };
        // The successor goes in first, so the session never looks idle in between.
        runs::insert(&tx, &successor)?;
        terminate(
            &tx,
            &mut row,
            Status::Succeeded,
            Some(next.output.clone()),
            None,
            now,
        )?;
        tx.commit()?;
        Ok(successor)
    }

    /// The boot sweep: requeues claimed and running rows (lease cleared). In
    /// [`SweepMode::MultiProcess`] only rows whose lease has expired are taken, so a live peer's
    /// work is never stolen. Returns the ids requeued.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn boot_sweep(&mut self, mode: SweepMode) -> Result<Vec<String>> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let live = live_runs_query!().fetch_all(&tx)?;
        let mut requeued = Vec::new();
        for run in live {
            if mode == SweepMode::MultiProcess && run.lease_expires_at.is_some_and(|e| e > now) {
                continue;
            }
            let mut row = load_run(&tx, &run.account_id, &run.id)?;
            requeue_waiting(&tx, &mut row, now)?;
            requeued.push(run.id);
        }
        tx.commit()?;
        Ok(requeued)
    }

    /// A run of the account.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn run(&self, account_id: &str, id: &str) -> Result<Option<runs::Row>> {
        runs::get(self.conn(), account_id, id)
    }

    /// Every run of the tree rooted at `root_run_id`, oldest first (through `runs_by_root`).
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn list_run_tree(&self, account_id: &str, root_run_id: &str) -> Result<Vec<runs::Row>> {
        run_tree_query!(account_id, root_run_id).fetch_all(self.conn())
    }

    /// The runs of a session, newest first (through `runs_by_session`).
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn list_session_runs(&self, account_id: &str, session_id: &str) -> Result<Vec<runs::Row>> {
        session_runs_query!(account_id, session_id).fetch_all(self.conn())
    }

    /// The child a parent's delegate call spawned (through `runs_by_parent_tool_call`), the
    /// oldest when a retried call spawned several.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn find_child_by_tool_call(
        &self,
        account_id: &str,
        parent_run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<runs::Row>> {
        child_by_tool_call_query!(account_id, parent_run_id, tool_call_id)
            .fetch_optional(self.conn())
    }
}

/// Parks the run under `claim` inside the caller's transaction (also used by waits, which
/// register and park in one transaction).
pub(crate) fn park_in_tx(
    conn: &Connection,
    claim: &Claim,
    wait: &RunWait,
    now: i64,
) -> Result<runs::Row> {
    let mut row = fence(conn, claim)?;
    row.status = Status::Waiting;
    row.not_before = match wait {
        RunWait::Timer(timer) => Some(timer.wake_at),
        RunWait::Event(event) => event.timeout_at,
        _ => None,
    };
    row.wait_cbor = Some(Cbor::encode(wait)?);
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.updated_at = now;
    runs::update(conn, &row)?;
    if let Some(session) = &row.session_id {
        mirror_session(conn, &claim.account_id, session)?;
    }
    Ok(row)
}

/// The `created_at` of a run enqueued now into `session_id`: `now`, or one millisecond past the
/// session's newest run when that is not earlier. The queue serializes a session's turns in
/// `created_at` order, so two turns enqueued in the same millisecond must not tie (a tie would
/// fall to the run id, which is random): this keeps a session's runs in insertion order on
/// `runs_dispatch` itself. Runs inside the caller's write transaction, so concurrent enqueuers
/// (threads or processes) serialize on it.
fn next_created_at(conn: &Connection, session_id: Option<&str>, now: i64) -> Result<i64> {
    let Some(session_id) = session_id else {
        return Ok(now);
    };
    let newest = query!(
        "SELECT CAST(max(created_at) AS INTEGER) AS newest FROM runs INDEXED BY runs_by_session WHERE session_id = ?1",
        session_id
    )
    .fetch_one(conn)?
    .newest;
    Ok(newest.map_or(now, |newest| now.max(newest.saturating_add(1))))
}
