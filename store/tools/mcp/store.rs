//! The MCP servers' operations on [`Store`]: create, update, enable or disable, record a
//! discovery, sync the projections, delete.
//!
//! Invariant: each write is one transaction of the frame that also reconciles the projections
//! ([`sync`]), so a server and the documents projected from it never disagree after a commit,
//! and appends its audit event (`mcp_server.*`, naming the server, never a header value) in the
//! same transaction.

use crate::sql::db::Db;

use crate::audit::Event;
use crate::error::{Error, Result};
use crate::payload::{AgentDefinition, McpServerConfig, McpServerStatus, McpTools, OpenMap};
use crate::schema::audit_events::{Kind as AuditKind, Outcome as AuditOutcome};
use crate::schema::mcp_servers;
use crate::tools::ToolSync;
use crate::values::cbor::Cbor;
use crate::values::ids;
use crate::{accounts, query, Store};

use super::config::{check_server_name, checked_config};
use super::owned::{delete_secret, owned_secret_name, owned_secrets, put_secret};
use super::projection::{check_tools, sync, Projection};
use super::{McpDeletion, McpServerInput, Row, STATE_CONNECTED, STATE_ERROR};
use crate::keys::Ring;

fn server_not_found(name: &str) -> Error {
    Error::NotFound {
        what: "MCP server",
        id: name.into(),
    }
}

/// The audit event of a change to the server `name` of `account_id`.
fn server_event<'a>(account_id: &'a str, action: &'static str, name: &str) -> Event<'a> {
    Event::done(
        account_id,
        AuditKind::Tool,
        action,
        format!("MCP server {name}"),
    )
}

/// The stored server, or `NotFound`.
fn server_in(conn: &Db, account_id: &str, name: &str) -> Result<Row> {
    mcp_servers::get_by_name(conn, account_id, name)?.ok_or_else(|| server_not_found(name))
}

impl Store {
    /// Creates the server `name` of `account_id`, enabled, with no tools and no status yet,
    /// storing its secret header values as owned secrets.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field (`name`, `config.url`, `config.transport`,
    /// `config.headers`, `config.secret_refs`, `secret_headers`, `account_id`);
    /// [`Error::Conflict`] (`MCP server`) when the account has a server of that name;
    /// [`Error::Sqlite`] otherwise.
    pub fn create_mcp_server(
        &self,
        account_id: &str,
        name: &str,
        input: &McpServerInput,
    ) -> Result<Row> {
        check_server_name(name)?;
        let config = checked_config(name, input)?;
        let config_cbor = Cbor::encode(&config)?;
        let mut ring = Ring::fetch_if(self.key_provider(), !input.secret_headers.is_empty());
        self.write(|tx, now| {
            accounts::touch(tx, account_id, now)?;
            if mcp_servers::get_by_name(tx, account_id, name)?.is_some() {
                return Err(Error::Conflict {
                    what: "MCP server",
                    key: name.into(),
                    reason: "the account already has a server of that name".into(),
                });
            }
            for (header, value) in &input.secret_headers {
                let secret = owned_secret_name(name, header);
                put_secret(tx, &mut ring, now, account_id, name, header, &secret, value)?;
            }
            let row = Row {
                id: ids::new_id(),
                account_id: account_id.into(),
                name: name.into(),
                config_cbor: config_cbor.clone(),
                tools_cbor: None,
                status_cbor: None,
                enabled: true,
                created_at: now,
                updated_at: now,
            };
            mcp_servers::insert(tx, &row)?;
            sync(tx, now, account_id, None)?;
            server_event(account_id, "mcp_server.create", name).record(tx, now)?;
            Ok(row)
        })
    }

    /// Replaces the configuration of the server `name`: new secret header values are stored,
    /// owned secrets whose header is no longer referenced are deleted, and the projections are
    /// reconciled, in one transaction. Tools, status and `enabled` are kept.
    ///
    /// # Errors
    /// As [`Store::create_mcp_server`], with [`Error::NotFound`] (`MCP server`) instead of the
    /// conflict.
    pub fn update_mcp_server(
        &self,
        account_id: &str,
        name: &str,
        input: &McpServerInput,
    ) -> Result<Row> {
        let config = checked_config(name, input)?;
        let config_cbor = Cbor::encode(&config)?;
        let mut ring = Ring::fetch_if(self.key_provider(), !input.secret_headers.is_empty());
        self.write(|tx, now| {
            let existing = server_in(tx, account_id, name)?;
            let before: McpServerConfig = existing.config_cbor.decode()?;
            let kept = owned_secrets(name, &config);
            for secret in owned_secrets(name, &before) {
                if !kept.contains(&secret) {
                    delete_secret(tx, now, account_id, &secret)?;
                }
            }
            for (header, value) in &input.secret_headers {
                let secret = owned_secret_name(name, header);
                put_secret(tx, &mut ring, now, account_id, name, header, &secret, value)?;
            }
            let row = Row {
                config_cbor: config_cbor.clone(),
                updated_at: now,
                ..existing
            };
            mcp_servers::update(tx, &row)?;
            sync(tx, now, account_id, None)?;
            server_event(account_id, "mcp_server.update", name).record(tx, now)?;
            Ok(row)
        })
    }

    /// Enables or disables the server `name`; disabling deletes its projections, enabling
    /// restores them, in the same transaction.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`MCP server`); [`Error::Sqlite`] otherwise.
    pub fn set_mcp_server_enabled(
        &self,
        account_id: &str,
        name: &str,
        enabled: bool,
    ) -> Result<Row> {
        self.write(|tx, now| {
            let mut row = server_in(tx, account_id, name)?;
            if row.enabled != enabled {
                row.enabled = enabled;
                row.updated_at = now;
                mcp_servers::update(tx, &row)?;
                sync(tx, now, account_id, None)?;
                let action = if enabled {
                    "mcp_server.enable"
                } else {
                    "mcp_server.disable"
                };
                server_event(account_id, action, name).record(tx, now)?;
            }
            Ok(row)
        })
    }

    /// The server `name` of `account_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn mcp_server(&self, account_id: &str, name: &str) -> Result<Option<Row>> {
        mcp_servers::get_by_name(&self.reading()?, account_id, name)
    }

    /// The servers of `account_id`, by name.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn mcp_servers(&self, account_id: &str) -> Result<Vec<Row>> {
        let mut rows = mcp_servers::list_by_account_id(&self.reading()?, account_id)?;
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
        &self,
        account_id: &str,
        name: &str,
        outcome: std::result::Result<McpTools, String>,
    ) -> Result<Row> {
        let checked = outcome.and_then(|tools| match check_tools(&tools) {
            Ok(()) => Ok(tools),
            Err(e) => Err(format!("the server's tool list was refused: {e}")),
        });
        // Encoded before the frame; only the status needs the transaction's now.
        // The audit event says how many tools, never the remote server's words.
        let (outcome, detail) = match &checked {
            Ok(tools) => (AuditOutcome::Ok, format!("{} tool(s)", tools.len())),
            Err(_) => (AuditOutcome::Failed, "the discovery failed".to_owned()),
        };
        let (tools_cbor, state, error) = match checked {
            Ok(tools) => (Some(Cbor::encode(&tools)?), STATE_CONNECTED, None),
            Err(message) => (None, STATE_ERROR, Some(message)),
        };
        self.write(|tx, now| {
            let status = McpServerStatus {
                state: state.into(),
                error: error.clone(),
                checked_at: Some(now),
                extra: OpenMap::new(),
            };
            let status_cbor = Some(Cbor::encode(&status)?);
            let existing = server_in(tx, account_id, name)?;
            let row = Row {
                tools_cbor: tools_cbor.clone().or(existing.tools_cbor.clone()),
                status_cbor,
                updated_at: now,
                ..existing
            };
            mcp_servers::update(tx, &row)?;
            sync(tx, now, account_id, None)?;
            Event {
                outcome,
                ..server_event(account_id, "mcp_server.discovery", name).detail(detail.clone())
            }
            .record(tx, now)?;
            Ok(row)
        })
    }

    /// Reconciles the MCP projections of the account's agents (or one agent) with [`sync`]. It
    /// plans first without a transaction and returns when nothing differs, so the common case
    /// writes nothing and takes no write lock; otherwise it plans again and applies inside one
    /// `BEGIN IMMEDIATE` transaction.
    ///
    /// # Errors
    /// As [`sync`].
    pub fn sync_mcp_tools(&self, account_id: &str, agent_id: Option<&str>) -> Result<ToolSync> {
        {
            let projection = Projection::load(&self.reading()?.db(), account_id, agent_id)?;
            let (plans, shadowed) = projection.plan();
            if plans.is_empty() {
                return Ok(ToolSync {
                    shadowed,
                    ..ToolSync::default()
                });
            }
        }
        // Planned again under the write lock: the table may have changed since.
        self.write(|tx, now| sync(tx, now, account_id, agent_id))
    }

    /// Deletes the server `name` and everything that hangs on it, in one transaction: the name
    /// is removed from every agent definition that lists it (those agents' `updated_at` moves),
    /// its owned secrets are deleted, the row goes, and the projections are reconciled (which
    /// deletes every document projected from it).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`MCP server`); [`Error::Sqlite`] or [`Error::Cbor`] otherwise.
    pub fn delete_mcp_server(&self, account_id: &str, name: &str) -> Result<McpDeletion> {
        self.write(|tx, now| {
        let server = server_in(tx, account_id, name)?;
        let config: McpServerConfig = server.config_cbor.decode()?;
        let mut deletion = McpDeletion::default();
        let agents = query!(
            "SELECT id, definition_cbor FROM agents WHERE account_id = ?1",
            account_id
        )
        .fetch_all(tx)?;
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
                .execute(tx)?;
                deletion.agents_scrubbed += 1;
            }
        }
        for secret in owned_secrets(name, &config) {
            deletion.secrets_deleted += delete_secret(tx, now, account_id, &secret)?;
        }
        mcp_servers::delete(tx, account_id, &server.id)?;
        deletion.documents_deleted = sync(tx, now, account_id, None)?.deleted;
        server_event(account_id, "mcp_server.delete", name).record(tx, now)?;
        Ok(deletion)
        })
    }
}
