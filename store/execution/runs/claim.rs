//! Taking runs off the queue and holding them: the claim, start, lease renewal, and the boot
//! sweep that takes back what a dead worker held.
//!
//! Invariant: a queued run is claimed at most once. On SQLite the claim is one
//! `UPDATE ... RETURNING` ([`claim_next_query`], [`claim_one_query`]) inside a `BEGIN IMMEDIATE`
//! transaction, which takes the write lock before the statement reads: two claimers serialize
//! on it and the second sees the first's claim. On PostgreSQL claimers run at once, each
//! skipping the runs the others hold (see `crate::postgres::claim_next`), and the unique index
//! `runs_live_agent_by_session` refuses the second of two racing claims of one session's runs,
//! which then claims again.

use super::lifecycle::{load_run, requeue_waiting};
use super::queries::{
    claim_next_query, claim_one_query, live_runs_query, renew_lease_query, start_run_query,
};
use super::{ClaimLimits, SweepMode, LEASE_MS};
use crate::error::Result;
use crate::lease::{refusal, Claim};
use crate::schema::runs;
use crate::values::check::invalid;
use crate::Store;

/// Refuses an empty lease owner (an owner is compared as written, so it is not trimmed).
fn check_owner(owner: &str) -> Result<()> {
    if owner.is_empty() {
        return Err(invalid("owner", "must not be empty"));
    }
    Ok(())
}

impl Store {
    /// Claims the next due queued run for `owner`: interactive queue first, then oldest, then by
    /// id; a kind at its cap in `limits` is skipped, and so is an agent run whose session already
    /// has a claimed or running agent run. Sets the lease (now + 60 s) and increments `attempt`.
    /// `None` when nothing is claimable.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for an empty owner, [`crate::Error::Sqlite`] otherwise.
    pub fn claim_next_run(&self, owner: &str, limits: ClaimLimits) -> Result<Option<runs::Row>> {
        check_owner(owner)?;
        #[cfg(feature = "postgres")]
        if self.postgres().is_some() {
            let claim = |tx: &crate::Db, now| {
                let session = tx.as_postgres().expect("a PostgreSQL store");
                let expiry = now + LEASE_MS;
                crate::postgres::claim_next(session, owner, now, limits, expiry)
            };
            // Uncapped, the claim is one statement; a capped one counts under its cap's lock.
            return if limits.capped() {
                self.write_locking(claim)
            } else {
                self.write_statement(claim)
            }
            .inspect(|claimed| self.claimed(claimed.as_ref()));
        }
        // The frame's IMMEDIATE takes the write lock before the statement reads, so a claimer
        // never works from a snapshot another claimer has already changed (and waits on the busy
        // timeout instead of failing with a stale snapshot).
        self.write_locking(|tx, now| {
            claim_next_query!(
                owner,
                now,
                i64::from(limits.agent),
                i64::from(limits.workflow),
                now + LEASE_MS
            )
            .fetch_optional(tx)
        })
        .inspect(|claimed| self.claimed(claimed.as_ref()))
    }

    /// Notes a run this store claimed, so that its finalize can take the shortest path.
    fn claimed(&self, row: Option<&runs::Row>) {
        #[cfg(feature = "postgres")]
        if let (Some(row), Some(pool)) = (row, self.postgres()) {
            pool.claimed_root(row);
        }
        let _ = row;
    }

    /// Claims the queued run `id` for `owner` (lease, attempt + 1), unless its session already
    /// has a claimed or running agent run. `None` when it is not claimable.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when the run is not in the account, [`crate::Error::Sqlite`]
    /// otherwise.
    pub fn claim_run(&self, account_id: &str, id: &str, owner: &str) -> Result<Option<runs::Row>> {
        check_owner(owner)?;
        let result = self.write_locking(|tx, now| {
            // Not found, rather than not claimable, for another account's run.
            load_run(tx, account_id, id)?;
            // Of two racing claims of one session's runs, the second meets
            // `runs_live_agent_by_session` and runs again, and then finds the session busy.
            claim_one_query!(account_id, id, owner, now, now + LEASE_MS).fetch_optional(tx)
        });
        self.audit_refused(account_id, result)
            .inspect(|claimed| self.claimed(claimed.as_ref()))
    }

    /// Marks a claimed run running; the first `started_at` is kept across attempts.
    ///
    /// # Errors
    /// [`crate::Error::LeaseLost`] when `claim` no longer holds the run (see [`crate::lease`]),
    /// [`crate::Error::NotFound`] when it is not in the account.
    pub fn start_run(&self, claim: &Claim) -> Result<runs::Row> {
        // One fenced statement: nothing else to keep in step with it.
        self.write_statement(|tx, now| {
            start_run_query!(
                claim.account_id,
                claim.run_id,
                claim.owner,
                claim.attempt,
                now
            )
            .fetch_optional(tx)?
            .ok_or_else(|| refusal(tx, claim))
        })
    }

    /// Extends the lease `claim` holds to now + 60 s and returns the new expiry.
    ///
    /// # Errors
    /// [`crate::Error::LeaseLost`] when `claim` no longer holds the run (the run was swept,
    /// requeued, finished or claimed by another worker), [`crate::Error::NotFound`] when it is
    /// not in the account.
    pub fn renew_lease(&self, claim: &Claim) -> Result<i64> {
        // One fenced statement, so a heartbeat is one round trip on PostgreSQL.
        self.write_statement(|tx, now| {
            let expiry = now + LEASE_MS;
            renew_lease_query!(
                claim.account_id,
                claim.run_id,
                claim.owner,
                claim.attempt,
                expiry,
                now
            )
            .fetch_optional(tx)?
            .ok_or_else(|| refusal(tx, claim))?;
            Ok(expiry)
        })
    }

    /// The boot sweep: requeues claimed and running rows (lease cleared). In
    /// [`SweepMode::MultiProcess`] only rows whose lease has expired are taken, so a live peer's
    /// work is never stolen. Returns the ids requeued.
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`].
    pub fn boot_sweep(&self, mode: SweepMode) -> Result<Vec<String>> {
        self.write(|tx, now| {
            let live = live_runs_query!().fetch_all(tx)?;
            let mut requeued = Vec::new();
            for run in live {
                if mode == SweepMode::MultiProcess && run.lease_expires_at.is_some_and(|e| e > now)
                {
                    continue;
                }
                let mut row = load_run(tx, &run.account_id, &run.id)?;
                requeue_waiting(tx, &mut row, now)?;
                requeued.push(run.id);
            }
            Ok(requeued)
        })
    }
}
