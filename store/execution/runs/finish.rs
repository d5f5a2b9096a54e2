//! Ending runs: usage at turn boundaries, the worker's finalize (with retry backoff), and
//! cancelling a whole tree.
//!
//! Invariant: canceled is sticky (finalizing a canceled run writes nothing), and a run that
//! ends loses its waits and lease and rolls its usage into its parent in the transaction that
//! ends it (through [`terminate`]).

use rand::Rng;

use super::lifecycle::{delete_waits, ended, load_run, mirror_session, terminate};
use super::queries::{end_run_query, tree_members_query};
use super::{backoff_ms, CancelReport, Finalized, RunOutcome, BACKOFF_JITTER_MS};
use crate::error::Result;
use crate::feed::topic::Topic;
use crate::lease::{fence, locked_run, Claim};
use crate::payload::{RunErrorInfo, RunUsage};
use crate::schema::runs::{self, Status};
use crate::values::cbor::Cbor;
use crate::Store;

impl Store {
    /// Records the claimed run's usage at a turn boundary (replacing the stored value; the
    /// `children` roll-up is kept when `usage` has none).
    ///
    /// # Errors
    /// [`crate::Error::LeaseLost`] when `claim` no longer holds the run,
    /// [`crate::Error::NotFound`] when it is not in the account.
    pub fn record_run_usage(&self, claim: &Claim, usage: &RunUsage) -> Result<runs::Row> {
        self.write_locking(|tx, now| {
            let mut row = fence(tx, claim)?;
            let mut usage = usage.clone();
            if !usage.contains_key("children") {
                if let Some(old) = row.usage_cbor.as_ref().map(Cbor::decode).transpose()? {
                    if let Some(children) = old.get("children") {
                        usage.insert("children".into(), children.clone());
                    }
                }
            }
            row.usage_cbor = Some(Cbor::encode(&usage)?);
            row.updated_at = now;
            runs::update(tx, &row)?;
            Ok(row)
        })
    }

    /// Ends the claimed run. A retryable failure (`retryable: true`) with attempts left is
    /// queued again after 5 s doubling per attempt (at most 5 min) plus up to 1 s of jitter.
    /// Canceled is sticky: finalizing a canceled run writes nothing. A terminal run loses its
    /// waits and lease, rolls its usage into its parent's `children`, and its session is
    /// mirrored.
    ///
    /// # Errors
    /// [`crate::Error::LeaseLost`] when `claim` no longer holds the run (swept, reclaimed or
    /// ended), [`crate::Error::NotFound`] when it is not in the account.
    pub fn finalize_run(&self, claim: &Claim, outcome: RunOutcome) -> Result<Finalized> {
        let jitter = rand::thread_rng().gen_range(0..=BACKOFF_JITTER_MS);
        let (status, output, error) = match &outcome {
            RunOutcome::Succeeded(output) => (Status::Succeeded, Some(Cbor::encode(output)?), None),
            RunOutcome::Canceled => (Status::Canceled, None, None),
            RunOutcome::Failed(error) if error.retryable == Some(true) => {
                return self.finalize_retryable(claim, error, jitter)
            }
            RunOutcome::Failed(error) => (Status::Failed, None, Some(Cbor::encode(error)?)),
        };
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            // A root run without a session that this store claimed ends in one statement.
            if pool.take_root(&claim.run_id, claim.attempt) {
                let ended = self.write_statement(|tx, now| {
                    let session = tx.as_postgres().expect("a PostgreSQL store");
                    let ended = crate::postgres::end_root_run(
                        session,
                        claim,
                        status,
                        output.as_ref().map(|c| c.as_bytes()),
                        error.as_ref().map(|c| c.as_bytes()),
                        now,
                    )?;
                    if ended.is_some() {
                        tx.notified(Topic::Runs);
                    }
                    Ok(ended)
                })?;
                if let Some(row) = ended {
                    return Ok(Finalized::Finished(row));
                }
            }
        }
        // One fenced statement ends the run; what follows (waits, the parent's usage, the
        // session) locks the rows it reads first.
        self.write_locking(|tx, now| {
            let ended_row = end_run_query!(
                claim.account_id,
                claim.run_id,
                claim.owner,
                claim.attempt,
                status,
                output.as_ref(),
                error.as_ref(),
                now
            )
            .fetch_optional(tx)?;
            let Some(row) = ended_row else {
                // Canceled is sticky; anything else is a lease that moved.
                let row = locked_run(tx, &claim.account_id, &claim.run_id)?;
                if row.status == Status::Canceled {
                    return Ok(Finalized::AlreadyCanceled(row));
                }
                return Err(claim.lost());
            };
            ended(tx, &row, now)?;
            Ok(Finalized::Finished(row))
        })
    }

    /// [`Store::finalize_run`] of a retryable failure: queued again with backoff while attempts
    /// are left, else failed.
    fn finalize_retryable(
        &self,
        claim: &Claim,
        error: &RunErrorInfo,
        jitter: i64,
    ) -> Result<Finalized> {
        // Every row it reads and writes is locked first: the run (`locked_run`), its parent and
        // its session (`terminate`).
        self.write_locking(|tx, now| {
            let mut row = locked_run(tx, &claim.account_id, &claim.run_id)?;
            if row.status == Status::Canceled {
                return Ok(Finalized::AlreadyCanceled(row));
            }
            if !claim.holds(&row) {
                return Err(claim.lost());
            }
            if row.attempt >= row.max_attempts {
                terminate(tx, &mut row, Status::Failed, None, Some(error.clone()), now)?;
                return Ok(Finalized::Finished(row));
            }
            row.status = Status::Queued;
            row.error_cbor = Some(Cbor::encode(error)?);
            row.wait_cbor = None;
            row.lease_owner = None;
            row.lease_expires_at = None;
            row.not_before = Some(now + backoff_ms(row.attempt) + jitter);
            row.updated_at = now;
            runs::update(tx, &row)?;
            tx.notify(Topic::Runs)?;
            delete_waits(tx, &claim.run_id)?;
            if let Some(session) = &row.session_id {
                mirror_session(tx, &claim.account_id, session)?;
            }
            Ok(Finalized::Retrying(row))
        })
    }

    /// Cancels the tree under `id` (itself and every descendant): queued and waiting members are
    /// canceled; claimed and running members are reported as live for their workers to stop.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when the run is not in the account.
    pub fn cancel_run_tree(&self, account_id: &str, id: &str) -> Result<CancelReport> {
        let result = self.write(|tx, now| {
            load_run(tx, account_id, id)?;
            let members = tree_members_query!(account_id, id).fetch_all(tx)?;
            let mut report = CancelReport::default();
            for member in members.into_iter().map(|m| m.id) {
                let mut row = load_run(tx, account_id, &member)?;
                match row.status {
                    Status::Queued | Status::Waiting => {
                        terminate(tx, &mut row, Status::Canceled, None, None, now)?;
                        report.canceled.push(member);
                    }
                    Status::Claimed | Status::Running => report.live.push(member),
                    Status::Succeeded | Status::Failed | Status::Canceled => {}
                }
            }
            Ok(report)
        });
        self.audit_refused(account_id, result)
    }
}
