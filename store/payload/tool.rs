//! Tool payloads: MCP servers, tool documents, and hypermedia drafts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Ipld, OpenMap};

/// `mcp_servers.config_cbor`: how to reach a remote MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The server's URL.
    pub url: String,
    /// The transport, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Plain request headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Header name to the name of the account secret holding its value
    /// (`mcp-<name>-<header>` by convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_refs: Option<BTreeMap<String, String>>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `mcp_servers.tools_cbor`: the tools of the last successful discovery.
pub type McpTools = Vec<McpToolInfo>;

/// One tool an MCP server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The tool's name on the server.
    pub name: String,
    /// The tool's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's input.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub input_schema: Option<Ipld>,
    /// Fields this version does not know (title, output schema, annotations), kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `mcp_servers.status_cbor`: the outcome of the last connection check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// The connection state.
    pub state: String,
    /// The last error, if the check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the server was last checked, epoch milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<i64>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_str_enum! {
    /// What kind of tool a [`ToolDocument`] describes.
    ToolKind {
        /// Shipped with the server; carries a `binding`.
        Builtin = "builtin",
        /// Authored source run in the execute sandbox.
        Lambda = "lambda",
        /// A projection of an MCP server's tool.
        Mcp = "mcp",
    }
}

/// `tool_documents.doc_cbor`: a content-addressed tool document. Its CID is over exactly the
/// canonical bytes of this value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDocument {
    /// The tool's name.
    pub name: String,
    /// The tool's kind.
    pub kind: ToolKind,
    /// A one-line summary.
    pub summary: String,
    /// The full description.
    pub description: String,
    /// The JSON Schema of the input.
    pub input: Ipld,
    /// The JSON Schema of the output.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub output: Option<Ipld>,
    /// A lambda's authored source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The runtime a lambda's source runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// A builtin's runtime executor id (or an MCP tool's binding).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub binding: Option<Ipld>,
    /// Fields this version does not know (an MCP projection's `server` and `remoteName`), kept
    /// as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `agent_drafts.content_cbor`: a draft's content, in the encoding `content_format` names. Any
/// DAG-CBOR value (a markdown string, a block tree, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DraftContent(
    /// The content, as stored.
    pub Ipld,
);

open_map! {
    /// `agent_drafts.metadata_cbor`: a draft's metadata. The description gives no fields, so it
    /// is an open map.
    DraftMetadata
}
