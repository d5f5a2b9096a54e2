//! One account's full set of rows, written through the API.

use std::collections::BTreeMap;

use seed_agents_store::agents::NewAgent;
use seed_agents_store::continuations::ContinuationRequest;
use seed_agents_store::drafts::DraftFields;
use seed_agents_store::idempotency::Action;
use seed_agents_store::mcp::McpServerInput;
use seed_agents_store::payload::*;
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::account_authorizations::Role as SignerRole;
use seed_agents_store::schema::agent_collaborators::Role;
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::schema::sessions::TitleSource;
use seed_agents_store::schema::trigger_firings;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::triggers::{
    firing_run_id, Admission, FiringKey, FiringRequest, FiringUpdate, NewTrigger,
};
use seed_agents_store::Store;

use super::worker::{worker_setup, workflow};
use super::{Ids, C, D, T};
use crate::tools::{builtin, lambda, object_schema, s};

/// A user message event saying `text`.
pub fn message(text: &str) -> SessionEventPayload {
    MessageEvent {
        actor: Some(SessionActor::User),
        ..MessageEvent::user(text)
    }
    .into()
}

/// A session of `agent`, under `parent` when given.
pub fn new_session(agent: &str, parent: Option<&str>) -> NewSession {
    NewSession {
        agent_id: agent.into(),
        parent_session_id: parent.map(str::to_owned),
        ..NewSession::default()
    }
}

/// A trigger `name` of `agent` in `account` firing on `source`.
pub fn trigger(account: &str, agent: &str, name: &str, source: AgentTriggerSource) -> NewTrigger {
    NewTrigger {
        id: None,
        account_id: account.into(),
        agent_id: agent.into(),
        name: name.into(),
        enabled: true,
        source,
        prompt: format!("prompt of {name}"),
        continuation: None,
    }
}

/// An activity trigger source on `document` for events of `kind`.
pub fn activity_source(kind: &str, document: &str) -> AgentTriggerSource {
    let mut filter = OpenMap::new();
    filter.insert("kind".into(), s(kind));
    filter.insert("document".into(), s(document));
    let filter = seed_agents_store::cbor::from_slice(
        &seed_agents_store::cbor::to_vec(&filter).expect("encode"),
    )
    .expect("decode");
    AgentTriggerSource::Activity(ActivitySource {
        alternatives: vec![ActivityAlternative {
            id: kind.into(),
            source: filter,
            extra: OpenMap::new(),
        }],
        extra: OpenMap::new(),
    })
}

/// An MCP server's input, its name and URL made from `tag`.
pub fn mcp_input(tag: &str) -> McpServerInput {
    McpServerInput {
        config: McpServerConfig {
            url: format!("https://mcp-{tag}.example/mcp"),
            transport: None,
            headers: None,
            secret_refs: None,
            extra: OpenMap::new(),
        },
        secret_headers: BTreeMap::from([("authorization".into(), format!("Bearer {tag}"))]),
    }
}

/// A draft's fields, signed by `signer` when given.
pub fn draft_fields(signer: Option<&str>) -> DraftFields {
    DraftFields {
        signer_secret_name: signer.map(str::to_owned),
        title: Some("notes".into()),
        content_format: "markdown".into(),
        content: DraftContent(s("# Notes")),
        metadata: None,
        edit_target: None,
        location_target: None,
        path_name: Some("notes".into()),
        visibility: None,
    }
}

/// A continuation of session `predecessor` for the tool call `call`.
pub fn continuation(predecessor: &str, call: &str) -> ContinuationRequest {
    ContinuationRequest {
        predecessor_session_id: predecessor.into(),
        tool_call_id: call.into(),
        initiating_event_id: None,
        reason: Some("context full".into()),
        manifest: ContinuationManifest {
            handoff: "carry on".into(),
            cited_sources: None,
            loaded: None,
            left_cold: None,
            extra: OpenMap::new(),
        },
    }
}

/// The firing row an admission made.
pub fn admitted(admission: Admission) -> trigger_firings::Row {
    match admission {
        Admission::Admitted(row) => row,
        other => panic!("expected a new firing, got {other:?}"),
    }
}

/// Writes the full set of rows of `account` (`tag` keeps its names apart from the other
/// account's) and returns their ids.
pub fn populate(store: &mut Store, account: &str, tag: &str) -> Ids {
    let mcp_server = format!("mcp-{tag}");
    let definition = AgentDefinition {
        mcp_servers: Some(vec![mcp_server.clone()]),
        extra: OpenMap::new(),
    };
    let new_agent = NewAgent {
        definition,
        state_dir: format!("agents/{tag}"),
        public_read: false,
        public_chat: false,
    };
    let agent = store.create_agent(account, &new_agent).unwrap().id;
    // Collaborators: one accepted, one pending; a signer.
    store
        .invite_collaborator(account, &agent, C, Role::Writer)
        .unwrap();
    store.accept_invitation(C, &agent).unwrap();
    store
        .invite_collaborator(account, &agent, D, Role::Reader)
        .unwrap();
    let signer = format!("signer-{tag}");
    store
        .authorize_signer(account, &signer, SignerRole::Agent, None)
        .unwrap();
    // Secrets, a provider, an MCP server with an owned secret and a discovered tool, tools.
    let secret = format!("key-{tag}");
    store.set_secret(account, &secret, b"value", None).unwrap();
    let provider_name = format!("prov-{tag}");
    let provider = store
        .create_provider(account, &provider_name, &ModelProviderConfig::new("openai"))
        .unwrap()
        .id;
    store
        .create_mcp_server(account, &mcp_server, &mcp_input(tag))
        .unwrap();
    let tool = McpToolInfo {
        name: "search".into(),
        description: Some("Searches.".into()),
        input_schema: Some(object_schema()),
        extra: OpenMap::new(),
    };
    store
        .record_mcp_discovery(account, &mcp_server, Ok(vec![tool]))
        .unwrap();
    store
        .ensure_builtin_tools(account, &agent, &[builtin("read", "fs.read")])
        .unwrap();
    let lambda_name = format!("lambda-{tag}");
    store
        .put_lambda_tool(account, &agent, &lambda(&lambda_name))
        .unwrap();
    let draft = store
        .create_draft(account, Some(&agent), &draft_fields(Some(&secret)))
        .unwrap()
        .id;
    // Sessions with events, a child, a continuation.
    let session = store
        .create_session(account, &new_session(&agent, None))
        .unwrap()
        .id;
    store
        .append_event(account, &session, &message("hello"))
        .unwrap();
    store
        .append_event(account, &session, &message("again"))
        .unwrap();
    store
        .set_session_title(account, &session, "a title", TitleSource::User)
        .unwrap();
    let child_session = store
        .create_session(account, &new_session(&agent, Some(&session)))
        .unwrap()
        .id;
    let successor_session = store
        .create_session(account, &new_session(&agent, None))
        .unwrap()
        .id;
    let continuation_call = format!("continue-{tag}");
    store
        .record_continuation(
            account,
            &continuation(&session, &continuation_call),
            &successor_session,
        )
        .unwrap();
    // Triggers, firings, claims, a webhook credential.
    let schedule = AgentTriggerSource::Schedule(ScheduleSource {
        schedule: Schedule::Interval(ScheduleInterval {
            interval_ms: 60_000,
            extra: OpenMap::new(),
        }),
        extra: OpenMap::new(),
    });
    let schedule_trigger = store
        .create_trigger(&trigger(account, &agent, "daily", schedule))
        .unwrap()
        .trigger
        .id;
    let webhook = store
        .create_trigger(&trigger(
            account,
            &agent,
            "hook",
            AgentTriggerSource::Webhook(WebhookSource::default()),
        ))
        .unwrap();
    let webhook_secret = webhook
        .webhook_secret
        .expect("a webhook trigger gets a secret")
        .expose()
        .to_owned();
    let activity_trigger = store
        .create_trigger(&trigger(
            account,
            &agent,
            "comments",
            activity_source("document-comment", "hm://doc"),
        ))
        .unwrap()
        .trigger
        .id;
    let other_activity_trigger = store
        .create_trigger(&trigger(
            account,
            &agent,
            "mentions",
            activity_source("user-mention", "hm://doc"),
        ))
        .unwrap()
        .trigger
        .id;
    let request = |trigger_id: &str, key: FiringKey| FiringRequest {
        account_id: account.into(),
        trigger_id: trigger_id.into(),
        key,
        activity: TriggerActivity::default(),
        body_digest: None,
        matched: None,
    };
    let firing = admitted(
        store
            .admit_firing(&request(
                &schedule_trigger,
                FiringKey::Schedule { scheduled_at: T },
            ))
            .unwrap(),
    )
    .id;
    admitted(
        store
            .admit_firing(&request(
                &activity_trigger,
                FiringKey::Activity {
                    key: format!("comment-{tag}"),
                },
            ))
            .unwrap(),
    );
    let mut fired = workflow(account, &agent, "fired");
    fired.id = Some(firing_run_id(&firing));
    fired.trigger_firing_id = Some(firing.clone());
    let firing_run = store.enqueue_run(&fired).unwrap().id;
    store
        .update_firing(
            account,
            &firing,
            &FiringUpdate {
                status: trigger_firings::Status::Started,
                error: None,
                session_id: Some(session.clone()),
                run_id: Some(firing_run.clone()),
            },
        )
        .unwrap();
    // Runs in every state a probe names, with journals and a wait.
    let mut turn = NewRun::new(account, Kind::Agent, Origin::User, "turn");
    turn.agent_id = Some(agent.clone());
    turn.session_id = Some(session.clone());
    let queued_run = store.enqueue_run(&turn).unwrap().id;
    let lease_owner = format!("worker-{tag}");
    let signal = format!("sig-{tag}");
    let wait = format!("wait-{tag}");
    let child_call = format!("call-{tag}");
    let runs = worker_setup(
        store,
        account,
        &agent,
        &lease_owner,
        &signal,
        &wait,
        &child_call,
    );
    // Watermarks and idempotency records.
    let watermark_url = format!("https://hm-{tag}.example");
    store
        .record_watermark_success(account, &watermark_url, &ActivityCursor::default())
        .unwrap();
    let client_id = format!("message-{tag}");
    store
        .record_idempotent(account, Action::MessageSession, &client_id, &session, 7_u64)
        .unwrap();
    Ids {
        agent,
        session,
        child_session,
        successor_session,
        continuation_call,
        queued_run,
        running_run: runs.running,
        waiting_run: runs.waiting,
        parent_run: runs.parent,
        child_call,
        paused_run: runs.paused,
        firing_run,
        schedule_trigger,
        webhook_trigger: webhook.trigger.id,
        activity_trigger,
        other_activity_trigger,
        firing,
        draft,
        provider,
        provider_name,
        secret,
        mcp_server,
        watermark_url,
        lambda: lambda_name,
        client_id,
        signer,
        wait,
        signal,
        lease_owner,
        webhook_secret,
    }
}
