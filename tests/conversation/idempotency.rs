//! Request idempotency: replay on identical bytes, conflict on different bytes, scope per
//! (account, action), client id rules, the create-and-record transaction and the MessageSession
//! form.

use std::cell::Cell;

use seed_agents_store::agents::{self, NewAgent};
use seed_agents_store::idempotency::{Action, Outcome};
use seed_agents_store::payload::*;
use seed_agents_store::schema::{action_idempotency, agents as agent_rows};
use seed_agents_store::sessions::{self, NewSession};
use seed_agents_store::{Error, Store};
use serde::{Deserialize, Serialize};
use support::backend::open;

const A: &str = "acct-a";
const B: &str = "acct-b";

/// A CreateAgent request as the server would hash it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreateAgentRequest<'a> {
    name: &'a str,
    client_request_id: &'a str,
}

/// The response the server returns (and the store replays).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    agent_id: String,
}

fn new_agent() -> NewAgent {
    NewAgent {
        definition: AgentDefinition::default(),
        state_dir: "/d/agent".into(),
        public_read: false,
        public_chat: false,
    }
}

/// Runs CreateAgent under `client_id`, counting how often the action itself runs.
fn create(
    store: &mut Store,
    account: &str,
    action: Action,
    client_id: Option<&str>,
    name: &str,
    runs: &Cell<u32>,
) -> seed_agents_store::Result<Outcome<Created>> {
    let request = CreateAgentRequest {
        name,
        client_request_id: client_id.map_or("", str::trim),
    };
    store.idempotent(account, action, client_id, &request, |tx, now| {
        runs.set(runs.get() + 1);
        let agent = agents::create_agent(tx, now, account, &new_agent())?;
        Ok(Created { agent_id: agent.id })
    })
}

fn agent_count(store: &Store, account: &str) -> usize {
    agent_rows::list_by_account_id(&store.reading().unwrap(), account)
        .unwrap()
        .len()
}

#[test]
fn the_same_id_and_bytes_replays_without_running_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let runs = Cell::new(0);
    let first = create(
        &mut store,
        A,
        Action::CreateAgent,
        Some("req-1"),
        "x",
        &runs,
    )
    .unwrap();
    let Outcome::Fresh(created) = first else {
        panic!("first call must run")
    };
    let second = create(
        &mut store,
        A,
        Action::CreateAgent,
        Some(" req-1 "),
        "x",
        &runs,
    )
    .unwrap();
    assert_eq!(second, Outcome::Replayed(created));
    assert_eq!(runs.get(), 1);
    assert_eq!(agent_count(&store, A), 1);
}

#[test]
fn the_same_id_with_different_bytes_is_a_conflict_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let runs = Cell::new(0);
    create(
        &mut store,
        A,
        Action::CreateAgent,
        Some("req-1"),
        "x",
        &runs,
    )
    .unwrap();
    let err = create(
        &mut store,
        A,
        Action::CreateAgent,
        Some("req-1"),
        "y",
        &runs,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Conflict {
                what: "client request id",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(runs.get(), 1);
    assert_eq!(agent_count(&store, A), 1);
}

#[test]
fn ids_are_scoped_per_account_and_action() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let runs = Cell::new(0);
    for (account, action) in [
        (A, Action::CreateAgent),
        (B, Action::CreateAgent),
        (A, Action::CreateSigningIdentity),
    ] {
        let out = create(&mut store, account, action, Some("same"), "x", &runs).unwrap();
        assert!(!out.is_replayed(), "{account} {action:?}");
    }
    assert_eq!(runs.get(), 3);
    assert_eq!(
        action_idempotency::list_by_account_id(&store.reading().unwrap(), A)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn client_ids_are_trimmed_required_when_present_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path()).0;
    let runs = Cell::new(0);
    for bad in ["", "   ", &"x".repeat(257)] {
        assert!(matches!(
            create(&mut store, A, Action::CreateAgent, Some(bad), "x", &runs),
            Err(Error::Invalid {
                field: "client_request_id",
                ..
            })
        ));
    }
    create(
        &mut store,
        A,
        Action::CreateAgent,
        Some(&"x".repeat(256)),
        "x",
        &runs,
    )
    .unwrap();
    // Without an id, every call runs.
    create(&mut store, A, Action::CreateAgent, None, "x", &runs).unwrap();
    create(&mut store, A, Action::CreateAgent, None, "x", &runs).unwrap();
    assert_eq!(runs.get(), 3);
    assert!(matches!(
        store.idempotent_replay::<_, Created>(A, Action::MessageSession, " ", &"m"),
        Err(Error::Invalid {
            field: "client_message_id",
            ..
        })
    ));
}

#[test]
fn a_failed_create_records_nothing_and_can_be_retried() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).0;
    let err = store
        .idempotent(A, Action::CreateSession, Some("s-1"), &"req", |tx, now| {
            // Fails: the agent does not exist; nothing may be recorded.
            let s = sessions::create_session(
                tx,
                now,
                A,
                &NewSession {
                    agent_id: "missing".into(),
                    ..NewSession::default()
                },
            )?;
            Ok(s.id)
        })
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { what: "agent", .. }));
    assert!(
        action_idempotency::get(&store.reading().unwrap(), A, "CreateSession", "s-1")
            .unwrap()
            .is_none()
    );
    let agent = store.create_agent(A, &new_agent()).unwrap().id;
    let out = store
        .idempotent(A, Action::CreateSession, Some("s-1"), &"req", |tx, now| {
            let s = sessions::create_session(
                tx,
                now,
                A,
                &NewSession {
                    agent_id: agent.clone(),
                    ..NewSession::default()
                },
            )?;
            Ok(s.id)
        })
        .unwrap();
    let Outcome::Fresh(id) = out else {
        panic!("the retry must run")
    };
    assert!(store.session(A, &id).unwrap().is_some());
}

#[test]
fn the_message_session_form_records_only_on_success_under_the_acting_account() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).0;
    let agent = store.create_agent(A, &new_agent()).unwrap().id;
    let session = store
        .create_session(
            A,
            &NewSession {
                agent_id: agent,
                ..NewSession::default()
            },
        )
        .unwrap()
        .id;
    // B (a collaborator) messages A's session.
    let request = ("MessageSession", session.as_str(), "hello");
    let replay: Option<u64> = store
        .idempotent_replay(B, Action::MessageSession, "m-1", &request)
        .unwrap();
    assert_eq!(replay, None);
    // The work happens outside any idempotency transaction; a failure records nothing.
    let seq = store
        .append_event(
            A,
            &session,
            &SessionEventPayload::Error(ErrorEvent {
                message: "placeholder".into(),
                actor: None,
                extra: OpenMap::new(),
            }),
        )
        .unwrap()
        .seq as u64;
    let recorded = store
        .record_idempotent(B, Action::MessageSession, "m-1", &request, seq)
        .unwrap();
    assert_eq!(recorded, Outcome::Fresh(seq));
    assert_eq!(
        store
            .idempotent_replay::<_, u64>(B, Action::MessageSession, "m-1", &request)
            .unwrap(),
        Some(seq)
    );
    // Keyed by the acting account: the owner's id space is separate.
    assert_eq!(
        store
            .idempotent_replay::<_, u64>(A, Action::MessageSession, "m-1", &request)
            .unwrap(),
        None
    );
    // A racing duplicate that recorded second gets the first response back.
    assert_eq!(
        store
            .record_idempotent(B, Action::MessageSession, "m-1", &request, 99u64)
            .unwrap(),
        Outcome::Replayed(seq)
    );
    let other = ("MessageSession", session.as_str(), "different");
    assert!(matches!(
        store.idempotent_replay::<_, u64>(B, Action::MessageSession, "m-1", &other),
        Err(Error::Conflict { .. })
    ));
    assert!(matches!(
        store.record_idempotent(B, Action::MessageSession, "m-1", &other, 1u64),
        Err(Error::Conflict { .. })
    ));
}
