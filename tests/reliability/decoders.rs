//! Arbitrary bytes never panic a decoder of stored data: every payload type behind a `*_cbor`
//! column (and every type the payload module exports) from arbitrary bytes, from canonical
//! encodings of generated values with payload-like keys, and from those encodings with one byte
//! changed; tool documents through decoding, validation and re-encoding; JSON-Schema shapes;
//! and secret blobs through decryption, where nothing but the sealed blob itself authenticates.
//! Case counts are bounded so the suite stays fast (the lock file and schema.sql annotations
//! have their own properties in the codegen crate).

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use seed_agents_store::cbor;
use seed_agents_store::payload::*;
use seed_agents_store::tools::{check_schema_shape, validate_document, Encoded};
use seed_agents_store::{secrets, Error};

const CASES: u32 = 1_000;

/// Decodes `bytes` as every payload type; a decoded tool document is also validated and
/// encoded again. Only a panic fails.
fn decode_everything(bytes: &[u8]) {
    macro_rules! decode {
        ($($t:ty),* $(,)?) => { $( let _ = cbor::from_slice::<$t>(bytes); )* };
    }
    decode!(
        Ipld,
        ActivityAlternative,
        ActivityCursor,
        ActivityFilter,
        ActivitySource,
        AgentDefinition,
        AgentTriggerSource,
        ContinuationManifest,
        DraftContent,
        DraftMetadata,
        ErrorEvent,
        FiringContext,
        JournalCall,
        JournalEntryBody,
        McpServerConfig,
        McpServerStatus,
        McpToolInfo,
        McpTools,
        MessageEvent,
        MessageRole,
        ModelOverride,
        ModelProviderConfig,
        NewThreadContinuation,
        RunBudget,
        RunCompletedSource,
        RunErrorInfo,
        RunInput,
        RunOutput,
        RunPlan,
        RunPlanStep,
        RunPlanStepStatus,
        RunUsage,
        RunWait,
        RunWaitBudgetPause,
        RunWaitChildren,
        RunWaitEvent,
        RunWaitTimer,
        Schedule,
        ScheduleInterval,
        ScheduleOnce,
        ScheduleSource,
        ScheduleWeekly,
        ScriptContinuation,
        SecretMetadata,
        SessionActor,
        SessionEventMeta,
        SessionEventPayload,
        StepResolvedBy,
        ToolCallEvent,
        ToolContinuation,
        ToolKind,
        ToolResultEvent,
        ToolSpawnEvent,
        TriggerActivity,
        TriggerContinuation,
        UnmetObligation,
        UnmetPlan,
        UnmetTypedResult,
        WaitMatch,
        WaitMatchActivity,
        WaitMatchSignal,
        WakeContinuation,
        WebhookSource,
        WorkflowJournalEntry,
    );
    if let Ok(doc) = cbor::from_slice::<ToolDocument>(bytes) {
        let _ = validate_document(&doc);
        let _ = Encoded::new(&doc);
    }
    if let Ok(value) = cbor::from_slice::<Ipld>(bytes) {
        let _ = check_schema_shape("input", &value);
    }
}

/// Keys and strings the payload types and JSON Schema look for, so generated maps reach past
/// the first field check.
const WORDS: &[&str] = &[
    "type",
    "role",
    "content",
    "id",
    "name",
    "kind",
    "actor",
    "message",
    "tool_call",
    "user",
    "assistant",
    "error",
    "status",
    "steps",
    "title",
    "input",
    "output",
    "binding",
    "source",
    "description",
    "schedule",
    "interval",
    "weekly",
    "once",
    "every_ms",
    "at",
    "cursor",
    "properties",
    "items",
    "required",
    "enum",
    "allOf",
    "anyOf",
    "not",
    "$defs",
    "minLength",
    "maximum",
    "object",
    "string",
    "array",
    "integer",
    "lambda",
    "builtin",
    "mcp",
    "url",
    "tools",
    "children",
    "timer",
    "event",
    "budget_pause",
    "signal",
    "activity",
    "calls",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(WORDS).prop_map(str::to_owned),
        1 => ".{0,12}",
    ]
}

/// Generated DAG-CBOR values, a few levels deep, with payload-like keys.
fn ipld() -> impl Strategy<Value = Ipld> {
    let leaf = prop_oneof![
        Just(Ipld::Null),
        any::<bool>().prop_map(Ipld::Bool),
        any::<i64>().prop_map(|i| Ipld::Integer(i.into())),
        (-1e9f64..1e9).prop_map(Ipld::Float),
        word().prop_map(Ipld::String),
        vec(any::<u8>(), 0..16).prop_map(Ipld::Bytes),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Ipld::List),
            btree_map(word(), inner, 0..6).prop_map(Ipld::Map),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in vec(any::<u8>(), 0..256)) {
        decode_everything(&bytes);
    }

    #[test]
    fn generated_values_and_their_one_byte_corruptions_never_panic_a_decoder(
        value in ipld(),
        at in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        if let Ok(mut bytes) = cbor::to_vec(&value) {
            decode_everything(&bytes);
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
            decode_everything(&bytes);
        }
    }
}

#[test]
fn deeply_nested_input_is_an_error_or_a_value_never_a_stack_overflow() {
    // A list of one element, a map under key "a", and a schema nested under "not" (which
    // `check_schema_shape` follows), each nested up to 100,000 deep around a null.
    let units: [&[u8]; 3] = [
        &[0x81],
        &[0xa1, 0x61, 0x61],
        &[0xa1, 0x63, b'n', b'o', b't'],
    ];
    for unit in units {
        for depth in [10, 100, 1_000, 100_000] {
            let mut bytes = unit.repeat(depth);
            bytes.push(0xf6);
            decode_everything(&bytes);
        }
    }
}

#[test]
fn no_blob_but_the_sealed_one_decrypts_and_none_panics() {
    let key = &seed_agents_store::keys::EncryptionKey::generate();
    let sealed = secrets::encrypt(key, b"the value").unwrap();
    assert_eq!(
        secrets::decrypt(key, &sealed).unwrap().expose(),
        b"the value"
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(CASES));
    runner
        .run(&vec(any::<u8>(), 0..96), |blob| {
            prop_assert!(blob == sealed || secrets::decrypt(key, &blob).is_err());
            Ok(())
        })
        .unwrap();
    let changed = (any::<prop::sample::Index>(), 1u8..=255, any::<bool>());
    runner
        .run(&changed, |(at, mask, cut)| {
            let mut blob = sealed.clone();
            let i = at.index(blob.len());
            if cut {
                blob.truncate(i);
            } else {
                blob[i] ^= mask;
            }
            let opened = secrets::decrypt(key, &blob);
            prop_assert!(
                matches!(
                    opened,
                    Err(Error::SecretTagMismatch | Error::SecretTooShort { .. })
                ),
                "{opened:?}"
            );
            Ok(())
        })
        .unwrap();
}
