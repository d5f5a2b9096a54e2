//! Remote MCP servers (`mcp_servers`), their owned secrets, their discoveries, and the
//! projection of their tools into the tool documents of the agents that list them.
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

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, TransactionBehavior};

use crate::cbor::Cbor;
use crate::error::{Error, Result};
use crate::payload::{
    AgentDefinition, Ipld, McpServerConfig, McpServerStatus, McpToolInfo, McpTools, OpenMap,
    SecretMetadata, ToolDocument, ToolKind,
};
use crate::schema::{mcp_servers, secrets};
use crate::tools::{self, Change, Encoded, Kind, ToolSync};
use crate::{accounts, query, Store};

pub use crate::schema::mcp_servers::Row;

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

/// The name of the secret that holds the value of `header` for the server `server`.
pub fn owned_secret_name(server: &str, header: &str) -> String {
    format!("mcp-{server}-{}", header.to_ascii_lowercase())
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Checks a server name: `^[a-z][a-z0-9_-]{0,63}$`, without `__` and not ending in `_`, so
/// that `<server>__<tool>` names one server.
///
/// # Errors
/// [`Error::Invalid`] (`name`).
pub fn check_server_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name.len() <= MAX_SERVER_NAME_LEN
        && !name.contains("__")
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "name",
            format!(
                "{name:?} must match ^[a-z][a-z0-9_-]{{0,63}}$, without `__` and not ending in `_`"
            ),
        ))
    }
}

/// An HTTP header name: an RFC 9110 token, at most [`MAX_HEADER_NAME_BYTES`].
fn check_header_name(field: &'static str, name: &str) -> Result<()> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(invalid(
            field,
            format!("{name:?} is not an HTTP header name"),
        ));
    }
    if name.len() > MAX_HEADER_NAME_BYTES {
        return Err(invalid(
            field,
            format!(
                "header name is {} bytes, more than the {MAX_HEADER_NAME_BYTES} allowed",
                name.len()
            ),
        ));
    }
    Ok(())
}

/// A header value: no CR, LF or NUL (which would split or end the request header).
fn check_header_value(field: &'static str, header: &str, value: &str, max: usize) -> Result<()> {
    if value.contains(['\r', '\n', '\0']) {
        return Err(invalid(
            field,
            format!("the value of {header:?} contains CR, LF or NUL"),
        ));
    }
    if value.len() > max {
        return Err(invalid(
            field,
            format!(
                "the value of {header:?} is {} bytes, more than the {max} allowed",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Checks an input and returns the config to store: `secretRefs` with the owned references of
/// `secret_headers` added.
fn checked_config(name: &str, input: &McpServerInput) -> Result<McpServerConfig> {
    let config = &input.config;
    let url = &config.url;
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() <= 8 {
        return Err(invalid("url", "must be an http:// or https:// URL"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "url",
            "must not contain whitespace or control characters",
        ));
    }
    if url.len() > MAX_URL_BYTES {
        return Err(invalid(
            "url",
            format!(
                "is {} bytes, more than the {MAX_URL_BYTES} allowed",
                url.len()
            ),
        ));
    }
    if config
        .transport
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        return Err(invalid("transport", "must not be empty when given"));
    }
    // Every header appears once, case-insensitively, across the three places it can be set.
    let mut seen: Vec<String> = Vec::new();
    let mut once = |field: &'static str, header: &str| -> Result<()> {
        let lower = header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(invalid(
                field,
                format!("the header {header:?} is given twice"),
            ));
        }
        seen.push(lower);
        Ok(())
    };
    for (header, value) in config.headers.iter().flatten() {
        check_header_name("headers", header)?;
        check_header_value("headers", header, value, MAX_HEADER_VALUE_BYTES)?;
        once("headers", header)?;
    }
    let mut refs = config.secret_refs.clone().unwrap_or_default();
    // A new value replaces the reference of its header, whatever case the reference used.
    for header in input.secret_headers.keys() {
        refs.retain(|h, _| !h.eq_ignore_ascii_case(header));
    }
    for (header, secret) in &refs {
        check_header_name("secretRefs", header)?;
        crate::secrets::secret_name(secret).map_err(|e| match e {
            Error::Invalid { reason, .. } => invalid("secretRefs", format!("{header:?}: {reason}")),
            other => other,
        })?;
        once("secretRefs", header)?;
    }
    for (header, value) in &input.secret_headers {
        check_header_name("secretHeaders", header)?;
        check_header_value(
            "secretHeaders",
            header,
            value,
            crate::secrets::MAX_VALUE_BYTES,
        )?;
        once("secretHeaders", header)?;
        refs.insert(header.clone(), owned_secret_name(name, header));
    }
    Ok(McpServerConfig {
        secret_refs: if refs.is_empty() { None } else { Some(refs) },
        ..config.clone()
    })
}

/// The owned secrets of a config: the references that follow the `mcp-<name>-<header>`
/// convention.
fn owned_secrets(name: &str, config: &McpServerConfig) -> Vec<String> {
    // Header names are case-insensitive, and another implementation may have kept the header's
    // case in the secret's name (`mcp-docs-Authorization`): ownership is decided without case.
    config
        .secret_refs
        .iter()
        .flatten()
        .filter(|(header, secret)| secret.eq_ignore_ascii_case(&owned_secret_name(name, header)))
        .map(|(_, secret)| secret.clone())
        .collect()
}

/// Writes the secret `name` (an upsert keeping id and `created_at`), encrypted with the
/// secrets module's [`seal`](crate::secrets::seal), inside the caller's transaction.
fn put_secret(
    conn: &Connection,
    now: i64,
    account_id: &str,
    server: &str,
    header: &str,
    name: &str,
    value: &str,
) -> Result<()> {
    let ciphertext = crate::secrets::seal(conn, value.as_bytes())?;
    let mut metadata = OpenMap::new();
    metadata.insert("mcpServer".into(), Ipld::String(server.into()));
    metadata.insert("header".into(), Ipld::String(header.into()));
    let metadata_cbor = Some(Cbor::encode(&SecretMetadata(metadata))?);
    match secrets::get_by_name(conn, account_id, name)? {
        Some(existing) => {
            secrets::update(
                conn,
                &secrets::Row {
                    ciphertext,
                    metadata_cbor,
                    updated_at: now,
                    ..existing
                },
            )?;
        }
        None => secrets::insert(
            conn,
            &secrets::Row {
                id: accounts::new_id(),
                account_id: account_id.into(),
                name: name.into(),
                ciphertext,
                metadata_cbor,
                created_at: now,
                updated_at: now,
            },
        )?,
    }
    Ok(())
}

fn delete_secret(conn: &Connection, account_id: &str, name: &str) -> Result<usize> {
    query!(
        "DELETE FROM secrets WHERE account_id = ?1 AND name = ?2",
        account_id,
        name
    )
    .execute(conn)
}

fn server_not_found(name: &str) -> Error {
    Error::NotFound {
        what: "MCP server",
        id: name.into(),
    }
}

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
struct Projection {
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
    fn load(conn: &Connection, account_id: &str, agent_id: Option<&str>) -> Result<Projection> {
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
    fn plan(&self) -> (Vec<AgentChanges<'_>>, Vec<(String, String)>) {
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
pub fn sync(
    conn: &Connection,
    now: i64,
    account_id: &str,
    agent_id: Option<&str>,
) -> Result<ToolSync> {
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

/// The stored server, or `NotFound`.
fn server_in(conn: &Connection, account_id: &str, name: &str) -> Result<Row> {
    mcp_servers::get_by_name(conn, account_id, name)?.ok_or_else(|| server_not_found(name))
}

impl Store {
    /// Creates the server `name` of `account_id`, enabled, with no tools and no status yet,
    /// storing its secret header values as owned secrets.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field (`name`, `url`, `transport`, `headers`, `secretRefs`,
    /// `secretHeaders`, `accountId`); [`Error::Conflict`] (`MCP server`) when the account has a
    /// server of that name; [`Error::Sqlite`] otherwise.
    pub fn create_mcp_server(
        &mut self,
        account_id: &str,
        name: &str,
        input: &McpServerInput,
    ) -> Result<Row> {
        check_server_name(name)?;
        let config = checked_config(name, input)?;
        let config_cbor = Cbor::encode(&config)?;
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        accounts::touch(&tx, account_id, now)?;
        if mcp_servers::get_by_name(&tx, account_id, name)?.is_some() {
            return Err(Error::Conflict {
                what: "MCP server",
                key: name.into(),
                reason: "the account already has a server of that name".into(),
            });
        }
        for (header, value) in &input.secret_headers {
            let secret = owned_secret_name(name, header);
            put_secret(&tx, now, account_id, name, header, &secret, value)?;
        }
        let row = Row {
            id: accounts::new_id(),
            account_id: account_id.into(),
            name: name.into(),
            config_cbor,
            tools_cbor: None,
            status_cbor: None,
            enabled: true,
            created_at: now,
            updated_at: now,
        };
        mcp_servers::insert(&tx, &row)?;
        sync(&tx, now, account_id, None)?;
        tx.commit()?;
        Ok(row)
    }

    /// Replaces the configuration of the server `name`: new secret header values are stored,
    /// owned secrets whose header is no longer referenced are deleted, and the projections are
    /// reconciled, in one transaction. Tools, status and `enabled` are kept.
    ///
    /// # Errors
    /// As [`Store::create_mcp_server`], with [`Error::NotFound`] (`MCP server`) instead of the
    /// conflict.
    pub fn update_mcp_server(
        &mut self,
        account_id: &str,
        name: &str,
        input: &McpServerInput,
    ) -> Result<Row> {
        let config = checked_config(name, input)?;
        let config_cbor = Cbor::encode(&config)?;
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = server_in(&tx, account_id, name)?;
        let before: McpServerConfig = existing.config_cbor.decode()?;
        let kept = owned_secrets(name, &config);
        for secret in owned_secrets(name, &before) {
            if !kept.contains(&secret) {
                delete_secret(&tx, account_id, &secret)?;
            }
        }
        for (header, value) in &input.secret_headers {
            let secret = owned_secret_name(name, header);
            put_secret(&tx, now, account_id, name, header, &secret, value)?;
        }
        let row = Row {
            config_cbor,
            updated_at: now,
            ..existing
        };
        mcp_servers::update(&tx, &row)?;
        sync(&tx, now, account_id, None)?;
        tx.commit()?;
        Ok(row)
    }

    /// Enables or disables the server `name`; disabling deletes its projections, enabling
    /// restores them, in the same transaction.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`MCP server`); [`Error::Sqlite`] otherwise.
    pub fn set_mcp_server_enabled(
        &mut self,
        account_id: &str,
        name: &str,
        enabled: bool,
    ) -> Result<Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = server_in(&tx, account_id, name)?;
        if row.enabled != enabled {
            row.enabled = enabled;
            row.updated_at = now;
            mcp_servers::update(&tx, &row)?;
            sync(&tx, now, account_id, None)?;
        }
        tx.commit()?;
        Ok(row)
    }

    /// The server `name` of `account_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn mcp_server(&self, account_id: &str, name: &str) -> Result<Option<Row>> {
        mcp_servers::get_by_name(self.conn(), account_id, name)
    }

    /// The servers of `account_id`, by name.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn mcp_servers(&self, account_id: &str) -> Result<Vec<Row>> {
        let mut rows = mcp_servers::list_by_account_id(self.conn(), account_id)?;
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(rows)
    }

    /// Records the outcome of a discovery of the server `name` (made by the caller, outside any
    /// transaction): `Ok(tools)` that pass [`check_tools`] replace `tools_cbor` and set the state
    /// `connected`; `Err(message)`, or tools that fail the checks, keep the last good tools and
    /// set the state `error` with the message. `checkedAt` is now either way, and the
    /// projections are reconciled in the same transaction.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`MCP server`); [`Error::Sqlite`] otherwise. A failed discovery is
    /// not an error of this call: it is recorded.
    pub fn record_mcp_discovery(
        &mut self,
        account_id: &str,
        name: &str,
        outcome: std::result::Result<McpTools, String>,
    ) -> Result<Row> {
        let checked = outcome.and_then(|tools| match check_tools(&tools) {
            Ok(()) => Ok(tools),
            Err(e) => Err(format!("the server's tool list was refused: {e}")),
        });
        let now = self.now_ms();
        let (tools_cbor, status) = match &checked {
            Ok(tools) => (
                Some(Cbor::encode(tools)?),
                McpServerStatus {
                    state: STATE_CONNECTED.into(),
                    error: None,
                    checked_at: Some(now),
                    extra: OpenMap::new(),
                },
            ),
            Err(message) => (
                None,
                McpServerStatus {
                    state: STATE_ERROR.into(),
                    error: Some(message.clone()),
                    checked_at: Some(now),
                    extra: OpenMap::new(),
                },
            ),
        };
        let status_cbor = Some(Cbor::encode(&status)?);
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = server_in(&tx, account_id, name)?;
        let row = Row {
            tools_cbor: tools_cbor.or(existing.tools_cbor.clone()),
            status_cbor,
            updated_at: now,
            ..existing
        };
        mcp_servers::update(&tx, &row)?;
        sync(&tx, now, account_id, None)?;
        tx.commit()?;
        Ok(row)
    }

    /// Reconciles the MCP projections of the account's agents (or one agent) with [`sync`]. It
    /// plans first without a transaction and returns when nothing differs, so the common case
    /// writes nothing and takes no write lock; otherwise it plans again and applies inside one
    /// `BEGIN IMMEDIATE` transaction.
    ///
    /// # Errors
    /// As [`sync`].
    pub fn sync_mcp_tools(&mut self, account_id: &str, agent_id: Option<&str>) -> Result<ToolSync> {
        {
            let projection = Projection::load(self.conn(), account_id, agent_id)?;
            let (plans, shadowed) = projection.plan();
            if plans.is_empty() {
                return Ok(ToolSync {
                    shadowed,
                    ..ToolSync::default()
                });
            }
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let result = sync(&tx, now, account_id, agent_id)?;
        tx.commit()?;
        Ok(result)
    }

    /// Deletes the server `name` and everything that hangs on it, in one transaction: the name
    /// is removed from every agent definition that lists it (those agents' `updated_at` moves),
    /// its owned secrets are deleted, the row goes, and the projections are reconciled (which
    /// deletes every document projected from it).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`MCP server`); [`Error::Sqlite`] or [`Error::Cbor`] otherwise.
    pub fn delete_mcp_server(&mut self, account_id: &str, name: &str) -> Result<McpDeletion> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let server = server_in(&tx, account_id, name)?;
        let config: McpServerConfig = server.config_cbor.decode()?;
        let mut deletion = McpDeletion::default();
        let agents = query!(
            "SELECT id, definition_cbor FROM agents WHERE account_id = ?1",
            account_id
        )
        .fetch_all(&tx)?;
        for agent in agents {
            let mut definition: AgentDefinition = agent.definition_cbor.decode()?;
            if definition.remove_mcp_server(name) {
                let definition_cbor = Cbor::encode(&definition)?;
                query!(
                    "UPDATE agents SET definition_cbor = ?1, updated_at = ?2 WHERE account_id = ?3 AND id = ?4",
                    definition_cbor,
                    now,
                    account_id,
                    agent.id
                )
                .execute(&tx)?;
                deletion.agents_scrubbed += 1;
            }
        }
        for secret in owned_secrets(name, &config) {
            deletion.secrets_deleted += delete_secret(&tx, account_id, &secret)?;
        }
        mcp_servers::delete(&tx, account_id, &server.id)?;
        deletion.documents_deleted = sync(&tx, now, account_id, None)?.deleted;
        tx.commit()?;
        Ok(deletion)
    }
}
