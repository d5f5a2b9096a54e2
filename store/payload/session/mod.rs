//! Session payloads: the Log's events and continuation manifests.

use serde::{Deserialize, Serialize};

use super::{Ipld, OpenMap, RunUsage};

mod bytes;

pub(crate) use bytes::decode as decode_event;

open_str_enum! {
    /// Who did something in the Log. Only `user` and `system` are ever stamped on a row; `trigger`
    /// is declared and never written.
    SessionActor {
        /// A person (or a verb run through InvokeSessionTool on their behalf).
        User = "user",
        /// The agent.
        Agent = "agent",
        /// The system.
        System = "system",
        /// A trigger.
        Trigger = "trigger",
    }
}

open_str_enum! {
    /// The role of a `message` event.
    MessageRole {
        /// A person's (or a trigger's) message.
        User = "user",
        /// The model's message.
        Assistant = "assistant",
        /// A tool's message.
        Tool = "tool",
    }
}

/// `session_events.event_cbor`: one entry of a session's Log. Tagged by `type`.
///
/// The description's union ends in `Record<string, unknown>`: any map is an event. So a map with
/// no `type`, an unknown `type`, or a known `type` whose fields do not fit decodes as
/// [`SessionEventPayload::Other`] and re-encodes unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SessionEventPayload {
    /// A message from a person, a trigger, the model or a tool.
    #[serde(rename = "message")]
    Message(MessageEvent),
    /// A tool call.
    #[serde(rename = "tool_call")]
    ToolCall(ToolCallEvent),
    /// A delegate call's child exists (appended before the child runs).
    #[serde(rename = "tool_spawn")]
    ToolSpawn(ToolSpawnEvent),
    /// A tool call's result.
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultEvent),
    /// An error.
    #[serde(rename = "error")]
    Error(ErrorEvent),
    /// Any other map, kept as written.
    #[serde(untagged)]
    Other(OpenMap),
}

impl SessionEventPayload {
    /// The `type` tag, when there is one (what `agents.activity_kind` records).
    pub fn event_type(&self) -> Option<&str> {
        match self {
            Self::Other(map) => match map.get("type") {
                Some(Ipld::String(kind)) => Some(kind),
                _ => None,
            },
            known => known.static_type(),
        }
    }

    /// [`SessionEventPayload::event_type`] of a known event, which needs no borrow of it;
    /// `None` for an unknown one.
    pub(crate) fn static_type(&self) -> Option<&'static str> {
        match self {
            Self::Message(_) => Some("message"),
            Self::ToolCall(_) => Some("tool_call"),
            Self::ToolSpawn(_) => Some("tool_spawn"),
            Self::ToolResult(_) => Some("tool_result"),
            Self::Error(_) => Some("error"),
            Self::Other(_) => None,
        }
    }

    /// Whether no flattened map of the event holds anything (its `extra`, and its meta's): then
    /// encoding it cannot write a key twice, and the check for that can be skipped.
    pub(crate) fn has_no_extra(&self) -> bool {
        let meta_extra =
            |meta: &Option<SessionEventMeta>| meta.as_ref().is_none_or(|m| m.extra.is_empty());
        match self {
            Self::Message(event) => event.extra.is_empty() && meta_extra(&event.meta),
            Self::ToolCall(event) => event.extra.is_empty(),
            Self::ToolSpawn(event) => event.extra.is_empty(),
            Self::ToolResult(event) => event.extra.is_empty() && meta_extra(&event.meta),
            Self::Error(event) => event.extra.is_empty(),
            // One map: its keys are distinct, and no tag is added to it.
            Self::Other(_) => true,
        }
    }

    /// The stamped actor, if any (unstamped events derive theirs from their shape).
    pub fn actor(&self) -> Option<&SessionActor> {
        match self {
            Self::Message(event) => event.actor.as_ref(),
            Self::ToolCall(event) => event.actor.as_ref(),
            Self::ToolSpawn(event) => event.actor.as_ref(),
            Self::ToolResult(event) => event.actor.as_ref(),
            Self::Error(event) => event.actor.as_ref(),
            Self::Other(_) => None,
        }
    }
}

/// A `message` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageEvent {
    /// Who speaks.
    pub role: MessageRole,
    /// The text.
    pub content: String,
    /// The tool call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The message's markdown source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_markdown: Option<String>,
    /// Structured blocks (`AgentMessageBlock[]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<Ipld>>,
    /// Client `context` parts, fed to the model and never part of `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_lines: Option<Vec<String>>,
    /// Attachments (`SessionAttachmentInfo[]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<Ipld>>,
    /// The stamped actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<SessionActor>,
    /// Display detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<SessionEventMeta>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `tool_call` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The call's input.
    pub input: Ipld,
    /// The stamped actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<SessionActor>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `tool_spawn` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpawnEvent {
    /// The delegate call that spawned the child.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The child run.
    pub run_id: String,
    /// The child's session, for a model child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The child's title.
    pub title: String,
    /// The stamped actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<SessionActor>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// A `tool_result` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's output.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::keep_null"
    )]
    pub output: Option<Ipld>,
    /// The tool's error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stamped actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<SessionActor>,
    /// Display detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<SessionEventMeta>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// An `error` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorEvent {
    /// The error message.
    pub message: String,
    /// The stamped actor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<SessionActor>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// Display detail of a message or tool result; absent on older rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventMeta {
    /// The Seed account that originated a user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The exact signer of its verified action envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer_id: Option<String>,
    /// The model that produced the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// This turn's token usage (not the run's cumulative total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
    /// Wall time of this message or tool call, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The reasoning level (`off`, `default`, or a provider level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

/// `session_continuations.manifest_cbor`: a continue_session successor's exact starting point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinuationManifest {
    /// The handoff the predecessor wrote for its successor.
    pub handoff: String,
    /// The sources the handoff cites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_sources: Option<Vec<Ipld>>,
    /// What the successor starts with loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<Vec<Ipld>>,
    /// What was deliberately left cold (available, not loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_cold: Option<Vec<Ipld>>,
    /// Fields this version does not know, kept as written.
    #[serde(flatten)]
    pub extra: OpenMap,
}

impl MessageEvent {
    /// A message with `role` and `content` and nothing else.
    pub fn new(role: MessageRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_call_id: None,
            raw_markdown: None,
            blocks: None,
            context_lines: None,
            attachments: None,
            actor: None,
            meta: None,
            extra: OpenMap::new(),
        }
    }

    /// A person's message.
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::payload::{MessageEvent, SessionEventPayload};
    ///
    /// let event: SessionEventPayload = MessageEvent::user("hello").into();
    /// assert_eq!(event.event_type(), Some("message"));
    /// ```
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(MessageRole::User, content)
    }

    /// The model's message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(MessageRole::Assistant, content)
    }
}

impl ToolCallEvent {
    /// A call of tool `name` with `input`, identified by `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Ipld) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            actor: None,
            extra: OpenMap::new(),
        }
    }
}

impl ToolResultEvent {
    /// The output of call `tool_call_id` of tool `name`.
    pub fn output(tool_call_id: impl Into<String>, name: impl Into<String>, output: Ipld) -> Self {
        Self::answer(tool_call_id.into(), name.into(), Some(output), None)
    }

    /// The error message of call `tool_call_id` of tool `name`.
    pub fn error(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::answer(tool_call_id.into(), name.into(), None, Some(message.into()))
    }

    fn answer(
        tool_call_id: String,
        name: String,
        output: Option<Ipld>,
        error: Option<String>,
    ) -> Self {
        Self {
            tool_call_id,
            name,
            output,
            error,
            actor: None,
            meta: None,
            extra: OpenMap::new(),
        }
    }
}

impl ErrorEvent {
    /// An error event with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            actor: None,
            extra: OpenMap::new(),
        }
    }
}

impl From<MessageEvent> for SessionEventPayload {
    fn from(event: MessageEvent) -> Self {
        Self::Message(event)
    }
}

impl From<ToolCallEvent> for SessionEventPayload {
    fn from(event: ToolCallEvent) -> Self {
        Self::ToolCall(event)
    }
}

impl From<ToolResultEvent> for SessionEventPayload {
    fn from(event: ToolResultEvent) -> Self {
        Self::ToolResult(event)
    }
}

impl From<ErrorEvent> for SessionEventPayload {
    fn from(event: ErrorEvent) -> Self {
        Self::Error(event)
    }
}
