//! Payload bytes against the TypeScript server's own encoder.
//!
//! `tests/fixtures/ts-payload-vectors.json` holds values shaped as the TypeScript server writes
//! them (absent optional fields absent, `null` only where a value of unknown shape is null),
//! encoded by `@ipld/dag-cbor` itself (`scripts/payload-vectors.mjs` made the file). Every payload
//! type must decode each of them into its typed form and encode it back to the same bytes, and a
//! value built in Rust with its optional fields unset must encode to the bytes the TypeScript
//! server writes for the same value.

use std::collections::BTreeSet;
use std::fmt::Debug;

use seed_agents_store::cbor;
use seed_agents_store::journal::{JOURNAL_CAP_CODE, JOURNAL_CAP_MESSAGE};
use seed_agents_store::payload::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Vector {
    #[serde(rename = "type")]
    type_name: String,
    name: String,
    hex: String,
}

fn vectors() -> Vec<Vector> {
    serde_json::from_str(include_str!("../fixtures/ts-payload-vectors.json")).unwrap()
}

fn vector(type_name: &str, name: &str) -> Vec<u8> {
    let v = vectors()
        .into_iter()
        .find(|v| v.type_name == type_name && v.name == name)
        .unwrap_or_else(|| panic!("no vector {type_name}/{name}"));
    hex::decode(v.hex).unwrap()
}

/// Decodes `bytes` as `T`, checks that encoding the result gives the same bytes, and returns
/// the value's debug form (to tell a typed variant from a kept-as-written `Other`).
fn exact<T: Serialize + DeserializeOwned + Debug>(name: &str, bytes: &[u8]) -> String {
    let value: T =
        cbor::from_slice(bytes).unwrap_or_else(|e| panic!("{name}: {e} ({})", hex::encode(bytes)));
    let again = cbor::to_vec(&value).unwrap();
    assert_eq!(
        hex::encode(&again),
        hex::encode(bytes),
        "{name}: the re-encoded bytes differ from the TypeScript encoder's ({value:?})"
    );
    format!("{value:?}")
}

#[test]
fn every_vector_round_trips_byte_for_byte_in_its_typed_form() {
    let mut types = BTreeSet::new();
    for v in vectors() {
        let bytes = hex::decode(&v.hex).unwrap();
        let label = format!("{}/{}", v.type_name, v.name);
        let debug = match v.type_name.as_str() {
            "SessionEventPayload" => exact::<SessionEventPayload>(&label, &bytes),
            "RunPlan" => exact::<RunPlan>(&label, &bytes),
            "RunErrorInfo" => exact::<RunErrorInfo>(&label, &bytes),
            "RunOutput" => exact::<RunOutput>(&label, &bytes),
            "RunWait" => exact::<RunWait>(&label, &bytes),
            "RunUsage" => exact::<RunUsage>(&label, &bytes),
            "RunBudget" => exact::<RunBudget>(&label, &bytes),
            "RunInput" => exact::<RunInput>(&label, &bytes),
            "WorkflowJournalEntry" => exact::<WorkflowJournalEntry>(&label, &bytes),
            "WaitMatch" => exact::<WaitMatch>(&label, &bytes),
            "ModelProviderConfig" => exact::<ModelProviderConfig>(&label, &bytes),
            "AgentDefinition" => exact::<AgentDefinition>(&label, &bytes),
            "ModelOverride" => exact::<ModelOverride>(&label, &bytes),
            "SecretMetadata" => exact::<SecretMetadata>(&label, &bytes),
            "McpServerConfig" => exact::<McpServerConfig>(&label, &bytes),
            "McpTools" => exact::<McpTools>(&label, &bytes),
            "McpServerStatus" => exact::<McpServerStatus>(&label, &bytes),
            "ToolDocument" => exact::<ToolDocument>(&label, &bytes),
            "DraftContent" => exact::<DraftContent>(&label, &bytes),
            "DraftMetadata" => exact::<DraftMetadata>(&label, &bytes),
            "AgentTriggerSource" => exact::<AgentTriggerSource>(&label, &bytes),
            "TriggerContinuation" => exact::<TriggerContinuation>(&label, &bytes),
            "FiringContext" => exact::<FiringContext>(&label, &bytes),
            "TriggerActivity" => exact::<TriggerActivity>(&label, &bytes),
            "ActivityCursor" => exact::<ActivityCursor>(&label, &bytes),
            "ContinuationManifest" => exact::<ContinuationManifest>(&label, &bytes),
            other => panic!("a vector of a type this test does not know: {other}"),
        };
        // Everything the TypeScript server writes in a known shape decodes as that shape, not as
        // an opaque map; only the deliberately unknown event does.
        let opaque = debug.starts_with("Other(") || debug.contains("(Other(");
        assert_eq!(opaque, v.name.starts_with("unknown"), "{label}: {debug}");
        types.insert(v.type_name);
    }
    // One vector or more for every payload type annotated in schema.sql.
    assert_eq!(types.len(), 26, "{types:?}");
}

#[test]
fn rust_values_with_unset_optionals_encode_as_the_typescript_server_writes_them() {
    let message = SessionEventPayload::Message(MessageEvent {
        role: MessageRole::User,
        content: "hello".into(),
        tool_call_id: None,
        raw_markdown: None,
        blocks: None,
        context_lines: None,
        attachments: None,
        actor: None,
        meta: None,
        extra: OpenMap::new(),
    });
    assert_eq!(
        cbor::to_vec(&message).unwrap(),
        vector("SessionEventPayload", "user message")
    );

    let result = SessionEventPayload::ToolResult(ToolResultEvent {
        tool_call_id: "call-1".into(),
        name: "read".into(),
        output: None,
        error: Some("ENOENT".into()),
        actor: None,
        meta: None,
        extra: OpenMap::new(),
    });
    assert_eq!(
        cbor::to_vec(&result).unwrap(),
        vector("SessionEventPayload", "tool result with error")
    );

    // An output that is null is written as null, not left out.
    let null_output = SessionEventPayload::ToolResult(ToolResultEvent {
        tool_call_id: "call-5".into(),
        name: "noop".into(),
        output: Some(Ipld::Null),
        error: None,
        actor: None,
        meta: None,
        extra: OpenMap::new(),
    });
    assert_eq!(
        cbor::to_vec(&null_output).unwrap(),
        vector("SessionEventPayload", "tool result whose output is null")
    );

    assert_eq!(
        cbor::to_vec(&RunErrorInfo::new(JOURNAL_CAP_CODE, JOURNAL_CAP_MESSAGE)).unwrap(),
        vector("RunErrorInfo", "journal cap")
    );

    let plan = RunPlan {
        title: None,
        steps: vec![RunPlanStep {
            id: "1".into(),
            label: "Read the brief".into(),
            status: RunPlanStepStatus::from("pending"),
            resolved_by: None,
            extra: OpenMap::new(),
        }],
        settled_at: None,
        extra: OpenMap::new(),
    };
    assert_eq!(
        cbor::to_vec(&plan).unwrap(),
        vector("RunPlan", "minimal plan")
    );

    let wait = RunWait::Event(RunWaitEvent {
        wait_id: "7".into(),
        timeout_at: None,
        label: None,
        answer_with: None,
        extra: OpenMap::new(),
    });
    assert_eq!(
        cbor::to_vec(&wait).unwrap(),
        vector("RunWait", "event without timeout")
    );
    let pause = RunWait::BudgetPause(RunWaitBudgetPause {
        note: None,
        extra: OpenMap::new(),
    });
    assert_eq!(
        cbor::to_vec(&pause).unwrap(),
        vector("RunWait", "budget pause without note")
    );

    let config = ModelProviderConfig::new("openai");
    assert_eq!(
        cbor::to_vec(&config).unwrap(),
        vector("ModelProviderConfig", "bare")
    );
}

#[test]
fn waits_are_told_apart_by_reason() {
    let wait: RunWait = cbor::from_slice(&vector("RunWait", "children")).unwrap();
    assert!(
        matches!(&wait, RunWait::Children(c) if c.tool_call_ids == ["call-3", "call-4"]),
        "{wait:?}"
    );
    let wait: RunWait = cbor::from_slice(&vector("RunWait", "timer")).unwrap();
    assert!(matches!(wait, RunWait::Timer(_)), "{wait:?}");
    let wait: RunWait = cbor::from_slice(&vector("RunWait", "event with everything")).unwrap();
    match wait {
        RunWait::Event(event) => {
            assert_eq!(event.wait_id, "8");
            assert_eq!(event.label.as_deref(), Some("Approval"));
            assert_eq!(event.answer_with.as_deref(), Some("approve"));
        }
        other => panic!("{other:?}"),
    }
    let wait: RunWait = cbor::from_slice(&vector("RunWait", "budget pause with note")).unwrap();
    assert!(matches!(wait, RunWait::BudgetPause(p) if p.note.is_some()));
}

#[test]
fn the_event_constructors_write_what_the_typescript_server_writes() {
    let text = |s: &str| Ipld::String(s.into());
    let map = |k: &str, v: Ipld| Ipld::Map([(k.to_owned(), v)].into_iter().collect());
    let cases: [(&str, SessionEventPayload); 5] = [
        ("user message", MessageEvent::user("hello").into()),
        (
            "tool call",
            ToolCallEvent::new("call-1", "read", map("path", text("~/memory/notes.md"))).into(),
        ),
        (
            "tool result with output",
            ToolResultEvent::output("call-1", "read", map("text", text("notes"))).into(),
        ),
        (
            "tool result with error",
            ToolResultEvent::error("call-1", "read", "ENOENT").into(),
        ),
        ("error event", ErrorEvent::new("provider timed out").into()),
    ];
    for (name, event) in cases {
        assert_eq!(
            hex::encode(cbor::to_vec(&event).unwrap()),
            hex::encode(vector("SessionEventPayload", name)),
            "{name}"
        );
    }
    let assistant = MessageEvent::assistant("hi");
    assert_eq!(assistant.role, MessageRole::Assistant);
    assert_eq!(assistant.content, "hi");
}
