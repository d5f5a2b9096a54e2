//! Remote MCP servers (`mcp_servers`), their owned secrets, their discoveries, and the
//! projection of their tools into the tool documents of the agents that list them: the checks of
//! a server's configuration (`config`), the secrets a server owns (`owned`), the projection
//! and its sync (`projection`) and the operations on [`Store`](crate::Store) (`store`).
//!
//! Invariants, each kept in one `BEGIN IMMEDIATE` transaction:
//! - `(account_id, name)` is unique and a server's name never changes;
//! - a secret header value lives in `secrets` as `mcp-<name>-<header>` (the header lower-cased)
//!   and is referenced from `config.secretRefs`; the server *owns* exactly the secrets its
//!   `secretRefs` name by that convention. An update that drops a header deletes its owned
//!   secret in the same transaction; references to other secrets are never deleted;
//! - `tools_cbor` is replaced only by a successful, valid discovery: a failed refresh (or one
//!   whose tool list fails the checks) records its error in `status_cbor` and keeps the last good
//!   tools;
//! - projected documents are a function of the servers and the agents' `definition.mcpServers`:
//!   every server write reconciles them in its own transaction ([`sync`]), and deleting a server
//!   scrubs the agents' references, its projected documents and its owned secrets together.
//!
//! A projection is named `<server>__<tool>` and carries `server` and `remoteName`. Server names
//! contain no `__` and do not end in `_`, so no two servers' projections can share a name.

use std::collections::BTreeMap;

use crate::payload::McpServerConfig;

mod config;
mod owned;
mod projection;
mod store;

pub use crate::schema::mcp_servers::Row;
pub use config::check_server_name;
pub use owned::owned_secret_name;
pub use projection::{check_tools, projected_document, sync};

/// The longest server name, in characters.
pub const MAX_SERVER_NAME_LEN: usize = 64;
/// The longest server URL, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// The longest header name, in bytes.
pub const MAX_HEADER_NAME_BYTES: usize = 128;
/// The longest plain header value, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 8 * 1024;
/// The longest MCP tool name, in bytes (the MCP specification's limit).
pub const MAX_TOOL_NAME_BYTES: usize = 128;
/// `status_cbor.state` after a successful discovery.
pub const STATE_CONNECTED: &str = "connected";
/// `status_cbor.state` after a failed one.
pub const STATE_ERROR: &str = "error";

/// What a server is created or updated with.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerInput {
    /// URL, transport, plain headers, and `secretRefs`: header to the name of an account secret
    /// holding its value. On update, pass back the references to keep; an owned secret whose
    /// header is no longer referenced is deleted.
    pub config: McpServerConfig,
    /// Header to plaintext value, stored encrypted as `mcp-<name>-<header>` and added to
    /// `secretRefs` (replacing a reference of the same header).
    pub secret_headers: BTreeMap<String, String>,
}

/// What deleting a server removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpDeletion {
    /// Agents whose `definition.mcpServers` named the server.
    pub agents_scrubbed: usize,
    /// Projected tool documents deleted.
    pub documents_deleted: usize,
    /// Owned secrets deleted.
    pub secrets_deleted: usize,
}
