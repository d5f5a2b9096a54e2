//! Security events: an operation the store refused or could not do, recorded after it failed.
//!
//! Invariant: the failed operation's transaction rolled back, so its event is appended by a
//! write of its own, after the failure and before the caller sees it; the caller then gets the
//! operation's error unchanged, or the error of that write when the log could not be written (a
//! security event is never dropped silently). A read-only handle cannot write, so it records
//! nothing. Cross-account access is recorded only when the id names another account's row: an
//! id nobody has is an ordinary not found, and the caller's answer is the same either way.

use std::borrow::Cow;

use crate::sql::db::Db;

use super::Event;
use crate::error::{Error, Result};
use crate::idempotency::CONFLICT_WHAT;
use crate::schema::audit_events::{Kind, Outcome};
use crate::{query, Store};

/// The account owning the row `what` `id` names, for the rows accounts address by a global id.
fn owner(conn: &Db, what: &str, id: &str) -> Result<Option<String>> {
    let owner = match what {
        "model provider" => query!("SELECT account_id FROM model_providers WHERE id = ?1", id)
            .fetch_optional(conn)?
            .map(|r| r.account_id),
        "agent" => query!("SELECT account_id FROM agents WHERE id = ?1", id)
            .fetch_optional(conn)?
            .map(|r| r.account_id),
        "session" => query!("SELECT account_id FROM sessions WHERE id = ?1", id)
            .fetch_optional(conn)?
            .map(|r| r.account_id),
        "run" => query!("SELECT account_id FROM runs WHERE id = ?1", id)
            .fetch_optional(conn)?
            .map(|r| r.account_id),
        "trigger" => query!("SELECT account_id FROM agent_triggers WHERE id = ?1", id)
            .fetch_optional(conn)?
            .map(|r| r.account_id),
        _ => None,
    };
    Ok(owner)
}

/// Words for a failed decryption: which failure, never the ciphertext nor its length.
fn decrypt_failure(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::SecretTagMismatch => "the ciphertext does not authenticate under the server key",
        Error::NoSecretKey => "the database has no server key",
        Error::SecretKeyMalformed { .. } => "the server key is not a 32-byte key",
        Error::SecretTooShort { .. } => "the ciphertext is too short to hold a nonce and a tag",
        Error::KeyNotServed { .. } => "the key that encrypted it is not served",
        Error::KeyMalformed { .. } => "the key provider's key is malformed",
        Error::KeyEnvUnset { .. }
        | Error::KeyFileExposed { .. }
        | Error::KeyFileUnreadable { .. }
        | Error::KeyCommandSpawn { .. }
        | Error::KeyCommandFailed { .. } => "the key provider could not serve the key",
        _ => return None,
    })
}

impl Store {
    /// Appends the event `event` builds (if any) in a write of its own.
    fn security_event<'a>(
        &self,
        mut event: impl FnMut(&Db) -> Result<Option<Event<'a>>>,
    ) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        self.write(|tx, now| match event(tx)? {
            Some(event) => event.record(tx, now),
            None => Ok(()),
        })
    }

    /// Records `access.refused`, under the owner's account, when the row `what` `id` belongs
    /// to another account than `actor`. For operations that answer a foreign id as an unknown
    /// one without an error (a delete answering `false`); [`Store::audit_refused`] is the form
    /// for a not found.
    ///
    /// # Errors
    /// When the event cannot be written.
    pub(crate) fn audit_foreign(&self, actor: &str, what: &'static str, id: &str) -> Result<()> {
        // Looked up on a reader first: an id nobody has (or the caller's own) costs no write.
        let foreign = owner(&self.reading()?.db(), what, id)?.is_some_and(|owner| owner != actor);
        if !foreign {
            return Ok(());
        }
        // Again in the write: the row may have gone meanwhile.
        self.security_event(|tx| {
            let Some(account) = owner(tx, what, id)?.filter(|owner| owner != actor) else {
                return Ok(None);
            };
            Ok(Some(Event {
                account_id: Cow::Owned(account),
                actor,
                kind: Kind::Security,
                action: "access.refused",
                target: format!("{what} {id}"),
                outcome: Outcome::Refused,
                detail: Some(format!("account {actor} named a row of this account")),
            }))
        })
    }

    /// Passes `result` through; when it is a not found for a row of another account than
    /// `actor`, first records `access.refused` ([`Store::audit_foreign`]).
    pub(crate) fn audit_refused<T>(&self, actor: &str, result: Result<T>) -> Result<T> {
        match &result {
            Err(Error::NotFound { what, id }) => self.audit_foreign(actor, what, id).and(result),
            _ => result,
        }
    }

    /// Passes a read's `found` through; when it found nothing and the row `what` `id` belongs
    /// to another account than `actor`, first records `access.refused`
    /// ([`Store::audit_foreign`]). A read of one's own rows, or of an id nobody has, writes
    /// nothing.
    pub(crate) fn audit_absent<T>(
        &self,
        actor: &str,
        what: &'static str,
        id: &str,
        found: Result<Option<T>>,
    ) -> Result<Option<T>> {
        match &found {
            Ok(None) => self.audit_foreign(actor, what, id).and(found),
            _ => found,
        }
    }

    /// Passes `result` through; when it is an idempotency conflict, first records
    /// `idempotency.conflict` under `account_id`.
    pub(crate) fn audit_conflict<T>(&self, account_id: &str, result: Result<T>) -> Result<T> {
        let Err(Error::Conflict { what, key, .. }) = &result else {
            return result;
        };
        if *what != CONFLICT_WHAT {
            return result;
        }
        self.security_event(|_| {
            Ok(Some(Event {
                outcome: Outcome::Refused,
                ..Event::done(
                    account_id,
                    Kind::Security,
                    "idempotency.conflict",
                    format!("{CONFLICT_WHAT} {key}"),
                )
                .detail("the id was used before with a different request")
            }))
        })
        .and(result)
    }

    /// Passes `result` through; when decrypting `target` (`secret <name>`, `webhook credential
    /// <trigger>`) of `account_id` failed, first records `secret.decrypt` with outcome `failed`
    /// and which failure it was.
    pub(crate) fn audit_decrypt<T>(
        &self,
        account_id: &str,
        mut target: impl FnMut() -> String,
        result: Result<T>,
    ) -> Result<T> {
        let Some(why) = result.as_ref().err().and_then(decrypt_failure) else {
            return result;
        };
        self.security_event(|_| {
            Ok(Some(Event {
                outcome: Outcome::Failed,
                ..Event::done(account_id, Kind::Security, "secret.decrypt", target()).detail(why)
            }))
        })
        .and(result)
    }
}
