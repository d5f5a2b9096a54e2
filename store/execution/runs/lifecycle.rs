//! The run life cycle inside the caller's write transaction: loading a run, parking it, queueing
//! it again, ending it, and the session status mirror. Every run operation of the store (and the
//! journal, waits, triggers and deletion modules) changes a run's status only through these
//! helpers.
//!
//! Invariants, kept because each helper runs in the transaction of the change it is part of:
//!
//! - `sessions.status` is re-derived from `runs` ([`mirror_session`]) whenever a run of the
//!   session changes status, so it never disagrees with the runs table;
//! - a run that becomes terminal ([`terminate`]) loses its waits and its lease and rolls its
//!   usage into its parent's `children` in the same transaction.

use crate::sql::db::{Db, LockedRow};

use crate::error::{Error, Result};
use crate::feed::topic::Topic;
use crate::lease::{fence, lock_run, Claim};
use crate::payload::{Ipld, OpenMap, RunErrorInfo, RunOutput, RunUsage, RunWait};
use crate::query;
use crate::runs::queries::mirror_session_query;
use crate::schema::runs::{self, Status};
use crate::values::cbor::Cbor;

/// Re-derives `sessions.status` of `session_id` from the runs table (see the module doc).
pub(crate) fn mirror_session(conn: &Db, account_id: &str, session_id: &str) -> Result<()> {
    // Its runs are read after the lock, so two runs of one session ending at once on
    // PostgreSQL mirror in turn, the second seeing the first.
    conn.lock_row(LockedRow::Session, session_id)?;
    mirror_session_query!(account_id, session_id).execute_later(conn)
}

/// The run, or [`Error::NotFound`].
pub(crate) fn load_run(conn: &Db, account_id: &str, id: &str) -> Result<runs::Row> {
    runs::get(conn, account_id, id)?.ok_or_else(|| Error::NotFound {
        what: "run",
        id: id.to_owned(),
    })
}

/// Parks the run under `claim` (also used by waits, which register and park in one
/// transaction): the lease is cleared and `not_before` is the wake time.
pub(crate) fn park_in_tx(conn: &Db, claim: &Claim, wait: &RunWait, now: i64) -> Result<runs::Row> {
    let mut row = fence(conn, claim)?;
    row.status = Status::Waiting;
    row.not_before = match wait {
        RunWait::Timer(timer) => Some(timer.wake_at),
        RunWait::Event(event) => event.timeout_at,
        _ => None,
    };
    row.wait_cbor = Some(Cbor::encode(wait)?);
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.updated_at = now;
    runs::update(conn, &row)?;
    if let Some(session) = &row.session_id {
        mirror_session(conn, &claim.account_id, session)?;
    }
    Ok(row)
}

/// Requeues the waiting run `row` (signal delivery, timeouts, children, the boot sweep): wait
/// and lease cleared, session mirrored.
pub(crate) fn requeue_waiting(conn: &Db, row: &mut runs::Row, now: i64) -> Result<()> {
    row.status = Status::Queued;
    row.wait_cbor = None;
    row.not_before = None;
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.updated_at = now;
    runs::update(conn, row)?;
    conn.notify(Topic::Runs)?;
    if let Some(session) = &row.session_id {
        mirror_session(conn, &row.account_id, session)?;
    }
    Ok(())
}

/// Deletes every wait of a run.
pub(crate) fn delete_waits(conn: &Db, run_id: &str) -> Result<()> {
    query!("DELETE FROM run_event_waits WHERE run_id = ?1", run_id).execute_later(conn)
}

/// Ends `row` with `status`: terminal fields, waits deleted, usage rolled into the parent,
/// session mirrored.
pub(crate) fn terminate(
    conn: &Db,
    row: &mut runs::Row,
    status: Status,
    output: Option<RunOutput>,
    error: Option<RunErrorInfo>,
    now: i64,
) -> Result<()> {
    row.status = status;
    if let Some(output) = output {
        row.output_cbor = Some(Cbor::encode(&output)?);
    }
    if let Some(error) = error {
        row.error_cbor = Some(Cbor::encode(&error)?);
    }
    row.wait_cbor = None;
    row.not_before = None;
    row.lease_owner = None;
    row.lease_expires_at = None;
    row.finished_at = Some(now);
    row.updated_at = now;
    runs::update(conn, row)?;
    ended(conn, row, now)
}

/// What follows a run's becoming terminal (`row` as it now is), in its transaction: its waits
/// deleted, its usage rolled into its parent, its session mirrored.
pub(crate) fn ended(conn: &Db, row: &runs::Row, now: i64) -> Result<()> {
    delete_waits(conn, &row.id)?;
    // Its kind's cap has room again.
    conn.notify(Topic::Runs)?;
    if let Some(parent_id) = &row.parent_run_id {
        roll_usage_into_parent(conn, row, parent_id, now)?;
    }
    if let Some(session) = &row.session_id {
        mirror_session(conn, &row.account_id, session)?;
    }
    Ok(())
}

/// Adds a number to a number: integers stay integers, anything with a float becomes a float.
fn add_numbers(a: &Ipld, b: &Ipld) -> Option<Ipld> {
    match (a, b) {
        (Ipld::Integer(x), Ipld::Integer(y)) => Some(Ipld::Integer(x.saturating_add(*y))),
        (Ipld::Integer(x), Ipld::Float(y)) | (Ipld::Float(y), Ipld::Integer(x)) => {
            Some(Ipld::Float(*x as f64 + y))
        }
        (Ipld::Float(x), Ipld::Float(y)) => Some(Ipld::Float(x + y)),
        _ => None,
    }
}

/// Adds every numeric entry of `from` into `into`.
fn add_usage(into: &mut OpenMap, from: &OpenMap) {
    for (key, value) in from {
        if key == "children" {
            continue;
        }
        let sum = match into.get(key) {
            Some(existing) => add_numbers(existing, value),
            None => add_numbers(&Ipld::Integer(0), value),
        };
        if let Some(sum) = sum {
            into.insert(key.clone(), sum);
        }
    }
}

/// Rolls a terminal child's usage (its own numbers plus its own `children` roll-up) into the
/// parent's `children` map of `usage_cbor`.
fn roll_usage_into_parent(conn: &Db, child: &runs::Row, parent_id: &str, now: i64) -> Result<()> {
    let Some(child_usage) = &child.usage_cbor else {
        return Ok(());
    };
    let child_usage = child_usage.decode()?;
    // Read locked: two children ending at once add to the parent in turn.
    let Some(parent) = lock_run(conn, &child.account_id, parent_id)? else {
        return Ok(());
    };
    let mut usage = match &parent.usage_cbor {
        Some(u) => u.decode()?,
        None => RunUsage::default(),
    };
    let mut children = match usage.get("children") {
        Some(Ipld::Map(map)) => map.clone(),
        _ => OpenMap::new(),
    };
    add_usage(&mut children, &child_usage);
    if let Some(Ipld::Map(grandchildren)) = child_usage.get("children") {
        add_usage(&mut children, grandchildren);
    }
    usage.insert("children".into(), Ipld::Map(children));
    let usage = Cbor::encode(&usage)?;
    query!(
        "UPDATE runs SET usage_cbor = ?3, updated_at = ?4 WHERE account_id = ?1 AND id = ?2",
        parent.account_id,
        parent.id,
        usage,
        now
    )
    .execute_later(conn)
}
