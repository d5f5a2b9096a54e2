//! Reconciliation of stored tool documents towards a wanted set, shared by the builtins
//! ([`Store::ensure_builtin_tools`](crate::Store::ensure_builtin_tools)) and the MCP projections
//! ([`crate::mcp::sync`]).
//!
//! Invariant: a plan changes only documents of its own kind, except that a builtin takes its
//! name back from an MCP projection; a name another kind holds is reported, never overwritten,
//! and a rewrite keeps the row's `enabled` and `created_at`.

use std::collections::{BTreeMap, HashMap};

use crate::sql::db::Db;

use crate::error::Result;
use crate::payload::ToolDocument;
use crate::query;
use crate::schema::tool_documents;
use crate::values::cbor::Cbor;

use super::{Encoded, Kind, Row};

/// What a reconciliation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSync {
    /// Documents inserted.
    pub inserted: usize,
    /// Documents rewritten because their CID changed.
    pub rewritten: usize,
    /// Documents deleted because they are no longer wanted.
    pub deleted: usize,
    /// `(agent id, name)` of wanted documents not written because another kind holds the name
    /// (a lambda, which wins over a projection and keeps its name against a new builtin).
    pub shadowed: Vec<(String, String)>,
}

impl ToolSync {
    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.inserted == 0 && self.rewritten == 0 && self.deleted == 0
    }

    /// Adds `other`'s counts and shadowed names to these.
    pub(crate) fn add(&mut self, other: ToolSync) {
        self.inserted += other.inserted;
        self.rewritten += other.rewritten;
        self.deleted += other.deleted;
        self.shadowed.extend(other.shadowed);
    }
}

/// What a stored document is, as far as reconciliation needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) kind: Kind,
    pub(crate) cid: String,
}

/// One planned write.
#[derive(Debug)]
pub(crate) enum Change<'a> {
    Insert(&'a Encoded),
    Rewrite(&'a Encoded),
    Delete(String),
}

/// The documents of every agent of `account_id` (or only of `agent_id`), by agent then name.
pub(crate) fn held(
    conn: &Db,
    account_id: &str,
    agent_id: Option<&str>,
) -> Result<HashMap<String, BTreeMap<String, Held>>> {
    let rows = query!(
        "SELECT agent_id, name, kind, cid FROM tool_documents \
         WHERE account_id = ?1 AND (?2 IS NULL OR agent_id = ?2)",
        account_id,
        agent_id
    )
    .fetch_all(conn)?;
    let mut out: HashMap<String, BTreeMap<String, Held>> = HashMap::new();
    for row in rows {
        out.entry(row.agent_id).or_default().insert(
            row.name,
            Held {
                kind: row.kind,
                cid: row.cid,
            },
        );
    }
    Ok(out)
}

/// Plans one agent's documents of kind `kind` towards `wanted`: insert what is missing, rewrite
/// what has another CID, delete documents of `kind` no longer wanted. A name held by another kind
/// is left alone (reported in `shadowed`), except that a builtin takes its name back from an MCP
/// projection.
pub(crate) fn plan<'a>(
    agent_id: &str,
    kind: Kind,
    held: Option<&BTreeMap<String, Held>>,
    wanted: &BTreeMap<&str, &'a Encoded>,
    shadowed: &mut Vec<(String, String)>,
) -> Vec<Change<'a>> {
    let mut changes = Vec::new();
    for (name, doc) in wanted {
        match held.and_then(|h| h.get(*name)) {
            None => changes.push(Change::Insert(doc)),
            Some(h) if h.kind == kind => {
                if h.cid != doc.cid {
                    changes.push(Change::Rewrite(doc));
                }
            }
            Some(h) if kind == Kind::Builtin && h.kind == Kind::Mcp => {
                changes.push(Change::Rewrite(doc))
            }
            Some(_) => shadowed.push((agent_id.to_owned(), (*name).to_owned())),
        }
    }
    if let Some(held) = held {
        for (name, h) in held {
            if h.kind == kind && !wanted.contains_key(name.as_str()) {
                changes.push(Change::Delete(name.clone()));
            }
        }
    }
    changes
}

/// Applies one agent's planned changes inside the caller's transaction. A rewrite keeps the row's
/// `enabled` and `created_at`.
pub(crate) fn apply(
    conn: &Db,
    account_id: &str,
    agent_id: &str,
    now: i64,
    changes: &[Change<'_>],
) -> Result<ToolSync> {
    let mut sync = ToolSync::default();
    for change in changes {
        match change {
            Change::Insert(doc) => {
                tool_documents::insert(
                    conn,
                    &Row {
                        account_id: account_id.into(),
                        agent_id: agent_id.into(),
                        name: doc.name.clone(),
                        kind: doc.kind,
                        cid: doc.cid.clone(),
                        doc_cbor: Cbor::from_bytes(doc.bytes.clone()),
                        enabled: true,
                        created_at: now,
                        updated_at: now,
                    },
                )?;
                sync.inserted += 1;
            }
            Change::Rewrite(doc) => {
                let doc_cbor = Cbor::<ToolDocument>::from_bytes(doc.bytes.clone());
                query!(
                    "UPDATE tool_documents SET kind = ?1, cid = ?2, doc_cbor = ?3, updated_at = ?4 \
                     WHERE account_id = ?5 AND agent_id = ?6 AND name = ?7",
                    doc.kind,
                    doc.cid,
                    doc_cbor,
                    now,
                    account_id,
                    agent_id,
                    doc.name
                )
                .execute(conn)?;
                sync.rewritten += 1;
            }
            Change::Delete(name) => {
                sync.deleted += tool_documents::delete(conn, account_id, agent_id, name)?;
            }
        }
    }
    Ok(sync)
}
