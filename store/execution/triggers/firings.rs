//! Firings (`trigger_firings`) and activity claims (`trigger_event_claims`): exactly-once
//! admission of what matched a trigger.
//!
//! Invariant: one firing per `(account_id, trigger_id, activity_key)`. Admission is one
//! `BEGIN IMMEDIATE` transaction around `INSERT OR IGNORE`, so of any number of racing admitters
//! (threads or processes) exactly one inserts and the others see its row. Activity events are
//! claimed in `trigger_event_claims` first, in the same transaction, so an event a combined
//! predecessor already handled is not admitted again by the survivor. Schedule, webhook and
//! run-completed firings dedupe on the firing row alone.

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::{ActivityAlternative, FiringContext, OpenMap, TriggerActivity};
use crate::runs::lifecycle::load_run;
use crate::schema::trigger_firings::{self, Status};
use crate::triggers::checks::load_trigger;
use crate::values::cbor::Cbor;
use crate::values::check::invalid;
use crate::values::ids::new_id;
use crate::{query, query_as, Store};

/// A run-completed trigger chain stops after this many hops (a run-completed firing whose run
/// was itself started, 8 times over, by run-completed firings is skipped).
pub const LOOP_GUARD_HOPS: u32 = 8;

/// A trigger's firings, newest first. ?1 account, ?2 trigger.
macro_rules! firings_query {
    ($account:expr, $trigger:expr) => {
        query_as!(
            trigger_firings::Row,
            "SELECT id, account_id, agent_id, trigger_id, activity_key, session_id, run_id, activity_cbor,
       context_cbor, body_digest, status, error, created_at
     FROM trigger_firings INDEXED BY trigger_firings_by_trigger
     WHERE trigger_id = ?2 AND account_id = ?1 ORDER BY created_at DESC, id",
            $account,
            $trigger
        )
    };
}

/// The checked SQL of the firings listing, for the query-plan registry
/// ([`crate::execution::plans`]).
pub(crate) fn firings_sql() -> &'static str {
    firings_query!("", "").sql()
}

/// The admission key of a firing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FiringKey {
    /// A scheduled occurrence: `schedule:<triggerId>:<scheduledAt>`.
    Schedule {
        /// The occurrence's scheduled time, epoch milliseconds.
        scheduled_at: i64,
    },
    /// A webhook delivery: `webhook:<Idempotency-Key>`, or a random key without one.
    Webhook {
        /// The sender's Idempotency-Key.
        idempotency_key: Option<String>,
    },
    /// A run's completion: `run:<runId>`.
    RunCompleted {
        /// The completed run.
        run_id: String,
    },
    /// An activity event, by its stable key (claimed in `trigger_event_claims` first).
    Activity {
        /// The event's stable key.
        key: String,
    },
}

impl FiringKey {
    /// The stored `activity_key`.
    pub fn activity_key(&self, trigger_id: &str) -> String {
        match self {
            FiringKey::Schedule { scheduled_at } => format!("schedule:{trigger_id}:{scheduled_at}"),
            FiringKey::Webhook {
                idempotency_key: Some(key),
            } => format!("webhook:{key}"),
            FiringKey::Webhook {
                idempotency_key: None,
            } => format!("webhook:{}", new_id()),
            FiringKey::RunCompleted { run_id } => format!("run:{run_id}"),
            FiringKey::Activity { key } => key.clone(),
        }
    }
}

/// Something that matched a trigger, to admit.
#[derive(Debug, Clone, PartialEq)]
pub struct FiringRequest {
    /// The account.
    pub account_id: String,
    /// The trigger.
    pub trigger_id: String,
    /// The admission key.
    pub key: FiringKey,
    /// The matched event or occurrence.
    pub activity: TriggerActivity,
    /// A webhook body's digest.
    pub body_digest: Option<String>,
    /// For activity firings, the alternatives that matched (snapshotted into `context_cbor`).
    pub matched: Option<Vec<ActivityAlternative>>,
}

/// What admission did.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// A new firing (status `created`).
    Admitted(trigger_firings::Row),
    /// The key was admitted before: nothing was written. The earlier firing, when it still
    /// exists (an activity claim imported from a deleted predecessor has none).
    Duplicate(Option<trigger_firings::Row>),
    /// A run-completed chain reached [`LOOP_GUARD_HOPS`]: the firing is recorded as `skipped`
    /// and must not run.
    LoopGuard(trigger_firings::Row),
}

/// A firing's progress.
#[derive(Debug, Clone, PartialEq)]
pub struct FiringUpdate {
    /// The new status.
    pub status: Status,
    /// The error, for a failed or skipped firing.
    pub error: Option<String>,
    /// The session the firing created.
    pub session_id: Option<String>,
    /// The headless run a tool or script continuation started.
    pub run_id: Option<String>,
}

/// The deterministic id of the run a firing starts: `firing-<firingId>`, so a retried dispatch
/// enqueues the same run (a duplicate enqueue is a no-op).
pub fn firing_run_id(firing_id: &str) -> String {
    format!("firing-{firing_id}")
}

/// How many run-completed firings precede `run_id` in its chain: its (or its root's) firing is
/// followed while that firing's key is `run:<id>`, at most `LOOP_GUARD_HOPS` times.
fn run_completed_chain(conn: &Db, account_id: &str, run_id: &str) -> Result<u32> {
    let mut hops = 0;
    let mut current = run_id.to_owned();
    while hops < LOOP_GUARD_HOPS {
        let key = query!(
            "SELECT f.activity_key FROM runs AS r
                 JOIN runs AS root ON root.id = r.root_run_id
                 JOIN trigger_firings AS f ON f.id = coalesce(r.trigger_firing_id, root.trigger_firing_id)
                 WHERE r.account_id = ?1 AND r.id = ?2",
            account_id,
            current
        )
        .fetch_optional(conn)?
        .map(|r| r.activity_key);
        match key.as_deref().and_then(|k| k.strip_prefix("run:")) {
            Some(previous) => {
                hops += 1;
                current = previous.to_owned();
            }
            None => break,
        }
    }
    Ok(hops)
}

impl Store {
    /// Admits a firing exactly once per `(trigger, key)`; see [`Admission`]. Activity keys are
    /// claimed first and their firing stores the trigger's name, prompt and the matched
    /// alternatives as `context_cbor`.
    ///
    /// # Errors
    /// [`Error::NotFound`] for a trigger not in the account, [`Error::Conflict`] for a disabled
    /// or retired trigger, or a webhook key reused with another body digest.
    pub fn admit_firing(&self, request: &FiringRequest) -> Result<Admission> {
        if let FiringKey::Activity { key } = &request.key {
            if key.is_empty() {
                return Err(invalid("key", "an activity key must not be empty"));
            }
        }
        let account_id = request.account_id.as_str();
        self.write(|tx, now| {
            let trigger = load_trigger(tx, account_id, &request.trigger_id)?;
            if trigger.merged_into.is_some() || !trigger.enabled {
                return Err(Error::Conflict {
                    what: "trigger",
                    key: trigger.id,
                    reason: "it is disabled".into(),
                });
            }
            let activity_key = request.key.activity_key(&trigger.id);
            let id = new_id();
            let mut context = None;
            if let FiringKey::Activity { .. } = &request.key {
                let claimed = query!(
                    "INSERT OR IGNORE INTO trigger_event_claims (account_id, trigger_id, activity_key, firing_id, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    account_id,
                    trigger.id,
                    activity_key,
                    id,
                    now
                )
                .execute(tx)?;
                if claimed == 0 {
                    let firing_id = query!(
                        "SELECT firing_id FROM trigger_event_claims WHERE account_id = ?1 AND trigger_id = ?2 AND activity_key = ?3",
                        account_id,
                        trigger.id,
                        activity_key
                    )
                    .fetch_one(tx)?
                    .firing_id;
                    let existing = match firing_id {
                        Some(firing_id) => trigger_firings::get(tx, account_id, &firing_id)?,
                        None => None,
                    };
                    return Ok(Admission::Duplicate(existing));
                }
                context = Some(Cbor::encode(&FiringContext {
                    name: trigger.name.clone(),
                    prompt: trigger.prompt.clone(),
                    matched: request.matched.clone(),
                    extra: OpenMap::new(),
                })?);
            }
            let (status, error) = match &request.key {
                FiringKey::RunCompleted { run_id }
                    if run_completed_chain(tx, account_id, run_id)? + 1 > LOOP_GUARD_HOPS =>
                {
                    (
                        Status::Skipped,
                        Some(format!(
                            "run-completed loop guard: the chain reached {LOOP_GUARD_HOPS} hops"
                        )),
                    )
                }
                _ => (Status::Created, None),
            };
            let activity = Cbor::encode(&request.activity)?;
            let inserted = query!(
                "INSERT OR IGNORE INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, session_id, run_id,
                       activity_cbor, context_cbor, body_digest, status, error, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6, ?7, ?8, ?9, ?10, ?11)",
                id,
                account_id,
                trigger.agent_id,
                trigger.id,
                activity_key,
                activity,
                context,
                request.body_digest,
                status,
                error,
                now
            )
            .execute(tx)?;
            if inserted == 0 {
                let existing = trigger_firings::get_by_trigger_id_and_activity_key(
                    tx,
                    account_id,
                    &trigger.id,
                    &activity_key,
                )?;
                if let (Some(existing), Some(digest)) = (&existing, &request.body_digest) {
                    if existing.body_digest.as_deref() != Some(digest.as_str()) {
                        return Err(Error::Conflict {
                            what: "webhook delivery",
                            key: activity_key,
                            reason: "the Idempotency-Key was used before with a different body".into(),
                        });
                    }
                }
                if existing.is_some() {
                    // A claim this transaction made for an already-stored firing must point at it.
                    query!(
                        "UPDATE trigger_event_claims SET firing_id = ?4 WHERE account_id = ?1 AND trigger_id = ?2 AND activity_key = ?3",
                        account_id,
                        trigger.id,
                        activity_key,
                        existing.as_ref().map(|f| f.id.clone())
                    )
                    .execute(tx)?;
                }
                return Ok(Admission::Duplicate(existing));
            }
            if status == Status::Created {
                query!(
                    "UPDATE agent_triggers SET last_fired_at = ?3 WHERE account_id = ?1 AND id = ?2",
                    account_id,
                    trigger.id,
                    now
                )
                .execute(tx)?;
            }
            let row = trigger_firings::get(tx, account_id, &id)?.ok_or_else(|| Error::NotFound {
                what: "firing",
                id: id.clone(),
            })?;
            Ok(match status {
                Status::Skipped => Admission::LoopGuard(row),
                _ => Admission::Admitted(row),
            })
        })
    }

    /// Records a firing's progress (status, error, session, run). The session and the run it
    /// names must be the account's own, like the firing.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`firing`, `session`, `run`) when the firing, or the session or run
    /// the update names, is not in the account (another account's is refused like an unknown
    /// one).
    pub fn update_firing(
        &self,
        account_id: &str,
        firing_id: &str,
        update: &FiringUpdate,
    ) -> Result<trigger_firings::Row> {
        self.write(|tx, _now| {
            let mut row = trigger_firings::get(tx, account_id, firing_id)?.ok_or_else(|| {
                Error::NotFound {
                    what: "firing",
                    id: firing_id.to_owned(),
                }
            })?;
            // Foreign keys check existence only: what the firing points at must be the account's.
            if let Some(session_id) = &update.session_id {
                if crate::schema::sessions::get(tx, account_id, session_id)?.is_none() {
                    return Err(Error::NotFound {
                        what: "session",
                        id: session_id.clone(),
                    });
                }
            }
            if let Some(run_id) = &update.run_id {
                load_run(tx, account_id, run_id)?;
            }
            row.status = update.status;
            row.error = update.error.clone();
            if update.session_id.is_some() {
                row.session_id = update.session_id.clone();
            }
            if update.run_id.is_some() {
                row.run_id = update.run_id.clone();
            }
            trigger_firings::update(tx, &row)?;
            Ok(row)
        })
    }

    /// A trigger's firings, newest first (through `trigger_firings_by_trigger`).
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn firings(&self, account_id: &str, trigger_id: &str) -> Result<Vec<trigger_firings::Row>> {
        firings_query!(account_id, trigger_id).fetch_all(&self.reading()?)
    }

    /// The activity claims of a trigger.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn trigger_claims(
        &self,
        account_id: &str,
        trigger_id: &str,
    ) -> Result<Vec<crate::schema::trigger_event_claims::Row>> {
        crate::schema::trigger_event_claims::list_by_trigger_id(
            &self.reading()?,
            account_id,
            trigger_id,
        )
    }
}
