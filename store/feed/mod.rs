//! The change feed: wait for what is appended, replayed then live, across threads, processes
//! and nodes.
//!
//! - [`Store::follow_events`]: a session's events after a seq, then each new one as it commits.
//! - [`Store::follow_journal`]: a run tree's journal entries, for `runs/<rootRunId>` subscribers.
//! - [`Store::run_waiter`]: an idle worker's wait for claimable runs.
//!
//! Where wake-ups come from:
//! - **This process:** the write frame publishes the topics a write touched (the
//!   notes of its [`crate::Db`]) right after its commit returns. No timer, no polling.
//! - **Another process on the same SQLite file:** one watcher thread per store (not per
//!   subscriber), started with the first subscription and ended with the last, asks the
//!   writer connection for `PRAGMA data_version` every 5 ms: that number moves only
//!   when *another* connection committed. Then it reads the head of each topic somebody
//!   follows (one indexed lookup each) and wakes those that moved.
//! - **Another node on PostgreSQL:** a write sends `pg_notify('seed_agents_feed', topic)` in
//!   its own transaction, so the notification is delivered at its commit, never before the
//!   row is visible. One listening connection per store (not per subscriber) wakes the topics.
//!
//! Invariants: no wake-up is lost and none is needed for correctness of what is read
//! (see `follow`); the store buffers no event for anybody (see `hub`); a follower is scoped to its
//! account like every read.

pub(crate) mod follow;
pub(crate) mod hub;
pub(crate) mod journals;
#[cfg(feature = "postgres")]
mod listen;
pub(crate) mod runs;
pub(crate) mod sessions;
pub(crate) mod topic;
mod watch;

use std::collections::HashMap;

pub use journals::{JournalFeed, TreeEntry};
pub use runs::RunWaiter;
pub use sessions::EventFeed;

use crate::error::{Error, Result};
use crate::values::check::invalid;
use crate::Store;
use follow::Follow;
use topic::Topic;

impl Store {
    /// Follows the session `session_id` of `account_id`: every event with `seq > after_seq`,
    /// in order, then every new one as it commits, with no gap and no duplicate between the
    /// two. See [`EventFeed`] for how to read it.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`after_seq` negative); [`Error::NotFound`] (`session`) when the
    /// account has no such session (another account's included, recorded in the audit log as
    /// [`Store::session`] does); [`Error::Postgres`] when the listening connection cannot be
    /// opened.
    pub fn follow_events(
        &self,
        account_id: &str,
        session_id: &str,
        after_seq: i64,
    ) -> Result<EventFeed> {
        if after_seq < 0 {
            return Err(invalid("after_seq", "must not be negative"));
        }
        // Subscribed before anything is read: a commit after this point wakes the feed.
        let subscription = self.subscribe(Topic::Session(session_id.to_owned()))?;
        if self.session(account_id, session_id)?.is_none() {
            return Err(Error::NotFound {
                what: "session",
                id: session_id.to_owned(),
            });
        }
        let source = sessions::Events {
            account: account_id.to_owned(),
            session: session_id.to_owned(),
            after: after_seq,
        };
        Ok(EventFeed::new(Follow::new(
            self.clone(),
            source,
            subscription,
        )))
    }

    /// Follows the journals of the run tree rooted at `root_run_id` of `account_id`: every
    /// entry of the root and its descendants from the first, then every new one as it
    /// commits. See [`JournalFeed`].
    ///
    /// # Errors
    /// [`Error::NotFound`] (`run`) when the account has no such run; [`Error::Invalid`]
    /// (`root_run_id`) when the run is not the root of its tree; [`Error::Postgres`] when the
    /// listening connection cannot be opened.
    pub fn follow_journal(&self, account_id: &str, root_run_id: &str) -> Result<JournalFeed> {
        let subscription = self.subscribe(Topic::RunTree(root_run_id.to_owned()))?;
        let run = self
            .run(account_id, root_run_id)?
            .ok_or_else(|| Error::NotFound {
                what: "run",
                id: root_run_id.to_owned(),
            })?;
        if run.root_run_id != run.id {
            return Err(invalid(
                "root_run_id",
                format!("run {root_run_id} is in the tree of {}", run.root_run_id),
            ));
        }
        let source = journals::Journals {
            account: account_id.to_owned(),
            root: root_run_id.to_owned(),
            after: HashMap::new(),
        };
        Ok(JournalFeed::new(Follow::new(
            self.clone(),
            source,
            subscription,
        )))
    }

    /// A waiter for claimable runs, for a worker that found nothing to claim: see
    /// [`RunWaiter`]. Make it before the claim that finds nothing, so that nothing enqueued in
    /// between is missed.
    ///
    /// # Errors
    /// On SQLite, the writer's error when the watcher of other processes' commits cannot
    /// start; on PostgreSQL, [`Error::Postgres`] when the listening connection cannot open.
    pub fn run_waiter(&self) -> Result<RunWaiter> {
        let subscription = self.subscribe(Topic::Runs)?;
        let seen = subscription.version();
        Ok(RunWaiter {
            store: self.clone(),
            subscription,
            seen,
        })
    }

    /// Subscribes to `topic`, with the watcher of other processes' or nodes' commits running.
    fn subscribe(&self, topic: Topic) -> Result<hub::Subscription> {
        let subscription = self.feed().subscribe(topic);
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            listen::start(self, pool)?;
            return Ok(subscription);
        }
        watch::start(self)?;
        Ok(subscription)
    }
}
