//! Unknown fields, variants and values survive byte for byte

use super::*;

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
