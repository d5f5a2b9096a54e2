//! Putting runs on the queue: a new run, and a continue-as-new successor.
//!
//! Invariant: a session's runs are created in strictly increasing `created_at` order
//! ([`next_created_at`], read inside the enqueuing transaction), so the queue serves a session's
//! turns in the order they were enqueued.

use crate::sql::db::Db;

use super::lifecycle::{load_run, mirror_session, terminate};
use super::{ContinueAsNew, NewRun};
use crate::error::{Error, Result};
use crate::feed::topic::Topic;
use crate::lease::{fence, Claim};
use crate::schema::runs::{self, Status};
use crate::values::cbor::Cbor;
use crate::values::check::{invalid, non_empty};
use crate::values::ids::new_id;
use crate::{query, Store};

impl Store {
    /// Enqueues a run. The title is required and trimmed; a child takes its root and depth from
    /// its parent, which must exist in the same account. With a caller-chosen id, a second
    /// enqueue writes nothing and returns the existing row.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty title or `max_attempts < 1`, [`Error::NotFound`] for a
    /// parent, agent, session or trigger firing not in the account, [`Error::Conflict`] when the
    /// chosen id belongs to another account, [`Error::Sqlite`] otherwise (for example an unknown
    /// agent or session).
    pub fn enqueue_run(&self, new: &NewRun) -> Result<runs::Row> {
        non_empty("title", &new.title)?;
        let title = new.title.trim();
        if new.max_attempts < 1 {
            return Err(invalid(
                "max_attempts",
                format!("must be at least 1, got {}", new.max_attempts),
            ));
        }
        if let Some(id) = &new.id {
            non_empty("id", id)?;
        }
        self.write(|tx, now| {
            if let Some(id) = &new.id {
                let owner = query!("SELECT account_id FROM runs WHERE id = ?1", id)
                    .fetch_optional(tx)?
                    .map(|r| r.account_id);
                match owner {
                    Some(owner) if owner == new.account_id => {
                        return load_run(tx, &new.account_id, id);
                    }
                    Some(_) => {
                        return Err(Error::Conflict {
                            what: "run",
                            key: id.clone(),
                            reason: "the id is taken".into(),
                        })
                    }
                    None => {}
                }
            }
            let id = new.id.clone().unwrap_or_else(new_id);
            let (root_run_id, depth) = match &new.parent_run_id {
                Some(parent_id) => {
                    let parent = runs::get(tx, &new.account_id, parent_id)?.ok_or_else(|| {
                        Error::NotFound {
                            what: "parent run",
                            id: parent_id.clone(),
                        }
                    })?;
                    (parent.root_run_id, parent.depth + 1)
                }
                None => (id.clone(), 0),
            };
            // Foreign keys check existence only: the agent, session and firing must also be the
            // account's own.
            if let Some(agent_id) = &new.agent_id {
                if crate::schema::agents::get(tx, &new.account_id, agent_id)?.is_none() {
                    return Err(Error::NotFound {
                        what: "agent",
                        id: agent_id.clone(),
                    });
                }
            }
            if let Some(session_id) = &new.session_id {
                if crate::schema::sessions::get(tx, &new.account_id, session_id)?.is_none() {
                    return Err(Error::NotFound {
                        what: "session",
                        id: session_id.clone(),
                    });
                }
            }
            if let Some(firing_id) = &new.trigger_firing_id {
                if crate::schema::trigger_firings::get(tx, &new.account_id, firing_id)?.is_none() {
                    return Err(Error::NotFound {
                        what: "trigger firing",
                        id: firing_id.clone(),
                    });
                }
            }
            crate::accounts::touch(tx, &new.account_id, now)?;
            let created_at = next_created_at(tx, new.session_id.as_deref(), now)?;
            let row = runs::Row {
                id,
                account_id: new.account_id.clone(),
                root_run_id,
                parent_run_id: new.parent_run_id.clone(),
                parent_tool_call_id: new.parent_tool_call_id.clone(),
                continued_from_run_id: None,
                depth,
                kind: new.kind,
                agent_id: new.agent_id.clone(),
                session_id: new.session_id.clone(),
                trigger_firing_id: new.trigger_firing_id.clone(),
                origin: new.origin,
                title: Some(title.to_owned()),
                model: new.model.clone(),
                source_cid: new.source_cid.clone(),
                source_text: new.source_text.clone(),
                input_cbor: Cbor::encode(&new.input)?,
                output_cbor: None,
                error_cbor: None,
                status: Status::Queued,
                wait_cbor: None,
                attempt: 0,
                max_attempts: new.max_attempts,
                not_before: new.not_before,
                queue: new.queue,
                lease_owner: None,
                lease_expires_at: None,
                budget_cbor: new.budget.as_ref().map(Cbor::encode).transpose()?,
                usage_cbor: None,
                plan_cbor: None,
                created_at,
                started_at: None,
                finished_at: None,
                updated_at: now,
            };
            runs::insert(tx, &row)?;
            tx.notify(Topic::Runs)?;
            if let Some(session) = &row.session_id {
                mirror_session(tx, &row.account_id, session)?;
            }
            Ok(row)
        })
    }

    /// Ends the claimed run as succeeded and enqueues its successor in one transaction: same
    /// tree position, kind, agent, session, source and queue, `continued_from_run_id` set, a
    /// fresh journal (the successor has its own id). Returns the successor.
    ///
    /// # Errors
    /// [`Error::LeaseLost`] when `claim` no longer holds the run, [`Error::NotFound`] when it is
    /// not in the account.
    pub fn continue_as_new(&self, claim: &Claim, next: &ContinueAsNew) -> Result<runs::Row> {
        if let Some(title) = &next.title {
            non_empty("title", title)?;
        }
        self.write(|tx, now| {
            let mut row = fence(tx, claim)?;
            let created_at = next_created_at(tx, row.session_id.as_deref(), now)?;
            let successor = runs::Row {
                id: new_id(),
                continued_from_run_id: Some(row.id.clone()),
                title: next
                    .title
                    .as_ref()
                    .map(|t| t.trim().to_owned())
                    .or_else(|| row.title.clone()),
                input_cbor: Cbor::encode(&next.input)?,
                output_cbor: None,
                error_cbor: None,
                status: Status::Queued,
                wait_cbor: None,
                attempt: 0,
                not_before: None,
                lease_owner: None,
                lease_expires_at: None,
                usage_cbor: None,
                plan_cbor: None,
                created_at,
                started_at: None,
                finished_at: None,
                updated_at: now,
                ..row.clone()
            };
            // The successor goes in first, so the session never looks idle in between.
            runs::insert(tx, &successor)?;
            tx.notify(Topic::Runs)?;
            terminate(
                tx,
                &mut row,
                Status::Succeeded,
                Some(next.output.clone()),
                None,
                now,
            )?;
            Ok(successor)
        })
    }
}

/// The `created_at` of a run enqueued now into `session_id`: `now`, or one millisecond past the
/// session's newest run when that is not earlier. The queue serializes a session's turns in
/// `created_at` order, so two turns enqueued in the same millisecond must not tie (a tie would
/// fall to the run id, which is random): this keeps a session's runs in insertion order on
/// `runs_dispatch` itself. Runs inside the caller's write transaction, so concurrent enqueuers
/// (threads or processes) serialize on it.
fn next_created_at(conn: &Db, session_id: Option<&str>, now: i64) -> Result<i64> {
    let Some(session_id) = session_id else {
        return Ok(now);
    };
    let newest = query!(
        "SELECT CAST(max(created_at) AS INTEGER) AS newest FROM runs INDEXED BY runs_by_session WHERE session_id = ?1",
        session_id
    )
    .fetch_one(conn)?
    .newest;
    Ok(newest.map_or(now, |newest| now.max(newest.saturating_add(1))))
}
