//! The tool operations as futures: tool documents, MCP servers, drafts and session
//! continuations (the sync ones live in `crate::tools`).
//!
//! [`Store::continue_session_with`](crate::Store::continue_session_with) takes the successor's
//! creation as a closure over the transaction: run it through
//! [`AsyncStore::call`](crate::AsyncStore::call).

use super::async_operations;
use crate::continuations::{self, ContinuationRequest, Continued};
use crate::drafts::{self, DraftFields};
use crate::mcp::{self, McpDeletion, McpServerInput};
use crate::payload::{McpTools, ToolDocument};
use crate::tools::{self, ToolSync};

async_operations! {
    // Tool documents.
    fn ensure_builtin_tools(account_id: &str, agent_id: &str, registry: &[ToolDocument])
        -> ToolSync;
    fn put_lambda_tool(account_id: &str, agent_id: &str, doc: &ToolDocument) -> tools::Row;
    fn set_tool_enabled(account_id: &str, agent_id: &str, name: &str, enabled: bool)
        -> tools::Row;
    fn delete_tool(account_id: &str, agent_id: &str, name: &str) -> bool;
    fn tool(account_id: &str, agent_id: &str, name: &str) -> Option<tools::Row>;
    fn agent_tools(account_id: &str, agent_id: &str, registry: &[ToolDocument])
        -> Vec<tools::Row>;

    // MCP servers.
    fn create_mcp_server(account_id: &str, name: &str, input: &McpServerInput) -> mcp::Row;
    fn update_mcp_server(account_id: &str, name: &str, input: &McpServerInput) -> mcp::Row;
    fn set_mcp_server_enabled(account_id: &str, name: &str, enabled: bool) -> mcp::Row;
    fn mcp_server(account_id: &str, name: &str) -> Option<mcp::Row>;
    fn mcp_servers(account_id: &str) -> Vec<mcp::Row>;
    fn record_mcp_discovery(
        account_id: &str,
        name: &str,
        outcome: std::result::Result<McpTools, String>,
    ) -> mcp::Row;
    fn sync_mcp_tools(account_id: &str, agent_id: Option<&str>) -> ToolSync;
    fn delete_mcp_server(account_id: &str, name: &str) -> McpDeletion;

    // Drafts.
    fn create_draft(account_id: &str, agent_id: Option<&str>, fields: &DraftFields)
        -> drafts::Row;
    fn update_draft(account_id: &str, id: &str, fields: &DraftFields) -> drafts::Row;
    fn publish_draft(account_id: &str, id: &str, published_id: &str, published_version: &str)
        -> drafts::Row;
    fn draft(account_id: &str, id: &str) -> Option<drafts::Row>;
    fn drafts(account_id: &str) -> Vec<drafts::Row>;
    fn agent_drafts(account_id: &str, agent_id: &str) -> Vec<drafts::Row>;
    fn drafts_by_status(account_id: &str, status: drafts::Status) -> Vec<drafts::Row>;
    fn delete_draft(account_id: &str, id: &str) -> bool;

    // Session continuations.
    fn record_continuation(
        account_id: &str,
        request: &ContinuationRequest,
        successor_session_id: &str,
    ) -> Continued;
    fn continuation_for_call(account_id: &str, predecessor_session_id: &str, tool_call_id: &str)
        -> Option<continuations::Row>;
    fn continuation_of(account_id: &str, successor_session_id: &str)
        -> Option<continuations::Row>;
    fn continuation_chain(account_id: &str, session_id: &str) -> Vec<continuations::Row>;
}
