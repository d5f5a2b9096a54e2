//! The tool documents' operations on [`Store`]: builtins materialized from the caller's
//! registry, lambdas put, tools enabled, disabled and deleted, and the agent's runnable set.
//!
//! Invariant: every write is one transaction of the frame; a reconciliation first plans against
//! what is stored and begins no transaction when nothing differs, otherwise it plans again
//! inside the transaction, so a concurrent writer cannot slip between the comparison and the
//! write. A change a caller asks for (a lambda put, a tool enabled or disabled, a lambda
//! deleted) appends its `tool.*` audit event in its transaction; the reconciliations (builtins
//! materialized, MCP projections synced) follow other changes and record nothing of their own.

use std::collections::BTreeMap;

use crate::sql::db::Db;

use crate::audit::Event;
use crate::error::{Error, Result};
use crate::payload::{ToolDocument, ToolKind};
use crate::schema::audit_events::Kind as AuditKind;
use crate::schema::{agents, tool_documents};
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::{accounts, Store};

use super::reconcile::{apply, held, plan, Change};
use super::{validate_document, Encoded, Kind, Row, ToolSync, VERBS};

/// Loads the agent `agent_id` of `account_id`.
fn agent_in(conn: &Db, account_id: &str, agent_id: &str) -> Result<agents::Row> {
    agents::get(conn, account_id, agent_id)?.ok_or_else(|| Error::NotFound {
        what: "agent",
        id: agent_id.into(),
    })
}

/// The audit event of a change to the agent's tool `name`.
fn tool_event<'a>(
    account_id: &'a str,
    action: &'static str,
    agent_id: &str,
    name: &str,
) -> Event<'a> {
    Event::done(
        account_id,
        AuditKind::Tool,
        action,
        format!("tool {agent_id}/{name}"),
    )
}

/// Validates and encodes a builtin registry, refusing repeated names.
fn encode_registry(registry: &[ToolDocument]) -> Result<Vec<Encoded>> {
    let mut out: Vec<Encoded> = Vec::with_capacity(registry.len());
    for doc in registry {
        if doc.kind != ToolKind::Builtin {
            return Err(invalid(
                "kind",
                format!("registry entry {:?} is not a builtin", doc.name),
            ));
        }
        validate_document(doc)?;
        if out.iter().any(|e| e.name == doc.name) {
            return Err(invalid(
                "name",
                format!("the registry holds {:?} twice", doc.name),
            ));
        }
        out.push(Encoded::new(doc)?);
    }
    Ok(out)
}

/// Plans the builtins of one agent.
fn plan_builtins<'a>(
    conn: &Db,
    account_id: &str,
    agent_id: &str,
    registry: &'a [Encoded],
    shadowed: &mut Vec<(String, String)>,
) -> Result<Vec<Change<'a>>> {
    let held = held(conn, account_id, Some(agent_id))?;
    let wanted: BTreeMap<&str, &Encoded> = registry.iter().map(|e| (e.name.as_str(), e)).collect();
    Ok(plan(
        agent_id,
        Kind::Builtin,
        held.get(agent_id),
        &wanted,
        shadowed,
    ))
}

impl Store {
    /// Materializes the builtin registry `registry` (the complete shipped set) for the agent: a
    /// missing builtin is inserted (enabled), one whose CID differs is rewritten (keeping
    /// `enabled`), one no longer shipped is deleted. A lambda that already holds a builtin's
    /// name keeps it and is reported in [`ToolSync::shadowed`]; an MCP projection does not.
    /// When everything matches, nothing is written (not even a transaction is begun).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a registry entry that fails [`validate_document`], is not a
    /// builtin, or repeats a name; [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn ensure_builtin_tools(
        &self,
        account_id: &str,
        agent_id: &str,
        registry: &[ToolDocument],
    ) -> Result<ToolSync> {
        let registry = encode_registry(registry)?;
        agent_in(&self.reading()?.db(), account_id, agent_id)?;
        let mut shadowed = Vec::new();
        if plan_builtins(
            &self.reading()?.db(),
            account_id,
            agent_id,
            &registry,
            &mut shadowed,
        )?
        .is_empty()
        {
            return Ok(ToolSync {
                shadowed,
                ..ToolSync::default()
            });
        }
        // Planned again under the write lock: the table may have changed since.
        self.write(|tx, now| {
            let mut shadowed = Vec::new();
            let changes = plan_builtins(tx, account_id, agent_id, &registry, &mut shadowed)?;
            let mut sync = apply(tx, account_id, agent_id, now, &changes)?;
            sync.shadowed = shadowed;
            Ok(sync)
        })
    }

    /// Creates or replaces the lambda `doc.name` of the agent after [`validate_document`]. A
    /// lambda whose CID is unchanged is not rewritten.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field that fails validation, or `kind` for a document that
    /// is not a lambda, or `name` for a verb's name; [`Error::Conflict`] (`tool`) when a builtin
    /// or an MCP projection holds the name; [`Error::NotFound`] (`agent`); [`Error::Sqlite`]
    /// otherwise.
    pub fn put_lambda_tool(
        &self,
        account_id: &str,
        agent_id: &str,
        doc: &ToolDocument,
    ) -> Result<Row> {
        if doc.kind != ToolKind::Lambda {
            return Err(invalid("kind", "put_lambda_tool stores lambdas only"));
        }
        validate_document(doc)?;
        if VERBS.contains(&doc.name.as_str()) {
            return Err(invalid("name", format!("{:?} is a verb's name", doc.name)));
        }
        let encoded = Encoded::new(doc)?;
        let put = self.write(|tx, now| {
            agent_in(tx, account_id, agent_id)?;
            let row = match tool_documents::get(tx, account_id, agent_id, &doc.name)? {
                Some(existing) if existing.kind != Kind::Lambda => {
                    return Err(Error::Conflict {
                        what: "tool",
                        key: doc.name.clone(),
                        reason: format!(
                            "the name is held by a{} {} document, which a lambda cannot replace",
                            if existing.kind == Kind::Mcp { "n" } else { "" },
                            existing.kind.as_str()
                        ),
                    })
                }
                Some(existing) if existing.cid == encoded.cid => existing,
                Some(existing) => {
                    let row = Row {
                        cid: encoded.cid.clone(),
                        doc_cbor: Cbor::from_bytes(encoded.bytes.clone()),
                        updated_at: now,
                        ..existing
                    };
                    tool_documents::update(tx, &row)?;
                    tool_event(account_id, "tool.update", agent_id, &row.name)
                        .detail(format!("lambda, cid {}", row.cid))
                        .record(tx, now)?;
                    row
                }
                None => {
                    accounts::touch(tx, account_id, now)?;
                    let row = Row {
                        account_id: account_id.into(),
                        agent_id: agent_id.into(),
                        name: encoded.name.clone(),
                        kind: Kind::Lambda,
                        cid: encoded.cid.clone(),
                        doc_cbor: Cbor::from_bytes(encoded.bytes.clone()),
                        enabled: true,
                        created_at: now,
                        updated_at: now,
                    };
                    tool_documents::insert(tx, &row)?;
                    tool_event(account_id, "tool.create", agent_id, &row.name)
                        .detail(format!("lambda, cid {}", row.cid))
                        .record(tx, now)?;
                    row
                }
            };
            Ok(row)
        });
        // Another account's agent is refused like an unknown one, and recorded as a refusal.
        self.audit_refused(account_id, put)
    }

    /// Enables or disables the agent's tool `name` (how a builtin is withheld). Setting the value
    /// it already has writes nothing.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`tool`); [`Error::Sqlite`] otherwise.
    pub fn set_tool_enabled(
        &self,
        account_id: &str,
        agent_id: &str,
        name: &str,
        enabled: bool,
    ) -> Result<Row> {
        self.write(|tx, now| {
            let mut row =
                tool_not_found(tool_documents::get(tx, account_id, agent_id, name)?, name)?;
            if row.enabled != enabled {
                row.enabled = enabled;
                row.updated_at = now;
                tool_documents::update(tx, &row)?;
                let action = if enabled {
                    "tool.enable"
                } else {
                    "tool.disable"
                };
                tool_event(account_id, action, agent_id, name).record(tx, now)?;
            }
            Ok(row)
        })
    }

    /// Deletes the agent's lambda `name`; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::ToolNotDeletable`] for a builtin (disable it instead) or an MCP projection (it
    /// goes with its server or the agent's reference); [`Error::Sqlite`] otherwise.
    pub fn delete_tool(&self, account_id: &str, agent_id: &str, name: &str) -> Result<bool> {
        self.write(|tx, now| {
            let deleted = match tool_documents::get(tx, account_id, agent_id, name)? {
                None => false,
                Some(row) if row.kind != Kind::Lambda => {
                    return Err(Error::ToolNotDeletable {
                        name: name.into(),
                        kind: row.kind.as_str(),
                    })
                }
                Some(_) => tool_documents::delete(tx, account_id, agent_id, name)? > 0,
            };
            if deleted {
                tool_event(account_id, "tool.delete", agent_id, name).record(tx, now)?;
            }
            Ok(deleted)
        })
    }

    /// The agent's tool document `name`.
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored kind outside the enum.
    pub fn tool(&self, account_id: &str, agent_id: &str, name: &str) -> Result<Option<Row>> {
        tool_documents::get(&self.reading()?, account_id, agent_id, name)
    }

    /// What exactly the agent can run: after materializing `registry`
    /// ([`Store::ensure_builtin_tools`]) and reconciling the MCP projections
    /// ([`Store::sync_mcp_tools`]), the agent's enabled documents by name, each with the CID that
    /// is its version. Both reconciliations write nothing when nothing changed.
    ///
    /// # Errors
    /// As [`Store::ensure_builtin_tools`] and [`Store::sync_mcp_tools`].
    pub fn agent_tools(
        &self,
        account_id: &str,
        agent_id: &str,
        registry: &[ToolDocument],
    ) -> Result<Vec<Row>> {
        self.ensure_builtin_tools(account_id, agent_id, registry)?;
        self.sync_mcp_tools(account_id, Some(agent_id))?;
        let mut rows = tool_documents::list_by_agent_id(&self.reading()?, account_id, agent_id)?;
        rows.retain(|r| r.enabled);
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(rows)
    }
}

fn tool_not_found(row: Option<Row>, name: &str) -> Result<Row> {
    row.ok_or_else(|| Error::NotFound {
        what: "tool",
        id: name.into(),
    })
}
