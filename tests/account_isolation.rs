//! Every operation on an account's row checks the account.
//!
//! Two accounts get the same full set of rows (agents, sessions with events, runs queued, running,
//! waiting on an event, on children and on a budget, journal entries, triggers with firings and
//! claims, a webhook credential, tool documents, drafts, an MCP server with its owned secret,
//! secrets, providers, watermarks, idempotency records, collaborators, signers, continuations).
//! Then account B calls every account-scoped method naming A's rows, directly or nested inside its
//! own request. Each call must:
//! - answer exactly what it answers for an id nobody has (the same `NotFound`, or the same empty
//!   read), so the answer never reveals that A's row exists;
//! - leave every table byte for byte as it was. The snapshot covers every table `sqlite_schema`
//!   lists, all rows and all columns, so a table added later is covered without touching this
//!   file.
//!
//! The calls that claimed-run workers make are in their own section at the end (`worker_cases`,
//! `worker_setup`): their signatures are about to take the worker's claim.

mod tools_common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use rusqlite::types::ValueRef;
use seed_agents_store::agents::NewAgent;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::continuations::ContinuationRequest;
use seed_agents_store::drafts::DraftFields;
use seed_agents_store::idempotency::Action;
use seed_agents_store::mcp::McpServerInput;
use seed_agents_store::payload::*;
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::account_authorizations::Role as SignerRole;
use seed_agents_store::schema::agent_collaborators::Role;
use seed_agents_store::schema::agents::Status as AgentStatus;
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::schema::sessions::TitleSource;
use seed_agents_store::schema::trigger_firings;
use seed_agents_store::sessions::{NewSession, PlanWriter, SessionQuery};
use seed_agents_store::triggers::{
    firing_run_id, Admission, CombineTriggers, FiringKey, FiringRequest, FiringUpdate, NewTrigger,
    TriggerPatch,
};
use seed_agents_store::{Error, Result, Store};
use tools_common::{builtin, lambda, s};

const A: &str = "acct-a";
const B: &str = "acct-b";
/// Collaborates on both accounts' agents (accepted), so collaborator rows exist.
const C: &str = "acct-c";
/// Invited to both accounts' agents (pending).
const D: &str = "acct-d";
const T: i64 = 1_764_000_000_000;

/// Everything of one account the probes name. [`Ids::missing`] is the same shape naming rows
/// nobody has.
#[derive(Debug, Clone)]
struct Ids {
    agent: String,
    session: String,
    child_session: String,
    successor_session: String,
    continuation_call: String,
    queued_run: String,
    running_run: String,
    waiting_run: String,
    parent_run: String,
    child_call: String,
    paused_run: String,
    firing_run: String,
    schedule_trigger: String,
    webhook_trigger: String,
    activity_trigger: String,
    other_activity_trigger: String,
    firing: String,
    draft: String,
    provider: String,
    provider_name: String,
    secret: String,
    mcp_server: String,
    watermark_url: String,
    lambda: String,
    client_id: String,
    signer: String,
    wait: String,
    // Not ids: what a caller would present along with them.
    signal: String,
    lease_owner: String,
    webhook_secret: String,
}

impl Ids {
    /// The same request naming nothing that exists (values that are not ids are kept).
    fn missing(&self) -> Ids {
        let m = |what: &str| format!("missing-{what}");
        Ids {
            agent: m("agent"),
            session: m("session"),
            child_session: m("child-session"),
            successor_session: m("successor-session"),
            continuation_call: m("continuation-call"),
            queued_run: m("queued-run"),
            running_run: m("running-run"),
            waiting_run: m("waiting-run"),
            parent_run: m("parent-run"),
            child_call: m("child-call"),
            paused_run: m("paused-run"),
            firing_run: m("firing-run"),
            schedule_trigger: m("schedule-trigger"),
            webhook_trigger: m("webhook-trigger"),
            activity_trigger: m("activity-trigger"),
            other_activity_trigger: m("other-activity-trigger"),
            firing: m("firing"),
            draft: m("draft"),
            provider: m("provider"),
            provider_name: m("provider-name"),
            secret: m("secret"),
            mcp_server: m("mcp"),
            watermark_url: m("https://missing.example"),
            lambda: m("lambda"),
            client_id: m("client-id"),
            signer: m("signer"),
            wait: m("wait"),
            ..self.clone()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Setup: one account's full set of rows, written through the API

fn message(text: &str) -> SessionEventPayload {
    SessionEventPayload::Message(MessageEvent {
        role: MessageRole::User,
        content: text.into(),
        tool_call_id: None,
        raw_markdown: None,
        blocks: None,
        context_lines: None,
        attachments: None,
        actor: Some(SessionActor::User),
        meta: None,
        extra: OpenMap::new(),
    })
}

fn new_session(agent: &str, parent: Option<&str>) -> NewSession {
    NewSession {
        agent_id: agent.into(),
        parent_session_id: parent.map(str::to_owned),
        ..NewSession::default()
    }
}

fn workflow(account: &str, agent: &str, title: &str) -> NewRun {
    let mut run = NewRun::new(account, Kind::Workflow, Origin::Workflow, title);
    run.agent_id = Some(agent.into());
    run
}

fn trigger(account: &str, agent: &str, name: &str, source: AgentTriggerSource) -> NewTrigger {
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

fn activity_source(kind: &str, document: &str) -> AgentTriggerSource {
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

fn mcp_input(tag: &str) -> McpServerInput {
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

fn draft_fields(signer: Option<&str>) -> DraftFields {
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

fn continuation(predecessor: &str, call: &str) -> ContinuationRequest {
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

fn admitted(admission: Admission) -> trigger_firings::Row {
    match admission {
        Admission::Admitted(row) => row,
        other => panic!("expected a new firing, got {other:?}"),
    }
}

/// Writes the full set of rows of `account` (`tag` keeps its names apart from the other
/// account's) and returns their ids.
fn populate(store: &mut Store, account: &str, tag: &str) -> Ids {
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
        input_schema: Some(tools_common::object_schema()),
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

// ---------------------------------------------------------------------------------------------
// The snapshot and the probe

/// Every table (from `sqlite_schema`), every row, every column, rendered and sorted.
fn snapshot(store: &Store) -> BTreeMap<String, Vec<String>> {
    let conn = store.conn();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(tables.len() >= 20, "the schema lists {tables:?}");
    let mut out = BTreeMap::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |r| {
                let mut cells = Vec::with_capacity(columns);
                for i in 0..columns {
                    cells.push(match r.get_ref(i)? {
                        ValueRef::Null => "NULL".to_owned(),
                        ValueRef::Integer(v) => v.to_string(),
                        ValueRef::Real(v) => format!("{v:?}"),
                        ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                        ValueRef::Blob(b) => format!("x'{}'", hex::encode(b)),
                    });
                }
                Ok(cells.join("|"))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        rows.sort();
        out.insert(table, rows);
    }
    out
}

/// What a call answered, with the id left out of a `NotFound` (it is the id the call named).
fn outcome<T: Debug>(result: Result<T>) -> String {
    match result {
        Err(Error::NotFound { what, .. }) => format!("NotFound({what})"),
        Err(e) => format!("Err({e:?})"),
        Ok(v) => format!("Ok({v:?})"),
    }
}

/// One call B makes, naming the rows in the first `Ids` (A's, or missing ones), with B's own
/// rows (the second) where the request also names some.
type Call = fn(&mut Store, &Ids, &Ids) -> String;

/// A probe: its name, what it must answer (for A's rows and for missing ones alike), the call.
struct Case(&'static str, &'static str, Call);

/// Runs `case` naming A's rows, then naming missing rows: both answers must be `expect`, and
/// no table may change. Returns a description of what went wrong, if anything.
fn probe(store: &mut Store, a: &Ids, b: &Ids, case: &Case) -> Option<String> {
    let Case(name, expect, call) = case;
    let before = snapshot(store);
    let foreign = call(store, a, b);
    let after_foreign = snapshot(store);
    let missing = call(store, &a.missing(), b);
    let after_missing = snapshot(store);
    let changed = |after: &BTreeMap<String, Vec<String>>| -> Vec<String> {
        after
            .iter()
            .filter(|(table, rows)| before.get(*table) != Some(rows))
            .map(|(table, _)| table.clone())
            .collect()
    };
    let mut problems = Vec::new();
    if foreign != *expect {
        problems.push(format!(
            "naming A's rows answered {foreign}, expected {expect}"
        ));
    }
    if missing != *expect {
        problems.push(format!(
            "naming missing rows answered {missing}, expected {expect}"
        ));
    }
    let (wrote_foreign, wrote_missing) = (changed(&after_foreign), changed(&after_missing));
    if !wrote_foreign.is_empty() {
        problems.push(format!("naming A's rows changed {wrote_foreign:?}"));
    }
    if !wrote_missing.is_empty() {
        problems.push(format!("naming missing rows changed {wrote_missing:?}"));
    }
    (!problems.is_empty()).then(|| format!("{name}: {}", problems.join("; ")))
}

/// Two accounts with every kind of row; B probes A. The clock moves first, so a write that only
/// touched a timestamp would show too.
fn world() -> (tempfile::TempDir, Store, Ids, Ids) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T);
    let mut store =
        Store::open_with_clock(dir.path().join("db.sqlite"), Arc::new(clock.clone())).unwrap();
    let a = populate(&mut store, A, "a");
    let b = populate(&mut store, B, "b");
    clock.advance(60_000);
    (dir, store, a, b)
}

fn run_cases(cases: &[Case]) {
    let (_dir, mut store, a, b) = world();
    let start = snapshot(&store);
    for table in [
        "session_events",
        "runs",
        "run_journal",
        "run_event_waits",
        "trigger_firings",
        "trigger_event_claims",
        "tool_documents",
        "agent_collaborators",
        "session_continuations",
        "action_idempotency",
        "activity_watermarks",
        "webhook_trigger_credentials",
    ] {
        assert!(
            start.get(table).is_some_and(|rows| rows.len() >= 2),
            "setup left {table} without rows of both accounts"
        );
    }
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| probe(&mut store, &a, &b, case))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} calls leak across accounts:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(snapshot(&store), start);
}

/// `Case(name, expected answer, |store, ids naming A's rows or missing ones, B's ids| call)`.
macro_rules! case {
    ($name:literal, $expect:literal, |$s:pat_param, $a:pat_param, $b:pat_param| $call:expr) => {
        Case($name, $expect, |$s, $a, $b| outcome($call))
    };
}

// ---------------------------------------------------------------------------------------------
// The probes

fn cases() -> Vec<Case> {
    vec![
        // Agents and collaborators.
        case!("agent", "Ok(None)", |s, a, _| s.agent(B, &a.agent)),
        case!("update_agent_definition", "NotFound(agent)", |s, a, _| s
            .update_agent_definition(
                B,
                &a.agent,
                &AgentDefinition::default()
            )),
        case!("set_agent_visibility", "NotFound(agent)", |s, a, _| s
            .set_agent_visibility(B, &a.agent, Some(true), Some(true))),
        case!("set_agent_status", "NotFound(agent)", |s, a, _| s
            .set_agent_status(B, &a.agent, AgentStatus::Stopped)),
        case!("delete_agent", "NotFound(agent)", |s, a, _| s
            .delete_agent(B, &a.agent)),
        case!("access", "NotFound(agent)", |s, a, _| s.access(&a.agent, B)),
        case!("invite_collaborator", "NotFound(agent)", |s, a, _| s
            .invite_collaborator(B, &a.agent, D, Role::Writer)),
        case!("accept_invitation", "NotFound(invitation)", |s, a, _| s
            .accept_invitation(B, &a.agent)),
        case!("set_collaborator_role", "NotFound(agent)", |s, a, _| s
            .set_collaborator_role(B, &a.agent, C, Role::Reader)),
        case!("remove_collaborator", "NotFound(agent)", |s, a, _| s
            .remove_collaborator(B, &a.agent, C)),
        case!("collaborators", "NotFound(agent)", |s, a, _| s
            .collaborators(B, &a.agent)),
        // Sessions.
        case!("create_session: agent", "NotFound(agent)", |s, a, _| s
            .create_session(B, &new_session(&a.agent, None))),
        case!("create_session: parent", "NotFound(session)", |s, a, b| s
            .create_session(B, &new_session(&b.agent, Some(&a.session)))),
        case!("session", "Ok(None)", |s, a, _| s.session(B, &a.session)),
        case!(
            "sessions",
            "Ok(Page { items: [], next: None })",
            |s, a, _| s.sessions(
                B,
                &a.agent,
                &SessionQuery {
                    include_children: true,
                    ..SessionQuery::default()
                }
            )
        ),
        case!("child_sessions", "Ok([])", |s, a, _| s
            .child_sessions(B, &a.session)),
        case!("set_session_title", "NotFound(session)", |s, a, _| s
            .set_session_title(B, &a.session, "mine", TitleSource::User)),
        case!("set_session_plan", "NotFound(session)", |s, a, _| s
            .set_session_plan(B, &a.session, None, PlanWriter::Runtime)),
        case!(
            "set_session_model_override",
            "NotFound(session)",
            |s, a, _| s.set_session_model_override(B, &a.session, None)
        ),
        case!("set_session_description", "NotFound(session)", |s, a, _| s
            .set_session_description(B, &a.session, Some("mine"))),
        case!(
            "set_session_thoroughness",
            "NotFound(session)",
            |s, a, _| s.set_session_thoroughness(B, &a.session, None)
        ),
        case!("delete_session", "NotFound(session)", |s, a, _| s
            .delete_session(B, &a.session)),
        // The Log.
        case!("append_event", "NotFound(session)", |s, a, _| s
            .append_event(B, &a.session, &message("from b"))),
        case!("events::append_event", "NotFound(session)", |s, a, _| {
            let now = s.now_ms();
            let tx = s.conn_mut().transaction().unwrap();
            seed_agents_store::events::append_event(&tx, now, B, &a.session, &message("from b"))
        }),
        case!("events_after", "Ok([])", |s, a, _| s
            .events_after(B, &a.session, 0, None)),
        // Continuations.
        case!(
            "continue_session_with: predecessor",
            "NotFound(session)",
            |s, a, b| {
                let agent = b.agent.clone();
                s.continue_session_with(B, &continuation(&a.session, "probe"), |conn, now| {
                    let new = new_session(&agent, None);
                    Ok(seed_agents_store::sessions::create_session(conn, now, B, &new)?.id)
                })
            }
        ),
        case!(
            "record_continuation: predecessor",
            "NotFound(session)",
            |s, a, b| s.record_continuation(
                B,
                &continuation(&a.session, &a.continuation_call),
                &b.child_session
            )
        ),
        case!(
            "record_continuation: successor",
            "NotFound(session)",
            |s, a, b| s.record_continuation(
                B,
                &continuation(&b.session, "probe"),
                &a.successor_session
            )
        ),
        case!("continuation_for_call", "Ok(None)", |s, a, _| s
            .continuation_for_call(B, &a.session, &a.continuation_call)),
        case!("continuation_of", "Ok(None)", |s, a, _| s
            .continuation_of(B, &a.successor_session)),
        case!("continuation_chain", "Ok([])", |s, a, _| s
            .continuation_chain(B, &a.session)),
        // Drafts.
        case!("create_draft: agent", "NotFound(agent)", |s, a, _| s
            .create_draft(B, Some(&a.agent), &draft_fields(None))),
        case!("create_draft: signer", "NotFound(secret)", |s, a, _| s
            .create_draft(B, None, &draft_fields(Some(&a.secret)))),
        case!("update_draft: signer", "NotFound(secret)", |s, a, b| s
            .update_draft(B, &b.draft, &draft_fields(Some(&a.secret)))),
        case!("update_draft", "NotFound(draft)", |s, a, _| s.update_draft(
            B,
            &a.draft,
            &draft_fields(None)
        )),
        case!("publish_draft", "NotFound(draft)", |s, a, _| s
            .publish_draft(B, &a.draft, "hm://published", "v1")),
        case!("draft", "Ok(None)", |s, a, _| s.draft(B, &a.draft)),
        case!("agent_drafts", "Ok([])", |s, a, _| s
            .agent_drafts(B, &a.agent)),
        case!("delete_draft", "Ok(false)", |s, a, _| s
            .delete_draft(B, &a.draft)),
        // Providers, secrets, signers, watermarks, idempotency.
        case!("provider", "Ok(None)", |s, a, _| s.provider(B, &a.provider)),
        case!("provider_by_name", "Ok(None)", |s, a, _| s
            .provider_by_name(B, &a.provider_name)),
        case!("update_provider", "NotFound(model provider)", |s, a, _| s
            .update_provider(
                B,
                &a.provider,
                None,
                &ModelProviderConfig::new("other")
            )),
        case!("delete_provider", "Ok(false)", |s, a, _| s
            .delete_provider(B, &a.provider)),
        case!("secret", "Ok(None)", |s, a, _| s.secret(B, &a.secret)),
        case!("decrypt_secret", "NotFound(secret)", |s, a, _| s
            .decrypt_secret(B, &a.secret)),
        case!("delete_secret", "Ok(false)", |s, a, _| s
            .delete_secret(B, &a.secret)),
        case!("is_authorized_signer", "Ok(false)", |s, a, _| s
            .is_authorized_signer(B, &a.signer)),
        case!("revoke_signer", "Ok(false)", |s, a, _| s
            .revoke_signer(B, &a.signer)),
        case!("watermark", "Ok(None)", |s, a, _| s
            .watermark(B, &a.watermark_url)),
        case!("idempotent_replay", "Ok(None)", |s, a, _| s
            .idempotent_replay::<_, u64>(
                B,
                Action::MessageSession,
                &a.client_id,
                &a.session
            )),
        // MCP servers and tools.
        case!("mcp_server", "Ok(None)", |s, a, _| s
            .mcp_server(B, &a.mcp_server)),
        case!("update_mcp_server", "NotFound(MCP server)", |s, a, _| s
            .update_mcp_server(B, &a.mcp_server, &mcp_input("b"))),
        case!(
            "set_mcp_server_enabled",
            "NotFound(MCP server)",
            |s, a, _| s.set_mcp_server_enabled(B, &a.mcp_server, false)
        ),
        case!("record_mcp_discovery", "NotFound(MCP server)", |s, a, _| s
            .record_mcp_discovery(B, &a.mcp_server, Err("down".into()))),
        case!("delete_mcp_server", "NotFound(MCP server)", |s, a, _| s
            .delete_mcp_server(B, &a.mcp_server)),
        case!(
            "sync_mcp_tools",
            "Ok(ToolSync { inserted: 0, rewritten: 0, deleted: 0, shadowed: [] })",
            |s, a, _| s.sync_mcp_tools(B, Some(&a.agent))
        ),
        case!("ensure_builtin_tools", "NotFound(agent)", |s, a, _| s
            .ensure_builtin_tools(
                B,
                &a.agent,
                &[builtin("write", "fs.write")]
            )),
        case!("put_lambda_tool", "NotFound(agent)", |s, a, _| s
            .put_lambda_tool(B, &a.agent, &lambda("probe"))),
        case!("agent_tools", "NotFound(agent)", |s, a, _| s.agent_tools(
            B,
            &a.agent,
            &[builtin("read", "fs.read")]
        )),
        case!("set_tool_enabled", "NotFound(tool)", |s, a, _| s
            .set_tool_enabled(B, &a.agent, &a.lambda, false)),
        case!("delete_tool", "Ok(false)", |s, a, _| s
            .delete_tool(B, &a.agent, &a.lambda)),
        case!("tool", "Ok(None)", |s, a, _| s.tool(B, &a.agent, &a.lambda)),
        // Triggers, firings, webhooks.
        case!("create_trigger: agent", "NotFound(agent)", |s, a, _| s
            .create_trigger(&trigger(
                B,
                &a.agent,
                "probe",
                AgentTriggerSource::Webhook(WebhookSource::default())
            ))),
        case!("trigger", "Ok(None)", |s, a, _| s
            .trigger(B, &a.schedule_trigger)),
        case!("update_trigger", "NotFound(trigger)", |s, a, _| s
            .update_trigger(
                B,
                &a.schedule_trigger,
                &TriggerPatch {
                    prompt: Some("mine".into()),
                    ..TriggerPatch::default()
                }
            )),
        case!("set_trigger_enabled", "NotFound(trigger)", |s, a, _| s
            .set_trigger_enabled(B, &a.schedule_trigger, false)),
        case!("list_triggers", "Ok([])", |s, a, _| s
            .list_triggers(B, &a.agent)),
        case!("delete_trigger", "Ok(false)", |s, a, _| s
            .delete_trigger(B, &a.schedule_trigger)),
        case!(
            "combine_triggers: retired",
            "NotFound(trigger)",
            |s, a, b| s.combine_triggers(
                B,
                &CombineTriggers {
                    survivor_id: b.activity_trigger.clone(),
                    retired_id: a.activity_trigger.clone(),
                    ..CombineTriggers::default()
                }
            )
        ),
        case!(
            "combine_triggers: survivor",
            "NotFound(trigger)",
            |s, a, b| s.combine_triggers(
                B,
                &CombineTriggers {
                    survivor_id: a.other_activity_trigger.clone(),
                    retired_id: b.other_activity_trigger.clone(),
                    ..CombineTriggers::default()
                }
            )
        ),
        case!("admit_firing: schedule", "NotFound(trigger)", |s, a, _| s
            .admit_firing(&FiringRequest {
                account_id: B.into(),
                trigger_id: a.schedule_trigger.clone(),
                key: FiringKey::Schedule {
                    scheduled_at: T + 1
                },
                activity: TriggerActivity::default(),
                body_digest: None,
                matched: None,
            })),
        case!("admit_firing: activity", "NotFound(trigger)", |s, a, _| s
            .admit_firing(&FiringRequest {
                account_id: B.into(),
                trigger_id: a.activity_trigger.clone(),
                key: FiringKey::Activity {
                    key: "comment-a".into()
                },
                activity: TriggerActivity::default(),
                body_digest: None,
                matched: None,
            })),
        case!("admit_webhook", "NotFound(trigger)", |s, a, _| s
            .admit_webhook(
                B,
                &a.webhook_trigger,
                Some("delivery-1"),
                b"{}",
                TriggerActivity::default()
            )),
        case!("update_firing", "NotFound(firing)", |s, a, _| s
            .update_firing(
                B,
                &a.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Failed,
                    error: Some("mine".into()),
                    session_id: None,
                    run_id: None,
                }
            )),
        case!("update_firing: session", "NotFound(session)", |s, a, b| s
            .update_firing(
                B,
                &b.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Started,
                    error: None,
                    session_id: Some(a.session.clone()),
                    run_id: None,
                }
            )),
        case!("update_firing: run", "NotFound(run)", |s, a, b| s
            .update_firing(
                B,
                &b.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Started,
                    error: None,
                    session_id: None,
                    run_id: Some(a.firing_run.clone()),
                }
            )),
        case!("list_firings", "Ok([])", |s, a, _| s
            .list_firings(B, &a.schedule_trigger)),
        case!("list_trigger_claims", "Ok([])", |s, a, _| s
            .list_trigger_claims(B, &a.activity_trigger)),
        case!(
            "webhook_secret",
            "NotFound(webhook credential)",
            |s, a, _| s.webhook_secret(B, &a.webhook_trigger)
        ),
        case!("verify_webhook_secret", "Ok(false)", |s, a, _| s
            .verify_webhook_secret(
                B,
                &a.webhook_trigger,
                &a.webhook_secret
            )),
        case!(
            "rotate_webhook_secret",
            "NotFound(webhook credential)",
            |s, a, _| s.rotate_webhook_secret(B, &a.webhook_trigger)
        ),
        // Runs, journals and waits, outside the claimed-run worker writes.
        case!("enqueue_run: parent", "NotFound(parent run)", |s, a, b| {
            let mut run = workflow(B, &b.agent, "probe");
            run.parent_run_id = Some(a.parent_run.clone());
            s.enqueue_run(&run)
        }),
        case!("enqueue_run: agent", "NotFound(agent)", |s, a, _| s
            .enqueue_run(&workflow(B, &a.agent, "probe"))),
        case!("enqueue_run: session", "NotFound(session)", |s, a, b| {
            let mut run = workflow(B, &b.agent, "probe");
            run.session_id = Some(a.session.clone());
            s.enqueue_run(&run)
        }),
        case!(
            "enqueue_run: trigger firing",
            "NotFound(trigger firing)",
            |s, a, b| {
                let mut run = workflow(B, &b.agent, "probe");
                run.trigger_firing_id = Some(a.firing.clone());
                s.enqueue_run(&run)
            }
        ),
        case!("run", "Ok(None)", |s, a, _| s.run(B, &a.running_run)),
        case!("list_run_tree", "Ok([])", |s, a, _| s
            .list_run_tree(B, &a.parent_run)),
        case!("list_session_runs", "Ok([])", |s, a, _| s
            .list_session_runs(B, &a.session)),
        case!("find_child_by_tool_call", "Ok(None)", |s, a, _| s
            .find_child_by_tool_call(B, &a.parent_run, &a.child_call)),
        case!("claim_run", "NotFound(run)", |s, a, _| s.claim_run(
            B,
            &a.queued_run,
            "thief"
        )),
        case!("requeue_run", "NotFound(run)", |s, a, _| s
            .requeue_run(B, &a.waiting_run)),
        case!("resolve_child", "NotFound(run)", |s, a, _| s.resolve_child(
            B,
            &a.parent_run,
            &a.child_call
        )),
        case!("resume_budget_pause", "NotFound(run)", |s, a, _| s
            .resume_budget_pause(B, &a.paused_run)),
        case!("cancel_run_tree", "NotFound(run)", |s, a, _| s
            .cancel_run_tree(B, &a.parent_run)),
        case!("load_journal", "NotFound(run)", |s, a, _| s.load_journal(
            B,
            &a.running_run,
            0
        )),
        case!("register_wait", "NotFound(run)", |s, a, _| s.register_wait(
            B,
            &a.waiting_run,
            &a.wait,
            &signal_match("other"),
            None
        )),
        case!("run_waits", "Ok([])", |s, a, _| s
            .run_waits(B, &a.waiting_run)),
        case!("deliver_signal: to a run", "Ok(NotDelivered)", |s, a, _| s
            .deliver_signal(B, Some(&a.waiting_run), &a.signal, None)),
        case!(
            "deliver_signal: to any run",
            "Ok(NotDelivered)",
            |s, a, _| s.deliver_signal(B, None, &a.signal, None)
        ),
    ]
}

#[test]
fn another_accounts_rows_are_refused_like_missing_ones_and_nothing_is_written() {
    run_cases(&cases());
}

#[test]
fn a_worker_write_naming_another_accounts_run_is_refused_and_writes_nothing() {
    run_cases(&worker_cases());
}

/// A caller-chosen id is global: creating a trigger or a run under an id another account holds
/// is refused as taken (a conflict, since "not found" would be no answer to a create). It
/// reveals that the id is in use, nothing of the row, and writes nothing.
#[test]
fn a_caller_chosen_id_another_account_holds_is_taken_and_nothing_is_written() {
    let (_dir, mut store, a, b) = world();
    let start = snapshot(&store);
    let mut new = trigger(
        B,
        &b.agent,
        "probe",
        AgentTriggerSource::Webhook(WebhookSource::default()),
    );
    new.id = Some(a.schedule_trigger.clone());
    assert!(matches!(
        store.create_trigger(&new),
        Err(Error::Conflict {
            what: "trigger",
            ..
        })
    ));
    let mut run = workflow(B, &b.agent, "probe");
    run.id = Some(a.running_run.clone());
    assert!(matches!(
        store.enqueue_run(&run),
        Err(Error::Conflict { what: "run", .. })
    ));
    assert_eq!(snapshot(&store), start);
}

// ---------------------------------------------------------------------------------------------
// Claimed-run worker calls. Their signatures are about to change (they will take the worker's
// claim instead of an account, id and owner): every use of them in this file is in this section.

/// A's runs that are claimed or parked, each named by a probe.
struct WorkerRuns {
    running: String,
    waiting: String,
    parent: String,
    paused: String,
}

fn signal_match(signal: &str) -> WaitMatch {
    WaitMatch::Signal(WaitMatchSignal {
        signal: signal.into(),
        extra: OpenMap::new(),
    })
}

fn log_entry(call_seq: u64) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq,
        key: None,
        extra: OpenMap::new(),
    })
}

/// Enqueues and claims a workflow run of `account`.
fn claimed(store: &mut Store, account: &str, agent: &str, title: &str, owner: &str) -> String {
    let id = store
        .enqueue_run(&workflow(account, agent, title))
        .unwrap()
        .id;
    store
        .claim_run(account, &id, owner)
        .unwrap()
        .expect("claimable");
    id
}

/// A running run with a journal; a run parked on an event wait (`wait`, for `signal`); a parent
/// parked on its queued child (spawned by `child_call`); a run parked on a budget pause.
fn worker_setup(
    store: &mut Store,
    account: &str,
    agent: &str,
    owner: &str,
    signal: &str,
    wait: &str,
    child_call: &str,
) -> WorkerRuns {
    let running = claimed(store, account, agent, "running", owner);
    store.start_run(account, &running, owner).unwrap();
    store
        .append_journal(account, &running, &log_entry(1))
        .unwrap();
    store
        .record_run_usage(account, &running, &RunUsage::default())
        .unwrap();
    let waiting = claimed(store, account, agent, "waiting", owner);
    store
        .append_journal(account, &waiting, &log_entry(1))
        .unwrap();
    store
        .park_for_event(
            account,
            &waiting,
            wait,
            &signal_match(signal),
            Some(T + 86_400_000),
        )
        .unwrap();
    let parent = claimed(store, account, agent, "parent", owner);
    let mut child = workflow(account, agent, "child");
    child.parent_run_id = Some(parent.clone());
    child.parent_tool_call_id = Some(child_call.into());
    store.enqueue_run(&child).unwrap();
    let children = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec![child_call.into()],
        extra: OpenMap::new(),
    });
    store.park_run(account, &parent, &children).unwrap();
    let paused = claimed(store, account, agent, "paused", owner);
    let pause = RunWait::BudgetPause(RunWaitBudgetPause {
        note: "budget".into(),
        extra: OpenMap::new(),
    });
    store.park_run(account, &paused, &pause).unwrap();
    WorkerRuns {
        running,
        waiting,
        parent,
        paused,
    }
}

fn worker_cases() -> Vec<Case> {
    use seed_agents_store::runs::{ContinueAsNew, RunOutcome};
    vec![
        case!("start_run", "NotFound(run)", |s, a, _| s.start_run(
            B,
            &a.running_run,
            &a.lease_owner
        )),
        case!("renew_lease", "NotFound(run)", |s, a, _| s.renew_lease(
            B,
            &a.running_run,
            &a.lease_owner
        )),
        case!("park_run", "NotFound(run)", |s, a, _| s.park_run(
            B,
            &a.running_run,
            &RunWait::Timer(RunWaitTimer {
                wake_at: T + 1,
                extra: OpenMap::new(),
            })
        )),
        case!("record_run_usage", "NotFound(run)", |s, a, _| s
            .record_run_usage(B, &a.running_run, &RunUsage::default())),
        case!("append_journal", "NotFound(run)", |s, a, _| s
            .append_journal(B, &a.running_run, &log_entry(2))),
        case!("finalize_run", "NotFound(run)", |s, a, _| s.finalize_run(
            B,
            &a.running_run,
            RunOutcome::Canceled
        )),
        case!("continue_as_new", "NotFound(run)", |s, a, _| s
            .continue_as_new(
                B,
                &a.running_run,
                &ContinueAsNew {
                    output: RunOutput::default(),
                    input: RunInput::default(),
                    title: None,
                }
            )),
        case!("park_for_event", "NotFound(run)", |s, a, _| s
            .park_for_event(
                B,
                &a.running_run,
                "probe",
                &signal_match(&a.signal),
                None
            )),
    ]
}
