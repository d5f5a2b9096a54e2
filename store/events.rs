//! The Log (`session_events`) and the activity rollups it drives (`agents.activity_*`,
//! `agents.message_*`, `sessions.message_*`).
//!
//! Invariants, kept in one `BEGIN IMMEDIATE` transaction per append:
//! - `seq` is contiguous per session from 1. It is allocated as `MAX(seq) + 1` inside the same
//!   write transaction as the insert, and `BEGIN IMMEDIATE` takes SQLite's write lock before the
//!   read, so no other connection, in this process or another sharing the file, can allocate
//!   between the read and the insert (the stronger allocator the description asks for before
//!   several service processes write one database). `UNIQUE (session_id, seq)` backs it: a
//!   caller that ran [`append_event`] in a deferred transaction would get an error, never a
//!   duplicate;
//! - every append moves the rollups exactly as the description defines: the agent's
//!   `activity_at`/`activity_kind` on every event; the agent's `message_at`/`message_from`/
//!   `activity_session_id` and the session's `message_at`/`message_from` only for a `user` or
//!   `assistant` message whose actor is a person, a trigger or the agent, in a top-level session
//!   (tool activity, system notices and every event of a child session never move them);
//! - the session's `updated_at` moves with every append, so the session list surfaces active
//!   chats; the agent's `updated_at` does not (see [`crate::agents`]).
//!
//! An event's actor is the stamped one, else derived from its shape as `sessionEventActor()`
//! does: a user-role message is `user`, an error is `system`, everything else is `agent`.

use rusqlite::{Connection, TransactionBehavior};

use crate::accounts;
use crate::cbor::Cbor;
use crate::error::{Error, Result};
use crate::payload::{Ipld, MessageRole, SessionActor, SessionEventPayload};
use crate::schema::session_events::{self, Row};
use crate::Store;
use crate::{query, query_as};

/// Where an appended event landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The event's row id.
    pub id: String,
    /// Its sequence number in the session (from 1).
    pub seq: i64,
    /// When it was appended.
    pub created_at: i64,
}

/// The actor of an event: the stamped one, else derived from its shape (a user-role message is
/// `user`, an error is `system`, everything else is `agent`).
pub fn event_actor(event: &SessionEventPayload) -> SessionActor {
    if let Some(actor) = event.actor() {
        return actor.clone();
    }
    match event {
        SessionEventPayload::Message(m) if m.role == MessageRole::User => SessionActor::User,
        SessionEventPayload::Message(_) => SessionActor::Agent,
        SessionEventPayload::Error(_) => SessionActor::System,
        SessionEventPayload::Other(map) => {
            let text = |key: &str| match map.get(key) {
                Some(Ipld::String(s)) => Some(s.as_str()),
                _ => None,
            };
            if let Some(actor) = text("actor") {
                return SessionActor::from(actor);
            }
            match (text("type"), text("role")) {
                (Some("message"), Some("user")) => SessionActor::User,
                (Some("error"), _) => SessionActor::System,
                _ => SessionActor::Agent,
            }
        }
        _ => SessionActor::Agent,
    }
}

/// Who a message counts as for the `message_*` rollups, or `None` when the event is not a
/// message from a person, a trigger or the agent (tool messages, system notices, tool calls,
/// spawns, results, errors, unknown events).
pub fn message_from(event: &SessionEventPayload) -> Option<SessionActor> {
    let SessionEventPayload::Message(message) = event else {
        return None;
    };
    if !matches!(message.role, MessageRole::User | MessageRole::Assistant) {
        return None;
    }
    match event_actor(event) {
        actor @ (SessionActor::User | SessionActor::Trigger | SessionActor::Agent) => Some(actor),
        _ => None,
    }
}

/// Appends `event` to the session's Log and moves the rollups, inside the caller's write
/// transaction (which must be `BEGIN IMMEDIATE` for the seq allocation to be race-free; see the
/// module doc). The building block of [`Store::append_event`].
///
/// # Errors
/// As [`Store::append_event`].
pub fn append_event(
    conn: &Connection,
    now: i64,
    session_id: &str,
    event: &SessionEventPayload,
) -> Result<Appended> {
    let event_cbor = Cbor::encode(event)?;
    // The session's agent, whether it is top level, and the next seq, in one read.
    let session = query!(
        "SELECT s.agent_id, CAST(s.parent_session_id IS NULL AS INTEGER) AS top_level, \
         CAST((SELECT COALESCE(MAX(e.seq), 0) + 1 FROM session_events e WHERE e.session_id = s.id) AS INTEGER) AS seq \
         FROM sessions s WHERE s.id = ?1",
        session_id
    )
    .fetch_optional(conn)?
    .ok_or_else(|| Error::NotFound {
        what: "session",
        id: session_id.into(),
    })?;
    let agent_id = session.agent_id;
    let top_level = session.top_level.is_some_and(|t| t != 0);
    let seq = session.seq.unwrap_or(1);
    let row = Row {
        id: accounts::new_id(),
        session_id: session_id.into(),
        seq,
        event_cbor,
        created_at: now,
    };
    session_events::insert(conn, &row)?;
    let kind = event.event_type();
    match message_from(event).filter(|_| top_level) {
        Some(from) => {
            query!(
                "UPDATE agents SET activity_at = ?1, activity_kind = ?2, \
                 message_at = ?1, message_from = ?3, activity_session_id = ?4 WHERE id = ?5",
                now,
                kind,
                from.as_str(),
                session_id,
                &agent_id
            )
            .execute(conn)?;
            query!(
                "UPDATE sessions SET updated_at = ?1, message_at = ?1, message_from = ?2 WHERE id = ?3",
                now,
                from.as_str(),
                session_id
            )
            .execute(conn)?;
        }
        None => {
            query!(
                "UPDATE agents SET activity_at = ?1, activity_kind = ?2 WHERE id = ?3",
                now,
                kind,
                &agent_id
            )
            .execute(conn)?;
            query!(
                "UPDATE sessions SET updated_at = ?1 WHERE id = ?2",
                now,
                session_id
            )
            .execute(conn)?;
        }
    }
    Ok(Appended {
        id: row.id,
        seq,
        created_at: now,
    })
}

impl Store {
    /// Appends `event` to the session's Log with the next `seq`, and moves the activity rollups,
    /// in one `BEGIN IMMEDIATE` transaction (see the module doc).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Cbor`] for an event with no canonical encoding;
    /// [`Error::Sqlite`] otherwise (`SQLITE_BUSY` after the busy timeout under heavy contention).
    pub fn append_event(
        &mut self,
        session_id: &str,
        event: &SessionEventPayload,
    ) -> Result<Appended> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let appended = append_event(&tx, now, session_id, event)?;
        tx.commit()?;
        Ok(appended)
    }

    /// The session's events with `seq > after_seq`, ascending, at most `limit` of them (all when
    /// `None`). The payloads stay as stored bytes: decode each with `event_cbor.decode()`. An
    /// unknown session has no events.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`afterSeq` negative, `limit` zero); [`Error::Sqlite`] otherwise.
    pub fn events_after(
        &self,
        session_id: &str,
        after_seq: i64,
        limit: Option<u32>,
    ) -> Result<Vec<Row>> {
        if after_seq < 0 {
            return Err(Error::Invalid {
                field: "afterSeq",
                reason: "must not be negative".into(),
            });
        }
        if limit == Some(0) {
            return Err(Error::Invalid {
                field: "limit",
                reason: "must be at least 1 when given".into(),
            });
        }
        query_as!(
            Row,
            "SELECT id, session_id, seq, event_cbor, created_at FROM session_events \
             WHERE session_id = ?1 AND seq > ?2 ORDER BY seq ASC LIMIT ?3",
            session_id,
            after_seq,
            limit.map_or(-1, i64::from)
        )
        .fetch_all(self.conn())
    }
}
