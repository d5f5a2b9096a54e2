//! Waiting for claimable work: [`RunWaiter`].
//!
//! Invariant: a waiter misses no change. It remembers the queue's version from before the
//! claim that found nothing, so an enqueue that committed in between ends its next wait at
//! once. Between changes it sleeps until the earliest moment the queue changes by itself (a
//! backoff or timer's `not_before`, a lease's expiry), never on a polling timer.

use std::time::{Duration, Instant};

use super::hub::Subscription;
use crate::error::Result;
use crate::schema::runs::Queue;
use crate::{query, Store};

/// Waits for runs to claim: from [`Store::run_waiter`]. Woken by an enqueue, a requeue (a
/// retry, a timer, a resolved wait), a run ending (its kind's cap has room again) and the
/// moment a delayed run comes due or a lease expires, from this process, another process on
/// the same file, or another node.
///
/// ```
/// use std::time::Duration;
/// use seed_agents_store::runs::{ClaimLimits, NewRun};
/// use seed_agents_store::schema::runs::{Kind, Origin};
/// # let dir = tempfile::tempdir()?;
/// # let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
/// let mut waiter = store.run_waiter()?;
/// // An idle worker: claim, and when nothing is there, wait instead of polling.
/// assert!(store.claim_next_run("worker-1", ClaimLimits::default())?.is_none());
/// let producer = store.clone();
/// std::thread::spawn(move || {
///     producer.enqueue_run(&NewRun::new("acct-1", Kind::Workflow, Origin::User, "Nightly report"))
/// });
/// assert!(waiter.wait(Duration::from_secs(5))?);
/// assert!(store.claim_next_run("worker-1", ClaimLimits::default())?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RunWaiter {
    pub(crate) store: Store,
    pub(crate) subscription: Subscription,
    /// The queue's version when the worker last looked.
    pub(crate) seen: u64,
}

impl RunWaiter {
    /// Waits until the queue changed since this waiter was made or last returned, or a delayed
    /// run or a lease comes due, or `timeout` passes. `true` when woken (claim now), `false`
    /// on the timeout.
    ///
    /// # Errors
    /// A read's error (finding when the next run comes due).
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        if self.look() {
            return Ok(true);
        }
        let version = self.seen;
        let due = next_due(&self.store)?.map(|at| {
            let wait = at.saturating_sub(self.store.now_ms()).max(0);
            Instant::now() + Duration::from_millis(wait as u64)
        });
        let until = due.map_or(deadline, |due| due.min(deadline));
        self.seen = self.subscription.wait(version, Some(until));
        Ok(self.seen != version || due.is_some_and(|due| due <= Instant::now()))
    }

    /// Whether the queue changed since the worker last looked (and now it has).
    pub(crate) fn look(&mut self) -> bool {
        let version = self.subscription.version();
        let moved = version != self.seen;
        self.seen = version;
        moved
    }
}

/// The earliest moment after now that the queue changes by itself: a queued run's
/// `not_before` or a live run's lease expiry (epoch milliseconds).
pub(crate) fn next_due(store: &Store) -> Result<Option<i64>> {
    let now = store.now_ms();
    let reading = store.reading()?;
    let mut due: Option<i64> = None;
    // One range of `runs_dispatch` per queue: the least `not_before` after now.
    for queue in [Queue::Interactive, Queue::Background] {
        let next = query!(
            "SELECT CAST(MIN(not_before) AS INTEGER) AS at FROM runs WHERE status = 'queued' AND queue = ?1 AND not_before > ?2",
            queue,
            now
        )
        .fetch_one(&reading)?;
        due = earliest(due, next.at);
    }
    let lease = query!(
        "SELECT CAST(MIN(lease_expires_at) AS INTEGER) AS at FROM runs WHERE status IN ('claimed', 'running') AND lease_expires_at > ?1",
        now
    )
    .fetch_one(&reading)?;
    Ok(earliest(due, lease.at))
}

fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
