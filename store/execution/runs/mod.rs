//! The run queue and the run tree: every execution is a row of `runs`, and `runs_dispatch` is the
//! queue.
//!
//! This module owns the life cycle of a run: `enqueue` (enqueue, continue-as-new), `claim`
//! (claim, start, lease renewal, the boot sweep), `park` (park, wake, requeue, child
//! resolution, budget pauses), `finish` (usage, finalize, cancel) and `read` (the run
//! listings), with the in-transaction steps they share in `lifecycle` and their hot statements
//! in `queries`. Invariants, each kept inside one `BEGIN IMMEDIATE` transaction:
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

mod claim;
mod enqueue;
mod finish;
pub(crate) mod lifecycle;
mod park;
pub(crate) mod queries;
mod read;

use crate::payload::{RunBudget, RunErrorInfo, RunInput, RunOutput};
use crate::schema::runs::{self, Kind, Origin, Queue, Status};

// Account deletion ends its runs through the same step as every other run end.
pub(crate) use lifecycle::terminate;

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

/// Per-kind concurrency caps of [`crate::Store::claim_next_run`]: a kind is not claimed while
/// this many of its runs are claimed or running.
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

// Read by the PostgreSQL claim, which locks and counts only what is capped.
#[cfg(feature = "postgres")]
impl ClaimLimits {
    /// The cap on `kind`'s claimed or running runs, `None` when it has none (`u32::MAX`).
    pub(crate) fn cap(&self, kind: crate::schema::runs::Kind) -> Option<u32> {
        let cap = match kind {
            crate::schema::runs::Kind::Agent => self.agent,
            crate::schema::runs::Kind::Workflow => self.workflow,
        };
        (cap != u32::MAX).then_some(cap)
    }

    /// Whether either kind has a cap.
    pub(crate) fn capped(&self) -> bool {
        *self != ClaimLimits::default()
    }
}

/// How a run ends, for [`crate::Store::finalize_run`].
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

/// What [`crate::Store::finalize_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finalized {
    /// The run is now terminal.
    Finished(runs::Row),
    /// A retryable failure with attempts left: the run is queued again after a backoff.
    Retrying(runs::Row),
    /// The run was already canceled; canceled is sticky and nothing was written.
    AlreadyCanceled(runs::Row),
}

/// What [`crate::Store::resolve_child`] did to the parent.
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

/// What [`crate::Store::cancel_run_tree`] did.
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
