//! Run payloads: plans, inputs and outcomes, waits, budgets, and the workflow journal.

use serde::{Deserialize, Serialize};

use super::{Ipld, OpenMap};

/// `sessions.plan_cbor` and `runs.plan_cbor`: a checklist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    /// The checklist's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The steps, in order.
    pub steps: Vec<RunPlanStep>,
    /// When every step became terminal, epoch milliseconds (runtime-written; a reopening edit
    /// clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<i64>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

impl RunPlan {
    /// Whether every step is terminal (done, failed or skipped).
    pub fn all_steps_terminal(&self) -> bool {
        self.steps.iter().all(|step| step.status.is_terminal())
    }
}

/// One step of a [`RunPlan`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlanStep {
    /// The step's id within the plan.
    pub id: String,
    /// What the step is.
    pub label: String,
    /// Where the step stands.
    pub status: RunPlanStepStatus,
    /// Who closed the step, when the runtime did (never from model input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<StepResolvedBy>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_str_enum! {
    /// A plan step's status. The description names the terminal ones; the others are kept as
    /// [`RunPlanStepStatus::Other`].
    RunPlanStepStatus {
        /// Finished.
        Done = "done",
        /// Failed.
        Failed = "failed",
        /// Written off.
        Skipped = "skipped",
    }
}

impl RunPlanStepStatus {
    /// Whether the status is terminal (done, failed or skipped).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Skipped)
    }
}

open_str_enum! {
    /// Who resolved a plan step.
    StepResolvedBy {
        /// The runtime, because every child attached to the step succeeded.
        Runtime = "runtime",
    }
}

open_map! {
    /// `runs.input_cbor`: a run's input (it also carries the parent's delegate call id). The
    /// description gives no fields, so it is an open map.
    RunInput
}

/// `runs.output_cbor`: a run's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOutput {
    /// What the run committed to and had not delivered when it ended. Left out entirely when
    /// `None`: the presence of the key is the signal readers test for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmet_obligations: Option<Vec<UnmetObligation>>,
    /// The rest of the output, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `runs.error_cbor`: why a run failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunErrorInfo {
    /// A stable error code (for example `journal-cap`).
    pub code: String,
    /// A human-readable message.
    pub message: String,
    /// Whether a retry may succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// The HTTP status of a failed provider or tool request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The stack; `workflow.js:LINE` frames index into the run's source text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// The tool whose journaled call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The `callSeq` of that journaled call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_seq: Option<u64>,
    /// Free-form detail.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub detail: Option<Ipld>,
    /// What the run committed to and had not delivered when it ended. Left out entirely when
    /// `None`: the presence of the key is the signal readers test for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmet_obligations: Option<Vec<UnmetObligation>>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

impl RunErrorInfo {
    /// An error with a code and a message and nothing else set.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        RunErrorInfo {
            code: code.into(),
            message: message.into(),
            retryable: None,
            http_status: None,
            stack: None,
            tool: None,
            call_seq: None,
            detail: None,
            unmet_obligations: None,
            extra: OpenMap::new(),
        }
    }
}

/// An obligation a run had not met when it ended. Tagged by `kind`; unknown kinds (or a known
/// kind whose fields do not fit) are kept as written in [`UnmetObligation::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum UnmetObligation {
    /// A typed result that was never delivered.
    #[serde(rename = "typed-result")]
    TypedResult(UnmetTypedResult),
    /// Plan steps left neither finished nor written off.
    #[serde(rename = "plan")]
    Plan(UnmetPlan),
    /// Any other obligation map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

open_map! {
    /// A `typed-result` obligation's fields (none named), without the `kind` tag.
    UnmetTypedResult
}

/// A `plan` obligation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnmetPlan {
    /// The open steps, as the TypeScript server lists them (`steps: string[]`).
    pub steps: Vec<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `runs.wait_cbor`: why a run is parked. Tagged by `reason`, as the TypeScript server writes it;
/// unknown reasons (or a known reason whose fields do not fit) are kept as written in
/// [`RunWait::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason")]
pub enum RunWait {
    /// Spawned children have not all finished.
    #[serde(rename = "children")]
    Children(RunWaitChildren),
    /// A timer.
    #[serde(rename = "timer")]
    Timer(RunWaitTimer),
    /// `ctx.waitForEvent`.
    #[serde(rename = "event")]
    Event(RunWaitEvent),
    /// The run stopped before spending more.
    #[serde(rename = "budget-pause")]
    BudgetPause(RunWaitBudgetPause),
    /// Any other wait map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

/// A `children` wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunWaitChildren {
    /// The delegate calls whose children are awaited.
    pub tool_call_ids: Vec<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `timer` wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunWaitTimer {
    /// When to wake, epoch milliseconds.
    pub wake_at: i64,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// An `event` wait (`ctx.waitForEvent`); its criteria are a `run_event_waits` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunWaitEvent {
    /// The wait's id (`run_event_waits.wait_id`).
    pub wait_id: String,
    /// When the wait times out, epoch milliseconds; `None` waits forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_at: Option<i64>,
    /// What the run waits for, for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The signal that would answer the wait by hand, when one can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_with: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `budget-pause` wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunWaitBudgetPause {
    /// Why the run paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

open_map! {
    /// `runs.budget_cbor`: a run's budget. The description gives no fields, so it is an open map.
    RunBudget
}

open_map! {
    /// `runs.usage_cbor` (and a message's `meta.usage`): token usage. The description gives no
    /// fields, so it is an open map.
    RunUsage
}

/// `run_event_waits.match_cbor`: what a `ctx.waitForEvent` waits for. Untagged: a map with
/// `signal` is a [`WaitMatch::Signal`], one with `eventType`, `resource` and `author` an
/// [`WaitMatch::Activity`], any other map [`WaitMatch::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WaitMatch {
    /// A signal a person or the system answers.
    Signal(WaitMatchSignal),
    /// An event of the activity feed.
    Activity(WaitMatchActivity),
    /// Any other match map, kept as written.
    Other(OpenMap),
}

/// A signal match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitMatchSignal {
    /// The signal's name.
    pub signal: String,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// An activity-feed match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitMatchActivity {
    /// The activity event type.
    pub event_type: String,
    /// The resource the event concerns.
    pub resource: String,
    /// The event's author.
    pub author: String,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `run_journal.entry_cbor`: one entry of a script run's journal. Tagged by `kind`; unknown kinds
/// (or a known kind whose fields do not fit) are kept as written in
/// [`WorkflowJournalEntry::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum WorkflowJournalEntry {
    /// An effect was started.
    #[serde(rename = "call")]
    Call(JournalCall),
    /// An effect's result.
    #[serde(rename = "result")]
    Result(JournalEntryBody),
    /// A timer was set.
    #[serde(rename = "timer")]
    Timer(JournalEntryBody),
    /// A timer fired.
    #[serde(rename = "fired")]
    Fired(JournalEntryBody),
    /// A `ctx.waitForEvent` was registered.
    #[serde(rename = "wait")]
    Wait(JournalEntryBody),
    /// A `ctx.waitForEvent` resolved (a delivered payload, or nothing on timeout).
    #[serde(rename = "event")]
    Event(JournalEntryBody),
    /// `ctx.now` was read.
    #[serde(rename = "now")]
    Now(JournalEntryBody),
    /// A log line.
    #[serde(rename = "log")]
    Log(JournalEntryBody),
    /// A `ctx.step`.
    #[serde(rename = "step")]
    Step(JournalEntryBody),
    /// A `ctx.plan`.
    #[serde(rename = "plan")]
    Plan(JournalEntryBody),
    /// Any other entry map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

impl WorkflowJournalEntry {
    /// The `kind` tag, when there is one.
    pub fn kind(&self) -> Option<&str> {
        Some(match self {
            Self::Call(_) => "call",
            Self::Result(_) => "result",
            Self::Timer(_) => "timer",
            Self::Fired(_) => "fired",
            Self::Wait(_) => "wait",
            Self::Event(_) => "event",
            Self::Now(_) => "now",
            Self::Log(_) => "log",
            Self::Step(_) => "step",
            Self::Plan(_) => "plan",
            Self::Other(map) => match map.get("kind") {
                Some(Ipld::String(kind)) => kind,
                _ => return None,
            },
        })
    }

    /// The `callSeq` that ties the entries of one ctx call together (`None` for an
    /// [`WorkflowJournalEntry::Other`] without an unsigned integer `callSeq`).
    pub fn call_seq(&self) -> Option<u64> {
        match self {
            Self::Call(call) => Some(call.call_seq),
            Self::Other(map) => match map.get("callSeq") {
                Some(Ipld::Integer(seq)) => u64::try_from(*seq).ok(),
                _ => None,
            },
            Self::Result(body)
            | Self::Timer(body)
            | Self::Fired(body)
            | Self::Wait(body)
            | Self::Event(body)
            | Self::Now(body)
            | Self::Log(body)
            | Self::Step(body)
            | Self::Plan(body) => Some(body.call_seq),
        }
    }

    /// The effect's deterministic content key, carried by the first entry of a group.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Call(call) => call.key.as_deref(),
            Self::Other(map) => match map.get("key") {
                Some(Ipld::String(key)) => Some(key),
                _ => None,
            },
            Self::Result(body)
            | Self::Timer(body)
            | Self::Fired(body)
            | Self::Wait(body)
            | Self::Event(body)
            | Self::Now(body)
            | Self::Log(body)
            | Self::Step(body)
            | Self::Plan(body) => body.key.as_deref(),
        }
    }
}

/// A `call` journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalCall {
    /// Ties the entries of one ctx call together.
    pub call_seq: u64,
    /// The effect's deterministic content key (`tool|name|inputJSON`, `sleep|ms`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The script's human-readable narration of the effect (display only, not in the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The rest of the entry (the effect itself), kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// The fields of every journal entry kind other than `call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntryBody {
    /// Ties the entries of one ctx call together.
    pub call_seq: u64,
    /// The effect's deterministic content key; set on the first entry of a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The rest of the entry (result value, payload, message, ...), kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}
