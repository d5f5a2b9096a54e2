//! Request idempotency (`action_idempotency`), keyed by (account, action, client id).
//!
//! Invariants:
//! - a client id is trimmed, must not be empty when present, and is at most 256 bytes;
//! - the same id with byte-identical (canonical DAG-CBOR) request bytes replays the stored
//!   response without running the action again; different bytes are [`Error::Conflict`] (the
//!   description's 409); ids are scoped per (account, action);
//! - in the create form ([`Store::idempotent`]) the check, the action and the record commit in
//!   one `BEGIN IMMEDIATE` transaction, so a failed action records nothing and two racing
//!   requests run the action once;
//! - in the MessageSession form ([`Store::idempotent_replay`] before the work,
//!   [`Store::record_idempotent`] after it succeeded) nothing holds a transaction across the
//!   model and network work; the record is keyed by the acting account, and when two requests
//!   raced, the first record wins and the second caller gets it back as a replay;
//! - a conflict is recorded in the audit log (`idempotency.conflict`) by a write of its own after
//!   the refusal, since the refused transaction rolled back.

use crate::sql::db::Db;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::accounts;
use crate::error::{Error, Result};
use crate::schema::action_idempotency::{self, Row};
use crate::values::cbor::{self, Cbor};
use crate::values::check::invalid;
use crate::Store;

/// The longest client id accepted, in bytes (after trimming).
pub const MAX_CLIENT_ID_BYTES: usize = 256;

/// What an idempotency [`Error::Conflict`] names (the audit log tells it from other conflicts).
pub const CONFLICT_WHAT: &str = "client request id";

/// The actions that accept a client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `CreateAgent.clientRequestId`.
    CreateAgent,
    /// `CreateAgentTrigger.clientRequestId`.
    CreateAgentTrigger,
    /// `CreateSigningIdentity.clientRequestId`.
    CreateSigningIdentity,
    /// `CreateSession.clientRequestId`.
    CreateSession,
    /// `MessageSession.clientMessageId` (recorded only on success, by the acting account).
    MessageSession,
}

impl Action {
    /// The action name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::CreateAgent => "CreateAgent",
            Action::CreateAgentTrigger => "CreateAgentTrigger",
            Action::CreateSigningIdentity => "CreateSigningIdentity",
            Action::CreateSession => "CreateSession",
            Action::MessageSession => "MessageSession",
        }
    }

    /// The request field that carries the client id, by its Rust name (what an
    /// [`Error::Invalid`] for a bad client id names).
    pub fn client_id_field(self) -> &'static str {
        match self {
            Action::MessageSession => "client_message_id",
            _ => "client_request_id",
        }
    }
}

/// Whether the action ran now or its stored response was replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<R> {
    /// The action ran (or, for a record, this record was stored).
    Fresh(R),
    /// The same request was seen before: this is its stored response.
    Replayed(R),
}

impl<R> Outcome<R> {
    /// The response, whichever way it came.
    pub fn into_inner(self) -> R {
        match self {
            Outcome::Fresh(r) | Outcome::Replayed(r) => r,
        }
    }

    /// Whether the response was replayed.
    pub fn is_replayed(&self) -> bool {
        matches!(self, Outcome::Replayed(_))
    }
}

/// Trims and checks a client id for `action`.
///
/// # Errors
/// [`Error::Invalid`] naming the action's field (`client_request_id` or `client_message_id`).
pub fn client_id(action: Action, raw: &str) -> Result<&str> {
    let id = raw.trim();
    let reason = if id.is_empty() {
        "must not be empty when present"
    } else if id.len() > MAX_CLIENT_ID_BYTES {
        "must be at most 256 bytes"
    } else {
        return Ok(id);
    };
    Err(invalid(action.client_id_field(), reason))
}

/// Compares a stored row with the request: its response on identical bytes, a conflict else.
fn replay<R: DeserializeOwned>(row: &Row, request: &[u8], action: Action) -> Result<R> {
    if row.request_cbor.as_bytes() != request {
        return Err(Error::Conflict {
            what: CONFLICT_WHAT,
            key: format!("{}/{}", action.as_str(), row.client_request_id),
            reason: "was used before with a different request".into(),
        });
    }
    Ok(cbor::from_slice(row.response_cbor.as_bytes())?)
}

/// Writes the record (the caller checked there is none, in the same transaction).
fn insert(
    conn: &Db,
    now: i64,
    account_id: &str,
    action: Action,
    id: &str,
    request: &[u8],
    response: &[u8],
) -> Result<()> {
    accounts::touch(conn, account_id, now)?;
    action_idempotency::insert(
        conn,
        &Row {
            account_id: account_id.into(),
            action: action.as_str().into(),
            client_request_id: id.into(),
            request_cbor: Cbor::from_bytes(request.to_vec()),
            response_cbor: Cbor::from_bytes(response.to_vec()),
            created_at: now,
        },
    )
}

impl Store {
    /// Runs a create action under its client id. Without one (`None`) it just runs `action` in a
    /// transaction. With one: identical request bytes seen before replay the stored response and
    /// `action` does not run; different bytes are a conflict; otherwise `action` runs and its
    /// response is recorded in the same `BEGIN IMMEDIATE` transaction (nothing is recorded when
    /// it fails). `action` gets the transaction and the store's now.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad client id; [`Error::Conflict`] for a reused id with a
    /// different request; [`Error::Cbor`] when the request or response has no canonical
    /// encoding, or the stored response does not decode as `R`; whatever `action` returns.
    pub fn idempotent<Req, R>(
        &self,
        account_id: &str,
        action: Action,
        client_request_id: Option<&str>,
        request: &Req,
        mut run: impl FnMut(&Db, i64) -> Result<R>,
    ) -> Result<Outcome<R>>
    where
        Req: Serialize + ?Sized,
        R: Serialize + DeserializeOwned,
    {
        let id = client_request_id
            .map(|raw| client_id(action, raw))
            .transpose()?;
        let request = id.map(|_| cbor::to_vec(request)).transpose()?;
        let outcome = self.write(|tx, now| {
            let (Some(id), Some(request)) = (id, request.as_deref()) else {
                return Ok(Outcome::Fresh(run(tx, now)?));
            };
            // A replay has written nothing, so committing its empty transaction changes nothing.
            if let Some(row) = action_idempotency::get(tx, account_id, action.as_str(), id)? {
                return replay(&row, request, action).map(Outcome::Replayed);
            }
            let response = run(tx, now)?;
            let response_bytes = cbor::to_vec(&response)?;
            insert(tx, now, account_id, action, id, request, &response_bytes)?;
            Ok(Outcome::Fresh(response))
        });
        self.audit_conflict(account_id, outcome)
    }

    /// The MessageSession form, before the work: the stored response when this (acting
    /// account, action, id) was recorded with identical request bytes; `None` when it was not.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad client id; [`Error::Conflict`] for a reused id with a
    /// different request; [`Error::Cbor`] or [`Error::Sqlite`] otherwise.
    pub fn idempotent_replay<Req, R>(
        &self,
        account_id: &str,
        action: Action,
        client_id_raw: &str,
        request: &Req,
    ) -> Result<Option<R>>
    where
        Req: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let id = client_id(action, client_id_raw)?;
        let request = cbor::to_vec(request)?;
        let stored = action_idempotency::get(&self.reading()?, account_id, action.as_str(), id)?;
        let replayed = stored.map(|row| replay(&row, &request, action)).transpose();
        self.audit_conflict(account_id, replayed)
    }

    /// The MessageSession form, after the work succeeded: records the response for (acting
    /// account, action, id). When a racing request recorded first with the same bytes, its
    /// response comes back as [`Outcome::Replayed`] and this one is dropped.
    ///
    /// # Errors
    /// As [`Store::idempotent_replay`].
    pub fn record_idempotent<Req, R>(
        &self,
        account_id: &str,
        action: Action,
        client_id_raw: &str,
        request: &Req,
        response: R,
    ) -> Result<Outcome<R>>
    where
        Req: Serialize + ?Sized,
        R: Serialize + DeserializeOwned,
    {
        let id = client_id(action, client_id_raw)?;
        let request = cbor::to_vec(request)?;
        let response_bytes = cbor::to_vec(&response)?;
        // `None` for this record stored: the write may run more than once (see `Store::write`),
        // so it hands `response` back only once it committed.
        let recorded = self.write(|tx, now| {
            if let Some(row) = action_idempotency::get(tx, account_id, action.as_str(), id)? {
                return replay(&row, &request, action).map(Some);
            }
            insert(tx, now, account_id, action, id, &request, &response_bytes)?;
            Ok(None)
        });
        let recorded =
            recorded.map(|replayed| replayed.map_or(Outcome::Fresh(response), Outcome::Replayed));
        self.audit_conflict(account_id, recorded)
    }
}
