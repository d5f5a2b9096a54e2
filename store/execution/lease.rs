//! Leases: the claim a worker holds on a run, and the fence every write of that worker passes.
//!
//! Invariant: a write a worker makes on a run it claimed (start, lease renewal, park, usage,
//! journal append, wait registration, finalize, continue-as-new) carries its [`Claim`] and runs
//! only while the run is still claimed or running **by that owner at that attempt**. Once the
//! lease has moved (the sweep requeued the run, another worker claimed it, it was canceled or it
//! ended), `fence` refuses with [`Error::LeaseLost`] inside the write's own transaction, before
//! anything is written. The hottest writes (start, lease renewal, finalize) are the fence
//! themselves: one `UPDATE` that matches only while the claim holds, `refusal` saying why
//! when it matched nothing. The attempt is part of the claim because an owner id alone is not
//! unique over time: a worker that reclaims its own swept run holds a new attempt, and the old
//! attempt's late writes must still be refused. The fence reads the run with its row locked on
//! PostgreSQL, so a worker's writes run `READ COMMITTED` (`Store::write_locking`)
//! and still see the run as the last write on it left it.

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::schema::runs::{self, Status};

/// The claim a worker holds on a run: returned (inside the run row) by the claim operations,
/// and handed back with every write the worker makes on the run.
///
/// # Examples
/// ```
/// use seed_agents_store::runs::{ClaimLimits, NewRun};
/// use seed_agents_store::schema::runs::{Kind, Origin};
/// use seed_agents_store::{lease::Claim, Store};
///
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::open(dir.path().join("agents.sqlite"))?;
/// store.enqueue_run(&NewRun::new("acct-1", Kind::Workflow, Origin::User, "Nightly report"))?;
/// let run = store.claim_next_run("worker-1", ClaimLimits::default())?.expect("one queued run");
/// let claim = Claim::of(&run).expect("a claimed run carries its claim");
/// assert_eq!((claim.owner.as_str(), claim.attempt), ("worker-1", 1));
/// store.start_run(&claim)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    /// The run's account.
    pub account_id: String,
    /// The run.
    pub run_id: String,
    /// The worker that claimed it (`runs.lease_owner`).
    pub owner: String,
    /// The attempt the claim started (`runs.attempt` after the claim).
    pub attempt: i64,
}

impl Claim {
    /// The claim `row` records: `Some` for a claimed or running run with a lease owner.
    pub fn of(row: &runs::Row) -> Option<Claim> {
        if !matches!(row.status, Status::Claimed | Status::Running) {
            return None;
        }
        Some(Claim {
            account_id: row.account_id.clone(),
            run_id: row.id.clone(),
            owner: row.lease_owner.clone()?,
            attempt: row.attempt,
        })
    }

    /// Whether `row` is still held under this claim.
    pub fn holds(&self, row: &runs::Row) -> bool {
        self.holds_lease(row.status, row.lease_owner.as_deref(), row.attempt)
    }

    /// Whether a run with this status, lease owner and attempt is still held under this claim
    /// (for hot paths that read only those columns).
    pub(crate) fn holds_lease(&self, status: Status, owner: Option<&str>, attempt: i64) -> bool {
        matches!(status, Status::Claimed | Status::Running)
            && owner == Some(self.owner.as_str())
            && attempt == self.attempt
    }

    /// The error a write under a claim that no longer holds gets.
    pub(crate) fn lost(&self) -> Error {
        Error::LeaseLost {
            run_id: self.run_id.clone(),
            owner: self.owner.clone(),
        }
    }
}

/// The run under `claim`, read inside the caller's write transaction with its row locked (see
/// [`lock_run`]), or [`Error::LeaseLost`] when the lease has moved ([`Error::NotFound`] when
/// the run is not in the claim's account).
pub(crate) fn fence(conn: &Db, claim: &Claim) -> Result<runs::Row> {
    let row = locked_run(conn, &claim.account_id, &claim.run_id)?;
    if !claim.holds(&row) {
        return Err(claim.lost());
    }
    Ok(row)
}

/// Why a fenced statement under `claim` (one that writes only while the claim holds) matched
/// nothing: [`Error::NotFound`] when the run is not in the account, else
/// [`Error::LeaseLost`].
pub(crate) fn refusal(conn: &Db, claim: &Claim) -> Error {
    match runs::get(conn, &claim.account_id, &claim.run_id) {
        Ok(Some(_)) => claim.lost(),
        Ok(None) => Error::NotFound {
            what: "run",
            id: claim.run_id.clone(),
        },
        Err(e) => e,
    }
}

/// The run `id` of `account_id`, read inside the caller's write transaction; on PostgreSQL with
/// its row locked until the write ends, so that writes on one run take turns and each reads
/// what the last committed (SQLite's writes all take turns).
pub(crate) fn lock_run(conn: &Db, account_id: &str, id: &str) -> Result<Option<runs::Row>> {
    #[cfg(feature = "postgres")]
    if let Some(session) = conn.as_postgres() {
        return crate::postgres::lock_run(session, account_id, id);
    }
    runs::get(conn, account_id, id)
}

/// [`lock_run`] for a run that must exist: [`Error::NotFound`] when it is not in the account.
pub(crate) fn locked_run(conn: &Db, account_id: &str, id: &str) -> Result<runs::Row> {
    lock_run(conn, account_id, id)?.ok_or_else(|| Error::NotFound {
        what: "run",
        id: id.to_owned(),
    })
}
