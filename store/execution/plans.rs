//! The registry of hot execution-state (and pruning) statements, for the query-plan tests and
//! benchmarks.
//!
//! Invariant: each entry is the checked SQL of a statement the store runs (read from the same
//! macro or function the store calls), paired with the index its plan must use, so the plan tests
//! pin exactly what runs. The registry imports the execution modules; none of them imports it.

use crate::journal::journal_size_sql;
use crate::maintenance::passes::{
    ended_roots_query, ended_runs_query, idempotency_batch_query, session_events_batch_query,
    tree_journal_batch_query,
};
use crate::runs::queries::{
    child_by_tool_call_query, claim_next_query, claim_one_query, due_timers_query, live_runs_query,
    mirror_session_query, run_tree_query, session_runs_query, tree_members_query,
};
use crate::triggers::firings::firings_sql;
use crate::waits::timeout_sweep_sql;

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
        ("journal size", journal_size_sql(), "PRIMARY KEY"),
        (
            "waits by timeout",
            timeout_sweep_sql(),
            "run_event_waits_by_timeout",
        ),
        (
            "firings by trigger",
            firings_sql(),
            "trigger_firings_by_trigger",
        ),
        (
            "prune: idempotency batch",
            idempotency_batch_query!(0_i64, 0_i64).sql(),
            "action_idempotency_by_created",
        ),
        (
            "prune: session events batch",
            session_events_batch_query!("", 0_i64, 0_i64).sql(),
            "PRIMARY KEY",
        ),
        (
            "prune: ended runs",
            ended_runs_query!(0_i64, 0_i64, "", 0_i64).sql(),
            "runs_by_finished",
        ),
        (
            "prune: ended roots",
            ended_roots_query!(0_i64, 0_i64, "", 0_i64).sql(),
            "runs_by_finished",
        ),
        (
            "prune: tree journal batch",
            tree_journal_batch_query!("", 0_i64).sql(),
            "runs_by_root",
        ),
    ]
}
