//! One round-trip case per table (see the harness), and the check that every table has one.

use super::harness::*;
use super::*;

round_trips! {
    server_config => case!(
        server_config, unscoped, key("test-key"), lists[], uniques[],
        row: server_config::Row { key: "test-key".into(), value: vec![0, 1, 2, 255] },
        update: |r| { r.value = b"changed".to_vec(); },
    );
    secret_keys => case!(
        secret_keys, unscoped, key(7), lists[], uniques[get_by_fingerprint("00ff")],
        row: secret_keys::Row {
            id: 7,
            provider: secret_keys::Provider::Command,
            fingerprint: Some("00ff".into()),
            created_at: T,
            retired_at: Some(T + 1),
        },
        update: |r| { r.retired_at = Some(T + 2); r.provider = secret_keys::Provider::Env; },
    );
    accounts => case!(
        accounts, unscoped, key("acct-c"), lists[], uniques[],
        row: account("acct-c"),
        update: |r| { r.updated_at += 1000; },
    );
    account_authorizations => case!(
        account_authorizations, scoped(A, B), key("signer-1"), lists[list_by_account_id()], uniques[],
        row: account_authorizations::Row {
            account_id: A.into(),
            signer_id: "signer-1".into(),
            role: account_authorizations::Role::Agent,
            capability: Some("capability-blob".into()),
            capability_cid: Some("bafy-capability".into()),
            created_at: T,
        },
        update: |r| {
            r.role = account_authorizations::Role::Owner;
            r.capability = Some("other-blob".into());
        },
    );
    model_providers => case!(
        model_providers, scoped(A, B), key("provider-1"), lists[list_by_account_id()],
        uniques[get_by_name("openai-main")],
        row: model_providers::Row {
            id: "provider-1".into(),
            account_id: A.into(),
            name: "openai-main".into(),
            r#type: "openai".into(),
            config_cbor: enc(&ModelProviderConfig {
                base_url: Some("https://api.example".into()),
                ..ModelProviderConfig::new("openai")
            }),
            created_at: T,
            updated_at: T + 1,
        },
        update: |r| {
            r.r#type = "anthropic".into();
            r.config_cbor = enc(&ModelProviderConfig::new("anthropic"));
            r.updated_at += 1;
        },
    );
    secrets => case!(
        secrets, scoped(A, B), key("secret-1"), lists[list_by_account_id()],
        uniques[get_by_name("openai-key")],
        row: secrets::Row {
            id: "secret-1".into(),
            account_id: A.into(),
            name: "openai-key".into(),
            ciphertext: vec![9; 40],
            metadata_cbor: Some(enc(&SecretMetadata(open([("kind", s("api-key"))])))),
            created_at: T,
            updated_at: T + 1,
            key_id: 1,
            rotated_at: Some(T + 1),
        },
        update: |r| {
            r.ciphertext = vec![7; 41];
            r.key_id = 2;
            r.rotated_at = Some(T + 2);
            r.metadata_cbor = Some(enc(&SecretMetadata::default()));
        },
    );
    agents => case!(
        agents, scoped(A, B), key("agent-2"), lists[list_by_account_id()], uniques[],
        row: agent("agent-2", A),
        update: |r| {
            r.status = agents::Status::Running;
            r.public_read = false;
            r.public_chat = true;
            r.activity_kind = Some("tool_call".into());
        },
    );
    agent_collaborators => case!(
        // The collaborating account is the row's account_id (the agent belongs to A).
        agent_collaborators, scoped(B, A), key("agent-1"),
        lists[list_by_account_id(), list_by_status(agent_collaborators::Status::Pending)],
        uniques[],
        row: agent_collaborators::Row {
            agent_id: "agent-1".into(),
            account_id: B.into(),
            role: agent_collaborators::Role::Writer,
            status: agent_collaborators::Status::Pending,
            created_at: T,
            updated_at: T + 1,
            accepted_at: Some(T + 2),
        },
        update: |r| {
            r.role = agent_collaborators::Role::Reader;
            r.status = agent_collaborators::Status::Accepted;
            r.accepted_at = Some(T + 3);
        },
    );
    agent_triggers => case!(
        agent_triggers, scoped(A, B), key("trigger-2"), lists[list_by_agent_id("agent-1")],
        uniques[],
        row: trigger("trigger-2", A, Some("trigger-1")),
        update: |r| {
            r.enabled = false;
            r.continuation_cbor = Some(enc(&TriggerContinuation::NewThread(
                NewThreadContinuation::default(),
            )));
            r.last_error = Some("merged".into());
        },
    );
    trigger_event_claims => case!(
        trigger_event_claims, scoped(A, B), key("trigger-1", "activity:1"),
        lists[list_by_account_id(), list_by_trigger_id("trigger-1")], uniques[],
        row: trigger_event_claims::Row {
            account_id: A.into(),
            trigger_id: "trigger-1".into(),
            activity_key: "activity:1".into(),
            firing_id: Some("firing-1".into()),
            created_at: T,
        },
        update: |r| { r.firing_id = Some("firing-9".into()); },
    );
    sessions => case!(
        sessions, scoped(A, B), key("session-2"),
        lists[list_by_agent_id("agent-1"), list_by_parent_session_id("session-1")],
        uniques[],
        row: session("session-2", A, "agent-1", Some("session-1")),
        update: |r| {
            r.title = Some("Renamed".into());
            r.status = sessions::Status::Idle;
            r.thoroughness = Some(sessions::Thoroughness::Quick);
            r.plan_cbor = Some(enc(&plan("replanned")));
        },
    );
    runs => case!(
        runs, scoped(A, B), key("run-2"),
        lists[
            list_by_account_id(),
            list_by_parent_run_id("run-1"),
            list_by_parent_run_id_and_parent_tool_call_id("run-1", "call-1"),
            list_by_root_run_id("run-1"),
            list_by_session_id("session-1"),
            list_by_status(runs::Status::Waiting),
            list_by_status_and_queue(runs::Status::Waiting, runs::Queue::Interactive)
        ],
        uniques[],
        row: run("run-2", A, Some("run-1"), runs::Status::Waiting, runs::Queue::Interactive),
        update: |r| {
            r.status = runs::Status::Succeeded;
            r.attempt = 2;
            r.wait_cbor = Some(enc(&RunWait::Timer(RunWaitTimer {
                wake_at: T + 99,
                extra: OpenMap::new(),
            })));
            r.finished_at = Some(T + 100);
        },
    );
    run_event_waits => case!(
        run_event_waits, scoped(A, B), key("run-1", "wait-1"),
        lists[list_by_account_id(), list_by_run_id("run-1")],
        uniques[],
        row: run_event_waits::Row {
            run_id: "run-1".into(),
            wait_id: "wait-1".into(),
            account_id: A.into(),
            match_cbor: enc(&WaitMatch::Signal(WaitMatchSignal {
                signal: "approve".into(),
                extra: OpenMap::new(),
            })),
            timeout_at: Some(T + 60),
            created_at: T,
        },
        update: |r| { r.timeout_at = Some(T + 61); },
    );
    run_journal => case!(
        run_journal, unscoped, key("run-1", 1), lists[list_by_run_id("run-1")], uniques[],
        row: run_journal::Row {
            run_id: "run-1".into(),
            seq: 1,
            entry_cbor: enc(&WorkflowJournalEntry::Call(JournalCall {
                call_seq: 1,
                key: Some("sleep|10".into()),
                description: Some("nap".into()),
                extra: OpenMap::new(),
            })),
            created_at: T,
        },
        update: |r| {
            r.entry_cbor = enc(&WorkflowJournalEntry::Fired(JournalEntryBody {
                call_seq: 1,
                key: None,
                extra: OpenMap::new(),
            }));
        },
    );
    mcp_servers => case!(
        mcp_servers, scoped(A, B), key("mcp-1"), lists[list_by_account_id()],
        uniques[get_by_name("srv")],
        row: mcp_servers::Row {
            id: "mcp-1".into(),
            account_id: A.into(),
            name: "srv".into(),
            config_cbor: enc(&McpServerConfig {
                url: "https://mcp.example".into(),
                transport: Some("http".into()),
                headers: Some([("x-a".to_owned(), "1".to_owned())].into()),
                secret_refs: Some([("token".to_owned(), "mcp-token".to_owned())].into()),
                extra: OpenMap::new(),
            }),
            tools_cbor: Some(enc(&vec![McpToolInfo {
                name: "search".into(),
                description: Some("Searches".into()),
                input_schema: Some(Ipld::Map(open([("type", s("object"))]))),
                extra: OpenMap::new(),
            }])),
            status_cbor: Some(enc(&McpServerStatus {
                state: "ok".into(),
                error: Some("none".into()),
                checked_at: Some(T),
                extra: OpenMap::new(),
            })),
            enabled: true,
            created_at: T,
            updated_at: T + 1,
        },
        update: |r| {
            r.enabled = false;
            r.tools_cbor = Some(enc(&vec![]));
        },
    );
    tool_documents => case!(
        tool_documents, scoped(A, B), key("agent-1", "search"),
        lists[list_by_account_id(), list_by_agent_id("agent-1")],
        uniques[],
        row: tool_documents::Row {
            account_id: A.into(),
            agent_id: "agent-1".into(),
            name: "search".into(),
            kind: tool_documents::Kind::Mcp,
            cid: "bafy-search".into(),
            doc_cbor: enc(&ToolDocument {
                name: "search".into(),
                kind: ToolKind::Mcp,
                summary: "Search".into(),
                description: "Searches the web".into(),
                input: Ipld::Map(OpenMap::new()),
                output: Some(Ipld::Null),
                source: Some("srv".into()),
                runtime: Some("mcp".into()),
                binding: Some(s("srv/search")),
                extra: OpenMap::new(),
            }),
            enabled: true,
            created_at: T,
            updated_at: T + 1,
        },
        update: |r| {
            r.kind = tool_documents::Kind::Lambda;
            r.enabled = false;
            r.cid = "bafy-other".into();
        },
    );
    agent_drafts => case!(
        agent_drafts, scoped(A, B), key("draft-1"),
        lists[
            list_by_account_id(),
            list_by_agent_id("agent-1"),
            list_by_status(agent_drafts::Status::Draft)
        ],
        uniques[],
        row: agent_drafts::Row {
            id: "draft-1".into(),
            account_id: A.into(),
            agent_id: Some("agent-1".into()),
            signer_secret_name: Some("signer".into()),
            title: Some("A draft".into()),
            content_format: "markdown".into(),
            content_cbor: enc(&DraftContent(s("# Hello"))),
            metadata_cbor: Some(enc(&DraftMetadata(open([("tags", Ipld::List(vec![]))])))),
            edit_target: Some("hm://doc".into()),
            location_target: Some("hm://site".into()),
            path_name: Some("hello".into()),
            visibility: Some("public".into()),
            status: agent_drafts::Status::Draft,
            created_at: T,
            updated_at: T + 1,
            published_at: Some(T + 2),
            published_id: Some("hm://doc/hello".into()),
            published_version: Some("v1".into()),
        },
        update: |r| {
            r.status = agent_drafts::Status::Published;
            r.published_version = Some("v2".into());
        },
    );
    session_continuations => case!(
        session_continuations, scoped(A, B), key("cont-1"),
        lists[
            list_by_origin_session_id("session-1"),
            list_by_predecessor_session_id("session-1")
        ],
        uniques[
            get_by_predecessor_session_id_and_tool_call_id("session-1", "call-9"),
            get_by_successor_session_id("session-2")
        ],
        row: session_continuations::Row {
            id: "cont-1".into(),
            account_id: A.into(),
            predecessor_session_id: "session-1".into(),
            successor_session_id: "session-2".into(),
            origin_session_id: "session-1".into(),
            tool_call_id: "call-9".into(),
            initiating_event_id: Some("event-1".into()),
            reason: Some("context full".into()),
            manifest_cbor: enc(&ContinuationManifest {
                handoff: "carry on".into(),
                cited_sources: Some(vec![]),
                loaded: Some(vec![s("memory/a.md")]),
                left_cold: Some(vec![]),
                extra: OpenMap::new(),
            }),
            created_at: T,
        },
        update: |r| { r.reason = Some("asked to".into()); },
    );
    webhook_trigger_credentials => case!(
        webhook_trigger_credentials, scoped(A, B), key("trigger-1"), lists[], uniques[],
        row: webhook_trigger_credentials::Row {
            trigger_id: "trigger-1".into(),
            account_id: A.into(),
            secret_hash: "sha256:secret".into(),
            secret_ciphertext: vec![1; 44],
            created_at: T,
            updated_at: T + 1,
            key_id: 1,
            rotated_at: Some(T + 1),
        },
        update: |r| {
            r.key_id = 2;
            r.rotated_at = Some(T + 2);
            r.secret_hash = "sha256:rotated".into();
            r.updated_at += 1;
        },
    );
    trigger_firings => case!(
        trigger_firings, scoped(A, B), key("firing-2"), lists[list_by_trigger_id("trigger-1")],
        uniques[get_by_trigger_id_and_activity_key("trigger-1", "webhook:k2")],
        row: firing("firing-2", "webhook:k2"),
        update: |r| {
            r.status = trigger_firings::Status::Failed;
            r.error = Some("boom".into());
        },
    );
    activity_watermarks => case!(
        activity_watermarks, scoped(A, B), key("https://hm.example"), lists[list_by_account_id()],
        uniques[],
        row: activity_watermarks::Row {
            account_id: A.into(),
            server_url: "https://hm.example".into(),
            cursor_cbor: enc(&ActivityCursor(open([("after", s("cursor-1"))]))),
            last_poll_at: Some(T),
            last_success_at: Some(T + 1),
            last_error: Some("503".into()),
        },
        update: |r| {
            r.cursor_cbor = enc(&ActivityCursor(open([("after", s("cursor-2"))])));
            r.last_poll_at = Some(T + 5);
        },
    );
    session_events => case!(
        session_events, unscoped, key("session-1", 1), lists[list_by_session_id("session-1")],
        uniques[get_by_id("event-1")],
        row: session_events::Row {
            id: "event-1".into(),
            session_id: "session-1".into(),
            seq: 1,
            event_cbor: enc(&SessionEventPayload::Error(ErrorEvent {
                message: "provider down".into(),
                actor: Some(SessionActor::System),
                extra: OpenMap::new(),
            })),
            created_at: T,
        },
        update: |r| { r.created_at += 1; },
    );
    action_idempotency => case!(
        action_idempotency, scoped(A, B), key("CreateAgent", "req-1"),
        lists[list_by_account_id(), list_by_action("CreateAgent")], uniques[],
        row: action_idempotency::Row {
            account_id: A.into(),
            action: "CreateAgent".into(),
            client_request_id: "req-1".into(),
            request_cbor: enc(&Ipld::Map(open([("name", s("Helper"))]))),
            response_cbor: enc(&Ipld::Map(open([("id", s("agent-3"))]))),
            created_at: T,
        },
        update: |r| { r.response_cbor = enc(&Ipld::Map(open([("id", s("agent-4"))]))); },
    );
    retention_policies => case!(
        retention_policies, unscoped, key(retention_policies::Kind::SessionEvents), lists[],
        uniques[],
        row: retention_policies::Row {
            kind: retention_policies::Kind::SessionEvents,
            max_age_ms: 30 * 86_400_000,
            keep_count: Some(100),
            updated_at: T,
        },
        update: |r| { r.keep_count = None; },
    );
    audit_events => case!(
        audit_events, scoped(A, B), key(A, 7), lists[list_by_account_id(), list_by_kind(audit_events::Kind::Secret)],
        uniques[],
        row: audit_events::Row {
            chain: A.into(),
            seq: 7,
            at: T,
            account_id: A.into(),
            actor: A.into(),
            kind: audit_events::Kind::Secret,
            action: "secret.set".into(),
            target: "secret api-key".into(),
            outcome: audit_events::Outcome::Ok,
            detail: Some("created".into()),
            prev_hash: vec![0; 32],
            hash: vec![1; 32],
        },
        update: |r| {
            r.outcome = audit_events::Outcome::Refused;
            r.detail = Some("why".into());
        },
    );
    audit_chain => case!(
        audit_chain, unscoped, key(A), lists[], uniques[],
        row: audit_chain::Row {
            chain: A.into(),
            head_seq: 7,
            head_hash: vec![1; 32],
            anchor_seq: 0,
            anchor_hash: vec![0; 32],
        },
        update: |r| { r.head_seq = 8; },
    );
}

#[test]
fn every_table_has_a_round_trip() {
    let mut covered = COVERED.to_vec();
    covered.sort_unstable();
    let mut tables = schema::TABLES.to_vec();
    tables.sort_unstable();
    assert_eq!(
        covered, tables,
        "every table in schema::TABLES needs a case in round_trips!"
    );
    assert_eq!(tables.len(), 26);
}
