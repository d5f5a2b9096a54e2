//! Combining two activity triggers into one.
//!
//! Invariant, in one `BEGIN IMMEDIATE` transaction: the retired trigger gets `merged_into`, is
//! disabled and from then on immutable, and keeps its firings (ids and trigger association
//! unchanged); the survivor receives the combined conditions (the alternatives of both), the
//! selected shared action, and the union of both triggers' claims. Legacy firings of either
//! trigger (no `context_cbor`) get their trigger's current name and prompt captured first, before
//! the survivor's configuration changes, without any matched conditions (never recorded).

use crate::sql::db::Db;

use crate::error::Result;
use crate::payload::{
    ActivityAlternative, ActivitySource, AgentTriggerSource, FiringContext, OpenMap,
    TriggerContinuation,
};
use crate::schema::agent_triggers;
use crate::triggers::checks::{check_mutable, load_trigger, trigger_name, validate_source};
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::{query, Store};

/// Which two triggers to combine and the shared action the survivor keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CombineTriggers {
    /// The trigger that remains.
    pub survivor_id: String,
    /// The trigger that is retired into it.
    pub retired_id: String,
    /// The survivor's name; `None` keeps its own.
    pub name: Option<String>,
    /// The shared prompt; `None` keeps the survivor's.
    pub prompt: Option<String>,
    /// The shared continuation; `None` keeps the survivor's.
    pub continuation: Option<Option<TriggerContinuation>>,
}

/// The activity alternatives of a trigger's source: an `activity` source's own, or a legacy
/// single filter as one alternative named after the trigger.
fn alternatives(trigger: &agent_triggers::Row) -> Result<Vec<ActivityAlternative>> {
    let source = trigger.source_cbor.decode()?;
    match source {
        AgentTriggerSource::Activity(activity) => Ok(activity.alternatives),
        single if single.is_activity_filter() => Ok(vec![ActivityAlternative {
            id: trigger.id.clone(),
            source: single,
            extra: OpenMap::new(),
        }]),
        other => Err(invalid(
            "source",
            format!(
                "trigger {:?} is a {:?} trigger; only activity triggers combine",
                trigger.id,
                other.kind().unwrap_or("(no kind)")
            ),
        )),
    }
}

/// Captures the current name and prompt of `trigger` into its legacy firings.
fn capture_legacy_context(conn: &Db, trigger: &agent_triggers::Row) -> Result<()> {
    let context = Cbor::encode(&FiringContext {
        name: trigger.name.clone(),
        prompt: trigger.prompt.clone(),
        matched: None,
        extra: OpenMap::new(),
    })?;
    query!(
        "UPDATE trigger_firings SET context_cbor = ?3
         WHERE account_id = ?1 AND trigger_id = ?2 AND context_cbor IS NULL",
        trigger.account_id,
        trigger.id,
        context
    )
    .execute(conn)?;
    Ok(())
}

impl Store {
    /// Combines `retired_id` into `survivor_id` (see the module doc). Returns the survivor.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for one trigger twice, triggers of different agents, or a
    /// trigger that is not an activity trigger; [`crate::Error::Conflict`] when either is already
    /// retired; [`crate::Error::NotFound`] when either is not in the account.
    pub fn combine_triggers(
        &self,
        account_id: &str,
        request: &CombineTriggers,
    ) -> Result<agent_triggers::Row> {
        if request.survivor_id == request.retired_id {
            return Err(invalid(
                "retired_id",
                "a trigger cannot be combined with itself",
            ));
        }
        self.write(|tx, now| {
            let mut survivor = load_trigger(tx, account_id, &request.survivor_id)?;
            let mut retired = load_trigger(tx, account_id, &request.retired_id)?;
            check_mutable(&survivor)?;
            check_mutable(&retired)?;
            if survivor.agent_id != retired.agent_id {
                return Err(invalid("retired_id", "both triggers must belong to the same agent"));
            }
            let mut combined = alternatives(&survivor)?;
            for mut alternative in alternatives(&retired)? {
                // Alternative ids are unique within a trigger; a clash gets the retired trigger's id
                // as a prefix.
                if combined.iter().any(|a| a.id == alternative.id) {
                    alternative.id = format!("{}:{}", retired.id, alternative.id);
                }
                if !combined.iter().any(|a| a.source == alternative.source) {
                    combined.push(alternative);
                }
            }
            let source = AgentTriggerSource::Activity(ActivitySource {
                alternatives: combined,
                extra: OpenMap::new(),
            });
            validate_source(&source)?;

            capture_legacy_context(tx, &survivor)?;
            capture_legacy_context(tx, &retired)?;
            query!(
                "INSERT OR IGNORE INTO trigger_event_claims (account_id, trigger_id, activity_key, firing_id, created_at)
                 SELECT account_id, ?3, activity_key, firing_id, created_at FROM trigger_event_claims
                 WHERE account_id = ?1 AND trigger_id = ?2",
                account_id,
                retired.id,
                survivor.id
            )
            .execute(tx)?;

            retired.merged_into = Some(survivor.id.clone());
            retired.enabled = false;
            retired.updated_at = now;
            agent_triggers::update(tx, &retired)?;

            survivor.source_cbor = Cbor::encode(&source)?;
            if let Some(name) = &request.name {
                survivor.name = trigger_name(name)?;
            }
            if let Some(prompt) = &request.prompt {
                survivor.prompt = prompt.clone();
            }
            if let Some(continuation) = &request.continuation {
                survivor.continuation_cbor = continuation.as_ref().map(Cbor::encode).transpose()?;
            }
            survivor.updated_at = now;
            agent_triggers::update(tx, &survivor)?;
            Ok(survivor)
        })
    }
}
