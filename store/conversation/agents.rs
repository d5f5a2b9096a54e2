//! Agents and their collaborators (`agents`, `agent_collaborators`), and the access check.
//!
//! Invariants, each kept in one transaction:
//! - an agent is created with its account touched, in one transaction; its `state_dir` is a
//!   relative or absolute path without `..` that names a directory below the root (deleting the
//!   agent removes it, see [`crate::deletion`]);
//! - `agents.updated_at` moves on definition, visibility and status writes only: transcript
//!   activity moves the rollup columns ([`crate::events`]), never `updated_at`, so the agent
//!   list order (newest first by `updated_at`) does not churn on every event;
//! - a collaborator row is pending until the invitee accepts (`accepted_at` set in the same
//!   statement); the owner is never a collaborator of their own agent; every collaborator write
//!   checks the agent's owner and writes in one `BEGIN IMMEDIATE` transaction.

use std::path::{Component, Path};

use crate::sql::db::Db;

use crate::accounts;
use crate::error::{Error, Result};
use crate::payload::AgentDefinition;
use crate::query_as;
use crate::schema::agent_collaborators::{self, Role, Status as InviteStatus};
use crate::schema::agents::{self, Row, Status};
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::values::ids;
use crate::values::paging::{self, page_of, Cursor, Page};
use crate::Store;

/// What an agent is created with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAgent {
    /// The definition.
    pub definition: AgentDefinition,
    /// The per-agent directory under the service data dir.
    pub state_dir: String,
    /// Whether any signed account may read the agent.
    pub public_read: bool,
    /// Whether any signed account may chat with the agent.
    pub public_chat: bool,
}

/// What an account may do with an agent, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// The agent's owning account.
    Owner,
    /// An accepted collaborator with the writer role.
    Writer,
    /// An accepted collaborator with the reader role.
    Reader,
    /// Anyone: the agent is `public_read`.
    PublicReader,
    /// No access: the account holds a pending invitation, which grants none. (An account with
    /// no relation to a private agent gets [`Error::NotFound`] instead, as for an unknown
    /// agent, so the answer never reveals that the agent exists.)
    None,
}

impl Access {
    /// Whether the account may read the agent and its sessions.
    pub fn may_read(self) -> bool {
        self != Access::None
    }

    /// Whether the account may change the agent's content (owner or writer).
    pub fn may_write(self) -> bool {
        matches!(self, Access::Owner | Access::Writer)
    }
}

/// Checks a state directory: not empty, no `..`, below the root.
fn check_state_dir(state_dir: &str) -> Result<()> {
    let path = Path::new(state_dir);
    let reason = if state_dir.trim().is_empty() {
        "must not be empty"
    } else if path.components().any(|c| c == Component::ParentDir) {
        "must not contain `..`"
    } else if !path.components().any(|c| matches!(c, Component::Normal(_))) {
        "must name a directory below the root"
    } else {
        return Ok(());
    };
    Err(invalid("state_dir", reason))
}

fn agent_not_found(id: &str) -> Error {
    Error::NotFound {
        what: "agent",
        id: id.into(),
    }
}

/// The agent `id` in any account: only for [`Store::access`], which starts from the agent and
/// decides itself what the asking account may learn (so it is not public).
fn agent_by_id(conn: &Db, id: &str) -> Result<Option<Row>> {
    query_as!(
        Row,
        "SELECT id, account_id, definition_cbor, state_dir, status, public_read, public_chat, \
         activity_at, activity_kind, message_at, message_from, activity_session_id, created_at, \
         updated_at FROM agents WHERE id = ?1",
        id
    )
    .fetch_optional(conn)
}

/// Loads the agent, changes it with `edit`, stamps `updated_at` and writes it back, in one
/// write.
fn edit_agent(
    store: &Store,
    account_id: &str,
    id: &str,
    mut edit: impl FnMut(&mut Row) -> Result<()>,
) -> Result<Row> {
    let edited = store.write(|tx, now| {
        let mut row = agents::get(tx, account_id, id)?.ok_or_else(|| agent_not_found(id))?;
        edit(&mut row)?;
        row.updated_at = now;
        accounts::touch(tx, account_id, now)?;
        agents::update(tx, &row)?;
        Ok(row)
    });
    // Another account's agent is refused like an unknown one, and recorded as a refusal.
    store.audit_refused(account_id, edited)
}

impl Store {
    /// Creates an agent (status `idle`, no activity yet) owned by `account_id`, and projects
    /// the tools of the MCP servers its definition lists, in the same transaction.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`state_dir`, `account_id`); [`Error::Sqlite`] or [`Error::Cbor`]
    /// otherwise.
    pub fn create_agent(&self, account_id: &str, new: &NewAgent) -> Result<Row> {
        self.write(|tx, now| {
            let row = create_agent(tx, now, account_id, new)?;
            crate::mcp::sync(tx, now, account_id, Some(&row.id))?;
            Ok(row)
        })
    }

    /// The agent `id` of `account_id`. Another account's is answered as unknown (`None`), and
    /// recorded in the audit log (`access.refused`).
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored value that does not decode.
    pub fn agent(&self, account_id: &str, id: &str) -> Result<Option<Row>> {
        let found = agents::get(&self.reading()?, account_id, id);
        self.audit_absent(account_id, "agent", id, found)
    }

    /// A page of `account_id`'s agents, newest first (`updated_at DESC, id DESC`), starting
    /// after `after`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`page_size`); [`Error::Sqlite`] otherwise.
    pub fn agents(
        &self,
        account_id: &str,
        page_size: Option<u32>,
        after: Option<&Cursor>,
    ) -> Result<Page<Row>> {
        let size = paging::page_size(page_size)?;
        // Two statements rather than one with `?2 IS NULL OR ...`: a plain range on the index
        // lets a deep page seek to its cursor instead of scanning from the top.
        let limit = i64::from(size) + 1;
        let items = match after {
            None => query_as!(
                Row,
                "SELECT id, account_id, definition_cbor, state_dir, status, public_read, \
                 public_chat, activity_at, activity_kind, message_at, message_from, \
                 activity_session_id, created_at, updated_at FROM agents INDEXED BY agents_by_account \
                 WHERE account_id = ?1 ORDER BY updated_at DESC, id DESC LIMIT ?2",
                account_id,
                limit
            )
            .fetch_all(&self.reading()?)?,
            Some(c) => query_as!(
                Row,
                "SELECT id, account_id, definition_cbor, state_dir, status, public_read, \
                 public_chat, activity_at, activity_kind, message_at, message_from, \
                 activity_session_id, created_at, updated_at FROM agents INDEXED BY agents_by_account \
                 WHERE account_id = ?1 AND (updated_at, id) < (?3, ?4) \
                 ORDER BY updated_at DESC, id DESC LIMIT ?2",
                account_id,
                limit,
                c.updated_at,
                c.id.as_str()
            )
            .fetch_all(&self.reading()?)?,
        };
        Ok(page_of(items, size, |r| (r.updated_at, r.id.clone())))
    }

    /// Replaces the agent's definition (unknown fields are kept as the caller passes them), then
    /// brings its MCP projections in line with the servers it now lists (a second short
    /// transaction: the sync is idempotent and also runs on every tool listing).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] or [`Error::Cbor`] otherwise.
    pub fn update_agent_definition(
        &self,
        account_id: &str,
        id: &str,
        definition: &AgentDefinition,
    ) -> Result<Row> {
        let cbor = Cbor::encode(definition)?;
        let row = edit_agent(self, account_id, id, |row| {
            row.definition_cbor = cbor.clone();
            Ok(())
        })?;
        self.sync_mcp_tools(account_id, Some(id))?;
        Ok(row)
    }

    /// Sets `public_read` and/or `public_chat` (a `None` leaves that flag as it is).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn set_agent_visibility(
        &self,
        account_id: &str,
        id: &str,
        public_read: Option<bool>,
        public_chat: Option<bool>,
    ) -> Result<Row> {
        edit_agent(self, account_id, id, |row| {
            if let Some(v) = public_read {
                row.public_read = v;
            }
            if let Some(v) = public_chat {
                row.public_chat = v;
            }
            Ok(())
        })
    }

    /// Sets the agent's status column.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn set_agent_status(&self, account_id: &str, id: &str, status: Status) -> Result<Row> {
        edit_agent(self, account_id, id, |row| {
            row.status = status;
            Ok(())
        })
    }

    /// Invites `invitee` to the agent `agent_id` of `owner_account` with `role`: a pending row,
    /// or, for a pending invitation that exists, its role changed.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Invalid`] (`invitee`) when the invitee is the
    /// owner; [`Error::Conflict`] when the invitee already collaborates (use
    /// [`Store::set_collaborator_role`]); [`Error::Sqlite`] otherwise.
    pub fn invite_collaborator(
        &self,
        owner_account: &str,
        agent_id: &str,
        invitee: &str,
        role: Role,
    ) -> Result<agent_collaborators::Row> {
        ids::check_id("invitee", invitee)?;
        if invitee == owner_account {
            return Err(invalid(
                "invitee",
                "the owner cannot be invited to their own agent",
            ));
        }
        self.write(|tx, now| {
            agents::get(tx, owner_account, agent_id)?.ok_or_else(|| agent_not_found(agent_id))?;
            accounts::touch(tx, invitee, now)?;
            match agent_collaborators::get(tx, invitee, agent_id)? {
                Some(existing) if existing.status == InviteStatus::Accepted => {
                    Err(Error::Conflict {
                        what: "collaborator",
                        key: invitee.into(),
                        reason: "already collaborates on this agent".into(),
                    })
                }
                Some(existing) => {
                    let row = agent_collaborators::Row {
                        role,
                        updated_at: now,
                        ..existing
                    };
                    agent_collaborators::update(tx, &row)?;
                    Ok(row)
                }
                None => {
                    let row = agent_collaborators::Row {
                        agent_id: agent_id.into(),
                        account_id: invitee.into(),
                        role,
                        status: InviteStatus::Pending,
                        created_at: now,
                        updated_at: now,
                        accepted_at: None,
                    };
                    agent_collaborators::insert(tx, &row)?;
                    Ok(row)
                }
            }
        })
    }

    /// Accepts `invitee`'s invitation to `agent_id` (sets `accepted_at`). Accepting twice keeps
    /// the first acceptance time.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`invitation`) when there is none; [`Error::Sqlite`] otherwise.
    pub fn accept_invitation(
        &self,
        invitee: &str,
        agent_id: &str,
    ) -> Result<agent_collaborators::Row> {
        self.write(|tx, now| {
            let mut row = agent_collaborators::get(tx, invitee, agent_id)?.ok_or_else(|| {
                Error::NotFound {
                    what: "invitation",
                    id: agent_id.into(),
                }
            })?;
            if row.status == InviteStatus::Pending {
                row.status = InviteStatus::Accepted;
                row.accepted_at = Some(now);
                row.updated_at = now;
                accounts::touch(tx, invitee, now)?;
                agent_collaborators::update(tx, &row)?;
            }
            Ok(row)
        })
    }

    /// Changes a collaborator's (or a pending invitation's) role.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`, `collaborator`); [`Error::Sqlite`] otherwise.
    pub fn set_collaborator_role(
        &self,
        owner_account: &str,
        agent_id: &str,
        collaborator: &str,
        role: Role,
    ) -> Result<agent_collaborators::Row> {
        self.write(|tx, now| {
            agents::get(tx, owner_account, agent_id)?.ok_or_else(|| agent_not_found(agent_id))?;
            let mut row =
                agent_collaborators::get(tx, collaborator, agent_id)?.ok_or_else(|| {
                    Error::NotFound {
                        what: "collaborator",
                        id: collaborator.into(),
                    }
                })?;
            row.role = role;
            row.updated_at = now;
            accounts::touch(tx, owner_account, now)?;
            agent_collaborators::update(tx, &row)?;
            Ok(row)
        })
    }

    /// Removes a collaborator or withdraws an invitation; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn remove_collaborator(
        &self,
        owner_account: &str,
        agent_id: &str,
        collaborator: &str,
    ) -> Result<bool> {
        self.write(|tx, _| {
            agents::get(tx, owner_account, agent_id)?.ok_or_else(|| agent_not_found(agent_id))?;
            Ok(agent_collaborators::delete(tx, collaborator, agent_id)? > 0)
        })
    }

    /// The collaborators and pending invitations of the agent `agent_id` of `owner_account`,
    /// oldest invitation first.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn collaborators(
        &self,
        owner_account: &str,
        agent_id: &str,
    ) -> Result<Vec<agent_collaborators::Row>> {
        agents::get(&self.reading()?, owner_account, agent_id)?
            .ok_or_else(|| agent_not_found(agent_id))?;
        query_as!(
            agent_collaborators::Row,
            "SELECT agent_id, account_id, role, status, created_at, updated_at, accepted_at \
             FROM agent_collaborators WHERE agent_id = ?1 ORDER BY created_at ASC, account_id ASC",
            agent_id
        )
        .fetch_all(&self.reading()?)
    }

    /// The agents `account_id` collaborates on or is invited to (accepted before pending, then
    /// most recently changed first).
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn collaborations(&self, account_id: &str) -> Result<Vec<agent_collaborators::Row>> {
        agent_collaborators::list_by_account_id(&self.reading()?, account_id)
    }

    /// What `account_id` may do with the agent `agent_id`: owner, accepted writer or reader,
    /// public reader (`public_read`), or none (a pending invitation, which grants nothing). An
    /// accepted role wins over public reading. Chatting with a public-chat agent is the caller's
    /// policy on top of this (`agents.public_chat`).
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`) when the agent does not exist, and also when it is a private
    /// agent of another account that `account_id` has no invitation to: the two are answered
    /// alike, so probing ids reveals nothing. [`Error::Sqlite`] otherwise.
    pub fn access(&self, agent_id: &str, account_id: &str) -> Result<Access> {
        let agent = agent_by_id(&self.reading()?.db(), agent_id)?
            .ok_or_else(|| agent_not_found(agent_id))?;
        if agent.account_id == account_id {
            return Ok(Access::Owner);
        }
        let invitation = agent_collaborators::get(&self.reading()?, account_id, agent_id)?;
        match &invitation {
            Some(c) if c.status == InviteStatus::Accepted => Ok(match c.role {
                Role::Writer => Access::Writer,
                Role::Reader => Access::Reader,
            }),
            _ if agent.public_read => Ok(Access::PublicReader),
            // A pending invitee was told about the agent; anyone else learns nothing.
            Some(_) => Ok(Access::None),
            None => Err(agent_not_found(agent_id)),
        }
    }
}

/// Creates an agent inside the caller's transaction (the building block of
/// [`Store::create_agent`], for use under [`Store::idempotent`](crate::Store::idempotent)).
///
/// # Errors
/// As [`Store::create_agent`].
pub fn create_agent(conn: &Db, now: i64, account_id: &str, new: &NewAgent) -> Result<Row> {
    check_state_dir(&new.state_dir)?;
    accounts::touch(conn, account_id, now)?;
    let row = Row {
        id: ids::new_id(),
        account_id: account_id.into(),
        definition_cbor: Cbor::encode(&new.definition)?,
        state_dir: new.state_dir.clone(),
        status: Status::Idle,
        public_read: new.public_read,
        public_chat: new.public_chat,
        activity_at: None,
        activity_kind: None,
        message_at: None,
        message_from: None,
        activity_session_id: None,
        created_at: now,
        updated_at: now,
    };
    agents::insert(conn, &row)?;
    Ok(row)
}
