//! The generated `schema` module against a real database, from inside the crate (its write
//! helpers are crate-private): insert, get, list, update and delete on
//! every table (with account scoping), nullable columns as `Option`, typed errors for stored values
//! outside an enum or bool, CBOR columns holding canonical DAG-CBOR, and the sea-query identifiers
//! building statements that SQLite runs. This module holds the fixture every file uses.

use std::fmt::Debug;

use crate::payload::*;
use crate::schema::{self, *};
use crate::values::cbor::{Cbor, CborError};
use crate::{Error, Result, Store};
use rusqlite::Connection;
use sea_query::{Expr, ExprTrait, Order, Query, SqliteQueryBuilder};

#[macro_use]
mod harness;
mod cbor;
mod listing;
mod tables;
mod values;

// ---------------------------------------------------------------------------------------------
// Fixture

/// The account the rows under test belong to.
const A: &str = "acct-a";
/// Another account, which must never see or change A's rows.
const B: &str = "acct-b";
/// A timestamp (epoch milliseconds).
const T: i64 = 1_764_000_000_000;

fn s(value: &str) -> Ipld {
    Ipld::String(value.to_owned())
}

fn open<const N: usize>(entries: [(&str, Ipld); N]) -> OpenMap {
    entries
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

fn enc<T: serde::Serialize>(value: &T) -> Cbor<T> {
    Cbor::encode(value).expect("payload encodes")
}

fn plan(title: &str) -> RunPlan {
    RunPlan {
        title: Some(title.into()),
        steps: vec![RunPlanStep {
            id: "s1".into(),
            label: "go".into(),
            status: RunPlanStepStatus::Done,
            resolved_by: Some(StepResolvedBy::Runtime),
            extra: OpenMap::new(),
        }],
        settled_at: Some(T),
        extra: OpenMap::new(),
    }
}

fn account(id: &str) -> accounts::Row {
    accounts::Row {
        id: id.into(),
        created_at: T,
        updated_at: T + 1,
    }
}

/// A full agent row (every column set).
fn agent(id: &str, account_id: &str) -> agents::Row {
    agents::Row {
        id: id.into(),
        account_id: account_id.into(),
        definition_cbor: enc(&AgentDefinition {
            mcp_servers: Some(vec!["srv".into()]),
            extra: open([("name", s("Helper"))]),
        }),
        state_dir: format!("/data/agents/{id}"),
        status: agents::Status::Idle,
        public_read: true,
        public_chat: false,
        activity_at: Some(T + 10),
        activity_kind: Some("message".into()),
        message_at: Some(T + 11),
        message_from: Some("user".into()),
        activity_session_id: Some("session-1".into()),
        created_at: T,
        updated_at: T + 12,
    }
}

/// A session row; `parent` fills `parent_session_id`, everything else is set.
fn session(id: &str, account_id: &str, agent_id: &str, parent: Option<&str>) -> sessions::Row {
    sessions::Row {
        id: id.into(),
        account_id: account_id.into(),
        agent_id: agent_id.into(),
        title: Some(format!("Title of {id}")),
        title_source: sessions::TitleSource::User,
        status: sessions::Status::Streaming,
        parent_session_id: parent.map(Into::into),
        run_id: Some("run-1".into()),
        plan_cbor: Some(enc(&plan("session plan"))),
        model_override_cbor: Some(enc(&ModelOverride {
            provider: Some("openai-main".into()),
            model: Some("gpt-x".into()),
            extra: OpenMap::new(),
        })),
        description: Some("thinking".into()),
        thoroughness: Some(sessions::Thoroughness::Deep),
        message_at: Some(T + 20),
        message_from: Some("agent".into()),
        created_at: T,
        updated_at: T + 21,
    }
}

/// A trigger row; `merged_into` fills the column of the same name, everything else is set.
fn trigger(id: &str, account_id: &str, merged_into: Option<&str>) -> agent_triggers::Row {
    agent_triggers::Row {
        id: id.into(),
        account_id: account_id.into(),
        agent_id: "agent-1".into(),
        name: format!("trigger {id}"),
        enabled: true,
        source_cbor: enc(&AgentTriggerSource::Schedule(ScheduleSource {
            schedule: Schedule::Interval(ScheduleInterval {
                interval_ms: 60_000,
                extra: OpenMap::new(),
            }),
            extra: OpenMap::new(),
        })),
        prompt: "Check the inbox".into(),
        continuation_cbor: Some(enc(&TriggerContinuation::Wake(WakeContinuation {
            signal: "inbox".into(),
            run_id: Some("run-1".into()),
            payload: Some(s("ping")),
            extra: OpenMap::new(),
        }))),
        cooldown_ms: Some(5_000),
        merged_into: merged_into.map(Into::into),
        created_at: T,
        updated_at: T + 30,
        last_checked_at: Some(T + 31),
        last_fired_at: Some(T + 32),
        last_error: Some("timeout".into()),
    }
}

/// A full firing row of trigger-1 (every column set).
fn firing(id: &str, activity_key: &str) -> trigger_firings::Row {
    trigger_firings::Row {
        id: id.into(),
        account_id: A.into(),
        agent_id: "agent-1".into(),
        trigger_id: "trigger-1".into(),
        activity_key: activity_key.into(),
        session_id: Some("session-1".into()),
        run_id: Some("run-1".into()),
        activity_cbor: enc(&TriggerActivity(open([("event", s("comment"))]))),
        context_cbor: Some(enc(&FiringContext {
            name: "trigger trigger-1".into(),
            prompt: "Check the inbox".into(),
            matched: Some(vec![]),
            extra: OpenMap::new(),
        })),
        body_digest: Some("sha256:abcd".into()),
        status: trigger_firings::Status::Started,
        error: Some("none yet".into()),
        created_at: T + 40,
    }
}

/// A run row in `account_id` with the given parent, status and queue; everything else is set.
fn run(
    id: &str,
    account_id: &str,
    parent: Option<&str>,
    status: runs::Status,
    queue: runs::Queue,
) -> runs::Row {
    runs::Row {
        id: id.into(),
        account_id: account_id.into(),
        root_run_id: parent.unwrap_or(id).into(),
        parent_run_id: parent.map(Into::into),
        parent_tool_call_id: Some("call-1".into()),
        continued_from_run_id: Some("run-0".into()),
        depth: i64::from(parent.is_some()),
        kind: runs::Kind::Agent,
        agent_id: Some(
            if account_id == A {
                "agent-1"
            } else {
                "agent-b"
            }
            .into(),
        ),
        session_id: Some(
            if account_id == A {
                "session-1"
            } else {
                "session-b"
            }
            .into(),
        ),
        trigger_firing_id: (account_id == A).then(|| "firing-1".into()),
        origin: runs::Origin::Trigger,
        title: Some(format!("Run {id}")),
        model: Some("gpt-x".into()),
        source_cid: Some("sha256:0123".into()),
        source_text: Some("export default async () => 1".into()),
        input_cbor: enc(&RunInput(open([("prompt", s("hello"))]))),
        output_cbor: Some(enc(&RunOutput {
            unmet_obligations: Some(vec![UnmetObligation::Plan(UnmetPlan {
                steps: vec![],
                extra: OpenMap::new(),
            })]),
            extra: open([("text", s("done"))]),
        })),
        error_cbor: Some(enc(&RunErrorInfo::new("journal-cap", "too many entries"))),
        status,
        wait_cbor: Some(enc(&RunWait::Children(RunWaitChildren {
            tool_call_ids: vec!["call-1".into()],
            extra: OpenMap::new(),
        }))),
        attempt: 1,
        max_attempts: 3,
        not_before: Some(T + 50),
        queue,
        lease_owner: Some("queue-7".into()),
        lease_expires_at: Some(T + 51),
        budget_cbor: Some(enc(&RunBudget(open([("tokens", Ipld::Integer(1000))])))),
        usage_cbor: Some(enc(&RunUsage(open([("input", Ipld::Integer(12))])))),
        plan_cbor: Some(enc(&plan("run plan"))),
        created_at: T + 52,
        started_at: Some(T + 53),
        finished_at: Some(T + 54),
        updated_at: T + 55,
    }
}

/// A fresh database holding the parents the rows under test point at: secret keys 1 and 2,
/// accounts A and B, agent-1,
/// session-1, trigger-1, firing-1 and run-1 in A, and agent-b, session-b in B.
fn world() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("x.sqlite")).unwrap();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;
    let on: bool = conn
        .query_row("PRAGMA foreign_keys", (), |row| row.get(0))
        .unwrap();
    assert!(on, "foreign keys are enforced");
    for id in [1, 2] {
        let key = secret_keys::Row {
            id,
            provider: secret_keys::Provider::Database,
            fingerprint: Some(format!("fingerprint-{id}")),
            created_at: T,
            retired_at: None,
        };
        secret_keys::insert(conn, &key).unwrap();
    }
    accounts::insert(conn, &account(A)).unwrap();
    accounts::insert(conn, &account(B)).unwrap();
    agents::insert(conn, &agent("agent-1", A)).unwrap();
    agents::insert(conn, &agent("agent-b", B)).unwrap();
    sessions::insert(conn, &session("session-1", A, "agent-1", None)).unwrap();
    sessions::insert(conn, &session("session-b", B, "agent-b", None)).unwrap();
    agent_triggers::insert(conn, &trigger("trigger-1", A, None)).unwrap();
    trigger_firings::insert(conn, &firing("firing-1", "webhook:k1")).unwrap();
    let root = run(
        "run-1",
        A,
        None,
        runs::Status::Running,
        runs::Queue::Background,
    );
    runs::insert(conn, &root).unwrap();
    drop(raw);
    (dir, store)
}
