//! Reading runs: one run, a tree, a session's runs, and the child of a delegate call.
//!
//! Invariant: every read is scoped to the account and goes through the index its statement
//! names (pinned by the query-plan tests); none writes.

use super::queries::{child_by_tool_call_query, run_tree_query, session_runs_query};
use crate::error::Result;
use crate::schema::runs;
use crate::Store;

impl Store {
    /// A run of the account. Another account's is answered as unknown, and recorded in the
    /// audit log (`access.refused`).
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`] or a decode error.
    pub fn run(&self, account_id: &str, id: &str) -> Result<Option<runs::Row>> {
        let found = runs::get(&self.reading()?, account_id, id);
        self.audit_absent(account_id, "run", id, found)
    }

    /// Every run of the tree rooted at `root_run_id`, oldest first (through `runs_by_root`).
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`] or a decode error.
    pub fn run_tree(&self, account_id: &str, root_run_id: &str) -> Result<Vec<runs::Row>> {
        run_tree_query!(account_id, root_run_id).fetch_all(&self.reading()?)
    }

    /// The runs of a session, newest first (through `runs_by_session`).
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`] or a decode error.
    pub fn session_runs(&self, account_id: &str, session_id: &str) -> Result<Vec<runs::Row>> {
        session_runs_query!(account_id, session_id).fetch_all(&self.reading()?)
    }

    /// The child a parent's delegate call spawned (through `runs_by_parent_tool_call`), the
    /// oldest when a retried call spawned several.
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`] or a decode error.
    pub fn find_child_by_tool_call(
        &self,
        account_id: &str,
        parent_run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<runs::Row>> {
        child_by_tool_call_query!(account_id, parent_run_id, tool_call_id)
            .fetch_optional(&self.reading()?)
    }
}
