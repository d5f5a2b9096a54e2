//! The audit log (`audit_events`, `audit_chain`): what was done to providers, secrets and tools,
//! and the security events (refused cross-account access, idempotency conflicts, failed secret
//! decryption).
//!
//! Invariants:
//! - append-only: the store inserts rows and never updates one; only
//!   [`Store::prune_audit_log`](crate::Store::prune_audit_log) deletes, and only the oldest rows, moving the chain's anchor in
//!   the same transaction;
//! - a change and its event commit together: an operation appends its event with `Event::record`
//!   inside its own `self.write` closure, so a rolled-back change leaves no event and a committed
//!   one always has its event. A refusal has no change to commit with, so its event is written
//!   by a write of its own after the operation failed (`security`);
//! - the chains, one per account: row `seq` of a chain holds `prev_hash` = the hash of row
//!   `seq - 1` of the same chain (the anchor for its first retained row) and `hash` = SHA-256
//!   over `prev_hash` and the row's fields (`chain`); `audit_chain` holds each chain's newest
//!   seq and hash, updated with every append to it. An append reads and moves its chain's head
//!   inside the transaction of the change, and `(chain, seq)` is the primary key, so of two
//!   appends to one chain at once the second runs again: seqs are gapless and a chain never
//!   forks, while appends of different accounts never wait on each other;
//! - no event holds a secret value or any part of one: events name secrets, headers and
//!   providers, never values or configurations, and a decryption failure records the error's
//!   kind, never the ciphertext.

pub(crate) mod chain;
mod prune;
mod read;
mod security;

use std::borrow::Cow;

use crate::sql::db::Db;

use crate::error::Result;
use crate::schema::audit_events::{Kind, Outcome};

pub use chain::{AuditProblem, AuditReport, ProblemKind};
pub use prune::AuditPruned;
pub use read::AuditFilter;

/// The actor of what the store does by itself (pruning the log).
pub const STORE_ACTOR: &str = "store";

/// One event about to be appended.
#[derive(Debug, Clone)]
pub(crate) struct Event<'a> {
    /// The account the event concerns.
    pub(crate) account_id: Cow<'a, str>,
    /// Who acted.
    pub(crate) actor: &'a str,
    pub(crate) kind: Kind,
    /// `<object>.<verb>`.
    pub(crate) action: &'static str,
    /// `<object> <id or name>`.
    pub(crate) target: String,
    pub(crate) outcome: Outcome,
    pub(crate) detail: Option<String>,
}

impl<'a> Event<'a> {
    /// A change `account_id` made to its own row, done.
    pub(crate) fn done(
        account_id: &'a str,
        kind: Kind,
        action: &'static str,
        target: impl Into<String>,
    ) -> Self {
        Event {
            account_id: Cow::Borrowed(account_id),
            actor: account_id,
            kind,
            action,
            target: target.into(),
            outcome: Outcome::Ok,
            detail: None,
        }
    }

    /// A change `account_id` made to its secret `name`: the name only, never the value.
    pub(crate) fn secret(account_id: &'a str, action: &'static str, name: &str) -> Self {
        Event::done(account_id, Kind::Secret, action, format!("secret {name}"))
    }

    /// The same event with words for a person (never a value).
    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Appends the event at the head of its account's chain. Call it inside the write
    /// transaction of the change it records.
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`].
    pub(crate) fn record(&self, conn: &Db, now: i64) -> Result<()> {
        chain::append(conn, now, &self.account_id, self)
    }
}
