//! The generated `schema` module against a real database, from inside the crate (its write
//! helpers are crate-private): insert, get, list, update and delete on
//! every table (with account scoping), nullable columns as `Option`, typed errors for stored values
//! outside an enum or bool, CBOR columns holding canonical DAG-CBOR, and the sea-query identifiers
//! building statements that SQLite runs.

use std::fmt::Debug;

use crate::cbor::{Cbor, CborError};
use crate::payload::*;
use crate::schema::{self, *};
use crate::{Error, Result, Store};
use rusqlite::Connection;
use sea_query::{Expr, ExprTrait, Order, Query, SqliteQueryBuilder};

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

/// A fresh database holding the parents the rows under test point at: accounts A and B, agent-1,
/// session-1, trigger-1, firing-1 and run-1 in A, and agent-b, session-b in B.
fn world() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("x.sqlite")).unwrap();
    let conn = store.writer();
    let on: bool = conn
        .query_row("PRAGMA foreign_keys", (), |row| row.get(0))
        .unwrap();
    assert!(on, "foreign keys are enforced");
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
    (dir, store)
}

// ---------------------------------------------------------------------------------------------
// The round trip, generic over the table

type GetFn<R> = fn(&Connection, &str) -> Result<Option<R>>;
type ListFn<R> = fn(&Connection, &str) -> Result<Vec<R>>;
/// The row's account, another account, and how to move a row to another account.
type Scope<R> = (&'static str, &'static str, fn(&mut R, &str));

/// One table's round trip. Every helper takes the account it runs in (unscoped tables ignore it).
struct Case<R> {
    table: &'static str,
    /// A row with every column set.
    row: R,
    /// `row` with some non-key columns changed.
    updated: R,
    insert: fn(&Connection, &R) -> Result<()>,
    update: fn(&Connection, &R) -> Result<usize>,
    /// `get` by the row's primary key.
    get: GetFn<R>,
    /// `delete` by the row's primary key.
    delete: fn(&Connection, &str) -> Result<usize>,
    /// `list_by_*` calls that must return the row.
    lists: Vec<ListFn<R>>,
    /// `get_by_*` calls that must return the row.
    uniques: Vec<GetFn<R>>,
    /// For account-scoped tables: the row's account, another account, and how to move a row to
    /// another account.
    scope: Option<Scope<R>>,
}

fn check<R: Clone + PartialEq + Debug>(conn: &Connection, case: Case<R>) {
    let Case {
        table,
        row,
        updated,
        insert,
        update,
        get,
        delete,
        lists,
        uniques,
        scope,
    } = case;
    let account = scope.map_or("", |(account, _, _)| account);
    assert!(
        !format!("{row:?}").contains("None"),
        "{table}: the test row must set every column: {row:#?}"
    );
    assert_ne!(row, updated, "{table}: the update must change something");

    assert_eq!(get(conn, account).unwrap(), None, "{table}: before insert");
    insert(conn, &row).unwrap_or_else(|e| panic!("{table}: insert: {e}"));
    assert_eq!(
        get(conn, account).unwrap(),
        Some(row.clone()),
        "{table}: get after insert"
    );
    assert!(
        insert(conn, &row).is_err(),
        "{table}: inserting the same key again fails"
    );
    for (i, list) in lists.iter().enumerate() {
        let listed = list(conn, account).unwrap();
        assert!(
            listed.contains(&row),
            "{table}: list helper #{i} returns the row: {listed:#?}"
        );
    }
    for (i, unique) in uniques.iter().enumerate() {
        assert_eq!(
            unique(conn, account).unwrap(),
            Some(row.clone()),
            "{table}: get_by helper #{i}"
        );
    }

    if let Some((_, other, move_to)) = scope {
        assert_eq!(
            get(conn, other).unwrap(),
            None,
            "{table}: get in another account"
        );
        for (i, list) in lists.iter().enumerate() {
            assert!(
                !list(conn, other).unwrap().contains(&row),
                "{table}: list helper #{i} in another account"
            );
        }
        for (i, unique) in uniques.iter().enumerate() {
            assert_eq!(
                unique(conn, other).unwrap(),
                None,
                "{table}: get_by helper #{i} in another account"
            );
        }
        let mut foreign = updated.clone();
        move_to(&mut foreign, other);
        assert_eq!(
            update(conn, &foreign).unwrap(),
            0,
            "{table}: update in another account"
        );
        assert_eq!(
            delete(conn, other).unwrap(),
            0,
            "{table}: delete in another account"
        );
        assert_eq!(
            get(conn, account).unwrap(),
            Some(row.clone()),
            "{table}: the other account's update and delete left the row alone"
        );
    }

    assert_eq!(update(conn, &updated).unwrap(), 1, "{table}: update");
    assert_eq!(
        get(conn, account).unwrap(),
        Some(updated.clone()),
        "{table}: get after update"
    );
    for (i, unique) in uniques.iter().enumerate() {
        assert_eq!(
            unique(conn, account).unwrap(),
            Some(updated.clone()),
            "{table}: get_by helper #{i} after update"
        );
    }

    assert_eq!(delete(conn, account).unwrap(), 1, "{table}: delete");
    assert_eq!(
        get(conn, account).unwrap(),
        None,
        "{table}: get after delete"
    );
    for (i, list) in lists.iter().enumerate() {
        assert!(
            !list(conn, account).unwrap().contains(&updated),
            "{table}: list helper #{i} after delete"
        );
    }
    assert_eq!(delete(conn, account).unwrap(), 0, "{table}: deleting again");
    assert_eq!(
        update(conn, &updated).unwrap(),
        0,
        "{table}: updating a deleted row"
    );
}

/// Builds a [`Case`] from a table's helpers. `key(...)` is the primary key after the account;
/// `lists[...]`/`uniques[...]` name `list_by_*`/`get_by_*` helpers with their arguments after the
/// account; `update: |r| {...}` edits a copy of `row` into the updated row.
macro_rules! case {
    (
        $table:ident,
        scoped($account:expr, $other:expr),
        key($($key:expr),+),
        lists[$($list:ident($($list_arg:expr),*)),*],
        uniques[$($unique:ident($($unique_arg:expr),*)),*],
        row: $row:expr,
        update: |$r:ident| $update:block $(,)?
    ) => {{
        let row: schema::$table::Row = $row;
        let updated = {
            let mut $r = row.clone();
            $update;
            $r
        };
        Case {
            table: schema::$table::TABLE,
            row,
            updated,
            insert: schema::$table::insert,
            update: schema::$table::update,
            get: |c, a| schema::$table::get(c, a, $($key),+),
            delete: |c, a| schema::$table::delete(c, a, $($key),+),
            lists: vec![$({
                let f: ListFn<schema::$table::Row> =
                    |c, a| schema::$table::$list(c, a, $($list_arg),*);
                f
            }),*],
            uniques: vec![$({
                let f: GetFn<schema::$table::Row> =
                    |c, a| schema::$table::$unique(c, a, $($unique_arg),*);
                f
            }),*],
            scope: Some(($account, $other, |r, a| r.account_id = a.to_owned())),
        }
    }};
    (
        $table:ident,
        unscoped,
        key($($key:expr),+),
        lists[$($list:ident($($list_arg:expr),*)),*],
        uniques[$($unique:ident($($unique_arg:expr),*)),*],
        row: $row:expr,
        update: |$r:ident| $update:block $(,)?
    ) => {{
        let row: schema::$table::Row = $row;
        let updated = {
            let mut $r = row.clone();
            $update;
            $r
        };
        Case {
            table: schema::$table::TABLE,
            row,
            updated,
            insert: schema::$table::insert,
            update: schema::$table::update,
            get: |c, _| schema::$table::get(c, $($key),+),
            delete: |c, _| schema::$table::delete(c, $($key),+),
            lists: vec![$({
                let f: ListFn<schema::$table::Row> =
                    |c, _| schema::$table::$list(c, $($list_arg),*);
                f
            }),*],
            uniques: vec![$({
                let f: GetFn<schema::$table::Row> =
                    |c, _| schema::$table::$unique(c, $($unique_arg),*);
                f
            }),*],
            scope: None,
        }
    }};
}

/// One `#[test]` per table (named after it) in `round_trip`, and [`COVERED`] listing the tables.
macro_rules! round_trips {
    ($($table:ident => $case:expr;)*) => {
        mod round_trip {
            use super::*;
            $(
                #[test]
                fn $table() {
                    let (_dir, mut store) = world();
                    check(store.writer(), $case);
                }
            )*
        }

        /// The tables `round_trip` covers.
        const COVERED: &[&str] = &[$(schema::$table::TABLE),*];
    };
}

round_trips! {
    server_config => case!(
        server_config, unscoped, key("test-key"), lists[], uniques[],
        row: server_config::Row { key: "test-key".into(), value: vec![0, 1, 2, 255] },
        update: |r| { r.value = b"changed".to_vec(); },
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
        },
        update: |r| {
            r.ciphertext = vec![7; 41];
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
        },
        update: |r| {
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
        session_events, unscoped, key("event-1"), lists[list_by_session_id("session-1")],
        uniques[get_by_session_id_and_seq("session-1", 1)],
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
}

/// The harness itself catches a helper that ignores the account: a `get` that always reads in
/// account A must fail the scoping check.
#[test]
#[should_panic(expected = "runs: get in another account")]
fn the_round_trip_catches_a_get_that_ignores_the_account() {
    let (_dir, mut store) = world();
    let mut case = case!(
        runs, scoped(A, B), key("run-2"), lists[], uniques[],
        row: run("run-2", A, Some("run-1"), runs::Status::Waiting, runs::Queue::Interactive),
        update: |r| { r.attempt = 2; },
    );
    case.get = |c, _| runs::get(c, A, "run-2");
    check(store.writer(), case);
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
    assert_eq!(tables.len(), 22);
}

// ---------------------------------------------------------------------------------------------
// List order

#[test]
fn list_helpers_return_rows_in_index_order_then_by_primary_key() {
    let (_dir, mut store) = world();
    let conn = store.writer();

    // agents_by_account (account_id, updated_at DESC): agent-1 has updated_at T + 12.
    for (id, updated_at) in [
        ("agent-3", T + 5),
        ("agent-2", T + 100),
        ("agent-0", T + 12),
    ] {
        agents::insert(
            conn,
            &agents::Row {
                updated_at,
                ..agent(id, A)
            },
        )
        .unwrap();
    }
    let order: Vec<String> = agents::list_by_account_id(conn, A)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    assert_eq!(order, ["agent-2", "agent-0", "agent-1", "agent-3"]);

    // runs_dispatch (status, queue, not_before, created_at): NULL not_before first (SQLite
    // sorts NULL lowest), then by time, ties by primary key.
    for (id, not_before) in [
        ("run-c", Some(T + 1)),
        ("run-b", Some(T + 2)),
        ("run-a", Some(T + 2)),
        ("run-z", None),
    ] {
        let row = runs::Row {
            not_before,
            ..run(id, A, None, runs::Status::Queued, runs::Queue::Background)
        };
        runs::insert(conn, &row).unwrap();
    }
    let order: Vec<String> =
        runs::list_by_status_and_queue(conn, A, runs::Status::Queued, runs::Queue::Background)
            .unwrap()
            .into_iter()
            .map(|row| row.id)
            .collect();
    assert_eq!(order, ["run-z", "run-c", "run-a", "run-b"]);
    assert_eq!(
        runs::list_by_status_and_queue(conn, A, runs::Status::Queued, runs::Queue::Interactive)
            .unwrap(),
        vec![]
    );
}

// ---------------------------------------------------------------------------------------------
// Nullable columns

/// The columns of `table` that SQL lets be NULL (primary-key columns excluded).
fn nullable_columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(r#"SELECT name FROM pragma_table_info(?1) WHERE "notnull" = 0 AND pk = 0"#)
        .unwrap();
    let rows = stmt.query_map([table], |row| row.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// Asserts that every nullable column of the row `id` of `table` holds SQL NULL.
fn assert_all_null(conn: &Connection, table: &str, id: &str, expected: usize) {
    let columns = nullable_columns(conn, table);
    assert_eq!(
        columns.len(),
        expected,
        "{table}: nullable columns {columns:?}"
    );
    for column in columns {
        let kind: String = conn
            .query_row(
                &format!(r#"SELECT typeof("{column}") FROM "{table}" WHERE id = ?1"#),
                [id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(kind, "null", "{table}.{column}");
    }
}

#[test]
fn nullable_columns_are_options_that_round_trip_none() {
    let (_dir, mut store) = world();
    let conn = store.writer();

    let bare_run = runs::Row {
        id: "run-bare".into(),
        account_id: A.into(),
        root_run_id: "run-bare".into(),
        parent_run_id: None,
        parent_tool_call_id: None,
        continued_from_run_id: None,
        depth: 0,
        kind: runs::Kind::Workflow,
        agent_id: None,
        session_id: None,
        trigger_firing_id: None,
        origin: runs::Origin::User,
        title: None,
        model: None,
        source_cid: None,
        source_text: None,
        input_cbor: enc(&RunInput::default()),
        output_cbor: None,
        error_cbor: None,
        status: runs::Status::Queued,
        wait_cbor: None,
        attempt: 0,
        max_attempts: 1,
        not_before: None,
        queue: runs::Queue::Background,
        lease_owner: None,
        lease_expires_at: None,
        budget_cbor: None,
        usage_cbor: None,
        plan_cbor: None,
        created_at: T,
        started_at: None,
        finished_at: None,
        updated_at: T,
    };
    runs::insert(conn, &bare_run).unwrap();
    assert_eq!(runs::get(conn, A, "run-bare").unwrap(), Some(bare_run));
    assert_all_null(conn, "runs", "run-bare", 21);

    let bare_session = sessions::Row {
        id: "session-bare".into(),
        account_id: A.into(),
        agent_id: "agent-1".into(),
        title: None,
        title_source: sessions::TitleSource::System,
        status: sessions::Status::Idle,
        parent_session_id: None,
        run_id: None,
        plan_cbor: None,
        model_override_cbor: None,
        description: None,
        thoroughness: None,
        message_at: None,
        message_from: None,
        created_at: T,
        updated_at: T,
    };
    sessions::insert(conn, &bare_session).unwrap();
    assert_eq!(
        sessions::get(conn, A, "session-bare").unwrap(),
        Some(bare_session.clone())
    );
    assert_all_null(conn, "sessions", "session-bare", 9);

    // And back: a set value is cleared to NULL by update.
    let full = session("session-full", A, "agent-1", Some("session-1"));
    sessions::insert(conn, &full).unwrap();
    let cleared = sessions::Row {
        id: "session-full".into(),
        ..bare_session
    };
    assert_eq!(sessions::update(conn, &cleared).unwrap(), 1);
    assert_eq!(
        sessions::get(conn, A, "session-full").unwrap(),
        Some(cleared)
    );
    assert_all_null(conn, "sessions", "session-full", 9);

    let bare_agent = agents::Row {
        activity_at: None,
        activity_kind: None,
        message_at: None,
        message_from: None,
        activity_session_id: None,
        ..agent("agent-bare", A)
    };
    agents::insert(conn, &bare_agent).unwrap();
    assert_eq!(
        agents::get(conn, A, "agent-bare").unwrap(),
        Some(bare_agent)
    );
    assert_all_null(conn, "agents", "agent-bare", 5);
}

// ---------------------------------------------------------------------------------------------
// Stored values outside an enum's set or a bool

#[test]
fn an_unknown_enum_value_is_a_typed_error() {
    let (_dir, mut store) = world();
    let conn = store.writer();
    conn.execute("UPDATE runs SET status = 'exploded' WHERE id = 'run-1'", ())
        .unwrap();

    let unknown = |result: Result<_>| match result {
        Err(Error::UnknownEnumValue {
            table,
            column,
            value,
        }) => (table, column, value),
        other => panic!("expected UnknownEnumValue, got {other:?}"),
    };
    let expected = ("runs", "status", "exploded".to_owned());
    assert_eq!(unknown(runs::get(conn, A, "run-1").map(drop)), expected);
    assert_eq!(
        unknown(runs::list_by_account_id(conn, A).map(drop)),
        expected
    );
    // Other accounts' reads do not touch the row.
    assert_eq!(runs::list_by_account_id(conn, B).unwrap(), vec![]);
    // The message names the table, column and value.
    let message = runs::get(conn, A, "run-1").unwrap_err().to_string();
    assert!(message.contains("runs.status"), "{message}");
    assert!(message.contains("exploded"), "{message}");

    // A nullable enum column is checked the same way; NULL stays None.
    conn.execute(
        "UPDATE sessions SET thoroughness = 'Deep' WHERE id = 'session-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        unknown(sessions::get(conn, A, "session-1").map(drop)),
        ("sessions", "thoroughness", "Deep".to_owned())
    );
    conn.execute(
        "UPDATE sessions SET thoroughness = NULL WHERE id = 'session-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        sessions::get(conn, A, "session-1")
            .unwrap()
            .unwrap()
            .thoroughness,
        None
    );

    // Values are case-sensitive, exactly as schema.sql declares them.
    account_authorizations::insert(
        conn,
        &account_authorizations::Row {
            account_id: A.into(),
            signer_id: "signer-1".into(),
            role: account_authorizations::Role::Owner,
            capability: None,
            capability_cid: None,
            created_at: T,
        },
    )
    .unwrap();
    let stored: String = conn
        .query_row(
            "SELECT role FROM account_authorizations WHERE signer_id = 'signer-1'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(stored, "OWNER");
    conn.execute("UPDATE account_authorizations SET role = 'owner'", ())
        .unwrap();
    assert_eq!(
        unknown(account_authorizations::get(conn, A, "signer-1").map(drop)),
        ("account_authorizations", "role", "owner".to_owned())
    );
}

#[test]
fn a_bool_column_outside_0_and_1_is_a_typed_error() {
    let (_dir, mut store) = world();
    let conn = store.writer();
    let stored: (i64, i64) = conn
        .query_row(
            "SELECT public_read, public_chat FROM agents WHERE id = 'agent-1'",
            (),
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored, (1, 0), "bools are stored as 1 and 0");

    conn.execute("UPDATE agents SET public_read = 7 WHERE id = 'agent-1'", ())
        .unwrap();
    let invalid = |result: Result<()>| match result {
        Err(Error::InvalidBool {
            table,
            column,
            value,
        }) => (table, column, value),
        other => panic!("expected InvalidBool, got {other:?}"),
    };
    assert_eq!(
        invalid(agents::get(conn, A, "agent-1").map(drop)),
        ("agents", "public_read", 7)
    );
    assert_eq!(
        invalid(agents::list_by_account_id(conn, A).map(drop)),
        ("agents", "public_read", 7)
    );

    conn.execute(
        "UPDATE agent_triggers SET enabled = -1 WHERE id = 'trigger-1'",
        (),
    )
    .unwrap();
    assert_eq!(
        invalid(agent_triggers::get(conn, A, "trigger-1").map(drop)),
        ("agent_triggers", "enabled", -1)
    );
}

// ---------------------------------------------------------------------------------------------
// CBOR columns

#[test]
fn cbor_columns_round_trip_canonical_dag_cbor() {
    let (_dir, mut store) = world();
    let conn = store.writer();

    // sessions.plan_cbor: RunPlan. Keys sorted length-first, then bytewise within a length:
    // plan {"steps"(5), "title"(5), "settledAt"(9)} and step {"id"(2), "label"(5), "status"(6),
    // "resolvedBy"(10)}: neither declaration order nor plain bytewise order.
    let value = RunPlan {
        title: Some("t".into()),
        steps: vec![RunPlanStep {
            id: "s1".into(),
            label: "go".into(),
            status: RunPlanStepStatus::Done,
            resolved_by: None,
            extra: OpenMap::new(),
        }],
        settled_at: None,
        extra: OpenMap::new(),
    };
    let expected: Vec<u8> = [
        &b"\xa2"[..],          // map(2): absent optionals are left out
        b"\x65steps",          // text(5) "steps"
        b"\x81",               //   array(1)
        b"\xa3",               //     map(3)
        b"\x62id\x62s1",       //       "id": "s1"
        b"\x65label\x62go",    //       "label": "go"
        b"\x66status\x64done", //       "status": "done"
        b"\x65title\x61t",     // "title": "t"
    ]
    .concat();
    let row = sessions::Row {
        plan_cbor: Some(Cbor::encode(&value).unwrap()),
        ..session("session-2", A, "agent-1", None)
    };
    sessions::insert(conn, &row).unwrap();
    let raw: Vec<u8> = conn
        .query_row(
            "SELECT plan_cbor FROM sessions WHERE id = 'session-2'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(raw, expected, "stored bytes");
    let back = sessions::get(conn, A, "session-2").unwrap().unwrap();
    let plan_cbor = back.plan_cbor.expect("plan_cbor is set");
    assert_eq!(plan_cbor.as_bytes(), expected.as_slice());
    assert_eq!(plan_cbor.decode().unwrap(), value);

    // model_providers.config_cbor: ModelProviderConfig, with an unknown field kept in `extra`.
    // Keys by length: "z"(1), "type"(4), "baseUrl"(7), "secretRefs"(10), "modelDefaults"(13);
    // declared as type, modelDefaults, secretRefs, baseUrl, with the flattened "z" last.
    let config = ModelProviderConfig {
        base_url: Some("http://h".into()),
        secret_refs: Some([("apiKey".to_owned(), "key1".to_owned())].into()),
        extra: open([("z", Ipld::Integer(1))]),
        ..ModelProviderConfig::new("openai")
    };
    let expected: Vec<u8> = [
        &b"\xa4"[..],               // map(4): the absent modelDefaults is left out
        b"\x61z\x01",               // "z": 1
        b"\x64type\x66openai",      // "type": "openai"
        b"\x67baseUrl\x68http://h", // "baseUrl": "http://h"
        b"\x6asecretRefs\xa1",      // "secretRefs": map(1)
        b"\x66apiKey\x64key1",      //   "apiKey": "key1"
    ]
    .concat();
    let provider = model_providers::Row {
        id: "provider-1".into(),
        account_id: A.into(),
        name: "openai-main".into(),
        r#type: "openai".into(),
        config_cbor: Cbor::encode(&config).unwrap(),
        created_at: T,
        updated_at: T,
    };
    model_providers::insert(conn, &provider).unwrap();
    let raw: Vec<u8> = conn
        .query_row(
            "SELECT config_cbor FROM model_providers WHERE id = 'provider-1'",
            (),
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(raw, expected, "stored bytes");
    let back = model_providers::get_by_name(conn, A, "openai-main")
        .unwrap()
        .unwrap();
    assert_eq!(back.config_cbor.as_bytes(), expected.as_slice());
    assert_eq!(back.config_cbor.decode().unwrap(), config);
    assert_eq!(back, provider);

    // Reading a row never fails because of its payload: non-canonical bytes (the same map with
    // "type" after "baseUrl") come back as stored, and only decode() refuses them.
    let unsorted: Vec<u8> = [
        &b"\xa2"[..],
        b"\x67baseUrl\x68http://h",
        b"\x64type\x66openai",
    ]
    .concat();
    conn.execute(
        "UPDATE model_providers SET config_cbor = ?1 WHERE id = 'provider-1'",
        [&unsorted],
    )
    .unwrap();
    let back = model_providers::get(conn, A, "provider-1")
        .unwrap()
        .unwrap();
    assert_eq!(back.config_cbor.as_bytes(), unsorted.as_slice());
    assert!(
        matches!(
            back.config_cbor.decode(),
            Err(CborError::NonCanonical { .. })
        ),
        "{:?}",
        back.config_cbor.decode()
    );

    // A CBOR column holding something other than a BLOB is an SQLite type error, not a panic.
    conn.execute(
        "UPDATE model_providers SET config_cbor = 'text' WHERE id = 'provider-1'",
        (),
    )
    .unwrap();
    assert!(matches!(
        model_providers::get(conn, A, "provider-1"),
        Err(Error::Sqlite(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// sea-query identifiers

/// Binds sea-query's values for rusqlite (the kinds this test uses).
fn bind(values: &sea_query::Values) -> Vec<rusqlite::types::Value> {
    values
        .iter()
        .map(|value| match value {
            sea_query::Value::String(Some(text)) => rusqlite::types::Value::Text(text.clone()),
            sea_query::Value::BigInt(Some(n)) => rusqlite::types::Value::Integer(*n),
            other => panic!("unexpected value {other:?}"),
        })
        .collect()
}

fn ids(conn: &Connection, sql: &str, params: &[rusqlite::types::Value]) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |row| row.get(0))
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

#[test]
fn sea_query_columns_build_statements_sqlite_runs() {
    let (_dir, mut store) = world();
    let conn = store.writer();
    for (id, account, status) in [
        ("run-q2", A, runs::Status::Queued),
        ("run-q1", A, runs::Status::Queued),
        ("run-w", A, runs::Status::Waiting),
        ("run-qb", B, runs::Status::Queued),
    ] {
        let row = run(id, account, None, status, runs::Queue::Background);
        runs::insert(conn, &row).unwrap();
    }

    // Inline values.
    let sql = Query::select()
        .columns([runs::Column::Id])
        .from(runs::Column::Table)
        .and_where(Expr::col(runs::Column::Status).eq(runs::Status::Queued.as_str()))
        .and_where(Expr::col(runs::Column::AccountId).eq(A))
        .order_by(runs::Column::Id, Order::Asc)
        .to_string(SqliteQueryBuilder);
    assert_eq!(
        sql,
        r#"SELECT "id" FROM "runs" WHERE "status" = 'queued' AND "account_id" = 'acct-a' ORDER BY "id" ASC"#
    );
    assert_eq!(ids(conn, &sql, &[]), ["run-q1", "run-q2"]);
    let mut listed: Vec<String> = runs::list_by_status(conn, A, runs::Status::Queued)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    listed.sort();
    assert_eq!(listed, ["run-q1", "run-q2"], "agrees with list_by_status");

    // Bound values, and a column named by an SQL keyword (`model_providers.type`).
    model_providers::insert(
        conn,
        &model_providers::Row {
            id: "provider-1".into(),
            account_id: A.into(),
            name: "openai-main".into(),
            r#type: "openai".into(),
            config_cbor: enc(&ModelProviderConfig::new("openai")),
            created_at: T,
            updated_at: T,
        },
    )
    .unwrap();
    let (sql, values) = Query::select()
        .columns([model_providers::Column::Id, model_providers::Column::Type])
        .from(model_providers::Column::Table)
        .and_where(Expr::col(model_providers::Column::Type).eq("openai"))
        .and_where(Expr::col(model_providers::Column::CreatedAt).gte(T))
        .build(SqliteQueryBuilder);
    assert_eq!(
        sql,
        r#"SELECT "id", "type" FROM "model_providers" WHERE "type" = ? AND "created_at" >= ?"#
    );
    assert_eq!(ids(conn, &sql, &bind(&values)), ["provider-1"]);

    // A write: the generated helpers see what a sea-query UPDATE did.
    let (sql, values) = Query::update()
        .table(runs::Column::Table)
        .value(runs::Column::Status, runs::Status::Canceled.as_str())
        .value(runs::Column::UpdatedAt, T + 500)
        .and_where(Expr::col(runs::Column::Id).eq("run-q1"))
        .and_where(Expr::col(runs::Column::AccountId).eq(A))
        .build(SqliteQueryBuilder);
    let changed = conn
        .execute(&sql, rusqlite::params_from_iter(bind(&values)))
        .unwrap();
    assert_eq!(changed, 1);
    let row = runs::get(conn, A, "run-q1").unwrap().unwrap();
    assert_eq!(row.status, runs::Status::Canceled);
    assert_eq!(row.updated_at, T + 500);

    // Column::Table names the table in a FROM clause.
    let sql = Query::select()
        .expr(Expr::cust("count(*)"))
        .from(sessions::Column::Table)
        .to_string(SqliteQueryBuilder);
    assert_eq!(sql, r#"SELECT count(*) FROM "sessions""#);
    let count: i64 = conn.query_row(&sql, (), |row| row.get(0)).unwrap();
    assert_eq!(count, 2);
    assert_eq!(runs::Column::Status.name(), "status");
    assert_eq!(model_providers::Column::Type.name(), "type");
    assert_eq!(runs::Column::Table.name(), runs::TABLE);
}

// ---------------------------------------------------------------------------------------------
// Enums from text

#[test]
fn enums_parse_from_their_stored_text_and_name_the_column_otherwise() {
    for status in runs::Status::ALL {
        assert_eq!(status.as_str().parse::<runs::Status>().unwrap(), *status);
    }
    let Err(Error::Invalid { field, reason }) = "exploded".parse::<runs::Status>() else {
        panic!("a value outside the set must be Error::Invalid");
    };
    assert_eq!(field, "status");
    assert!(
        reason.starts_with("\"exploded\" must be one of: "),
        "{reason}"
    );
    for status in runs::Status::ALL {
        assert!(reason.contains(status.as_str()), "{reason} lists {status}");
    }
    assert!(
        "Queued".parse::<runs::Status>().is_err(),
        "the stored text is case-sensitive"
    );
}

#[test]
fn a_listing_built_at_run_time_selects_every_column_and_decodes_rows() {
    let (_dir, mut store) = world();
    let conn = store.writer();
    for (id, status) in [
        ("run-q3", runs::Status::Queued),
        ("run-q1", runs::Status::Queued),
        ("run-w", runs::Status::Waiting),
        ("run-q2", runs::Status::Queued),
    ] {
        runs::insert(conn, &run(id, A, None, status, runs::Queue::Background)).unwrap();
    }
    // A filter, a sort and a page chosen at run time; the enum binds as its stored text.
    let page = |after: &str| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .and_where(Expr::col(runs::Column::Status).eq(runs::Status::Queued))
            .and_where(Expr::col(runs::Column::Id).gt(after))
            .order_by(runs::Column::Id, Order::Asc)
            .limit(2)
            .to_string(SqliteQueryBuilder)
    };
    let read = |sql: &str| -> Vec<runs::Row> {
        let mut stmt = conn.prepare(sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut out = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            out.push(runs::Row::from_row(row).unwrap());
        }
        out
    };
    let first = read(&page(""));
    assert_eq!(
        first.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["run-q1", "run-q2"]
    );
    assert_eq!(
        first[0],
        runs::get(conn, A, "run-q1").unwrap().unwrap(),
        "Column::ALL selects every column in the order from_row reads"
    );
    let second = read(&page(&first[1].id));
    assert_eq!(
        second.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["run-q3"]
    );
    assert_eq!(runs::Column::ALL.len(), runs::COLUMNS.len());
}
