//! Trigger payloads: what a trigger listens to, what a firing does, and what it saw.

use serde::{Deserialize, Serialize};

use super::{Ipld, OpenMap};

/// `agent_triggers.source_cbor`: what a trigger listens to, schedules included. Tagged by `kind`.
///
/// A map whose `kind` this version does not know, or whose fields do not fit the variant its
/// `kind` names (for example a legacy row), decodes as [`AgentTriggerSource::Other`] and
/// re-encodes unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum AgentTriggerSource {
    /// A comment on a document (activity filter).
    #[serde(rename = "document-comment")]
    DocumentComment(ActivityFilter),
    /// A mention of a user (activity filter).
    #[serde(rename = "user-mention")]
    UserMention(ActivityFilter),
    /// A reply to a comment (activity filter).
    #[serde(rename = "comment-reply")]
    CommentReply(ActivityFilter),
    /// A comment by a document's author (activity filter).
    #[serde(rename = "document-author-comment")]
    DocumentAuthorComment(ActivityFilter),
    /// An update of a site (activity filter).
    #[serde(rename = "site-update")]
    SiteUpdate(ActivityFilter),
    /// Any of several activity filters.
    #[serde(rename = "activity")]
    Activity(ActivitySource),
    /// A schedule: interval, weekly days and time, or once.
    #[serde(rename = "schedule")]
    Schedule(ScheduleSource),
    /// An incoming webhook delivery.
    #[serde(rename = "webhook")]
    Webhook(WebhookSource),
    /// The completion of a run.
    #[serde(rename = "run-completed")]
    RunCompleted(RunCompletedSource),
    /// Any other source map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

impl AgentTriggerSource {
    /// The `kind` tag, when there is one.
    pub fn kind(&self) -> Option<&str> {
        Some(match self {
            Self::DocumentComment(_) => "document-comment",
            Self::UserMention(_) => "user-mention",
            Self::CommentReply(_) => "comment-reply",
            Self::DocumentAuthorComment(_) => "document-author-comment",
            Self::SiteUpdate(_) => "site-update",
            Self::Activity(_) => "activity",
            Self::Schedule(_) => "schedule",
            Self::Webhook(_) => "webhook",
            Self::RunCompleted(_) => "run-completed",
            Self::Other(map) => match map.get("kind") {
                Some(Ipld::String(kind)) => kind,
                _ => return None,
            },
        })
    }

    /// Whether this is one of the five activity filters an [`ActivitySource`] alternative may
    /// hold.
    pub fn is_activity_filter(&self) -> bool {
        matches!(
            self,
            Self::DocumentComment(_)
                | Self::UserMention(_)
                | Self::CommentReply(_)
                | Self::DocumentAuthorComment(_)
                | Self::SiteUpdate(_)
        )
    }
}

open_map! {
    /// The conditions of one activity filter (document, account, site, ...). The description
    /// gives no fields, so it is an open map (without the `kind` tag).
    ActivityFilter
}

/// An `activity` source: a nonempty list of alternatives, any of which admits an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySource {
    /// The alternatives, each an activity filter.
    pub alternatives: Vec<ActivityAlternative>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// One alternative of an [`ActivitySource`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityAlternative {
    /// The alternative's stable id within the trigger.
    pub id: String,
    /// The activity filter (one of the five filter kinds).
    pub source: AgentTriggerSource,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `schedule` source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSource {
    /// When the trigger fires.
    pub schedule: Schedule,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// When a schedule trigger fires. Tagged by `kind`; unknown kinds are kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Schedule {
    /// Every `intervalMs` milliseconds.
    #[serde(rename = "interval")]
    Interval(ScheduleInterval),
    /// On some days of the week at a time of day.
    #[serde(rename = "weekly")]
    Weekly(ScheduleWeekly),
    /// Once, at a moment.
    #[serde(rename = "once")]
    Once(ScheduleOnce),
    /// Any other schedule map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

/// An interval schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleInterval {
    /// The period in milliseconds.
    pub interval_ms: u64,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A weekly schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleWeekly {
    /// Days of the week, 0 = Sunday through 6 = Saturday.
    pub days: Vec<u8>,
    /// Time of day, `HH:MM`.
    pub time: String,
    /// IANA time zone of `time`; `None` means the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A one-time schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleOnce {
    /// When to fire, epoch milliseconds.
    pub at: i64,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_map! {
    /// A `webhook` source. Its secret lives in `webhook_trigger_credentials`; the description
    /// gives the source no fields, so it is an open map (without the `kind` tag).
    WebhookSource
}

open_map! {
    /// A `run-completed` source. The description gives it no fields, so it is an open map
    /// (without the `kind` tag).
    RunCompletedSource
}

/// `agent_triggers.continuation_cbor`: what a firing does. Tagged by `kind`; a NULL column means
/// [`TriggerContinuation::NewThread`].
///
/// A map whose `kind` is unknown, or whose fields do not fit its variant, decodes as
/// [`TriggerContinuation::Other`] and re-encodes unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum TriggerContinuation {
    /// Start a new thread with the trigger's prompt.
    #[serde(rename = "newThread")]
    NewThread(NewThreadContinuation),
    /// Wake a waiting run with a signal.
    #[serde(rename = "wake")]
    Wake(WakeContinuation),
    /// Run a tool headlessly.
    #[serde(rename = "tool")]
    Tool(ToolContinuation),
    /// Run a script headlessly.
    #[serde(rename = "script")]
    Script(ScriptContinuation),
    /// Any other continuation map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

impl TriggerContinuation {
    /// The `kind` tag, when there is one.
    pub fn kind(&self) -> Option<&str> {
        Some(match self {
            Self::NewThread(_) => "newThread",
            Self::Wake(_) => "wake",
            Self::Tool(_) => "tool",
            Self::Script(_) => "script",
            Self::Other(map) => match map.get("kind") {
                Some(Ipld::String(kind)) => kind,
                _ => return None,
            },
        })
    }
}

open_map! {
    /// A `newThread` continuation's fields (the description elides them), without the `kind`
    /// tag.
    NewThreadContinuation
}

/// A `wake` continuation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WakeContinuation {
    /// The signal delivered to the waiting run.
    pub signal: String,
    /// The run to wake; `None` wakes whichever run waits for the signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The payload delivered with the signal.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub payload: Option<Ipld>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `tool` continuation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolContinuation {
    /// The tool's name.
    pub tool: String,
    /// The tool's input.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub input: Option<Ipld>,
    /// What to do when the tool fails.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub on_failure: Option<Ipld>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `script` continuation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptContinuation {
    /// The script to run.
    pub script: String,
    /// The script's input.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub input: Option<Ipld>,
    /// What to do when the script fails.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub on_failure: Option<Ipld>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_map! {
    /// `trigger_firings.activity_cbor`: the matched event or occurrence. The description gives
    /// it no fields, so it is an open map.
    TriggerActivity
}

/// `trigger_firings.context_cbor`: the trigger's name, prompt and matched conditions observed at
/// admission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FiringContext {
    /// The trigger's name at admission.
    pub name: String,
    /// The trigger's prompt at admission.
    pub prompt: String,
    /// The alternatives that matched; `None` when the match was never recorded (a legacy firing
    /// captured at combination).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<Vec<ActivityAlternative>>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_map! {
    /// `activity_watermarks.cursor_cbor`: the activity monitor's position in an HM server's
    /// activity feed. The description gives it no fields, so it is an open map.
    ActivityCursor
}
