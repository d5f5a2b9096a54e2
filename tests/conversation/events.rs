//! The Log: seq allocation (contiguous, across threads and across processes), the activity
//! rollups, replay after a seq, and the event payloads against hand-built canonical DAG-CBOR.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use seed_agents_store::agents::NewAgent;
use seed_agents_store::cbor;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::events::event_actor;
use seed_agents_store::payload::*;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, Store};

const A: &str = "acct-a";
const T: i64 = 1_764_000_000_000;

fn store_at(path: &Path) -> (Store, ManualClock) {
    let clock = ManualClock::new(T);
    let store = Store::open_with_clock(path, Arc::new(clock.clone())).unwrap();
    (store, clock)
}

/// A store with one agent and one top-level session; returns (store, clock, agent, session).
fn fixture(path: &Path) -> (Store, ManualClock, String, String) {
    let (store, clock) = store_at(path);
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: path.with_extension("agent").display().to_string(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let session = store
        .create_session(
            A,
            &NewSession {
                agent_id: agent.id.clone(),
                ..NewSession::default()
            },
        )
        .unwrap();
    (store, clock, agent.id, session.id)
}

fn message(role: MessageRole, content: &str, actor: Option<SessionActor>) -> SessionEventPayload {
    MessageEvent {
        actor,
        ..MessageEvent::new(role, content)
    }
    .into()
}

fn tool_call(id: &str) -> SessionEventPayload {
    SessionEventPayload::ToolCall(ToolCallEvent {
        id: id.into(),
        name: "read".into(),
        input: Ipld::Map(BTreeMap::new()),
        actor: None,
        extra: OpenMap::new(),
    })
}

fn seqs(store: &Store, session: &str) -> Vec<i64> {
    store
        .events_after(A, session, 0, None)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Seq allocation

#[test]
fn seq_is_contiguous_from_one_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, agent, s1) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    let s2 = store
        .create_session(
            A,
            &NewSession {
                agent_id: agent,
                ..NewSession::default()
            },
        )
        .unwrap()
        .id;
    for i in 0..3 {
        assert_eq!(
            store.append_event(A, &s1, &tool_call("c")).unwrap().seq,
            i + 1
        );
    }
    assert_eq!(store.append_event(A, &s2, &tool_call("c")).unwrap().seq, 1);
    assert_eq!(seqs(&store, &s1), [1, 2, 3]);
    assert_eq!(seqs(&store, &s2), [1]);
}

/// An unknown field is kept, but one that would shadow a typed field (the key written twice) is
/// refused before anything is written, in `meta` too.
#[test]
fn an_event_whose_unknown_fields_shadow_its_own_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    let SessionEventPayload::Message(mut kept) = message(MessageRole::User, "hi", None) else {
        unreachable!()
    };
    kept.extra.insert("later".into(), Ipld::Integer(1));
    let kept = SessionEventPayload::Message(kept);
    store.append_event(A, &session, &kept).unwrap();
    let stored = store.events_after(A, &session, 0, None).unwrap();
    assert_eq!(stored[0].event_cbor.decode().unwrap(), kept);

    let SessionEventPayload::Message(mut shadowing) = message(MessageRole::User, "hi", None) else {
        unreachable!()
    };
    shadowing
        .extra
        .insert("role".into(), Ipld::String("tool".into()));
    let mut in_meta = shadowing.clone();
    in_meta.extra.clear();
    in_meta.meta = Some(SessionEventMeta {
        model: Some("m".into()),
        extra: BTreeMap::from([("model".into(), Ipld::Null)]),
        ..SessionEventMeta::default()
    });
    for event in [shadowing, in_meta] {
        let err = store
            .append_event(A, &session, &SessionEventPayload::Message(event))
            .unwrap_err();
        assert!(matches!(err, Error::Cbor(_)), "{err:?}");
    }
    assert_eq!(store.events_after(A, &session, 0, None).unwrap().len(), 1);
}

#[test]
fn appending_to_an_unknown_session_is_not_found_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, _) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    let err = store.append_event(A, "nope", &tool_call("c")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "session",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(store.events_after(A, "nope", 0, None).unwrap().is_empty());
}

#[test]
fn the_events_of_a_turn_are_appended_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    store
        .append_event(A, &session, &tool_call("before"))
        .unwrap();
    let turn = [
        tool_call("c1"),
        ToolResultEvent::output("c1", "read", Ipld::String("text".into())).into(),
        message(MessageRole::Assistant, "done", None),
    ];
    let appended = store.append_events(A, &session, &turn).unwrap();
    assert_eq!(
        appended.iter().map(|a| a.seq).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    let stored = store.events_after(A, &session, 1, None).unwrap();
    assert_eq!(stored.len(), 3);
    for (row, (event, a)) in stored.iter().zip(turn.iter().zip(&appended)) {
        assert_eq!(row.id, a.id);
        assert_eq!(&row.event_cbor.decode().unwrap(), event);
    }
    // The rollups moved as for the last event, an assistant message.
    let s = store.session(A, &session).unwrap().unwrap();
    assert_eq!(s.message_from.as_deref(), Some("agent"));

    // Another account's session: not found, and nothing of the turn is written.
    let err = store
        .append_events("acct-other", &session, &turn)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "session",
                ..
            }
        ),
        "{err:?}"
    );
    // An event with no canonical encoding after good ones: the good ones are not kept either.
    let bad = [
        tool_call("c2"),
        ToolCallEvent::new("c3", "read", Ipld::Float(f64::NAN)).into(),
    ];
    let err = store.append_events(A, &session, &bad).unwrap_err();
    assert!(matches!(err, Error::Cbor(_)), "{err:?}");
    assert_eq!(seqs(&store, &session), [1, 2, 3, 4]);
    let err = store.append_events(A, &session, &[]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Invalid {
                field: "events",
                ..
            }
        ),
        "{err:?}"
    );
}

const PER_WRITER: i64 = 50;

fn assert_contiguous(store: &Store, session: &str, writers: i64) {
    let all = seqs(store, session);
    let expected: Vec<i64> = (1..=writers * PER_WRITER).collect();
    assert_eq!(all, expected, "seqs must be 1..N, none lost or duplicated");
    // Every writer's events are all there (none lost), each with a distinct seq.
    let events = store.events_after(A, session, 0, None).unwrap();
    let mut per_writer = BTreeMap::<String, usize>::new();
    for e in events {
        let SessionEventPayload::ToolCall(call) = e.event_cbor.decode().unwrap() else {
            panic!("not a tool call")
        };
        *per_writer.entry(call.name).or_default() += 1;
    }
    assert_eq!(per_writer.len() as i64, writers);
    assert!(per_writer.values().all(|n| *n as i64 == PER_WRITER));
}

fn append_many(path: &Path, session: &str, writer: &str) {
    append_many_with(&Store::open(path).unwrap(), session, writer, None);
}

/// Appends `PER_WRITER` tool calls of `writer` to `session` of account `A`, each followed by one
/// to `own` (an account and its session), when given.
fn append_many_with(store: &Store, session: &str, writer: &str, own: Option<(&str, &str)>) {
    for i in 0..PER_WRITER {
        let event = SessionEventPayload::ToolCall(ToolCallEvent {
            id: format!("{writer}-{i}"),
            name: writer.into(),
            input: Ipld::Null,
            actor: None,
            extra: OpenMap::new(),
        });
        store.append_event(A, session, &event).unwrap();
        if let Some((account, own_session)) = own {
            store.append_event(account, own_session, &event).unwrap();
        }
    }
}

#[test]
fn four_threads_appending_to_one_session_get_contiguous_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "db.sqlite");
    let (store, _, _, session) = fixture(&path);
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let (path, session) = (path.clone(), session.clone());
            std::thread::spawn(move || append_many(&path, &session, &format!("thread-{w}")))
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_contiguous(&store, &session, 4);
}

#[test]
fn four_threads_appending_through_one_shared_handle_get_contiguous_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "db.sqlite");
    let (store, _, _, session) = fixture(&path);
    std::thread::scope(|s| {
        for w in 0..4 {
            let (store, session) = (store.clone(), &session);
            s.spawn(move || append_many_with(&store, session, &format!("thread-{w}"), None));
        }
    });
    assert_contiguous(&store, &session, 4);
}

/// Child mode of the process test: set by the parent, runs this same test in a child process.
const CHILD_DB: &str = "CONVERSATION_EVENTS_CHILD_DB";
const CHILD_SESSION: &str = "CONVERSATION_EVENTS_CHILD_SESSION";
const CHILD_WRITER: &str = "CONVERSATION_EVENTS_CHILD_WRITER";
/// The child's own account and its session (`account/session`).
const CHILD_OWN: &str = "CONVERSATION_EVENTS_CHILD_OWN";

/// Four processes (four nodes, on PostgreSQL) append to one shared session and, in between, each
/// to a session of an account of its own, so appends of one account race while those of others
/// run beside them: every session's seqs are contiguous.
#[test]
fn four_processes_appending_to_one_session_get_contiguous_seqs() {
    if let Ok(db) = std::env::var(CHILD_DB) {
        let session = std::env::var(CHILD_SESSION).unwrap();
        let writer = std::env::var(CHILD_WRITER).unwrap();
        let own = std::env::var(CHILD_OWN).unwrap();
        let own = own.split_once('/').unwrap();
        append_many_with(&Store::open(&db).unwrap(), &session, &writer, Some(own));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "db.sqlite");
    let (store, _, agent, session) = fixture(&path);
    let definition = store.agent(A, &agent).unwrap().unwrap();
    let own: Vec<(String, String)> = (0..4)
        .map(|w| {
            let account = format!("acct-w{w}");
            let agent = store
                .create_agent(
                    &account,
                    &NewAgent {
                        definition: AgentDefinition::default(),
                        state_dir: format!("{}-{w}", definition.state_dir),
                        public_read: false,
                        public_chat: false,
                    },
                )
                .unwrap();
            let session = store
                .create_session(
                    &account,
                    &NewSession {
                        agent_id: agent.id,
                        ..NewSession::default()
                    },
                )
                .unwrap();
            (account, session.id)
        })
        .collect();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = own
        .iter()
        .enumerate()
        .map(|(w, (account, own_session))| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    &support::child_test!(
                        "four_processes_appending_to_one_session_get_contiguous_seqs"
                    ),
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_DB, &path)
                .env(CHILD_SESSION, &session)
                .env(CHILD_WRITER, format!("process-{w}"))
                .env(CHILD_OWN, format!("{account}/{own_session}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child process failed");
    }
    assert_contiguous(&store, &session, 4);
    for (account, own_session) in &own {
        let seqs: Vec<i64> = store
            .events_after(account, own_session, 0, None)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (1..=PER_WRITER).collect::<Vec<_>>(), "{account}");
    }
}

// ---------------------------------------------------------------------------------------------
// Rollups

/// The rollup columns of the agent and the session.
#[derive(Debug, PartialEq)]
struct Rollup {
    activity_at: Option<i64>,
    activity_kind: Option<String>,
    agent_message_at: Option<i64>,
    agent_message_from: Option<String>,
    activity_session_id: Option<String>,
    session_message_at: Option<i64>,
    session_message_from: Option<String>,
}

fn rollup(store: &Store, agent: &str, session: &str) -> Rollup {
    let a = store.agent(A, agent).unwrap().unwrap();
    let s = store.session(A, session).unwrap().unwrap();
    Rollup {
        activity_at: a.activity_at,
        activity_kind: a.activity_kind,
        agent_message_at: a.message_at,
        agent_message_from: a.message_from,
        activity_session_id: a.activity_session_id,
        session_message_at: s.message_at,
        session_message_from: s.message_from,
    }
}

#[test]
fn rollups_are_null_until_the_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, agent, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    let r = rollup(&store, &agent, &session);
    assert_eq!(r.activity_at, None);
    assert_eq!(r.agent_message_at, None);
    assert_eq!(r.session_message_at, None);
}

#[test]
fn a_user_message_moves_every_rollup_column() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock, agent, session) =
        fixture(&support::backend::location(dir.path(), "db.sqlite"));
    clock.set(T + 5);
    store
        .append_event(A, &session, &message(MessageRole::User, "hi", None))
        .unwrap();
    assert_eq!(
        rollup(&store, &agent, &session),
        Rollup {
            activity_at: Some(T + 5),
            activity_kind: Some("message".into()),
            agent_message_at: Some(T + 5),
            agent_message_from: Some("user".into()),
            activity_session_id: Some(session.clone()),
            session_message_at: Some(T + 5),
            session_message_from: Some("user".into()),
        }
    );
    // The agent's reply moves them again, from the agent.
    clock.set(T + 6);
    store
        .append_event(A, &session, &message(MessageRole::Assistant, "hello", None))
        .unwrap();
    let r = rollup(&store, &agent, &session);
    assert_eq!(r.agent_message_from.as_deref(), Some("agent"));
    assert_eq!(r.session_message_at, Some(T + 6));
}

#[test]
fn tool_activity_moves_only_activity_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock, agent, session) =
        fixture(&support::backend::location(dir.path(), "db.sqlite"));
    clock.set(T + 1);
    store
        .append_event(A, &session, &message(MessageRole::User, "hi", None))
        .unwrap();
    let before = rollup(&store, &agent, &session);
    let spawn = SessionEventPayload::ToolSpawn(ToolSpawnEvent {
        tool_call_id: "c1".into(),
        name: "delegate".into(),
        run_id: "r1".into(),
        session_id: None,
        title: "child".into(),
        actor: None,
        extra: OpenMap::new(),
    });
    let result = SessionEventPayload::ToolResult(ToolResultEvent {
        tool_call_id: "c1".into(),
        name: "delegate".into(),
        output: Some(Ipld::Null),
        error: None,
        actor: None,
        meta: None,
        extra: OpenMap::new(),
    });
    let tool_message = message(MessageRole::Tool, "output", None);
    let error = SessionEventPayload::Error(ErrorEvent {
        message: "boom".into(),
        actor: None,
        extra: OpenMap::new(),
    });
    let system_message = message(MessageRole::Assistant, "notice", Some(SessionActor::System));
    let other = SessionEventPayload::Other(
        [("type".to_string(), Ipld::String("custom".into()))]
            .into_iter()
            .collect(),
    );
    for (i, (event, kind)) in [
        (tool_call("c1"), "tool_call"),
        (spawn, "tool_spawn"),
        (result, "tool_result"),
        (tool_message, "message"),
        (error, "error"),
        (system_message, "message"),
        (other, "custom"),
    ]
    .into_iter()
    .enumerate()
    {
        let at = T + 10 + i as i64;
        clock.set(at);
        store.append_event(A, &session, &event).unwrap();
        let r = rollup(&store, &agent, &session);
        assert_eq!(r.activity_at, Some(at), "{kind}");
        assert_eq!(r.activity_kind.as_deref(), Some(kind));
        assert_eq!(
            (
                r.agent_message_at,
                &r.agent_message_from,
                &r.activity_session_id,
                r.session_message_at,
                &r.session_message_from
            ),
            (
                before.agent_message_at,
                &before.agent_message_from,
                &before.activity_session_id,
                before.session_message_at,
                &before.session_message_from
            ),
            "{kind} must not move message_*"
        );
    }
}

#[test]
fn a_child_sessions_message_moves_only_the_agents_activity() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock, agent, parent) =
        fixture(&support::backend::location(dir.path(), "db.sqlite"));
    let child = store
        .create_session(
            A,
            &NewSession {
                agent_id: agent.clone(),
                parent_session_id: Some(parent.clone()),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id;
    clock.set(T + 1);
    store
        .append_event(A, &parent, &message(MessageRole::User, "hi", None))
        .unwrap();
    clock.set(T + 2);
    store
        .append_event(A, &child, &message(MessageRole::User, "task", None))
        .unwrap();
    store
        .append_event(A, &child, &message(MessageRole::Assistant, "done", None))
        .unwrap();
    let r = rollup(&store, &agent, &child);
    assert_eq!(r.activity_at, Some(T + 2));
    assert_eq!(r.agent_message_at, Some(T + 1));
    assert_eq!(r.activity_session_id.as_deref(), Some(parent.as_str()));
    assert_eq!(r.session_message_at, None, "child session's own message_at");
    assert_eq!(r.session_message_from, None);
}

#[test]
fn a_stamped_trigger_or_user_actor_is_what_message_from_records() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, agent, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    store
        .append_event(
            A,
            &session,
            &message(MessageRole::User, "fired", Some(SessionActor::Trigger)),
        )
        .unwrap();
    assert_eq!(
        rollup(&store, &agent, &session)
            .agent_message_from
            .as_deref(),
        Some("trigger")
    );
}

#[test]
fn the_actor_derives_from_the_shape_when_absent() {
    assert_eq!(
        event_actor(&message(MessageRole::User, "x", None)),
        SessionActor::User
    );
    assert_eq!(
        event_actor(&message(MessageRole::Assistant, "x", None)),
        SessionActor::Agent
    );
    assert_eq!(event_actor(&tool_call("c")), SessionActor::Agent);
    let error = SessionEventPayload::Error(ErrorEvent {
        message: "x".into(),
        actor: None,
        extra: OpenMap::new(),
    });
    assert_eq!(event_actor(&error), SessionActor::System);
    assert_eq!(
        event_actor(&message(
            MessageRole::Assistant,
            "x",
            Some(SessionActor::User)
        )),
        SessionActor::User
    );
}

#[test]
fn every_append_moves_the_sessions_updated_at_but_not_the_agents() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock, agent, session) =
        fixture(&support::backend::location(dir.path(), "db.sqlite"));
    clock.set(T + 100);
    store.append_event(A, &session, &tool_call("c")).unwrap();
    assert_eq!(
        store.session(A, &session).unwrap().unwrap().updated_at,
        T + 100
    );
    assert_eq!(store.agent(A, &agent).unwrap().unwrap().updated_at, T);
}

// ---------------------------------------------------------------------------------------------
// Replay

#[test]
fn replay_returns_events_after_a_seq_ascending_with_an_optional_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    for i in 0..10 {
        store
            .append_event(A, &session, &tool_call(&format!("c{i}")))
            .unwrap();
    }
    let after: Vec<i64> = store
        .events_after(A, &session, 7, None)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(after, [8, 9, 10]);
    let limited: Vec<i64> = store
        .events_after(A, &session, 2, Some(3))
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(limited, [3, 4, 5]);
    assert!(store
        .events_after(A, &session, 10, None)
        .unwrap()
        .is_empty());
    let event = &store.events_after(A, &session, 0, Some(1)).unwrap()[0];
    assert_eq!(event.event_cbor.decode().unwrap(), tool_call("c0"));
    assert!(matches!(
        store.events_after(A, &session, -1, None),
        Err(Error::Invalid {
            field: "after_seq",
            ..
        })
    ));
    assert!(matches!(
        store.events_after(A, &session, 0, Some(0)),
        Err(Error::Invalid { field: "limit", .. })
    ));
}

#[test]
fn an_unknown_event_map_is_stored_and_replayed_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, _, session) = fixture(&support::backend::location(dir.path(), "db.sqlite"));
    // {"x": 1, "type": "future", "nested": {"b": [true]}} written by hand, canonically.
    let bytes = [
        &[0xa3, 0x61, b'x', 0x01][..],
        &[0x64, b't', b'y', b'p', b'e', 0x66][..],
        b"future",
        &[0x66][..],
        b"nested",
        &[0xa1, 0x61, b'b', 0x81, 0xf5][..],
    ]
    .concat();
    let event: SessionEventPayload = cbor::from_slice(&bytes).unwrap();
    assert!(matches!(event, SessionEventPayload::Other(_)));
    store.append_event(A, &session, &event).unwrap();
    let stored = &store.events_after(A, &session, 0, None).unwrap()[0];
    assert_eq!(stored.event_cbor.as_bytes(), &bytes[..]);
}

// ---------------------------------------------------------------------------------------------
// Payloads against hand-built canonical DAG-CBOR

/// A CBOR value as the description's encoder (`@ipld/dag-cbor`) writes it; encoded by hand here,
/// independently of the store's encoder.
enum V {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'static str),
    List(Vec<V>),
    Map(Vec<(&'static str, V)>),
}

fn head(major: u8, n: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend([m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

fn encode(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Null => out.push(0xf6),
        V::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        V::Int(i) if *i >= 0 => head(0, *i as u64, out),
        V::Int(i) => head(1, (-1 - *i) as u64, out),
        V::Str(s) => {
            head(3, s.len() as u64, out);
            out.extend(s.as_bytes());
        }
        V::List(items) => {
            head(4, items.len() as u64, out);
            items.iter().for_each(|i| encode(i, out));
        }
        V::Map(entries) => {
            // DAG-CBOR map order: shorter keys first, then bytewise.
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0)));
            head(5, sorted.len() as u64, out);
            for (k, v) in sorted {
                encode(&V::Str(k), out);
                encode(v, out);
            }
        }
    }
}

fn bytes(v: V) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&v, &mut out);
    out
}

/// Decodes hand-built bytes as `T` and checks that encoding the value gives the same bytes.
fn decodes_and_reencodes<T>(bytes: &[u8]) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let value: T = cbor::from_slice(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cbor::to_vec(&value).unwrap(), bytes, "{value:?}");
    value
}

fn meta_full() -> V {
    V::Map(vec![
        ("accountId", V::Str("acct-a")),
        ("signerId", V::Str("signer-1")),
        ("model", V::Str("m-1")),
        ("provider", V::Str("openai")),
        (
            "usage",
            V::Map(vec![
                ("inputTokens", V::Int(12)),
                ("outputTokens", V::Int(300)),
            ]),
        ),
        ("durationMs", V::Int(70_000)),
        ("reasoningLevel", V::Str("default")),
        ("futureMetaField", V::Bool(true)),
    ])
}

#[test]
fn message_events_decode_description_bytes_and_reencode_them_identically() {
    // Every optional absent, its key left out (the TypeScript encoder writes no undefined).
    let minimal = bytes(V::Map(vec![
        ("type", V::Str("message")),
        ("role", V::Str("user")),
        ("content", V::Str("hello")),
    ]));
    let SessionEventPayload::Message(m) = decodes_and_reencodes(&minimal) else {
        panic!("not a message")
    };
    assert_eq!(m.content, "hello");
    assert_eq!(m.actor, None);
    // Every field present, an unknown one included.
    let full = bytes(V::Map(vec![
        ("type", V::Str("message")),
        ("role", V::Str("assistant")),
        ("content", V::Str("done")),
        ("toolCallId", V::Str("c1")),
        ("rawMarkdown", V::Str("**done**")),
        (
            "blocks",
            V::List(vec![V::Map(vec![("kind", V::Str("text"))])]),
        ),
        ("contextLines", V::List(vec![V::Str("ctx")])),
        (
            "attachments",
            V::List(vec![V::Map(vec![
                ("name", V::Str("a.png")),
                ("size", V::Int(3)),
            ])]),
        ),
        ("actor", V::Str("user")),
        ("meta", meta_full()),
        ("zFuture", V::Int(-5)),
    ]));
    let SessionEventPayload::Message(m) = decodes_and_reencodes(&full) else {
        panic!("not a message")
    };
    assert_eq!(m.actor, Some(SessionActor::User));
    assert_eq!(m.meta.unwrap().duration_ms, Some(70_000));
    assert!(m.extra.contains_key("zFuture"));
}

#[test]
fn tool_and_error_events_decode_description_bytes_and_reencode_them_identically() {
    let call = bytes(V::Map(vec![
        ("type", V::Str("tool_call")),
        ("id", V::Str("c1")),
        ("name", V::Str("read")),
        ("input", V::Map(vec![("path", V::Str("~/memory/a.md"))])),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&call),
        SessionEventPayload::ToolCall(_)
    ));
    let spawn = bytes(V::Map(vec![
        ("type", V::Str("tool_spawn")),
        ("toolCallId", V::Str("c2")),
        ("name", V::Str("delegate")),
        ("runId", V::Str("r-9")),
        ("title", V::Str("research")),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&spawn),
        SessionEventPayload::ToolSpawn(_)
    ));
    // An output of unknown shape keeps an explicit null; the error is a string or absent.
    for (output, error) in [
        (Some(V::List(vec![V::Int(1), V::Null])), None),
        (Some(V::Null), None),
        (None, Some(V::Str("denied"))),
    ] {
        let mut fields = vec![
            ("type", V::Str("tool_result")),
            ("toolCallId", V::Str("c1")),
            ("name", V::Str("read")),
            ("actor", V::Str("user")),
            ("meta", meta_full()),
        ];
        fields.extend(output.map(|o| ("output", o)));
        fields.extend(error.map(|e| ("error", e)));
        let result = bytes(V::Map(fields));
        assert!(matches!(
            decodes_and_reencodes::<SessionEventPayload>(&result),
            SessionEventPayload::ToolResult(_)
        ));
    }
    let error = bytes(V::Map(vec![
        ("type", V::Str("error")),
        ("message", V::Str("provider failed")),
        ("actor", V::Str("system")),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&error),
        SessionEventPayload::Error(_)
    ));
    // Any other map, typed or not, is kept.
    for other in [
        bytes(V::Map(vec![
            ("type", V::Str("handoff")),
            ("to", V::Str("x")),
        ])),
        bytes(V::Map(vec![("note", V::Str("untyped"))])),
    ] {
        assert!(matches!(
            decodes_and_reencodes::<SessionEventPayload>(&other),
            SessionEventPayload::Other(_)
        ));
    }
}

#[test]
fn conversation_payloads_decode_description_bytes_and_reencode_them_identically() {
    // ModelProviderConfig, absent optionals and then all set.
    decodes_and_reencodes::<ModelProviderConfig>(&bytes(V::Map(vec![("type", V::Str("openai"))])));
    decodes_and_reencodes::<ModelProviderConfig>(&bytes(V::Map(vec![
        ("type", V::Str("anthropic")),
        ("modelDefaults", V::Map(vec![("temperature", V::Int(0))])),
        (
            "secretRefs",
            V::Map(vec![("apiKey", V::Str("anthropic-key"))]),
        ),
        ("baseUrl", V::Str("https://api.example")),
        ("organization", V::Str("kept")),
    ])));
    // AgentDefinition: every field but mcpServers is open and kept.
    let def = decodes_and_reencodes::<AgentDefinition>(&bytes(V::Map(vec![
        ("name", V::Str("Helper")),
        ("mcpServers", V::List(vec![V::Str("linear")])),
        ("systemPrompt", V::Str("be brief")),
        (
            "grants",
            V::Map(vec![("tools", V::List(vec![V::Str("read")]))]),
        ),
    ])));
    assert!(def.references_mcp_server("linear"));
    // RunPlan with a runtime-resolved step and settledAt, and without the optionals.
    decodes_and_reencodes::<RunPlan>(&bytes(V::Map(vec![
        ("title", V::Str("Ship it")),
        (
            "steps",
            V::List(vec![
                V::Map(vec![
                    ("id", V::Str("s1")),
                    ("label", V::Str("build")),
                    ("status", V::Str("done")),
                    ("resolvedBy", V::Str("runtime")),
                ]),
                V::Map(vec![
                    ("id", V::Str("s2")),
                    ("label", V::Str("test")),
                    ("status", V::Str("in_progress")),
                ]),
            ]),
        ),
        ("settledAt", V::Int(T)),
    ])));
    decodes_and_reencodes::<RunPlan>(&bytes(V::Map(vec![("steps", V::List(vec![]))])));
    // ModelOverride and SecretMetadata.
    decodes_and_reencodes::<ModelOverride>(&bytes(V::Map(vec![("provider", V::Str("openai"))])));
    decodes_and_reencodes::<SecretMetadata>(&bytes(V::Map(vec![
        ("kind", V::Str("api-key")),
        ("mcpServer", V::Str("linear")),
    ])));
}
