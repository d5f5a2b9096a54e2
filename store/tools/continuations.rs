//! Session continuations (`session_continuations`): the edges `continue_session` creates from a
//! predecessor session to its successor, and the walk of a chain from its origin.
//!
//! Invariants, kept in one `BEGIN IMMEDIATE` transaction per call: a successor has exactly one
//! edge; `(predecessor, tool call)` has at most one, so a retried call (also one racing on
//! another connection) finds the first edge and returns its successor instead of creating a
//! second — with [`Store::continue_session_with`] the successor session itself is created only
//! when no edge exists, in the same transaction; every edge of a chain names the chain's first
//! session as its origin; a successor is a session that has no edges yet, so chains never loop.
//! Session ids carry no foreign key: the edges outlive session deletion.

use std::collections::HashMap;

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::ContinuationManifest;
use crate::schema::{session_continuations, sessions};
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::values::ids;
use crate::{accounts, Store};

pub use crate::schema::session_continuations::Row;

/// The longest `reason`, in bytes.
pub const MAX_REASON_BYTES: usize = 4096;

/// A `continue_session` call: everything about the edge but the successor.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinuationRequest {
    /// The session being continued.
    pub predecessor_session_id: String,
    /// The `continue_session` tool call; with the predecessor, the retry key.
    pub tool_call_id: String,
    /// The event that initiated the call.
    pub initiating_event_id: Option<String>,
    /// Why the session is continued.
    pub reason: Option<String>,
    /// The successor's exact starting point.
    pub manifest: ContinuationManifest,
}

/// The edge a call resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct Continued {
    /// The edge (its `successor_session_id` is the successor).
    pub edge: Row,
    /// Whether this call created it (`false`: a retry found the first call's edge).
    pub created: bool,
}

fn check(request: &ContinuationRequest) -> Result<()> {
    ids::check_id("predecessor_session_id", &request.predecessor_session_id)?;
    ids::check_id("tool_call_id", &request.tool_call_id)?;
    if let Some(event) = &request.initiating_event_id {
        ids::check_id("initiating_event_id", event)?;
    }
    if let Some(reason) = &request.reason {
        if reason.len() > MAX_REASON_BYTES {
            return Err(invalid(
                "reason",
                format!(
                    "is {} bytes, more than the {MAX_REASON_BYTES} allowed",
                    reason.len()
                ),
            ));
        }
    }
    Ok(())
}

fn session_in(conn: &Db, account_id: &str, id: &str) -> Result<()> {
    sessions::get(conn, account_id, id)?.ok_or_else(|| Error::NotFound {
        what: "session",
        id: id.into(),
    })?;
    Ok(())
}

impl Store {
    /// Resolves a `continue_session` call: when `(predecessor, tool call)` already has an edge,
    /// returns it and does not call `make_successor`; otherwise calls `make_successor` (with the
    /// transaction's connection and now) to create the successor session, and records the edge,
    /// all in one `BEGIN IMMEDIATE` transaction (a failure anywhere leaves neither the session
    /// nor the edge). The edge's origin is the predecessor's own origin, or the predecessor when
    /// it starts the chain.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`predecessor_session_id`, `tool_call_id`, `initiating_event_id`,
    /// `reason`, `successor_session_id` when it is the predecessor); [`Error::NotFound`]
    /// (`session`) when the predecessor or the successor is not a session of the account;
    /// [`Error::Conflict`] (`session continuation`) when the successor already has edges;
    /// whatever `make_successor` returns; [`Error::Sqlite`] otherwise.
    pub fn continue_session_with(
        &self,
        account_id: &str,
        request: &ContinuationRequest,
        mut make_successor: impl FnMut(&Db, i64) -> Result<String>,
    ) -> Result<Continued> {
        check(request)?;
        let manifest_cbor = Cbor::encode(&request.manifest)?;
        self.write(|tx, now| {
            let predecessor = request.predecessor_session_id.as_str();
            if let Some(edge) =
                session_continuations::get_by_predecessor_session_id_and_tool_call_id(
                    tx,
                    account_id,
                    predecessor,
                    &request.tool_call_id,
                )?
            {
                return Ok(Continued {
                    edge,
                    created: false,
                });
            }
            session_in(tx, account_id, predecessor)?;
            let origin =
                session_continuations::get_by_successor_session_id(tx, account_id, predecessor)?
                    .map_or_else(|| predecessor.to_owned(), |edge| edge.origin_session_id);
            let successor = make_successor(tx, now)?;
            if successor == predecessor {
                return Err(invalid(
                    "successor_session_id",
                    "a session cannot continue itself",
                ));
            }
            session_in(tx, account_id, &successor)?;
            let has_edges = successor == origin
                || session_continuations::get_by_successor_session_id(tx, account_id, &successor)?
                    .is_some()
                || !session_continuations::list_by_predecessor_session_id(
                    tx, account_id, &successor,
                )?
                .is_empty();
            if has_edges {
                return Err(Error::Conflict {
                    what: "session continuation",
                    key: successor,
                    reason: "the successor already belongs to a continuation chain".into(),
                });
            }
            accounts::touch(tx, account_id, now)?;
            let edge = Row {
                id: ids::new_id(),
                account_id: account_id.into(),
                predecessor_session_id: predecessor.into(),
                successor_session_id: successor,
                origin_session_id: origin,
                tool_call_id: request.tool_call_id.clone(),
                initiating_event_id: request.initiating_event_id.clone(),
                reason: request.reason.clone(),
                manifest_cbor: manifest_cbor.clone(),
                created_at: now,
            };
            session_continuations::insert(tx, &edge)?;
            Ok(Continued {
                edge,
                created: true,
            })
        })
    }

    /// [`Store::continue_session_with`] for a successor session that already exists. A retry
    /// returns the first call's edge, whatever successor it names.
    ///
    /// # Errors
    /// As [`Store::continue_session_with`].
    pub fn record_continuation(
        &self,
        account_id: &str,
        request: &ContinuationRequest,
        successor_session_id: &str,
    ) -> Result<Continued> {
        self.continue_session_with(account_id, request, |_, _| {
            Ok(successor_session_id.to_owned())
        })
    }

    /// The edge created by the call `tool_call_id` of the session `predecessor_session_id`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn continuation_for_call(
        &self,
        account_id: &str,
        predecessor_session_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<Row>> {
        session_continuations::get_by_predecessor_session_id_and_tool_call_id(
            &self.reading()?,
            account_id,
            predecessor_session_id,
            tool_call_id,
        )
    }

    /// The edge that created the session `successor_session_id`, if it is a successor.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn continuation_of(
        &self,
        account_id: &str,
        successor_session_id: &str,
    ) -> Result<Option<Row>> {
        session_continuations::get_by_successor_session_id(
            &self.reading()?,
            account_id,
            successor_session_id,
        )
    }

    /// The chain `session_id` belongs to, walked from its origin: each edge after the edge that
    /// created its predecessor, a predecessor's edges in the order they were created (a session
    /// continued twice forks the chain; the walk is depth-first). Empty when the session is in no
    /// chain.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn continuation_chain(&self, account_id: &str, session_id: &str) -> Result<Vec<Row>> {
        let origin = self
            .continuation_of(account_id, session_id)?
            .map_or_else(|| session_id.to_owned(), |edge| edge.origin_session_id);
        let edges = session_continuations::list_by_origin_session_id(
            &self.reading()?,
            account_id,
            &origin,
        )?;
        let mut next: HashMap<&str, Vec<&Row>> = HashMap::new();
        for edge in &edges {
            next.entry(edge.predecessor_session_id.as_str())
                .or_default()
                .push(edge);
        }
        let mut chain = Vec::with_capacity(edges.len());
        // Depth-first, taking each predecessor's edges in creation order.
        let mut stack: Vec<&Row> = next
            .get(origin.as_str())
            .into_iter()
            .flatten()
            .rev()
            .copied()
            .collect();
        while let Some(edge) = stack.pop() {
            chain.push(edge.clone());
            if let Some(children) = next.get(edge.successor_session_id.as_str()) {
                stack.extend(children.iter().rev());
            }
            // A chain cannot loop (a successor is new), but bound the walk by the edges anyway.
            if chain.len() > edges.len() {
                break;
            }
        }
        Ok(chain)
    }
}
