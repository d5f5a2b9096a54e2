//! Seq allocation: contiguous across threads and processes.

use super::*;

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
    let children: Vec<_> = own
        .iter()
        .enumerate()
        .map(|(w, (account, own_session))| {
            support::rerun(&support::child_test!(
                "four_processes_appending_to_one_session_get_contiguous_seqs"
            ))
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
