//! The projection of servers' tools into agents' tool documents: the checks a discovered tool
//! list passes, the document projecting one tool, and the sync of every agent's projections.
//!
//! Invariant: projected documents are a function of the enabled servers' last good tools and
//! the agents' `definition.mcpServers`; [`sync`] makes the table match it and writes nothing
//! when it already does.

use std::collections::{BTreeMap, HashMap};

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::{
    AgentDefinition, Ipld, McpToolInfo, McpTools, OpenMap, ToolDocument, ToolKind,
};
use crate::query;
use crate::tools::{self, Change, Encoded, Kind, ToolSync};
use crate::values::check::invalid;

use super::MAX_TOOL_NAME_BYTES;

/// Checks a discovered tool list: names of 1 to [`MAX_TOOL_NAME_BYTES`] bytes of
/// `[A-Za-z0-9_.-]`, each once; descriptions within the tool document cap; input and output
/// schemas of JSON-Schema shape.
///
/// # Errors
/// [`Error::Invalid`] (`tools`), the reason naming the tool's index and field.
pub fn check_tools(tools: &[McpToolInfo]) -> Result<()> {
    let fail = |i: usize, what: String| Err(invalid("tools", format!("[{i}].{what}")));
    let mut seen: Vec<&str> = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.name.as_str();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return fail(i, format!("name: {name:?} must be [A-Za-z0-9_.-]+"));
        }
        if name.len() > MAX_TOOL_NAME_BYTES {
            return fail(
                i,
                format!(
                    "name: is {} bytes, more than the {MAX_TOOL_NAME_BYTES} allowed",
                    name.len()
                ),
            );
        }
        if seen.contains(&name) {
            return fail(i, format!("name: {name:?} appears twice"));
        }
        seen.push(name);
        if let Some(description) = &tool.description {
            if let Err(Error::Invalid { reason, .. }) = tools::check_description(description) {
                return fail(i, format!("description: {reason}"));
            }
        }
        for (key, schema) in [
            ("inputSchema", tool.input_schema.as_ref()),
            ("outputSchema", tool.extra.get("outputSchema")),
        ] {
            if let Some(schema) = schema.filter(|s| !matches!(s, Ipld::Null)) {
                if let Err(Error::Invalid { reason, .. }) =
                    tools::check_schema_shape("tools", schema)
                {
                    return fail(i, format!("{key}: {reason}"));
                }
            }
        }
    }
    Ok(())
}

/// The document projecting `tool` of `server`: named `<server>__<tool>`, summarized by the first
/// line of its description (or its name), with its input schema (an empty object schema when it
/// has none) and output schema, and `server` and `remoteName`.
pub fn projected_document(server: &str, tool: &McpToolInfo) -> ToolDocument {
    let description = tool.description.clone().unwrap_or_default();
    let summary = description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(&tool.name)
        .to_owned();
    let input = tool
        .input_schema
        .clone()
        .filter(|s| !matches!(s, Ipld::Null))
        .unwrap_or_else(|| {
            Ipld::Map(BTreeMap::from([(
                "type".to_owned(),
                Ipld::String("object".into()),
            )]))
        });
    let mut extra = OpenMap::new();
    extra.insert("server".into(), Ipld::String(server.into()));
    extra.insert("remoteName".into(), Ipld::String(tool.name.clone()));
    ToolDocument {
        name: format!("{server}__{}", tool.name),
        kind: ToolKind::Mcp,
        summary,
        description,
        input,
        output: tool
            .extra
            .get("outputSchema")
            .filter(|s| !matches!(s, Ipld::Null))
            .cloned(),
        source: None,
        runtime: None,
        binding: None,
        extra,
    }
}

/// Everything the projection of one account (or one agent) depends on, loaded once: each
/// referenced, enabled server's documents encoded once and shared by every agent that lists it.
pub(super) struct Projection {
    /// Server name to its encoded documents.
    docs: HashMap<String, Vec<Encoded>>,
    /// Agent id to the server names its definition lists.
    agents: Vec<(String, Vec<String>)>,
    /// What the agents hold now.
    held: HashMap<String, BTreeMap<String, tools::Held>>,
}

/// One agent's planned changes.
type AgentChanges<'a> = (&'a str, Vec<Change<'a>>);

impl Projection {
    pub(super) fn load(conn: &Db, account_id: &str, agent_id: Option<&str>) -> Result<Projection> {
        let rows = query!(
            "SELECT id, definition_cbor FROM agents WHERE account_id = ?1 AND (?2 IS NULL OR id = ?2)",
            account_id,
            agent_id
        )
        .fetch_all(conn)?;
        let mut agents = Vec::with_capacity(rows.len());
        for row in rows {
            let definition: AgentDefinition = row.definition_cbor.decode()?;
            agents.push((row.id, definition.mcp_servers.unwrap_or_default()));
        }
        let mut docs = HashMap::new();
        if agents.iter().any(|(_, servers)| !servers.is_empty()) {
            let servers = query!(
                "SELECT name, tools_cbor FROM mcp_servers WHERE account_id = ?1 AND enabled = 1",
                account_id
            )
            .fetch_all(conn)?;
            for server in servers {
                if !agents.iter().any(|(_, s)| s.contains(&server.name)) {
                    continue;
                }
                let tools: McpTools = match &server.tools_cbor {
                    Some(tools) => tools.decode()?,
                    None => Vec::new(),
                };
                let encoded = tools
                    .iter()
                    .map(|tool| Encoded::new(&projected_document(&server.name, tool)))
                    .collect::<Result<Vec<_>>>()?;
                docs.insert(server.name, encoded);
            }
        }
        let held = tools::held(conn, account_id, agent_id)?;
        Ok(Projection { docs, agents, held })
    }

    /// Every agent's changes, and the names a lambda or builtin kept from a projection.
    pub(super) fn plan(&self) -> (Vec<AgentChanges<'_>>, Vec<(String, String)>) {
        let mut shadowed = Vec::new();
        let mut out = Vec::new();
        for (agent_id, servers) in &self.agents {
            let mut wanted = BTreeMap::new();
            for server in servers {
                for doc in self.docs.get(server).into_iter().flatten() {
                    wanted.insert(doc.name.as_str(), doc);
                }
            }
            let changes = tools::plan(
                agent_id,
                Kind::Mcp,
                self.held.get(agent_id),
                &wanted,
                &mut shadowed,
            );
            if !changes.is_empty() {
                out.push((agent_id.as_str(), changes));
            }
        }
        (out, shadowed)
    }
}

/// Reconciles the MCP projections of every agent of `account_id` (or only of `agent_id`) inside
/// the caller's transaction: a projection is inserted for each tool of each enabled server the
/// agent's definition lists (unless a lambda or builtin holds its name), rewritten when its CID
/// changed (keeping `enabled`), and deleted when its server is disabled, gone, or no longer
/// listed. Writes nothing when everything matches. Agent writers call this after changing a
/// definition, in the same transaction.
///
/// # Errors
/// [`Error::Sqlite`], or [`Error::Cbor`] for a stored definition or tool list that does not
/// decode.
pub fn sync(conn: &Db, now: i64, account_id: &str, agent_id: Option<&str>) -> Result<ToolSync> {
    let projection = Projection::load(conn, account_id, agent_id)?;
    let (plans, shadowed) = projection.plan();
    let mut sync = ToolSync {
        shadowed,
        ..ToolSync::default()
    };
    for (agent, changes) in plans {
        sync.add(tools::apply(conn, account_id, agent, now, &changes)?);
    }
    Ok(sync)
}
