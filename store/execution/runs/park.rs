//! Parking and waking: a run that waits (for a timer, children, a budget decision or an event)
//! gives up its lease, and is queued again when what it waits for happens.
//!
//! Invariant: only a `waiting` run is queued again, and the wake-up (wait cleared, session
//! mirrored) is written in the transaction that decides it, so a run is woken at most once.

use super::lifecycle::{delete_waits, load_run, park_in_tx, requeue_waiting};
use super::queries::due_timers_query;
use super::ChildResolution;
use crate::error::{Error, Result};
use crate::lease::Claim;
use crate::payload::RunWait;
use crate::schema::runs::{self, Status};
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::Store;

/// Refuses a state transition the run's status does not allow.
fn wrong_status(row: &runs::Row, doing: &str) -> Error {
    Error::Conflict {
        what: "run",
        key: row.id.clone(),
        reason: format!("cannot {doing} a run that is {}", row.status),
    }
}

impl Store {
    /// Parks the claimed or running run with `wait`: the lease is cleared and `not_before` is
    /// the wake time (a timer's `wakeAt`, an event wait's `timeoutAt`, none otherwise).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a children wait without ids, [`Error::LeaseLost`] when `claim` no
    /// longer holds the run, [`Error::NotFound`] when it is not in the account.
    pub fn park_run(&self, claim: &Claim, wait: &RunWait) -> Result<runs::Row> {
        if let RunWait::Children(children) = wait {
            if children.tool_call_ids.is_empty() {
                return Err(invalid(
                    "wait.tool_call_ids",
                    "a children wait needs at least one child",
                ));
            }
        }
        self.write(|tx, now| park_in_tx(tx, claim, wait, now))
    }

    /// Requeues every run waiting on a timer whose `wakeAt` is due. Event waits are woken by the
    /// wait timeout sweep instead (it journals the timeout), so they are left alone here.
    /// Returns the ids requeued.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or [`Error::Cbor`].
    pub fn wake_due_timers(&self) -> Result<Vec<String>> {
        self.write(|tx, now| {
            let due = due_timers_query!(now).fetch_all(tx)?;
            let mut woken = Vec::new();
            for timer in due {
                let mut row = load_run(tx, &timer.account_id, &timer.id)?;
                let is_timer = matches!(
                    row.wait_cbor.as_ref().map(Cbor::decode).transpose()?,
                    Some(RunWait::Timer(_))
                );
                if is_timer {
                    requeue_waiting(tx, &mut row, now)?;
                    woken.push(timer.id);
                }
            }
            Ok(woken)
        })
    }

    /// Requeues a waiting run (any wait), clearing its wait and deleting its event waits.
    ///
    /// # Errors
    /// [`Error::Conflict`] when the run is not waiting, [`Error::NotFound`] when it is not in the
    /// account.
    pub fn requeue_run(&self, account_id: &str, id: &str) -> Result<runs::Row> {
        let result = self.write(|tx, now| {
            let mut row = load_run(tx, account_id, id)?;
            if row.status != Status::Waiting {
                return Err(wrong_status(&row, "requeue"));
            }
            delete_waits(tx, id)?;
            requeue_waiting(tx, &mut row, now)?;
            Ok(row)
        });
        self.audit_refused(account_id, result)
    }

    /// Resolves the child spawned by `tool_call_id` of a parent parked on a children wait: the
    /// call leaves the wait, and the last one requeues the parent.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the parent is not in the account, [`Error::Sqlite`] or
    /// [`Error::Cbor`] otherwise.
    pub fn resolve_child(
        &self,
        account_id: &str,
        parent_id: &str,
        tool_call_id: &str,
    ) -> Result<ChildResolution> {
        self.write(|tx, now| {
            let mut row = load_run(tx, account_id, parent_id)?;
            let wait = row.wait_cbor.as_ref().map(Cbor::decode).transpose()?;
            Ok(match (row.status, wait) {
                (Status::Waiting, Some(RunWait::Children(mut children)))
                    if children.tool_call_ids.iter().any(|c| c == tool_call_id) =>
                {
                    children.tool_call_ids.retain(|c| c != tool_call_id);
                    if children.tool_call_ids.is_empty() {
                        requeue_waiting(tx, &mut row, now)?;
                        ChildResolution::Requeued(row)
                    } else {
                        let pending = children.tool_call_ids.clone();
                        row.wait_cbor = Some(Cbor::encode(&RunWait::Children(children))?);
                        row.updated_at = now;
                        runs::update(tx, &row)?;
                        ChildResolution::Pending(pending)
                    }
                }
                _ => ChildResolution::NotAwaited,
            })
        })
    }

    /// Resumes a run parked on a budget pause: it is queued again.
    ///
    /// # Errors
    /// [`Error::Conflict`] when the run is not parked on a budget pause, [`Error::NotFound`]
    /// when it is not in the account.
    pub fn resume_budget_pause(&self, account_id: &str, id: &str) -> Result<runs::Row> {
        let result = self.write(|tx, now| {
            let mut row = load_run(tx, account_id, id)?;
            let wait = row.wait_cbor.as_ref().map(Cbor::decode).transpose()?;
            if row.status != Status::Waiting || !matches!(wait, Some(RunWait::BudgetPause(_))) {
                return Err(wrong_status(&row, "resume a budget pause of"));
            }
            requeue_waiting(tx, &mut row, now)?;
            Ok(row)
        });
        self.audit_refused(account_id, result)
    }
}
