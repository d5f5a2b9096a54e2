//! Payload types against canonical DAG-CBOR: key order, round trips, unknown content, optional
//! fields, and the typed BLOB column through SQLite.

use std::fmt::Debug;

use ipld_core::cid::Cid;
use seed_agents_store::cbor::{self, Cbor, CborError};
use seed_agents_store::payload::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

// ---------------------------------------------------------------------------------------------
// Helpers

fn s(value: &str) -> Ipld {
    Ipld::String(value.to_owned())
}

fn map<const N: usize>(entries: [(&str, Ipld); N]) -> Ipld {
    Ipld::Map(open(entries))
}

fn open<const N: usize>(entries: [(&str, Ipld); N]) -> OpenMap {
    entries
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

fn cid() -> Cid {
    "bafyreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
        .parse()
        .unwrap()
}

/// Values of every DAG-CBOR kind, for unknown fields.
fn odd_values() -> OpenMap {
    open([
        ("zLink", Ipld::Link(cid())),
        ("zBytes", Ipld::Bytes(vec![0, 1, 255])),
        ("zFloat", Ipld::Float(2.5)),
        ("zNegative", Ipld::Integer(-300)),
        ("zBig", Ipld::Integer(u64::MAX.into())),
        ("zNull", Ipld::Null),
        ("zList", Ipld::List(vec![Ipld::Bool(true), s("x")])),
        (
            "zNested",
            map([("bb", Ipld::Integer(1)), ("a", Ipld::Integer(2))]),
        ),
    ])
}

/// Encodes `value`, decodes it back, checks both agree, and checks that re-encoding the decoded
/// value gives the same bytes. Returns the bytes.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> Vec<u8> {
    let bytes = cbor::to_vec(value).unwrap();
    let decoded: T = cbor::from_slice(&bytes).unwrap();
    assert_eq!(&decoded, value);
    assert_eq!(cbor::to_vec(&decoded).unwrap(), bytes, "{value:?}");
    // The bytes are canonical by an independent reading: the strict decoder accepts them.
    cbor::from_slice::<Ipld>(&bytes).unwrap();
    bytes
}

/// Encodes an untyped value, decodes the bytes as a `T`, and checks that re-encoding the `T`
/// reproduces the bytes exactly. Returns the decoded value.
fn survives<T: Serialize + DeserializeOwned + Debug>(value: &Ipld) -> T {
    let bytes = cbor::to_vec(value).unwrap();
    let decoded: T = cbor::from_slice(&bytes).unwrap();
    assert_eq!(
        cbor::to_vec(&decoded).unwrap(),
        bytes,
        "{decoded:?} did not re-encode byte-for-byte"
    );
    decoded
}

fn step(id: &str, status: &str) -> RunPlanStep {
    RunPlanStep {
        id: id.into(),
        label: format!("step {id}"),
        status: status.into(),
        resolved_by: None,
        extra: OpenMap::new(),
    }
}

fn filter() -> ActivityFilter {
    ActivityFilter(open([("resource", s("hm://z6Mk/doc"))]))
}

// ---------------------------------------------------------------------------------------------
// Canonical key order

#[test]
fn fields_declared_out_of_order_encode_sorted_hand_written_bytes() {
    // McpServerStatus declares state, error, checkedAt. Length-first then bytewise order is
    // error (5), state (5; 'e' < 's'), checkedAt (9). Bytes, by RFC 8949 heads:
    //   a3                  map of 3 entries
    //   65 "error"  62 "no" text(5), text(2)
    //   65 "state"  62 "ok" text(5), text(2)
    //   69 "checkedAt" 05   text(9), unsigned 5
    let status = McpServerStatus {
        state: "ok".into(),
        error: Some("no".into()),
        checked_at: Some(5),
        extra: OpenMap::new(),
    };
    let mut expected = vec![0xa3, 0x65];
    expected.extend_from_slice(b"error");
    expected.push(0x62);
    expected.extend_from_slice(b"no");
    expected.push(0x65);
    expected.extend_from_slice(b"state");
    expected.push(0x62);
    expected.extend_from_slice(b"ok");
    expected.push(0x69);
    expected.extend_from_slice(b"checkedAt");
    expected.push(0x05);
    assert_eq!(round_trip(&status), expected);
}

#[test]
fn tagged_variant_hand_written_bytes() {
    // {"reason": "timer", "wakeAt": 1000}: both keys have 6 bytes, "reason" < "wakeAt".
    //   a2 | 66 "reason" 65 "timer" | 66 "wakeAt" 19 03 e8 (1000 as a two-byte unsigned)
    let wait = RunWait::Timer(RunWaitTimer {
        wake_at: 1000,
        extra: OpenMap::new(),
    });
    let mut expected = vec![0xa2, 0x66];
    expected.extend_from_slice(b"reason");
    expected.push(0x65);
    expected.extend_from_slice(b"timer");
    expected.push(0x66);
    expected.extend_from_slice(b"wakeAt");
    expected.extend_from_slice(&[0x19, 0x03, 0xe8]);
    assert_eq!(round_trip(&wait), expected);
}

#[test]
fn flattened_and_nested_maps_are_sorted_too() {
    let mut extra = odd_values();
    extra.insert("a".into(), Ipld::Integer(1));
    let config = ModelProviderConfig {
        provider_type: "openai".into(),
        model_defaults: Some(open([
            ("temperature", Ipld::Float(0.5)),
            ("model", s("gpt")),
            ("n", Ipld::Integer(1)),
        ])),
        secret_refs: Some(
            [("apiKey".to_owned(), "openai-key".to_owned())]
                .into_iter()
                .collect(),
        ),
        base_url: Some("https://api.example".into()),
        extra,
    };
    let bytes = round_trip(&config);
    // The flattened "a" (length 1) comes first, ahead of every typed field.
    assert_eq!(&bytes[1..3], &[0x61, b'a']);
}

// ---------------------------------------------------------------------------------------------
// Every payload type round-trips

#[test]
fn account_payloads_round_trip() {
    round_trip(&ModelProviderConfig::new("anthropic"));
    round_trip(&SecretMetadata(open([("kind", s("api-key"))])));
    round_trip(&AgentDefinition {
        mcp_servers: Some(vec!["github".into(), "linear".into()]),
        extra: open([("name", s("Helper")), ("model", s("claude"))]),
    });
    round_trip(&AgentDefinition::default());
    round_trip(&ModelOverride {
        provider: Some("openai".into()),
        model: Some("gpt-5".into()),
        extra: OpenMap::new(),
    });
}

#[test]
fn trigger_payloads_round_trip() {
    let sources = vec![
        AgentTriggerSource::DocumentComment(filter()),
        AgentTriggerSource::UserMention(filter()),
        AgentTriggerSource::CommentReply(ActivityFilter::default()),
        AgentTriggerSource::DocumentAuthorComment(filter()),
        AgentTriggerSource::SiteUpdate(filter()),
        AgentTriggerSource::Activity(ActivitySource {
            alternatives: vec![
                ActivityAlternative {
                    id: "a1".into(),
                    source: AgentTriggerSource::UserMention(filter()),
                    extra: OpenMap::new(),
                },
                ActivityAlternative {
                    id: "a2".into(),
                    source: AgentTriggerSource::SiteUpdate(filter()),
                    extra: OpenMap::new(),
                },
            ],
            extra: OpenMap::new(),
        }),
        AgentTriggerSource::Schedule(ScheduleSource {
            schedule: Schedule::Interval(ScheduleInterval {
                interval_ms: 3_600_000,
                extra: OpenMap::new(),
            }),
            extra: OpenMap::new(),
        }),
        AgentTriggerSource::Schedule(ScheduleSource {
            schedule: Schedule::Weekly(ScheduleWeekly {
                days: vec![1, 3, 5],
                time: "09:30".into(),
                timezone: Some("Europe/Madrid".into()),
                extra: OpenMap::new(),
            }),
            extra: OpenMap::new(),
        }),
        AgentTriggerSource::Schedule(ScheduleSource {
            schedule: Schedule::Once(ScheduleOnce {
                at: 1_790_000_000_000,
                extra: OpenMap::new(),
            }),
            extra: OpenMap::new(),
        }),
        AgentTriggerSource::Webhook(WebhookSource::default()),
        AgentTriggerSource::RunCompleted(RunCompletedSource(open([("agentId", s("ag1"))]))),
    ];
    for source in &sources {
        round_trip(source);
        assert!(source.kind().is_some());
    }

    let continuations = vec![
        TriggerContinuation::NewThread(NewThreadContinuation::default()),
        TriggerContinuation::Wake(WakeContinuation {
            signal: "approved".into(),
            run_id: Some("run1".into()),
            payload: Some(map([("ok", Ipld::Bool(true))])),
            extra: OpenMap::new(),
        }),
        TriggerContinuation::Tool(ToolContinuation {
            tool: "summarize".into(),
            input: Some(map([("doc", s("hm://x"))])),
            on_failure: None,
            extra: OpenMap::new(),
        }),
        TriggerContinuation::Script(ScriptContinuation {
            script: "export default async (ctx) => 1".into(),
            input: None,
            on_failure: Some(s("notify")),
            extra: OpenMap::new(),
        }),
    ];
    for continuation in &continuations {
        round_trip(continuation);
    }

    round_trip(&TriggerActivity(open([
        ("id", s("ev1")),
        ("eventType", s("comment")),
    ])));
    round_trip(&FiringContext {
        name: "mentions".into(),
        prompt: "Answer the mention.".into(),
        matched: Some(vec![ActivityAlternative {
            id: "a1".into(),
            source: AgentTriggerSource::UserMention(filter()),
            extra: OpenMap::new(),
        }]),
        extra: OpenMap::new(),
    });
    round_trip(&ActivityCursor(open([("cursor", s("c-42"))])));
}

#[test]
fn session_payloads_round_trip() {
    let meta = SessionEventMeta {
        account_id: Some("z6MkAccount".into()),
        signer_id: Some("z6MkSigner".into()),
        model: Some("claude".into()),
        provider: Some("anthropic".into()),
        usage: Some(RunUsage(open([
            ("inputTokens", Ipld::Integer(10)),
            ("outputTokens", Ipld::Integer(20)),
        ]))),
        duration_ms: Some(1234),
        reasoning_level: Some("default".into()),
        extra: OpenMap::new(),
    };
    let events = [
        SessionEventPayload::Message(MessageEvent {
            role: MessageRole::User,
            content: "hello".into(),
            tool_call_id: None,
            raw_markdown: Some("**hello**".into()),
            blocks: Some(vec![map([("type", s("paragraph"))])]),
            context_lines: Some(vec!["selection: foo".into()]),
            attachments: None,
            actor: Some(SessionActor::User),
            meta: Some(meta.clone()),
            extra: OpenMap::new(),
        }),
        SessionEventPayload::ToolCall(ToolCallEvent {
            id: "call1".into(),
            name: "read".into(),
            input: map([("path", s("~/memory/notes.md"))]),
            actor: None,
            extra: OpenMap::new(),
        }),
        SessionEventPayload::ToolSpawn(ToolSpawnEvent {
            tool_call_id: "call2".into(),
            name: "delegate".into(),
            run_id: "run2".into(),
            session_id: Some("sess2".into()),
            title: "Research".into(),
            actor: None,
            extra: OpenMap::new(),
        }),
        SessionEventPayload::ToolResult(ToolResultEvent {
            tool_call_id: "call1".into(),
            name: "read".into(),
            output: Some(s("contents")),
            error: None,
            actor: Some(SessionActor::User),
            meta: Some(SessionEventMeta::default()),
            extra: OpenMap::new(),
        }),
        SessionEventPayload::Error(ErrorEvent {
            message: "provider failed".into(),
            actor: Some(SessionActor::System),
            extra: OpenMap::new(),
        }),
    ];
    let types = ["message", "tool_call", "tool_spawn", "tool_result", "error"];
    for (event, expected_type) in events.iter().zip(types) {
        round_trip(event);
        assert_eq!(event.event_type(), Some(expected_type));
    }
    assert_eq!(events[0].actor(), Some(&SessionActor::User));
    assert_eq!(events[1].actor(), None);

    round_trip(&ContinuationManifest {
        handoff: "Continue the report.".into(),
        cited_sources: Some(vec![s("hm://a")]),
        loaded: Some(vec![s("~/memory/plan.md")]),
        left_cold: None,
        extra: OpenMap::new(),
    });
}

#[test]
fn run_payloads_round_trip() {
    round_trip(&RunPlan {
        title: Some("Ship it".into()),
        steps: vec![
            RunPlanStep {
                resolved_by: Some(StepResolvedBy::Runtime),
                ..step("1", "done")
            },
            step("2", "in_progress"),
            step("3", "skipped"),
        ],
        settled_at: None,
        extra: OpenMap::new(),
    });
    round_trip(&RunInput(open([
        ("prompt", s("go")),
        ("parentToolCallId", s("call9")),
    ])));
    round_trip(&RunOutput::default());
    round_trip(&RunOutput {
        unmet_obligations: Some(vec![
            UnmetObligation::TypedResult(UnmetTypedResult::default()),
            UnmetObligation::Plan(UnmetPlan {
                steps: vec!["2".into()],
                extra: OpenMap::new(),
            }),
        ]),
        extra: open([("text", s("partial answer"))]),
    });
    round_trip(&RunErrorInfo::new("provider-error", "upstream 503"));
    round_trip(&RunErrorInfo {
        retryable: Some(true),
        http_status: Some(503),
        stack: Some("at workflow.js:12".into()),
        tool: Some("fetch".into()),
        call_seq: Some(4),
        detail: Some(map([("attempt", Ipld::Integer(2))])),
        unmet_obligations: Some(vec![UnmetObligation::TypedResult(
            UnmetTypedResult::default(),
        )]),
        ..RunErrorInfo::new("tool-failed", "fetch failed")
    });
    for wait in [
        RunWait::Children(RunWaitChildren {
            tool_call_ids: vec!["c1".into(), "c2".into()],
            extra: OpenMap::new(),
        }),
        RunWait::Timer(RunWaitTimer {
            wake_at: 1_790_000_000_000,
            extra: OpenMap::new(),
        }),
        RunWait::Event(RunWaitEvent {
            wait_id: "w1".into(),
            timeout_at: Some(1_790_000_000_000),
            label: Some("approval".into()),
            answer_with: Some("approve".into()),
            extra: OpenMap::new(),
        }),
        RunWait::BudgetPause(RunWaitBudgetPause {
            note: Some("token budget spent".into()),
            extra: OpenMap::new(),
        }),
    ] {
        round_trip(&wait);
    }
    round_trip(&RunBudget(open([("maxTokens", Ipld::Integer(100_000))])));
    round_trip(&RunUsage(open([("totalTokens", Ipld::Integer(512))])));
    round_trip(&WaitMatch::Signal(WaitMatchSignal {
        signal: "approve".into(),
        extra: OpenMap::new(),
    }));
    round_trip(&WaitMatch::Activity(WaitMatchActivity {
        event_type: "comment".into(),
        resource: "hm://z6Mk/doc".into(),
        author: "z6MkAuthor".into(),
        extra: OpenMap::new(),
    }));
}

#[test]
fn journal_entries_round_trip() {
    let body = |call_seq, key: Option<&str>| JournalEntryBody {
        call_seq,
        key: key.map(Into::into),
        extra: open([("value", Ipld::Integer(call_seq.into()))]),
    };
    let entries = vec![
        WorkflowJournalEntry::Call(JournalCall {
            call_seq: 1,
            key: Some("tool|read|{}".into()),
            description: Some("Read the notes".into()),
            extra: open([("effect", s("tool"))]),
        }),
        WorkflowJournalEntry::Result(body(1, None)),
        WorkflowJournalEntry::Timer(body(2, Some("sleep|1000"))),
        WorkflowJournalEntry::Fired(body(2, None)),
        WorkflowJournalEntry::Wait(body(3, Some("wait|approve"))),
        WorkflowJournalEntry::Event(body(3, None)),
        WorkflowJournalEntry::Now(body(4, Some("now"))),
        WorkflowJournalEntry::Log(body(5, Some("log"))),
        WorkflowJournalEntry::Step(body(6, Some("step|a"))),
        WorkflowJournalEntry::Plan(body(7, Some("plan"))),
    ];
    let kinds = [
        "call", "result", "timer", "fired", "wait", "event", "now", "log", "step", "plan",
    ];
    for (entry, kind) in entries.iter().zip(kinds) {
        round_trip(entry);
        assert_eq!(entry.kind(), Some(kind));
    }
    assert_eq!(entries[0].call_seq(), Some(1));
    assert_eq!(entries[0].key(), Some("tool|read|{}"));
    assert_eq!(entries[3].call_seq(), Some(2));
    assert_eq!(entries[3].key(), None);
}

#[test]
fn tool_payloads_round_trip() {
    round_trip(&McpServerConfig {
        url: "https://mcp.example/mcp".into(),
        transport: Some("streamable-http".into()),
        headers: Some(
            [("X-Team".to_owned(), "core".to_owned())]
                .into_iter()
                .collect(),
        ),
        secret_refs: Some(
            [(
                "Authorization".to_owned(),
                "mcp-github-Authorization".to_owned(),
            )]
            .into_iter()
            .collect(),
        ),
        extra: OpenMap::new(),
    });
    let tools: McpTools = vec![
        McpToolInfo {
            name: "search".into(),
            description: Some("Search issues".into()),
            input_schema: Some(map([("type", s("object"))])),
            extra: OpenMap::new(),
        },
        McpToolInfo {
            name: "ping".into(),
            description: None,
            input_schema: None,
            extra: open([("title", s("Ping"))]),
        },
    ];
    round_trip(&tools);
    round_trip(&McpServerStatus {
        state: "error".into(),
        error: Some("401".into()),
        checked_at: Some(1_790_000_000_000),
        extra: OpenMap::new(),
    });
    round_trip(&ToolDocument {
        name: "read".into(),
        kind: ToolKind::Builtin,
        summary: "Read a file".into(),
        description: "Reads a file of the Space.".into(),
        input: map([("type", s("object"))]),
        output: None,
        source: None,
        runtime: None,
        binding: Some(s("builtin:read")),
        extra: OpenMap::new(),
    });
    round_trip(&ToolDocument {
        name: "word_count".into(),
        kind: ToolKind::Lambda,
        summary: "Count words".into(),
        description: "Counts words.".into(),
        input: map([("type", s("object"))]),
        output: Some(map([("type", s("number"))])),
        source: Some("export default (s) => s.split(' ').length".into()),
        runtime: Some("typescript".into()),
        binding: None,
        extra: OpenMap::new(),
    });
    round_trip(&DraftContent(s("# Title\n\nBody")));
    round_trip(&DraftContent(Ipld::List(vec![map([(
        "type",
        s("heading"),
    )])])));
    round_trip(&DraftMetadata(open([("tags", Ipld::List(vec![s("a")]))])));
    round_trip(&map([("_", s("CreateAgent")), ("link", Ipld::Link(cid()))]));
}

// ---------------------------------------------------------------------------------------------
// Unknown fields, variants and values survive byte for byte

#[test]
fn unknown_fields_survive_in_open_structs() {
    let mut config = odd_values();
    config.insert("type".into(), s("openai"));
    let decoded: ModelProviderConfig = survives(&Ipld::Map(config));
    assert_eq!(decoded.provider_type, "openai");
    assert_eq!(decoded.extra, odd_values());

    let mut definition = odd_values();
    definition.insert("mcpServers".into(), Ipld::List(vec![s("github")]));
    definition.insert("systemPrompt".into(), s("Be brief."));
    let decoded: AgentDefinition = survives(&Ipld::Map(definition));
    assert_eq!(decoded.mcp_server_names(), ["github".to_owned()]);
    assert_eq!(decoded.get("systemPrompt"), Some(&s("Be brief.")));

    let mut doc = odd_values();
    for (key, value) in [
        ("name", s("github__search")),
        ("kind", s("mcp")),
        ("summary", s("Search")),
        ("description", s("Search issues")),
        ("input", map([])),
        ("output", Ipld::Null),
        ("binding", Ipld::Null),
        ("server", s("github")),
        ("remoteName", s("search")),
    ] {
        doc.insert(key.into(), value);
    }
    let decoded: ToolDocument = survives(&Ipld::Map(doc));
    assert_eq!(decoded.kind, ToolKind::Mcp);
    assert_eq!(decoded.extra.get("remoteName"), Some(&s("search")));
}

#[test]
fn unknown_fields_survive_inside_known_variants() {
    let mut timer = odd_values();
    timer.insert("reason".into(), s("timer"));
    timer.insert("wakeAt".into(), Ipld::Integer(5));
    let RunWait::Timer(decoded) = survives::<RunWait>(&Ipld::Map(timer)) else {
        panic!("a timer wait with extra fields must stay a timer")
    };
    assert_eq!(decoded.wake_at, 5);
    assert_eq!(decoded.extra, odd_values());

    let mut message = odd_values();
    for (key, value) in [
        ("type", s("message")),
        ("role", s("assistant")),
        ("content", s("hi")),
        ("meta", map([("future", s("x")), ("model", s("gpt-5"))])),
    ] {
        message.insert(key.into(), value);
    }
    let SessionEventPayload::Message(decoded) = survives(&Ipld::Map(message)) else {
        panic!("a message with extra fields must stay a message")
    };
    assert_eq!(decoded.role, MessageRole::Assistant);
    let meta = decoded.meta.expect("meta");
    assert_eq!(meta.extra.get("future"), Some(&s("x")));

    // The tag of an open-map variant is not duplicated into its map.
    let new_thread = map([("kind", s("newThread")), ("title", s("Daily"))]);
    let TriggerContinuation::NewThread(decoded) = survives(&new_thread) else {
        panic!("newThread must decode as NewThread")
    };
    assert_eq!(decoded.0, open([("title", s("Daily"))]));
}

#[test]
fn unknown_variants_survive_as_other() {
    let unknown = |tag: &str, value: &str| {
        let mut entries = odd_values();
        entries.insert(tag.into(), s(value));
        Ipld::Map(entries)
    };
    assert!(matches!(
        survives::<RunWait>(&unknown("reason", "quorum")),
        RunWait::Other(_)
    ));
    assert!(matches!(
        survives::<TriggerContinuation>(&unknown("kind", "email")),
        TriggerContinuation::Other(_)
    ));
    let source: AgentTriggerSource = survives(&unknown("kind", "calendar-event"));
    assert!(matches!(source, AgentTriggerSource::Other(_)));
    assert_eq!(source.kind(), Some("calendar-event"));
    assert!(matches!(
        survives::<Schedule>(&unknown("kind", "cron")),
        Schedule::Other(_)
    ));
    assert!(matches!(
        survives::<UnmetObligation>(&unknown("kind", "promise")),
        UnmetObligation::Other(_)
    ));
    let entry: WorkflowJournalEntry = survives(&{
        let mut entries = odd_values();
        entries.insert("kind".into(), s("checkpoint"));
        entries.insert("callSeq".into(), Ipld::Integer(9));
        Ipld::Map(entries)
    });
    assert!(matches!(entry, WorkflowJournalEntry::Other(_)));
    assert_eq!(
        (entry.kind(), entry.call_seq()),
        (Some("checkpoint"), Some(9))
    );
    let event: SessionEventPayload = survives(&unknown("type", "reaction"));
    assert!(matches!(event, SessionEventPayload::Other(_)));
    assert_eq!(event.event_type(), Some("reaction"));
    // "or any other map": no `type` at all.
    assert!(matches!(
        survives::<SessionEventPayload>(&Ipld::Map(odd_values())),
        SessionEventPayload::Other(_)
    ));
    assert!(matches!(
        survives::<WaitMatch>(&Ipld::Map(odd_values())),
        WaitMatch::Other(_)
    ));
}

#[test]
fn known_tags_with_unfitting_fields_survive_as_other() {
    // A legacy or foreign shape under a known tag must neither fail to decode nor lose bytes.
    let legacy = map([("kind", s("schedule")), ("cron", s("0 9 * * 1"))]);
    assert!(matches!(
        survives::<AgentTriggerSource>(&legacy),
        AgentTriggerSource::Other(_)
    ));
    let no_content = map([("type", s("message")), ("role", s("user"))]);
    assert!(matches!(
        survives::<SessionEventPayload>(&no_content),
        SessionEventPayload::Other(_)
    ));
    let string_wake = map([("reason", s("timer")), ("wakeAt", s("tomorrow"))]);
    assert!(matches!(
        survives::<RunWait>(&string_wake),
        RunWait::Other(_)
    ));
}

#[test]
fn unknown_string_enum_values_survive() {
    let event = map([
        ("type", s("message")),
        ("role", s("critic")),
        ("content", s("hmm")),
        ("actor", s("robot")),
    ]);
    let SessionEventPayload::Message(message) = survives(&event) else {
        panic!("an unknown role is still a message")
    };
    assert_eq!(message.role, MessageRole::Other("critic".into()));
    assert_eq!(message.actor, Some(SessionActor::Other("robot".into())));

    let plan = map([(
        "steps",
        Ipld::List(vec![map([
            ("id", s("1")),
            ("label", s("one")),
            ("status", s("blocked")),
            ("resolvedBy", s("reviewer")),
        ])]),
    )]);
    let plan: RunPlan = survives(&plan);
    assert!(!plan.all_steps_terminal());
    assert_eq!(plan.steps[0].status.as_str(), "blocked");
    assert_eq!(
        plan.steps[0].resolved_by,
        Some(StepResolvedBy::Other("reviewer".into()))
    );
}

// ---------------------------------------------------------------------------------------------
// Optional fields: None is left out, as the TypeScript encoder leaves out an absent key

#[test]
fn absent_optionals_are_left_out_and_a_typed_null_reads_as_absent() {
    let absent = cbor::to_vec(&map([("type", s("openai"))])).unwrap();
    let null = cbor::to_vec(&map([
        ("type", s("openai")),
        ("baseUrl", Ipld::Null),
        ("secretRefs", Ipld::Null),
        ("modelDefaults", Ipld::Null),
    ]))
    .unwrap();
    let from_absent: ModelProviderConfig = cbor::from_slice(&absent).unwrap();
    let from_null: ModelProviderConfig = cbor::from_slice(&null).unwrap();
    assert_eq!(from_absent, ModelProviderConfig::new("openai"));
    assert_eq!(from_null, from_absent);
    assert_eq!(cbor::to_vec(&from_absent).unwrap(), absent);

    // The same inside a tagged variant.
    let absent = cbor::to_vec(&map([("reason", s("event")), ("waitId", s("1"))])).unwrap();
    let null = cbor::to_vec(&map([
        ("reason", s("event")),
        ("waitId", s("1")),
        ("timeoutAt", Ipld::Null),
    ]))
    .unwrap();
    for bytes in [&absent, &null] {
        let wait: RunWait = cbor::from_slice(bytes).unwrap();
        let RunWait::Event(event) = &wait else {
            panic!("{wait:?}")
        };
        assert_eq!(event.timeout_at, None);
        assert_eq!(&cbor::to_vec(&wait).unwrap(), &absent);
    }

    // Every optional absent at once.
    let absent = cbor::to_vec(&map([("state", s("ok"))])).unwrap();
    let status: McpServerStatus = cbor::from_slice(&absent).unwrap();
    assert_eq!((&status.error, status.checked_at), (&None, None));
    assert_eq!(cbor::to_vec(&status).unwrap(), absent);
}

#[test]
fn a_field_of_unknown_shape_keeps_null_apart_from_absent() {
    let null = map([
        ("type", s("tool_result")),
        ("toolCallId", s("c")),
        ("name", s("n")),
        ("output", Ipld::Null),
    ]);
    let SessionEventPayload::ToolResult(result) = survives(&null) else {
        panic!("a tool result")
    };
    assert_eq!(result.output, Some(Ipld::Null));
    let absent = map([
        ("type", s("tool_result")),
        ("toolCallId", s("c")),
        ("name", s("n")),
    ]);
    let SessionEventPayload::ToolResult(result) = survives(&absent) else {
        panic!("a tool result")
    };
    assert_eq!(result.output, None);
}

#[test]
fn missing_required_fields_and_wrong_types_are_errors() {
    let bytes = cbor::to_vec(&map([("baseUrl", s("x"))])).unwrap();
    let error = cbor::from_slice::<ModelProviderConfig>(&bytes).unwrap_err();
    assert!(matches!(error, CborError::Decode { .. }), "{error:?}");
    let bytes = cbor::to_vec(&s("not a map")).unwrap();
    assert!(cbor::from_slice::<RunWait>(&bytes).is_err());
    assert!(cbor::from_slice::<RunPlan>(&bytes).is_err());
}

#[test]
fn agent_definition_mcp_server_references() {
    let mut definition = AgentDefinition {
        mcp_servers: Some(vec!["github".into(), "linear".into()]),
        extra: OpenMap::new(),
    };
    assert!(definition.references_mcp_server("linear"));
    assert!(definition.remove_mcp_server("linear"));
    assert!(!definition.remove_mcp_server("linear"));
    assert_eq!(definition.mcp_server_names(), ["github".to_owned()]);
    assert!(AgentDefinition::default().mcp_server_names().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Cbor<T> as an SQLite BLOB

#[test]
fn cbor_column_through_sqlite() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute("CREATE TABLE t (b BLOB)", ()).unwrap();
    let plan = RunPlan {
        title: Some("Plan".into()),
        steps: vec![step("1", "done")],
        settled_at: Some(1_790_000_000_000),
        extra: OpenMap::new(),
    };
    let value = Cbor::encode(&plan).unwrap();
    conn.execute("INSERT INTO t (b) VALUES (?1)", (&value,))
        .unwrap();
    let kind: String = conn
        .query_row("SELECT typeof(b) FROM t", (), |row| row.get(0))
        .unwrap();
    assert_eq!(kind, "blob");
    let back: Cbor<RunPlan> = conn
        .query_row("SELECT b FROM t", (), |row| row.get(0))
        .unwrap();
    assert_eq!(back, value);
    assert_eq!(back.decode().unwrap(), plan);

    // Not a BLOB: an error, never a panic.
    conn.execute("INSERT INTO t (b) VALUES (42)", ()).unwrap();
    let read = conn.query_row("SELECT b FROM t WHERE typeof(b) = 'integer'", (), |row| {
        row.get::<_, Cbor<RunPlan>>(0)
    });
    assert!(
        matches!(read, Err(rusqlite::Error::InvalidColumnType(..))),
        "{read:?}"
    );

    // A NULL column reads as None through Option, and as an error otherwise.
    conn.execute("INSERT INTO t (b) VALUES (NULL)", ()).unwrap();
    let null = "SELECT b FROM t WHERE b IS NULL";
    let none: Option<Cbor<RunPlan>> = conn.query_row(null, (), |row| row.get(0)).unwrap();
    assert_eq!(none, None);
    assert!(conn
        .query_row(null, (), |row| row.get::<_, Cbor<RunPlan>>(0))
        .is_err());

    // Stored bytes of the wrong type read fine, and decoding them is an error (a plan has no
    // `state`). (A tagged union would accept them as its `Other` map.)
    let wrong: Cbor<McpServerStatus> = Cbor::from_bytes(value.into_bytes());
    assert!(wrong.decode().is_err());
}
