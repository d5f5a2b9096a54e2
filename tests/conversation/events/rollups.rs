//! Rollups: what an append updates beside the Log.

use super::*;

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
