//! Deleting a session (detach, promote, no cascade) and an agent (the description's full order,
//! one transaction, then the state directory).

use rusqlite::{Connection, OptionalExtension};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::payload::*;
use seed_agents_store::schema::agent_collaborators::Role;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, Store};
use support::backend::open;

const A: &str = "acct-a";
const B: &str = "acct-b";
const T: i64 = 1_764_000_000_000;

fn agent(store: &mut Store, state_dir: &str) -> String {
    store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: state_dir.into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap()
        .id
}

fn session(store: &mut Store, agent: &str, parent: Option<&str>) -> String {
    store
        .create_session(
            A,
            &NewSession {
                agent_id: agent.into(),
                parent_session_id: parent.map(str::to_owned),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id
}

fn event(store: &mut Store, session: &str) {
    store
        .append_event(
            A,
            session,
            &SessionEventPayload::Error(ErrorEvent {
                message: "e".into(),
                actor: None,
                extra: OpenMap::new(),
            }),
        )
        .unwrap();
}

// Rows owned by the execution-state modules, written here by hand with only the required
// columns (an empty CBOR map, 0xa0, stands in for every payload).

/// A plain connection to the store's file for the hand-written rows (the store's own connection
/// is read-only), with foreign keys checked as the store checks them.
fn raw(store: &Store) -> Connection {
    let conn = Connection::open(store.path()).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    conn
}

fn run(conn: &Connection, id: &str, agent: &str, session: Option<&str>, firing: Option<&str>) {
    conn.execute(
        "INSERT INTO runs (id, account_id, root_run_id, kind, agent_id, session_id, \
         trigger_firing_id, origin, input_cbor, status, created_at, updated_at) \
         VALUES (?1, ?2, ?1, 'agent', ?3, ?4, ?5, 'user', x'a0', 'succeeded', ?6, ?6)",
        rusqlite::params![id, A, agent, session, firing, T],
    )
    .unwrap();
}

fn trigger(conn: &Connection, id: &str, agent: &str, merged_into: Option<&str>) {
    conn.execute(
        "INSERT INTO agent_triggers (id, account_id, agent_id, name, enabled, source_cbor, prompt, \
         merged_into, created_at, updated_at) VALUES (?1, ?2, ?3, ?1, 1, x'a0', 'p', ?4, ?5, ?5)",
        rusqlite::params![id, A, agent, merged_into, T],
    )
    .unwrap();
}

fn firing(conn: &Connection, id: &str, agent: &str, trigger: &str, session: Option<&str>) {
    conn.execute(
        "INSERT INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, \
         session_id, activity_cbor, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?1, ?5, x'a0', 'started', ?6)",
        rusqlite::params![id, A, agent, trigger, session, T],
    )
    .unwrap();
}

fn count(conn: &Connection, sql: &str, id: &str) -> i64 {
    conn.query_row(sql, [id], |r| r.get(0)).unwrap()
}

fn column(conn: &Connection, sql: &str, id: &str) -> Option<String> {
    conn.query_row(sql, [id], |r| r.get::<_, Option<String>>(0))
        .optional()
        .unwrap()
        .flatten()
}

#[test]
fn deleting_a_session_detaches_runs_and_firings_and_promotes_children() {
    if support::backend::skip_on_postgres(
        "deleting_a_session_detaches_runs_and_firings_and_promotes_children",
        "it arranges and reads rows through a raw SQLite connection",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let a = agent(&mut store, "/d/a");
    let parent = session(&mut store, &a, None);
    let child = session(&mut store, &a, Some(&parent));
    event(&mut store, &parent);
    event(&mut store, &parent);
    event(&mut store, &child);
    let conn = &raw(&store);
    trigger(conn, "t1", &a, None);
    firing(conn, "f1", &a, "t1", Some(&parent));
    run(conn, "r1", &a, Some(&parent), Some("f1"));

    store.delete_session(A, &parent).unwrap();
    let conn = &store.conn().unwrap();
    assert!(store.session(A, &parent).unwrap().is_none());
    let promoted = store.session(A, &child).unwrap().unwrap();
    assert_eq!(promoted.parent_session_id, None);
    assert_eq!(
        count(
            conn,
            "SELECT count(*) FROM session_events WHERE session_id = ?1",
            &parent
        ),
        0
    );
    assert_eq!(store.events_after(A, &child, 0, None).unwrap().len(), 1);
    assert_eq!(
        column(conn, "SELECT session_id FROM runs WHERE id = ?1", "r1"),
        None
    );
    assert_eq!(
        column(
            conn,
            "SELECT trigger_firing_id FROM runs WHERE id = ?1",
            "r1"
        ),
        Some("f1".into()),
        "the run keeps the rest of its history"
    );
    assert_eq!(
        column(
            conn,
            "SELECT session_id FROM trigger_firings WHERE id = ?1",
            "f1"
        ),
        None
    );
    assert!(matches!(
        store.delete_session(A, &parent),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_session(B, &child),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn deleting_an_agent_removes_what_it_owns_detaches_history_and_its_state_dir() {
    if support::backend::skip_on_postgres(
        "deleting_an_agent_removes_what_it_owns_detaches_history_and_its_state_dir",
        "it arranges and reads rows through a raw SQLite connection",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let state_dir = dir.path().join("agents").join("x");
    std::fs::create_dir_all(state_dir.join("memory")).unwrap();
    std::fs::write(state_dir.join("memory").join("notes.md"), "remember").unwrap();
    let x = agent(&mut store, &state_dir.display().to_string());
    let y = agent(&mut store, "/d/y");
    let sx1 = session(&mut store, &x, None);
    let sx2 = session(&mut store, &x, Some(&sx1));
    let sy1 = session(&mut store, &y, Some(&sx1)); // a foreign child
    for s in [&sx1, &sx2, &sy1] {
        event(&mut store, s);
    }
    store.invite_collaborator(A, &x, B, Role::Reader).unwrap();
    store.invite_collaborator(A, &y, B, Role::Reader).unwrap();
    let conn = &raw(&store);
    trigger(conn, "tx", &x, None);
    trigger(conn, "ty", &y, Some("tx"));
    firing(conn, "fx", &x, "tx", Some(&sx1));
    firing(conn, "fy", &y, "ty", Some(&sx2));
    run(conn, "rx", &x, Some(&sx2), Some("fx"));
    run(conn, "ry", &y, Some(&sy1), Some("fy"));
    conn.execute(
        "INSERT INTO trigger_event_claims (account_id, trigger_id, activity_key, firing_id, \
         created_at) VALUES (?1, 'tx', 'k', 'fx', ?2)",
        rusqlite::params![A, T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO secret_keys (id, provider, created_at) VALUES (1, 'database', ?1)",
        rusqlite::params![T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO webhook_trigger_credentials (trigger_id, account_id, secret_hash, \
         secret_ciphertext, created_at, updated_at, key_id) \
         VALUES ('tx', ?1, 'h', x'00', ?2, ?2, 1)",
        rusqlite::params![A, T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO agent_drafts (id, account_id, agent_id, content_format, content_cbor, \
         status, created_at, updated_at) VALUES ('dx', ?1, ?2, 'markdown', x'a0', 'draft', ?3, ?3)",
        rusqlite::params![A, x, T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO tool_documents (account_id, agent_id, name, kind, cid, doc_cbor, created_at, \
         updated_at) VALUES (?1, ?2, 'read', 'builtin', 'bafy', x'a0', ?3, ?3)",
        rusqlite::params![A, x, T],
    )
    .unwrap();

    let deletion = store.delete_agent(A, &x).unwrap();
    assert_eq!(deletion.sessions, 2);
    assert!(!state_dir.exists(), "state_dir removed after the commit");
    let conn = &store.conn().unwrap();
    let gone = |sql: &str, id: &str| assert_eq!(count(conn, sql, id), 0, "{sql}");
    gone("SELECT count(*) FROM agents WHERE id = ?1", &x);
    gone("SELECT count(*) FROM sessions WHERE agent_id = ?1", &x);
    gone(
        "SELECT count(*) FROM session_events WHERE session_id = ?1",
        &sx1,
    );
    gone(
        "SELECT count(*) FROM session_events WHERE session_id = ?1",
        &sx2,
    );
    gone(
        "SELECT count(*) FROM agent_triggers WHERE agent_id = ?1",
        &x,
    );
    gone(
        "SELECT count(*) FROM trigger_firings WHERE agent_id = ?1",
        &x,
    );
    gone(
        "SELECT count(*) FROM trigger_event_claims WHERE trigger_id = ?1",
        "tx",
    );
    gone(
        "SELECT count(*) FROM webhook_trigger_credentials WHERE trigger_id = ?1",
        "tx",
    );
    gone("SELECT count(*) FROM agent_drafts WHERE agent_id = ?1", &x);
    gone(
        "SELECT count(*) FROM tool_documents WHERE agent_id = ?1",
        &x,
    );
    gone(
        "SELECT count(*) FROM agent_collaborators WHERE agent_id = ?1",
        &x,
    );
    // History is detached, not deleted.
    for col in ["agent_id", "session_id", "trigger_firing_id"] {
        assert_eq!(
            column(conn, &format!("SELECT {col} FROM runs WHERE id = ?1"), "rx"),
            None,
            "{col}"
        );
    }
    // The other agent keeps everything, minus its links to what went.
    let foreign = store.session(A, &sy1).unwrap().unwrap();
    assert_eq!(foreign.parent_session_id, None, "foreign child promoted");
    assert_eq!(store.events_after(A, &sy1, 0, None).unwrap().len(), 1);
    assert_eq!(
        column(
            conn,
            "SELECT session_id FROM trigger_firings WHERE id = ?1",
            "fy"
        ),
        None
    );
    assert_eq!(
        column(
            conn,
            "SELECT merged_into FROM agent_triggers WHERE id = ?1",
            "ty"
        ),
        None
    );
    assert_eq!(
        column(conn, "SELECT session_id FROM runs WHERE id = ?1", "ry"),
        Some(sy1.clone())
    );
    assert_eq!(store.collaborators(A, &y).unwrap().len(), 1);
    assert!(matches!(
        store.delete_agent(A, &x),
        Err(Error::NotFound { what: "agent", .. })
    ));
}

#[test]
fn deleting_another_accounts_agent_changes_nothing() {
    if support::backend::skip_on_postgres(
        "deleting_another_accounts_agent_changes_nothing",
        "it arranges and reads rows through a raw SQLite connection",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let x = agent(&mut store, "/d/x");
    let s = session(&mut store, &x, None);
    event(&mut store, &s);
    assert!(matches!(
        store.delete_agent(B, &x),
        Err(Error::NotFound { what: "agent", .. })
    ));
    assert!(store.agent(A, &x).unwrap().is_some());
    assert_eq!(store.events_after(A, &s, 0, None).unwrap().len(), 1);
}

#[test]
fn a_state_dir_that_cannot_be_removed_is_a_typed_error_after_the_committed_delete() {
    if support::backend::skip_on_postgres(
        "a_state_dir_that_cannot_be_removed_is_a_typed_error_after_the_committed_delete",
        "it arranges and reads rows through a raw SQLite connection",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    // A regular file where the directory should be: removal fails with an I/O error.
    let not_a_dir = dir.path().join("state-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let x = agent(&mut store, &not_a_dir.display().to_string());
    session(&mut store, &x, None);
    let err = store.delete_agent(A, &x).unwrap_err();
    let Error::StateDirNotRemoved { agent_id, path, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((agent_id, path), (&x, &not_a_dir));
    assert!(err.to_string().contains("was deleted"), "{err}");
    // The delete committed and stays committed.
    assert!(store.agent(A, &x).unwrap().is_none());
    // A state_dir that is already gone is fine.
    let y = agent(
        &mut store,
        &dir.path().join("never-made").display().to_string(),
    );
    store.delete_agent(A, &y).unwrap();
}

#[test]
fn deleting_an_agent_leaves_none_of_its_runs_claimable_or_waiting() {
    if support::backend::skip_on_postgres(
        "deleting_an_agent_leaves_none_of_its_runs_claimable_or_waiting",
        "it arranges and reads rows through a raw SQLite connection",
    ) {
        return;
    }
    use seed_agents_store::lease::Claim;
    use seed_agents_store::runs::{ClaimLimits, NewRun};
    use seed_agents_store::schema::runs::{Kind, Origin, Status};

    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let doomed = agent(&mut store, dir.path().join("doomed").to_str().unwrap());
    let kept = agent(&mut store, dir.path().join("kept").to_str().unwrap());
    let s = session(&mut store, &doomed, None);
    let turn = |session: &str, agent: &str| {
        let mut run = NewRun::new(A, Kind::Agent, Origin::User, "turn");
        run.agent_id = Some(agent.into());
        run.session_id = Some(session.into());
        run
    };
    let workflow = |agent: &str| {
        let mut run = NewRun::new(A, Kind::Workflow, Origin::Workflow, "script");
        run.agent_id = Some(agent.into());
        run
    };
    // A workflow run parked on an event wait, with a queued child below it.
    let waiting = store.enqueue_run(&workflow(&doomed)).unwrap();
    let claimed = store.claim_run(A, &waiting.id, "w").unwrap().unwrap();
    let mut child = NewRun::new(A, Kind::Workflow, Origin::Workflow, "child");
    child.parent_run_id = Some(waiting.id.clone());
    let child = store.enqueue_run(&child).unwrap();
    let wait = seed_agents_store::payload::RunWaitEvent {
        wait_id: "1".into(),
        timeout_at: None,
        label: None,
        answer_with: None,
        extra: OpenMap::new(),
    };
    let signal = WaitMatch::Signal(WaitMatchSignal {
        signal: "go".into(),
        extra: OpenMap::new(),
    });
    store
        .park_for_event(&Claim::of(&claimed).unwrap(), &wait, &signal)
        .unwrap();
    // A running turn held by a worker, and a queued turn after it.
    let running = store.enqueue_run(&turn(&s, &doomed)).unwrap();
    let queued = store.enqueue_run(&turn(&s, &doomed)).unwrap();
    let worker = store.claim_run(A, &running.id, "w").unwrap().unwrap();
    let worker = Claim::of(&worker).unwrap();
    store.start_run(&worker).unwrap();
    // Another agent's queued run is not touched.
    let other = store.enqueue_run(&workflow(&kept)).unwrap();

    store.delete_agent(A, &doomed).unwrap();

    for id in [&waiting.id, &child.id, &running.id, &queued.id] {
        let row = store.run(A, id).unwrap().unwrap();
        assert_eq!(row.status, Status::Canceled, "{id}");
        assert_eq!((row.wait_cbor, row.lease_owner), (None, None), "{id}");
    }
    assert_eq!(
        count(
            &store.conn().unwrap(),
            "SELECT count(*) FROM run_event_waits WHERE run_id = ?1",
            &waiting.id
        ),
        0
    );
    // Only the other agent's run is left to claim, and the worker's lease is gone.
    let next = store
        .claim_next_run("w2", ClaimLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(next.id, other.id);
    assert!(store
        .claim_next_run("w2", ClaimLimits::default())
        .unwrap()
        .is_none());
    assert!(matches!(
        store.renew_lease(&worker).unwrap_err(),
        Error::LeaseLost { .. }
    ));
}
