//! Triggers (`agent_triggers`) and what hangs off them: exactly-once firings
//! (`trigger_firings`, `trigger_event_claims`, in [`firings`]), webhook credentials
//! (`webhook_trigger_credentials`, in [`webhook`]) and combination of two triggers (in
//! [`combine`]). The checks those share (source, name, missing or retired trigger) live in
//! `checks`, which imports none of them.
//!
//! Invariants, each inside one `BEGIN IMMEDIATE` transaction:
//! - a stored source is one the description allows: an `activity` source has a nonempty list of
//!   alternatives, each an activity filter; legacy single-source rows are read back unchanged
//!   (their bytes are never rewritten by a read);
//! - a webhook trigger has its credential from the transaction that created it (or made it a
//!   webhook);
//! - a trigger retired by combination (`merged_into` set) is disabled and immutable;
//! - deleting a trigger detaches its runs, then deletes its firings, claims and credential, and
//!   the trigger (and any trigger retired into it), all at once.

mod checks;
pub mod combine;
pub mod firings;
pub mod webhook;

use crate::error::{Error, Result};
use crate::payload::{AgentTriggerSource, TriggerContinuation};
use crate::query;
use crate::schema::{agent_triggers, agents};
use crate::values::cbor::Cbor;
use crate::values::ids::new_id;
use crate::Store;

pub use checks::validate_source;
use checks::{check_mutable, load_trigger, trigger_name};
pub use combine::CombineTriggers;
pub use firings::{
    firing_run_id, Admission, FiringKey, FiringRequest, FiringUpdate, LOOP_GUARD_HOPS,
};
pub use webhook::WebhookSecret;

/// A trigger to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTrigger {
    /// A caller-chosen id; `None` draws one.
    pub id: Option<String>,
    /// The owning account.
    pub account_id: String,
    /// The agent (same account).
    pub agent_id: String,
    /// The name, required, stored trimmed.
    pub name: String,
    /// Whether it fires.
    pub enabled: bool,
    /// What it listens to.
    pub source: AgentTriggerSource,
    /// The prompt a firing starts with.
    pub prompt: String,
    /// What a firing does; `None` starts a new thread.
    pub continuation: Option<TriggerContinuation>,
}

/// Changes to a trigger; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TriggerPatch {
    /// A new name.
    pub name: Option<String>,
    /// Enable or disable.
    pub enabled: Option<bool>,
    /// A new source.
    pub source: Option<AgentTriggerSource>,
    /// A new prompt.
    pub prompt: Option<String>,
    /// A new continuation (`Some(None)` clears it back to a new thread).
    pub continuation: Option<Option<TriggerContinuation>>,
}

/// A written trigger, with the webhook secret when this write created one (returned once here;
/// editors read it again with [`Store::webhook_secret`]).
#[derive(Debug)]
pub struct TriggerWrite {
    /// The stored row.
    pub trigger: agent_triggers::Row,
    /// The new webhook secret, when the write created the credential.
    pub webhook_secret: Option<WebhookSecret>,
}

impl Store {
    /// Creates a trigger; a webhook trigger gets its secret in the same transaction.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty name or a source [`validate_source`] refuses,
    /// [`Error::NotFound`] for an agent not in the account, [`Error::Conflict`] for a taken id.
    pub fn create_trigger(&self, new: &NewTrigger) -> Result<TriggerWrite> {
        let name = trigger_name(&new.name)?;
        validate_source(&new.source)?;
        let webhook = matches!(new.source, AgentTriggerSource::Webhook(_));
        let mut ring = crate::keys::Ring::fetch_if(self.key_provider(), webhook);
        self.write(|tx, now| {
            if agents::get(tx, &new.account_id, &new.agent_id)?.is_none() {
                return Err(Error::NotFound {
                    what: "agent",
                    id: new.agent_id.clone(),
                });
            }
            let id = new.id.clone().unwrap_or_else(new_id);
            let taken = query!(
                "SELECT CAST(count(*) AS INTEGER) AS n FROM agent_triggers WHERE id = ?1",
                id
            )
            .fetch_one(tx)?
            .n;
            if taken.unwrap_or(0) > 0 {
                return Err(Error::Conflict {
                    what: "trigger",
                    key: id,
                    reason: "the id is taken".into(),
                });
            }
            crate::accounts::touch(tx, &new.account_id, now)?;
            let row = agent_triggers::Row {
                id,
                account_id: new.account_id.clone(),
                agent_id: new.agent_id.clone(),
                name: name.clone(),
                enabled: new.enabled,
                source_cbor: Cbor::encode(&new.source)?,
                prompt: new.prompt.clone(),
                continuation_cbor: new.continuation.as_ref().map(Cbor::encode).transpose()?,
                cooldown_ms: None,
                merged_into: None,
                created_at: now,
                updated_at: now,
                last_checked_at: None,
                last_fired_at: None,
                last_error: None,
            };
            agent_triggers::insert(tx, &row)?;
            let webhook_secret = match new.source {
                AgentTriggerSource::Webhook(_) => {
                    Some(webhook::create_credential(tx, &mut ring, &row, now)?)
                }
                _ => None,
            };
            Ok(TriggerWrite {
                trigger: row,
                webhook_secret,
            })
        })
    }

    /// Changes a trigger. Making it a webhook trigger creates its credential; making it
    /// anything else deletes it.
    ///
    /// # Errors
    /// [`Error::Conflict`] for a trigger retired by combination, [`Error::Invalid`] as
    /// [`Store::create_trigger`], [`Error::NotFound`] when it is not in the account.
    pub fn update_trigger(
        &self,
        account_id: &str,
        id: &str,
        patch: &TriggerPatch,
    ) -> Result<TriggerWrite> {
        let name = patch.name.as_deref().map(trigger_name).transpose()?;
        if let Some(source) = &patch.source {
            validate_source(source)?;
        }
        let webhook = matches!(patch.source, Some(AgentTriggerSource::Webhook(_)));
        let mut ring = crate::keys::Ring::fetch_if(self.key_provider(), webhook);
        let updated = self.write(|tx, now| {
            let mut row = load_trigger(tx, account_id, id)?;
            check_mutable(&row)?;
            if let Some(name) = &name {
                row.name = name.clone();
            }
            if let Some(enabled) = patch.enabled {
                row.enabled = enabled;
            }
            if let Some(prompt) = &patch.prompt {
                row.prompt = prompt.clone();
            }
            if let Some(continuation) = &patch.continuation {
                row.continuation_cbor = continuation.as_ref().map(Cbor::encode).transpose()?;
            }
            let mut webhook_secret = None;
            if let Some(source) = &patch.source {
                row.source_cbor = Cbor::encode(source)?;
                let has_credential =
                    crate::schema::webhook_trigger_credentials::get(tx, account_id, id)?.is_some();
                match (
                    matches!(source, AgentTriggerSource::Webhook(_)),
                    has_credential,
                ) {
                    (true, false) => {
                        webhook_secret = Some(webhook::create_credential(tx, &mut ring, &row, now)?)
                    }
                    (false, true) => {
                        crate::schema::webhook_trigger_credentials::delete(tx, account_id, id)?;
                    }
                    _ => {}
                }
            }
            row.updated_at = now;
            agent_triggers::update(tx, &row)?;
            Ok(TriggerWrite {
                trigger: row,
                webhook_secret,
            })
        });
        self.audit_refused(account_id, updated)
    }

    /// Enables or disables a trigger.
    ///
    /// # Errors
    /// As [`Store::update_trigger`].
    pub fn set_trigger_enabled(
        &self,
        account_id: &str,
        id: &str,
        enabled: bool,
    ) -> Result<agent_triggers::Row> {
        let patch = TriggerPatch {
            enabled: Some(enabled),
            ..TriggerPatch::default()
        };
        Ok(self.update_trigger(account_id, id, &patch)?.trigger)
    }

    /// A trigger of the account. Another account's is answered as unknown, and recorded in
    /// the audit log (`access.refused`).
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn trigger(&self, account_id: &str, id: &str) -> Result<Option<agent_triggers::Row>> {
        let found = agent_triggers::get(&self.reading()?, account_id, id);
        self.audit_absent(account_id, "trigger", id, found)
    }

    /// An agent's triggers, most recently updated first.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn triggers(&self, account_id: &str, agent_id: &str) -> Result<Vec<agent_triggers::Row>> {
        agent_triggers::list_by_agent_id(&self.reading()?, account_id, agent_id)
    }

    /// Deletes a trigger in one transaction: its runs are detached (`trigger_firing_id`
    /// nulled), then its firings, claims and webhook credential are deleted, then the trigger.
    /// Triggers retired into it by combination go with it (their `merged_into` would otherwise
    /// point nowhere). Claims already imported into a survivor stay. Returns whether it existed.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn delete_trigger(&self, account_id: &str, id: &str) -> Result<bool> {
        let deleted = self.write(|tx, _now| {
            if agent_triggers::get(tx, account_id, id)?.is_none() {
                return Ok(false);
            }
            // Retired predecessors first (deepest first), so no merged_into dangles at any point.
            let doomed = query!(
                "WITH RECURSIVE retired(id, depth) AS (
                       SELECT ?2 COLLATE BINARY, 0
                       UNION
                       SELECT t.id, retired.depth + 1 FROM agent_triggers AS t JOIN retired ON t.merged_into = retired.id
                       WHERE t.account_id = ?1
                     )
                     SELECT id FROM retired ORDER BY depth DESC",
                account_id,
                id
            )
            .fetch_all(tx)?;
            for trigger_id in doomed.into_iter().map(|r| r.id) {
                query!(
                    "UPDATE runs SET trigger_firing_id = NULL
                     WHERE trigger_firing_id IN (SELECT id FROM trigger_firings WHERE account_id = ?1 AND trigger_id = ?2)",
                    account_id,
                    trigger_id
                )
                .execute(tx)?;
                query!(
                    "DELETE FROM trigger_firings WHERE account_id = ?1 AND trigger_id = ?2",
                    account_id,
                    trigger_id
                )
                .execute(tx)?;
                query!(
                    "DELETE FROM trigger_event_claims WHERE account_id = ?1 AND trigger_id = ?2",
                    account_id,
                    trigger_id
                )
                .execute(tx)?;
                crate::schema::webhook_trigger_credentials::delete(tx, account_id, &trigger_id)?;
                agent_triggers::delete(tx, account_id, &trigger_id)?;
            }
            Ok(true)
        })?;
        if !deleted {
            self.audit_foreign(account_id, "trigger", id)?;
        }
        Ok(deleted)
    }
}
