//! The checks every trigger write shares: what a stored source may be, the name rule, and the
//! lookups that refuse a missing or retired trigger.
//!
//! Invariant: a trigger write stores only a source [`validate_source`] accepts and a trimmed,
//! non-empty name, and never changes a trigger retired by combination ([`check_mutable`]).

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::payload::{AgentTriggerSource, Schedule};
use crate::schema::agent_triggers;
use crate::values::check::{invalid, non_empty};

/// Checks a source before it is stored.
///
/// # Errors
/// [`Error::Invalid`] naming the offending field.
pub fn validate_source(source: &AgentTriggerSource) -> Result<()> {
    match source {
        AgentTriggerSource::Activity(activity) => {
            if activity.alternatives.is_empty() {
                return Err(invalid(
                    "source.alternatives",
                    "an activity trigger needs at least one alternative",
                ));
            }
            for alternative in &activity.alternatives {
                non_empty("source.alternatives.id", &alternative.id)?;
                if !alternative.source.is_activity_filter() {
                    return Err(invalid(
                        "source.alternatives.source",
                        format!(
                            "{:?} is not an activity filter (document-comment, user-mention, comment-reply, document-author-comment, site-update)",
                            alternative.source.kind().unwrap_or("(no kind)")
                        ),
                    ));
                }
            }
            let mut ids: Vec<&str> = activity
                .alternatives
                .iter()
                .map(|a| a.id.as_str())
                .collect();
            ids.sort_unstable();
            if ids.windows(2).any(|w| w[0] == w[1]) {
                return Err(invalid(
                    "source.alternatives.id",
                    "alternative ids must be unique",
                ));
            }
        }
        AgentTriggerSource::Schedule(schedule) => match &schedule.schedule {
            Schedule::Interval(interval) if interval.interval_ms == 0 => {
                return Err(invalid("source.schedule.interval_ms", "must be positive"))
            }
            Schedule::Weekly(weekly)
                if weekly.days.is_empty() || weekly.days.iter().any(|d| *d > 6) =>
            {
                return Err(invalid(
                    "source.schedule.days",
                    "needs at least one day, each 0 (Sunday) to 6 (Saturday)",
                ))
            }
            Schedule::Other(_) => {
                return Err(invalid(
                    "source.schedule",
                    "is not an interval, weekly or once schedule",
                ))
            }
            _ => {}
        },
        AgentTriggerSource::Other(_) => {
            return Err(invalid(
                "source",
                format!(
                    "kind {:?} is not a trigger source this version can write",
                    source.kind().unwrap_or("(no kind)")
                ),
            ))
        }
        _ => {}
    }
    Ok(())
}

/// Trims and checks a trigger name.
pub(crate) fn trigger_name(name: &str) -> Result<String> {
    non_empty("name", name)?;
    Ok(name.trim().to_owned())
}

/// The trigger, or [`Error::NotFound`].
pub(crate) fn load_trigger(conn: &Db, account_id: &str, id: &str) -> Result<agent_triggers::Row> {
    agent_triggers::get(conn, account_id, id)?.ok_or_else(|| Error::NotFound {
        what: "trigger",
        id: id.to_owned(),
    })
}

/// Refuses to change a trigger retired by combination.
pub(crate) fn check_mutable(trigger: &agent_triggers::Row) -> Result<()> {
    match &trigger.merged_into {
        Some(survivor) => Err(Error::Conflict {
            what: "trigger",
            key: trigger.id.clone(),
            reason: format!("it was combined into {survivor:?} and is immutable"),
        }),
        None => Ok(()),
    }
}
