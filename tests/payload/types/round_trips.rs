//! Every payload type round-trips

use super::*;

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
