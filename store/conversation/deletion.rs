//! Deleting a session or an agent: detach what keeps history, delete what the row owns.
//!
//! Invariants:
//! - deleting a session does not cascade: in one `BEGIN IMMEDIATE` transaction its runs keep
//!   their history with `session_id` nulled, its child sessions become top level, firings that
//!   created it keep their row with `session_id` nulled, and its events and the row go;
//! - deleting an agent follows the description's order in one `BEGIN IMMEDIATE` transaction,
//!   after ending its live work: every run of the agent or of its sessions that is not terminal,
//!   and every live run below one of those, is canceled with its waits (a worker holding one
//!   finds its lease gone), so nothing of the agent stays claimable or parked. Then events of
//!   its sessions; runs detached from its firings, sessions and the agent; children
//!   of its sessions that belong to other agents promoted to top level; firings; sessions;
//!   triggers (with their claims and webhook credentials); drafts; tool documents;
//!   collaborators; the agent;
//! - the agent's `state_dir` is removed from disk only after that transaction commits. A
//!   failure there is reported as [`Error::StateDirNotRemoved`], and the committed delete is
//!   never undone: the database no longer knows the agent, and the directory is left for an
//!   operator (or a retry of [`remove_state_dir`]).
//!
//! Session continuations carry no foreign key and outlive the sessions they name; the agent
//! rollup's `activity_session_id` may keep naming a deleted session until the next message.

use std::path::{Path, PathBuf};

use crate::feed::topic::Topic;
use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::query;
use crate::runs::terminate;
use crate::schema::runs::Status;
use crate::schema::{agents, runs, sessions};
use crate::Store;

/// What deleting an agent removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDeletion {
    /// The agent's state directory, now removed (or already absent).
    pub state_dir: PathBuf,
    /// How many sessions went with it.
    pub sessions: usize,
}

/// Deletes the session `session_id` of `account_id` inside the caller's transaction.
///
/// # Errors
/// [`Error::NotFound`] (`session`); [`Error::Sqlite`] otherwise.
pub fn delete_session(conn: &Db, account_id: &str, session_id: &str) -> Result<()> {
    sessions::get(conn, account_id, session_id)?.ok_or_else(|| Error::NotFound {
        what: "session",
        id: session_id.into(),
    })?;
    query!(
        "UPDATE runs SET session_id = NULL WHERE session_id = ?1",
        session_id
    )
    .execute(conn)?;
    query!(
        "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?1",
        session_id
    )
    .execute(conn)?;
    query!(
        "UPDATE trigger_firings SET session_id = NULL WHERE session_id = ?1",
        session_id
    )
    .execute(conn)?;
    query!(
        "DELETE FROM session_events WHERE session_id = ?1",
        session_id
    )
    .execute(conn)?;
    sessions::delete(conn, account_id, session_id)?;
    // Its followers end.
    conn.notify(Topic::Session(session_id.to_owned()))
}

/// Deletes the agent `agent_id` of `account_id` and everything it owns inside the caller's
/// transaction, in the description's order, after canceling its live runs at `now`; returns
/// the agent's state directory (not yet removed) and how many sessions were deleted.
///
/// # Errors
/// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
pub fn delete_agent_rows(
    conn: &Db,
    now: i64,
    account_id: &str,
    agent_id: &str,
) -> Result<AgentDeletion> {
    let agent = agents::get(conn, account_id, agent_id)?.ok_or_else(|| Error::NotFound {
        what: "agent",
        id: agent_id.into(),
    })?;
    // 0. Live work ends first: once the agent and its sessions are detached, nothing could tell
    //    these runs apart from another agent's.
    let live = query!(
        "WITH RECURSIVE tree(id) AS (
           SELECT id FROM runs WHERE account_id = ?2 AND (agent_id = ?1
             OR session_id IN (SELECT id FROM sessions WHERE agent_id = ?1))
           UNION
           SELECT r.id FROM runs AS r INDEXED BY runs_by_parent JOIN tree ON r.parent_run_id = tree.id
         )
         SELECT runs.id FROM runs JOIN tree ON runs.id = tree.id
         WHERE runs.status IN ('queued', 'claimed', 'running', 'waiting')",
        agent_id,
        account_id
    )
    .fetch_all(conn)?;
    for run in live {
        if let Some(mut row) = runs::get(conn, account_id, &run.id)? {
            terminate(conn, &mut row, Status::Canceled, None, None, now)?;
        }
    }
    // Each statement takes the agent id as ?1; sets of the agent's sessions, firings and
    // triggers are subqueries so that nothing is read into memory.
    // 1. The Log of every session of the agent; their followers end.
    conn.notify(Topic::Sessions)?;
    query!(
        "DELETE FROM session_events WHERE session_id IN (SELECT id FROM sessions WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    // 2. Runs keep their history, detached from the firings, sessions and agent that go.
    query!(
        "UPDATE runs SET trigger_firing_id = NULL WHERE trigger_firing_id IN \
         (SELECT id FROM trigger_firings WHERE agent_id = ?1 \
          OR trigger_id IN (SELECT id FROM agent_triggers WHERE agent_id = ?1))",
        agent_id
    )
    .execute(conn)?;
    query!(
        "UPDATE runs SET session_id = NULL WHERE session_id IN (SELECT id FROM sessions WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    query!(
        "UPDATE runs SET agent_id = NULL WHERE agent_id = ?1",
        agent_id
    )
    .execute(conn)?;
    // 3. Sessions of other agents spawned from this agent's sessions become top level, and
    //    firings of other agents let go of this agent's sessions.
    query!(
        "UPDATE sessions SET parent_session_id = NULL WHERE agent_id <> ?1 AND parent_session_id IN \
         (SELECT id FROM sessions WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    query!(
        "UPDATE trigger_firings SET session_id = NULL WHERE agent_id <> ?1 AND session_id IN \
         (SELECT id FROM sessions WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    // 4. Firings (claims name them only by id, without a foreign key).
    query!(
        "DELETE FROM trigger_firings WHERE agent_id = ?1 \
         OR trigger_id IN (SELECT id FROM agent_triggers WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    // 5. Sessions (parent links among them go in the same statement).
    let deleted_sessions =
        query!("DELETE FROM sessions WHERE agent_id = ?1", agent_id).execute(conn)?;
    // 6. Triggers, with what references them.
    query!(
        "DELETE FROM trigger_event_claims WHERE trigger_id IN (SELECT id FROM agent_triggers WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    query!(
        "DELETE FROM webhook_trigger_credentials WHERE trigger_id IN (SELECT id FROM agent_triggers WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    query!(
        "UPDATE agent_triggers SET merged_into = NULL WHERE agent_id <> ?1 AND merged_into IN \
         (SELECT id FROM agent_triggers WHERE agent_id = ?1)",
        agent_id
    )
    .execute(conn)?;
    query!("DELETE FROM agent_triggers WHERE agent_id = ?1", agent_id).execute(conn)?;
    // 7. Drafts, tool documents, collaborators.
    query!("DELETE FROM agent_drafts WHERE agent_id = ?1", agent_id).execute(conn)?;
    query!("DELETE FROM tool_documents WHERE agent_id = ?1", agent_id).execute(conn)?;
    query!(
        "DELETE FROM agent_collaborators WHERE agent_id = ?1",
        agent_id
    )
    .execute(conn)?;
    // 8. The agent.
    agents::delete(conn, account_id, agent_id)?;
    Ok(AgentDeletion {
        state_dir: PathBuf::from(agent.state_dir),
        sessions: deleted_sessions,
    })
}

/// Removes an agent's state directory; a directory that is already gone is fine.
///
/// # Errors
/// [`Error::StateDirNotRemoved`] for any other file-system failure.
pub fn remove_state_dir(agent_id: &str, state_dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(state_dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::StateDirNotRemoved {
            agent_id: agent_id.into(),
            path: state_dir.to_path_buf(),
            source,
        }),
    }
}

impl Store {
    /// Deletes a session without cascading (see the module doc), in one `BEGIN IMMEDIATE`
    /// transaction.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Sqlite`] otherwise.
    pub fn delete_session(&self, account_id: &str, session_id: &str) -> Result<()> {
        let deleted = self.write(|tx, _| delete_session(tx, account_id, session_id));
        self.audit_refused(account_id, deleted)
    }

    /// Deletes an agent and everything it owns in one `BEGIN IMMEDIATE` transaction, then
    /// removes its `state_dir` from disk.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`) and [`Error::Sqlite`] leave everything as it was.
    /// [`Error::StateDirNotRemoved`] means the delete **committed** and only the directory
    /// removal failed; it is not rolled back.
    pub fn delete_agent(&self, account_id: &str, agent_id: &str) -> Result<AgentDeletion> {
        let deletion = self.write(|tx, now| delete_agent_rows(tx, now, account_id, agent_id));
        let deletion = self.audit_refused(account_id, deletion)?;
        // Only once the delete committed: a failed commit must leave the directory in place.
        remove_state_dir(agent_id, &deletion.state_dir)?;
        Ok(deletion)
    }
}
