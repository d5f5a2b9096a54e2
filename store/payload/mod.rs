//! Payload types: the Rust shapes of the canonical DAG-CBOR held in the `*_cbor` columns.
//!
//! This module owns one type per `@cbor(Type)` annotation of `schema.sql`, with the field names
//! and shapes the system description gives (camelCase on the wire). It keeps one invariant:
//! decoding canonical bytes and encoding the result gives back the same bytes, unknown content
//! included. Open structs carry a flattened `extra` map for the fields this version does not
//! know, tagged unions an `Other` variant for tags it does not know, and string enums an `Other`
//! string.
//!
//! Optional fields follow the TypeScript encoder (`@ipld/dag-cbor`), which refuses `undefined` and
//! writes only the keys a value has: `None` is **omitted**, never written as `null`. So decoding
//! a value the TypeScript server wrote and encoding it again gives the same bytes. A field of
//! unknown shape (`Option<Ipld>`, the description's `unknown`) keeps the difference between an
//! absent key (`None`) and an explicit `null` (`Some(Ipld::Null)`). A typed optional field
//! (`Option<String>`, `Option<i64>`, ...) reads an explicit `null` as `None`; the TypeScript types
//! never write one there.
//!
//! Where the description gives no inner shape, the type is an open map ([`OpenMap`] newtype) or a
//! struct with the fields it does name plus `extra`.
//!
//! One limit: serde buffers flattened and tagged content in a form without 128-bit integers, so an
//! integer below `i64::MIN` (DAG-CBOR allows down to -2^64) inside an `extra` map or an `Other`
//! variant is a decode error rather than kept. Open-map newtypes and [`Ipld`] keep it.

use std::collections::BTreeMap;

pub use ipld_core::ipld::Ipld;

/// An open DAG-CBOR map: string keys to any value.
pub type OpenMap = BTreeMap<String, Ipld>;

/// Reads an optional field of unknown shape: a present key is `Some`, even when its value is
/// `null` (serde's `Option` would read that as `None` and the re-encoded value would lose the key).
fn keep_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Ipld>, D::Error> {
    <Ipld as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// Declares a payload type that is an open map with no typed fields.
macro_rules! open_map {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(
            /// The map's entries, as stored.
            pub $crate::payload::OpenMap,
        );

        impl std::ops::Deref for $name {
            type Target = $crate::payload::OpenMap;

            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.0
            }
        }

        impl From<$crate::payload::OpenMap> for $name {
            fn from(map: $crate::payload::OpenMap) -> Self {
                Self(map)
            }
        }

        impl From<$name> for $crate::payload::OpenMap {
            fn from(value: $name) -> Self {
                value.0
            }
        }
    };
}

/// Declares a string enum whose unknown values survive as `Other(String)`.
macro_rules! open_str_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this version does not know, kept as written.
            Other(String),
        }

        impl $name {
            /// The value as stored.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )*
                    Self::Other(value) => value,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $( $value => Self::$variant, )*
                    _ => Self::Other(value),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }
    };
}

mod account;
mod run;
mod session;
mod tool;
mod trigger;

pub use account::{AgentDefinition, ModelOverride, ModelProviderConfig, SecretMetadata};
pub use run::{
    JournalCall, JournalEntryBody, RunBudget, RunErrorInfo, RunInput, RunOutput, RunPlan,
    RunPlanStep, RunPlanStepStatus, RunUsage, RunWait, RunWaitBudgetPause, RunWaitChildren,
    RunWaitEvent, RunWaitTimer, StepResolvedBy, UnmetObligation, UnmetPlan, UnmetTypedResult,
    WaitMatch, WaitMatchActivity, WaitMatchSignal, WorkflowJournalEntry,
};
pub(crate) use session::decode_event;
pub use session::{
    ContinuationManifest, ErrorEvent, MessageEvent, MessageRole, SessionActor, SessionEventMeta,
    SessionEventPayload, ToolCallEvent, ToolResultEvent, ToolSpawnEvent,
};
pub use tool::{
    DraftContent, DraftMetadata, McpServerConfig, McpServerStatus, McpToolInfo, McpTools,
    ToolDocument, ToolKind,
};
pub use trigger::{
    ActivityAlternative, ActivityCursor, ActivityFilter, ActivitySource, AgentTriggerSource,
    FiringContext, NewThreadContinuation, RunCompletedSource, Schedule, ScheduleInterval,
    ScheduleOnce, ScheduleSource, ScheduleWeekly, ScriptContinuation, ToolContinuation,
    TriggerActivity, TriggerContinuation, WakeContinuation, WebhookSource,
};
