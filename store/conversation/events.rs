//! The Log (`session_events`) and the activity rollups it drives (`agents.activity_*`,
//! `agents.message_*`, `sessions.message_*`).
//!
//! Invariants, kept in one `BEGIN IMMEDIATE` transaction per append:
//! - `seq` is contiguous per session from 1. It is allocated as `MAX(seq) + 1` inside the same
//!   write transaction as the insert, and `BEGIN IMMEDIATE` takes SQLite's write lock before the
//!   read, so no other connection, in this process or another sharing the file, can allocate
//!   between the read and the insert (the stronger allocator the description asks for before
//!   several service processes write one database). The primary key `(session_id, seq)` backs it: a
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
//! On PostgreSQL an append runs `READ COMMITTED` under its session's row lock
//! (`Store::write_locking`, `Db::lock_row`): appends to one session run one at a time, so the
//! seq read is the last committed, while appends to other sessions, of any account, run at once
//! on every node (two of one agent wait only for each other's rollup update).
//!
//! Every read and write names the session's account: a session of another account is refused
//! exactly like an unknown one (an append is [`Error::NotFound`], a replay is empty), folded into
//! the statement the call runs anyway, so the check costs no extra round trip.
//!
//! An event's actor is the stamped one, else derived from its shape as `sessionEventActor()`
//! does: a user-role message is `user`, an error is `system`, everything else is `agent`.

use std::borrow::Cow;

use crate::feed::topic::Topic;
use crate::sql::db::{Db, LockedRow};

use crate::error::{Error, Result};
use crate::payload::{Ipld, MessageRole, SessionActor, SessionEventPayload};
use crate::schema::session_events::Row;
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::values::ids;
use crate::Store;
use crate::{query, query_as};

/// A replay: the session's events after a seq, ascending, at most a limit (-1 for all), only
/// when the session is the account's. ?1 session, ?2 after, ?3 limit, ?4 account. The account
/// check is an uncorrelated EXISTS on the sessions primary key: one lookup per call (SQLite runs
/// it as a scalar subquery or as the outer loop of a one-row join), and the rows still come
/// straight off the `(session_id, seq)` primary key in order (see the plan test).
macro_rules! replay_query {
    ($account:expr, $session:expr, $after:expr, $limit:expr) => {
        query_as!(
            Row,
            "SELECT id, session_id, seq, event_cbor, created_at FROM session_events \
             WHERE session_id = ?1 AND seq > ?2 \
             AND EXISTS (SELECT 1 FROM sessions WHERE id = ?1 AND account_id = ?4) \
             ORDER BY seq ASC LIMIT ?3",
            $session,
            $after,
            $limit,
            $account
        )
    };
}

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

/// Appends `event` to the Log of the session `session_id` of `account_id` and moves the rollups,
/// inside the caller's write transaction (which must be `BEGIN IMMEDIATE` for the seq allocation
/// to be race-free; see the module doc). The building block of [`Store::append_event`].
///
/// # Errors
/// As [`Store::append_event`].
pub fn append_event(
    conn: &Db,
    now: i64,
    account_id: &str,
    session_id: &str,
    event: &SessionEventPayload,
) -> Result<Appended> {
    append_encoded(conn, now, account_id, session_id, &Encoded::of(event)?)
}

/// What an append needs of its event, taken before the write: its bytes, its type and who it
/// counts as for the message rollups. Encoding is the costliest part of an append and needs no
/// writer, so it runs on the caller's thread, and the operation owns what it writes.
struct Encoded {
    cbor: Cbor<SessionEventPayload>,
    /// The event's type: borrowed for the known ones, owned only for an unknown event's.
    kind: Option<Cow<'static, str>>,
    from: Option<SessionActor>,
}

impl Encoded {
    fn of(event: &SessionEventPayload) -> Result<Encoded> {
        let cbor = if event.has_no_extra() {
            Cbor::from_bytes(crate::values::cbor::to_vec_unshadowed(event)?)
        } else {
            Cbor::encode(event)?
        };
        Ok(Encoded {
            cbor,
            kind: event
                .static_type()
                .map(Cow::Borrowed)
                .or_else(|| event.event_type().map(|kind| Cow::Owned(kind.to_owned()))),
            from: message_from(event),
        })
    }
}

/// [`append_event`] for an event already encoded.
fn append_encoded(
    conn: &Db,
    now: i64,
    account_id: &str,
    session_id: &str,
    event: &Encoded,
) -> Result<Appended> {
    // Appends to one session run one at a time (on PostgreSQL, under the session's row lock;
    // appends to other sessions go on), so the seq read below is the last one committed.
    conn.lock_row(LockedRow::Session, session_id)?;
    // The session's agent, whether it is top level, and the next seq, in one read that also
    // checks the account: another account's session is not found, like an unknown one.
    let session = query!(
        "SELECT s.agent_id, CAST(s.parent_session_id IS NULL AS INTEGER) AS top_level, \
         CAST((SELECT COALESCE(MAX(e.seq), 0) + 1 FROM session_events e WHERE e.session_id = s.id) AS INTEGER) AS seq \
         FROM sessions s WHERE s.id = ?1 AND s.account_id = ?2",
        session_id,
        account_id
    )
    .fetch_optional(conn)?
    .ok_or_else(|| Error::NotFound {
        what: "session",
        id: session_id.into(),
    })?;
    conn.notify(Topic::Session(session_id.to_owned()))?;
    let agent_id = session.agent_id;
    let top_level = session.top_level.is_some_and(|t| t != 0);
    let seq = session.seq.unwrap_or(1);
    // Bound from what the operation owns, not copied into a `Row`: an append's payload is
    // its largest value, and the hot path allocates nothing it need not.
    let id = ids::new_id();
    query!(
        "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        &id,
        session_id,
        seq,
        &event.cbor,
        now
    )
    .execute(conn)?;
    let kind = event.kind.as_deref();
    // The session's rollup first, the agent's last: the agent's row is the one appends to its
    // other sessions share, so on PostgreSQL its lock is held only from here to the commit.
    match event.from.as_ref().filter(|_| top_level) {
        Some(from) => {
            query!(
                "UPDATE sessions SET updated_at = ?1, message_at = ?1, message_from = ?2 WHERE id = ?3",
                now,
                from.as_str(),
                session_id
            )
            .execute(conn)?;
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
        }
        None => {
            query!(
                "UPDATE sessions SET updated_at = ?1 WHERE id = ?2",
                now,
                session_id
            )
            .execute(conn)?;
            query!(
                "UPDATE agents SET activity_at = ?1, activity_kind = ?2 WHERE id = ?3",
                now,
                kind,
                &agent_id
            )
            .execute(conn)?;
        }
    }
    Ok(Appended {
        id,
        seq,
        created_at: now,
    })
}

impl Store {
    /// Appends `event` to the Log of the session `session_id` of `account_id` with the next
    /// `seq`, and moves the activity rollups, in one `BEGIN IMMEDIATE` transaction (see the
    /// module doc).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`) when the account has no such session (another account's
    /// session included); [`Error::Cbor`] for an event with no canonical encoding;
    /// [`Error::Sqlite`] otherwise (`SQLITE_BUSY` after the busy timeout under heavy contention).
    pub fn append_event(
        &self,
        account_id: &str,
        session_id: &str,
        event: &SessionEventPayload,
    ) -> Result<Appended> {
        let (account, session) = (account_id.to_owned(), session_id.to_owned());
        let appended = Encoded::of(event).and_then(|event| {
            self.write_owned(move |tx, now| append_encoded(tx, now, &account, &session, &event))
        });
        self.audit_refused(account_id, appended)
    }

    /// Appends `events`, in order, to the Log of the session `session_id` of `account_id`, in one
    /// `BEGIN IMMEDIATE` transaction: the events of one turn (a tool call and its result, say)
    /// take consecutive seqs and are seen together or not at all. The rollups move as if each
    /// were appended alone. Returns one [`Appended`] per event, in order.
    ///
    /// ```
    /// use seed_agents_store::payload::{Ipld, ToolCallEvent, ToolResultEvent};
    /// # use seed_agents_store::{agents::NewAgent, payload::AgentDefinition, sessions::NewSession, Store};
    /// # let dir = tempfile::tempdir()?;
    /// # let mut store = Store::open(dir.path().join("agents.sqlite"))?;
    /// # let agent = store.create_agent("acct-1", &NewAgent {
    /// #     definition: AgentDefinition::default(), state_dir: "/tmp/a".into(),
    /// #     public_read: false, public_chat: false })?;
    /// # let session = store.create_session("acct-1", &NewSession {
    /// #     agent_id: agent.id, ..NewSession::default() })?;
    /// let turn = [
    ///     ToolCallEvent::new("call-1", "read", Ipld::String("notes.md".into())).into(),
    ///     ToolResultEvent::output("call-1", "read", Ipld::String("# Notes".into())).into(),
    /// ];
    /// let appended = store.append_events("acct-1", &session.id, &turn)?;
    /// assert_eq!(appended[1].seq, appended[0].seq + 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] (`events`) when `events` is empty; otherwise as
    /// [`Store::append_event`], for the first event that fails, and then nothing is appended.
    pub fn append_events(
        &self,
        account_id: &str,
        session_id: &str,
        events: &[SessionEventPayload],
    ) -> Result<Vec<Appended>> {
        if events.is_empty() {
            return Err(invalid("events", "must hold at least one event"));
        }
        let (account, session) = (account_id.to_owned(), session_id.to_owned());
        let encoded = events.iter().map(Encoded::of).collect::<Result<Vec<_>>>();
        let appended = encoded.and_then(|events| {
            self.write_owned(move |tx, now| {
                events
                    .iter()
                    .map(|event| append_encoded(tx, now, &account, &session, event))
                    .collect()
            })
        });
        self.audit_refused(account_id, appended)
    }

    /// The events of the session `session_id` of `account_id` with `seq > after_seq`,
    /// ascending, at most `limit` of them (all when `None`). The payloads stay as stored bytes:
    /// decode each with `event_cbor.decode()`. A session the account does not have (unknown, or
    /// another account's) has no events: the answer is empty, never an error, so it does not
    /// tell the two apart. It is not audited: an empty answer is what every caught-up poll gets,
    /// and telling another account's session from one's own would cost every such poll a lookup
    /// ([`Store::session`] records the refusal).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`after_seq` negative, `limit` zero); [`Error::Sqlite`] otherwise.
    pub fn events_after(
        &self,
        account_id: &str,
        session_id: &str,
        after_seq: i64,
        limit: Option<u32>,
    ) -> Result<Vec<Row>> {
        if after_seq < 0 {
            return Err(invalid("after_seq", "must not be negative"));
        }
        if limit == Some(0) {
            return Err(invalid("limit", "must be at least 1 when given"));
        }
        replay_query!(
            account_id,
            session_id,
            after_seq,
            limit.map_or(-1, i64::from)
        )
        .fetch_all(&self.reading()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The replay stays a range of the `(session_id, seq)` primary key, so a session's events are
    /// read side by side in key order (no sort, no lookup per row), with the account check one
    /// primary-key lookup rather than one per row.
    #[test]
    fn replay_reads_the_session_seq_index_and_checks_the_account_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("plan.sqlite")).unwrap();
        let sql = replay_query!("", "", 0_i64, 0_i64).sql();
        let conn = store.conn().unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        // Parameters stay NULL: the plan does not depend on their values.
        for i in 1..=stmt.parameter_count() {
            stmt.raw_bind_parameter(i, rusqlite::types::Null).unwrap();
        }
        let mut rows = stmt.raw_query();
        let mut plan = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            plan.push(row.get::<_, String>(3).unwrap());
        }
        let text = plan.join("\n");
        assert!(
            plan.iter()
                .any(|l| l.starts_with("SEARCH session_events USING PRIMARY KEY")
                    && l.contains("(session_id=? AND seq>?)")),
            "{text}"
        );
        // The check is one primary-key lookup: SQLite runs it as a scalar subquery or, newer
        // versions, as the outer loop of an EXISTS join, once either way (never per row).
        let step = |prefix: &str| plan.iter().position(|l| l.starts_with(prefix));
        let (check, events) = (step("SEARCH sessions"), step("SEARCH session_events"));
        assert!(
            check.is_some_and(|i| plan[i].ends_with("USING PRIMARY KEY (id=?)")),
            "{text}"
        );
        assert!(
            plan.iter().any(|l| l == "SCALAR SUBQUERY 1") || check < events,
            "the check must run once, not inside the loop over the events: {text}"
        );
        for bad in ["SCAN", "CORRELATED", "TEMP B-TREE"] {
            assert!(!text.contains(bad), "{bad}: {text}");
        }
    }
}
