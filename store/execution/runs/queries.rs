//! The hot statements of the run queue, each written once as a `macro_rules!` around a checked
//! `query!` or `query_as!`: the claim (the one statement that takes a queued run), the session
//! status mirror, and the sweeps and listings that walk the runs indexes.
//!
//! Invariant: the store runs these statements with real arguments and the query-plan registry
//! ([`crate::execution::plans`]) reads their checked SQL (`Query::sql`) with placeholder
//! arguments, so the plan tests pin exactly what runs. The macros name everything through
//! `$crate`, so a caller needs nothing in scope.

/// The claim: one statement. `busy` counts live runs per kind through `runs_dispatch`; each of
/// the four candidate branches walks `runs_dispatch` for one queue, either the undelayed rows
/// (`not_before IS NULL`, already in created_at order in the index; the order names
/// `not_before` too, all NULL there, so that PostgreSQL, which does not take `IS NULL` for an
/// equality, also reads the order off the index) or the delayed rows that are due (few:
/// backoffs and timers). The interactive branches win, then created_at, then id.
/// ?1 owner, ?2 now, ?3 agent cap, ?4 workflow cap, ?5 lease expiry. Returns the claimed row.
macro_rules! claim_next_query {
    ($owner:expr, $now:expr, $agents:expr, $workflows:expr, $expiry:expr) => {
        $crate::query_as!(
            $crate::schema::runs::Row,
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
         ORDER BY r.not_before, r.created_at, r.id LIMIT 1)
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
         ORDER BY r.not_before, r.created_at, r.id LIMIT 1)
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
        $crate::query_as!(
            $crate::schema::runs::Row,
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

/// The fenced statements a worker's writes on its run are: each one `UPDATE` that matches
/// only while the claim holds (the run claimed or running by that owner at that attempt) and
/// writes only the columns it changes. One that matches nothing was refused: see
/// [`crate::lease::refusal`]. Each takes ?1 account, ?2 id, ?3 owner, ?4 attempt first.
///
/// Starts the run: running, the first `started_at` kept. ?5 now. Returns the row.
macro_rules! start_run_query {
    ($account:expr, $id:expr, $owner:expr, $attempt:expr, $now:expr) => {
        $crate::query_as!(
            $crate::schema::runs::Row,
            "UPDATE runs SET status = 'running', started_at = coalesce(started_at, ?5), updated_at = ?5
     WHERE account_id = ?1 AND id = ?2 AND lease_owner = ?3 AND attempt = ?4
       AND status IN ('claimed', 'running')
     RETURNING id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at",
            $account,
            $id,
            $owner,
            $attempt,
            $now
        )
    };
}

/// Extends the lease. ?5 the new expiry, ?6 now. Returns the run's id.
macro_rules! renew_lease_query {
    ($account:expr, $id:expr, $owner:expr, $attempt:expr, $expiry:expr, $now:expr) => {
        $crate::query!(
            "UPDATE runs SET lease_expires_at = ?5, updated_at = ?6
     WHERE account_id = ?1 AND id = ?2 AND lease_owner = ?3 AND attempt = ?4
       AND status IN ('claimed', 'running')
     RETURNING id",
            $account,
            $id,
            $owner,
            $attempt,
            $expiry,
            $now
        )
    };
}

/// Ends the run with a terminal status: its output or error when given (else kept), wait,
/// timer and lease cleared, finished now. ?5 status, ?6 output, ?7 error, ?8 now. Returns the
/// row.
macro_rules! end_run_query {
    ($account:expr, $id:expr, $owner:expr, $attempt:expr, $status:expr, $output:expr, $error:expr, $now:expr) => {
        $crate::query_as!(
            $crate::schema::runs::Row,
            "UPDATE runs SET status = ?5, output_cbor = coalesce(?6, output_cbor),
       error_cbor = coalesce(?7, error_cbor), wait_cbor = NULL, not_before = NULL,
       lease_owner = NULL, lease_expires_at = NULL, finished_at = ?8, updated_at = ?8
     WHERE account_id = ?1 AND id = ?2 AND lease_owner = ?3 AND attempt = ?4
       AND status IN ('claimed', 'running')
     RETURNING id, account_id, root_run_id, parent_run_id, parent_tool_call_id, continued_from_run_id, \
         depth, kind, agent_id, session_id, trigger_firing_id, origin, title, model, source_cid, \
         source_text, input_cbor, output_cbor, error_cbor, status, wait_cbor, attempt, \
         max_attempts, not_before, queue, lease_owner, lease_expires_at, budget_cbor, usage_cbor, \
         plan_cbor, created_at, started_at, finished_at, updated_at",
            $account,
            $id,
            $owner,
            $attempt,
            $status,
            $output,
            $error,
            $now
        )
    };
}

/// The session status mirror, one statement: streaming iff a non-terminal agent run references
/// the session, error when its latest run failed, idle otherwise (canceled included).
/// ?1 account, ?2 session.
macro_rules! mirror_session_query {
    ($account:expr, $session:expr) => {
        $crate::query!(
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
        $crate::query!(
            "SELECT account_id, id FROM runs INDEXED BY runs_dispatch
     WHERE status = 'waiting' AND queue IN ('interactive', 'background') AND not_before <= ?1",
            $now
        )
    };
}

/// Claimed and running runs, for the boot sweep.
macro_rules! live_runs_query {
    () => {
        $crate::query!(
            "SELECT account_id, id, lease_expires_at FROM runs INDEXED BY runs_dispatch
     WHERE status IN ('claimed', 'running')"
        )
    };
}

/// A run and all its descendants. ?1 account, ?2 id.
macro_rules! tree_members_query {
    ($account:expr, $id:expr) => {
        $crate::query!(
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
        $crate::query_as!(
            $crate::schema::runs::Row,
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
        $crate::query_as!(
            $crate::schema::runs::Row,
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
        $crate::query_as!(
            $crate::schema::runs::Row,
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

pub(crate) use {
    child_by_tool_call_query, claim_next_query, claim_one_query, due_timers_query, end_run_query,
    live_runs_query, mirror_session_query, renew_lease_query, run_tree_query, session_runs_query,
    start_run_query, tree_members_query,
};
