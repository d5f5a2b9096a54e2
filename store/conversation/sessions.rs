//! Sessions (`sessions`): creation, listing, lineage, and the fields the agent and the user
//! maintain (title, plan, model override, description, thoroughness).
//!
//! Invariants, each read-then-written in one `BEGIN IMMEDIATE` transaction:
//! - `title_source` protects a title: sources rank `system` < `agent` < `user`, and a title
//!   write lands only when its source ranks at least as high as the stored one. So a `user`
//!   title is never overwritten by an automatic path, and `agent` replaces `system` (or an
//!   earlier `agent` title) but never `user`;
//! - a plan's `resolvedBy` and `settledAt` come only from the runtime ([`PlanWriter::Runtime`]);
//!   `settledAt` is stamped when every step is terminal and cleared when one reopens;
//! - a session's parent is in the same account, and listing is a keyset on
//!   `(updated_at DESC, id DESC)` that stays stable while sessions are created. Appending an
//!   event moves a session's `updated_at` ([`crate::events`]), so a session that becomes active
//!   while a client pages jumps above the cursor: later pages neither repeat nor shift, and the
//!   active session shows on the next read from the top.
//!
//! `status` is the runs' derived mirror and is written by the run queue, not here.

use crate::sql::db::Db;

use crate::accounts;
use crate::error::{Error, Result};
use crate::payload::{ModelOverride, RunPlan};
use crate::query_as;
use crate::schema::agents;
use crate::schema::sessions::{self, Row, Status, Thoroughness, TitleSource};
use crate::values::cbor::Cbor;
use crate::values::check::{self, invalid};
use crate::values::ids;
use crate::values::paging::{page_of, page_size, Cursor, Page};
use crate::Store;

/// The longest title accepted, in bytes (after trimming).
pub const MAX_TITLE_BYTES: usize = 1024;
/// The longest description accepted, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

/// What a session is created with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSession {
    /// The agent the session talks to (owned by the session's account).
    pub agent_id: String,
    /// The initial title, if any.
    pub title: Option<String>,
    /// Who wrote the initial title; `None` is `system`.
    pub title_source: Option<TitleSource>,
    /// The session that spawned this one (a delegate or script child, an agent-started session).
    pub parent_session_id: Option<String>,
    /// The run this session is the transcript of.
    pub run_id: Option<String>,
    /// The delegation preset override.
    pub thoroughness: Option<Thoroughness>,
    /// The quick-switched provider and model.
    pub model_override: Option<ModelOverride>,
}

/// Which path writes a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanWriter {
    /// The plan verb with model input: `resolvedBy` and `settledAt` are refused.
    Model,
    /// The runtime: may mark steps `resolvedBy: runtime` and carry `settledAt`.
    Runtime,
}

/// The outcome of a plan write.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanWrite {
    /// The session as written.
    pub session: Row,
    /// Whether this write settled the plan (every step terminal, and it was not settled before):
    /// the moment the runtime copies the plan onto its owning agent run.
    pub settled_now: bool,
}

/// What a session list asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionQuery {
    /// Include sessions with a parent (the lineage-aware top-level view passes `false`).
    pub include_children: bool,
    /// Rows per page: `None` is 50, at most 200.
    pub page_size: Option<u32>,
    /// Start after this row.
    pub after: Option<Cursor>,
}

fn session_not_found(id: &str) -> Error {
    Error::NotFound {
        what: "session",
        id: id.into(),
    }
}

fn rank(source: TitleSource) -> u8 {
    match source {
        TitleSource::System => 0,
        TitleSource::Agent => 1,
        TitleSource::User => 2,
    }
}

/// Trims and checks a title.
fn title_text(title: &str) -> Result<&str> {
    check::name("title", title, MAX_TITLE_BYTES)
}

/// Checks a plan and stamps or clears `settledAt` against the stored plan.
fn normalize_plan(
    mut plan: RunPlan,
    writer: PlanWriter,
    previous: Option<&RunPlan>,
    now: i64,
) -> Result<(RunPlan, bool)> {
    if writer == PlanWriter::Model {
        if plan.settled_at.is_some() {
            return Err(invalid(
                "plan.settled_at",
                "is written by the runtime, never from model input",
            ));
        }
        if plan.steps.iter().any(|s| s.resolved_by.is_some()) {
            return Err(invalid(
                "plan.steps.resolved_by",
                "is written by the runtime, never from model input",
            ));
        }
    }
    let mut ids = std::collections::HashSet::new();
    for step in &plan.steps {
        if step.id.trim().is_empty() || !ids.insert(step.id.as_str()) {
            return Err(invalid(
                "plan.steps.id",
                format!("{:?} is empty or not unique within the plan", step.id),
            ));
        }
    }
    let was_settled = previous.and_then(|p| p.settled_at);
    let terminal = !plan.steps.is_empty() && plan.all_steps_terminal();
    let mut settled_now = false;
    plan.settled_at = if terminal {
        // Keep the moment it first settled; the runtime may name it, otherwise it is now.
        match (was_settled, plan.settled_at) {
            (Some(at), _) => Some(at),
            (None, given) => {
                settled_now = true;
                Some(given.unwrap_or(now))
            }
        }
    } else {
        None
    };
    Ok((plan, settled_now))
}

/// Loads the session, lets `edit` change it, stamps `updated_at` and writes it back, in one
/// write. `edit` returns `false` to leave the row unwritten.
fn edit_session<T>(
    store: &Store,
    account_id: &str,
    id: &str,
    mut edit: impl FnMut(&mut Row, i64) -> Result<(bool, T)>,
) -> Result<(Row, T)> {
    let edited = store.write(|tx, now| {
        let mut row = sessions::get(tx, account_id, id)?.ok_or_else(|| session_not_found(id))?;
        let (write, out) = edit(&mut row, now)?;
        if write {
            row.updated_at = now;
            accounts::touch(tx, account_id, now)?;
            sessions::update(tx, &row)?;
        }
        Ok((row, out))
    });
    // Another account's session is refused like an unknown one, and recorded as a refusal.
    store.audit_refused(account_id, edited)
}

/// Creates a session inside the caller's transaction (the building block of
/// [`Store::create_session`], for use under [`Store::idempotent`](crate::Store::idempotent)).
///
/// # Errors
/// As [`Store::create_session`].
pub fn create_session(conn: &Db, now: i64, account_id: &str, new: &NewSession) -> Result<Row> {
    let title = new.title.as_deref().map(title_text).transpose()?;
    agents::get(conn, account_id, &new.agent_id)?.ok_or_else(|| Error::NotFound {
        what: "agent",
        id: new.agent_id.clone(),
    })?;
    if let Some(parent) = &new.parent_session_id {
        sessions::get(conn, account_id, parent)?.ok_or_else(|| session_not_found(parent))?;
    }
    accounts::touch(conn, account_id, now)?;
    let row = Row {
        id: ids::new_id(),
        account_id: account_id.into(),
        agent_id: new.agent_id.clone(),
        title: title.map(str::to_owned),
        title_source: new.title_source.unwrap_or(TitleSource::System),
        status: Status::Idle,
        parent_session_id: new.parent_session_id.clone(),
        run_id: new.run_id.clone(),
        plan_cbor: None,
        model_override_cbor: new.model_override.as_ref().map(Cbor::encode).transpose()?,
        description: None,
        thoroughness: new.thoroughness,
        message_at: None,
        message_from: None,
        created_at: now,
        updated_at: now,
    };
    sessions::insert(conn, &row)?;
    Ok(row)
}

impl Store {
    /// Creates a session (status `idle`) in `account_id`, the owner of its agent.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`agent`, `session` for the parent) when they are not in the account;
    /// [`Error::Invalid`] (`title`); [`Error::Sqlite`] otherwise.
    pub fn create_session(&self, account_id: &str, new: &NewSession) -> Result<Row> {
        let created = self.write(|tx, now| create_session(tx, now, account_id, new));
        self.audit_refused(account_id, created)
    }

    /// The session `id` of `account_id`. Another account's is answered as unknown (`None`), and
    /// recorded in the audit log (`access.refused`).
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored value that does not decode.
    pub fn session(&self, account_id: &str, id: &str) -> Result<Option<Row>> {
        let found = sessions::get(&self.reading()?, account_id, id);
        self.audit_absent(account_id, "session", id, found)
    }

    /// A page of the agent's sessions, most recently updated first (`updated_at DESC, id DESC`).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`page_size`); [`Error::Sqlite`] otherwise.
    pub fn sessions(
        &self,
        account_id: &str,
        agent_id: &str,
        query: &SessionQuery,
    ) -> Result<Page<Row>> {
        let size = page_size(query.page_size)?;
        // Two statements, as in `Store::agents`, so a deep page seeks to its cursor.
        let (children, limit) = (query.include_children, i64::from(size) + 1);
        let items: Vec<Row> = match &query.after {
            None => query_as!(
                Row,
                "SELECT id, account_id, agent_id, title, title_source, status, parent_session_id, \
                 run_id, plan_cbor, model_override_cbor, description, thoroughness, message_at, \
                 message_from, created_at, updated_at FROM sessions INDEXED BY sessions_by_agent \
                 WHERE agent_id = ?1 AND account_id = ?2 \
                 AND (?3 OR parent_session_id IS NULL) \
                 ORDER BY updated_at DESC, id DESC LIMIT ?4",
                agent_id,
                account_id,
                children,
                limit
            )
            .fetch_all(&self.reading()?)?,
            Some(c) => query_as!(
                Row,
                "SELECT id, account_id, agent_id, title, title_source, status, parent_session_id, \
                 run_id, plan_cbor, model_override_cbor, description, thoroughness, message_at, \
                 message_from, created_at, updated_at FROM sessions INDEXED BY sessions_by_agent \
                 WHERE agent_id = ?1 AND account_id = ?2 \
                 AND (?3 OR parent_session_id IS NULL) AND (updated_at, id) < (?5, ?6) \
                 ORDER BY updated_at DESC, id DESC LIMIT ?4",
                agent_id,
                account_id,
                children,
                limit,
                c.updated_at,
                c.id.as_str()
            )
            .fetch_all(&self.reading()?)?,
        };
        Ok(page_of(items, size, |r| (r.updated_at, r.id.clone())))
    }

    /// The sessions `session_id` spawned, oldest first.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn child_sessions(&self, account_id: &str, session_id: &str) -> Result<Vec<Row>> {
        sessions::list_by_parent_session_id(&self.reading()?, account_id, session_id)
    }

    /// Writes a title by `source`, when the rules allow (see the module doc); returns whether it
    /// was written. A refused automatic title is not an error: the user's title simply stays.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Invalid`] (`title`); [`Error::Sqlite`] otherwise.
    pub fn set_session_title(
        &self,
        account_id: &str,
        id: &str,
        title: &str,
        source: TitleSource,
    ) -> Result<bool> {
        let title = title_text(title)?;
        let (_, written) = edit_session(self, account_id, id, |row, _| {
            if rank(source) < rank(row.title_source) {
                return Ok((false, false));
            }
            row.title = Some(title.into());
            row.title_source = source;
            Ok((true, true))
        })?;
        Ok(written)
    }

    /// Replaces (or with `None` clears) the session's plan, as written by `writer`.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Invalid`] (`plan.settled_at`,
    /// `plan.steps.resolved_by` from the model; `plan.steps.id` empty or repeated);
    /// [`Error::Sqlite`] or [`Error::Cbor`] otherwise.
    pub fn set_session_plan(
        &self,
        account_id: &str,
        id: &str,
        plan: Option<RunPlan>,
        writer: PlanWriter,
    ) -> Result<PlanWrite> {
        let (session, settled_now) = edit_session(self, account_id, id, |row, now| {
            let Some(plan) = plan.clone() else {
                row.plan_cbor = None;
                return Ok((true, false));
            };
            let previous = row.plan_cbor.as_ref().map(Cbor::decode).transpose()?;
            let (plan, settled_now) = normalize_plan(plan, writer, previous.as_ref(), now)?;
            row.plan_cbor = Some(Cbor::encode(&plan)?);
            Ok((true, settled_now))
        })?;
        Ok(PlanWrite {
            session,
            settled_now,
        })
    }

    /// Sets (or with `None` clears) the session's model override.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Sqlite`] or [`Error::Cbor`] otherwise.
    pub fn set_session_model_override(
        &self,
        account_id: &str,
        id: &str,
        model_override: Option<&ModelOverride>,
    ) -> Result<Row> {
        let cbor = model_override.map(Cbor::encode).transpose()?;
        Ok(edit_session(self, account_id, id, |row, _| {
            row.model_override_cbor = cbor.clone();
            Ok((true, ()))
        })?
        .0)
    }

    /// Sets (or with `None` clears) the live status line the agent maintains.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Invalid`] (`description`) over 4096 bytes;
    /// [`Error::Sqlite`] otherwise.
    pub fn set_session_description(
        &self,
        account_id: &str,
        id: &str,
        description: Option<&str>,
    ) -> Result<Row> {
        if description.is_some_and(|d| d.len() > MAX_DESCRIPTION_BYTES) {
            return Err(invalid(
                "description",
                format!("must be at most {MAX_DESCRIPTION_BYTES} bytes"),
            ));
        }
        Ok(edit_session(self, account_id, id, |row, _| {
            row.description = description.map(str::to_owned);
            Ok((true, ()))
        })?
        .0)
    }

    /// Sets (or with `None` clears) the delegation preset override.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`); [`Error::Sqlite`] otherwise.
    pub fn set_session_thoroughness(
        &self,
        account_id: &str,
        id: &str,
        thoroughness: Option<Thoroughness>,
    ) -> Result<Row> {
        Ok(edit_session(self, account_id, id, |row, _| {
            row.thoroughness = thoroughness;
            Ok((true, ()))
        })?
        .0)
    }
}
