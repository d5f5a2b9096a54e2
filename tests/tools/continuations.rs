//! Session continuations: one edge per successor, a retried call (also racing on two
//! connections) creates no second successor, chains walked from their origin.

use std::sync::{Arc, Barrier};

use seed_agents_store::continuations::{ContinuationRequest, MAX_REASON_BYTES};
use seed_agents_store::payload::{ContinuationManifest, OpenMap};
use seed_agents_store::schema::{session_continuations, sessions};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, Store};
use support::tools::*;

fn manifest(handoff: &str) -> ContinuationManifest {
    ContinuationManifest {
        handoff: handoff.into(),
        cited_sources: Some(vec![s("hm://doc/1")]),
        loaded: Some(vec![s("~/memory/notes.md")]),
        left_cold: Some(vec![s("~/memory/archive")]),
        extra: OpenMap::new(),
    }
}

fn request(predecessor: &str, call: &str) -> ContinuationRequest {
    ContinuationRequest {
        predecessor_session_id: predecessor.into(),
        tool_call_id: call.into(),
        initiating_event_id: Some("evt-1".into()),
        reason: Some("context full".into()),
        manifest: manifest("Carry on with the report."),
    }
}

fn session(store: &mut Store, agent: &str) -> String {
    store
        .create_session(
            A,
            &NewSession {
                agent_id: agent.into(),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id
}

/// `continue_session_with` whose successor is a new session of `agent`.
fn continue_with_new_session(
    store: &mut Store,
    agent: &str,
    req: &ContinuationRequest,
) -> seed_agents_store::Result<seed_agents_store::continuations::Continued> {
    let agent = agent.to_owned();
    store.continue_session_with(A, req, |conn, now| {
        let new = NewSession {
            agent_id: agent.clone(),
            ..NewSession::default()
        };
        Ok(seed_agents_store::sessions::create_session(conn, now, A, &new)?.id)
    })
}

#[test]
fn a_retried_call_returns_the_first_successor() {
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &[]);
    let origin = session(&mut store, &agent);
    let first = continue_with_new_session(&mut store, &agent, &request(&origin, "call-1")).unwrap();
    assert!(first.created);
    assert_eq!(first.edge.origin_session_id, origin);
    assert_eq!(
        first.edge.manifest_cbor.decode().unwrap(),
        manifest("Carry on with the report.")
    );
    let sessions_before = sessions::count_all(&store.reading().unwrap()).unwrap();
    clock.advance(5);
    let retry = continue_with_new_session(&mut store, &agent, &request(&origin, "call-1")).unwrap();
    assert!(!retry.created);
    assert_eq!(retry.edge, first.edge);
    assert_eq!(
        sessions::count_all(&store.reading().unwrap()).unwrap(),
        sessions_before,
        "no second successor"
    );
    // The same through record_continuation with another would-be successor.
    let stray = session(&mut store, &agent);
    let again = store
        .record_continuation(A, &request(&origin, "call-1"), &stray)
        .unwrap();
    assert_eq!(
        again.edge.successor_session_id,
        first.edge.successor_session_id
    );
    assert_eq!(
        session_continuations::count_all(&store.reading().unwrap()).unwrap(),
        1
    );
    assert_eq!(
        store
            .continuation_for_call(A, &origin, "call-1")
            .unwrap()
            .unwrap(),
        first.edge
    );
}

#[test]
fn two_threads_racing_create_one_successor() {
    for round in 0..5 {
        let (dir, mut store, clock) = open();
        let agent = agent(&mut store, A, &[]);
        let origin = session(&mut store, &agent);
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let mut store = reopen(&dir, &clock);
                let barrier = barrier.clone();
                let (agent, origin) = (agent.clone(), origin.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    continue_with_new_session(&mut store, &agent, &request(&origin, "call-1"))
                        .unwrap()
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            results.iter().filter(|r| r.created).count(),
            1,
            "round {round}"
        );
        assert_eq!(results[0].edge, results[1].edge, "round {round}");
        assert_eq!(
            session_continuations::count_all(&store.reading().unwrap()).unwrap(),
            1
        );
        // The origin and exactly one successor: the loser never created its session.
        assert_eq!(
            sessions::count_all(&store.reading().unwrap()).unwrap(),
            2,
            "round {round}"
        );
    }
}

#[test]
fn chains_are_walked_from_their_origin() {
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &[]);
    let s0 = session(&mut store, &agent);
    let e1 = continue_with_new_session(&mut store, &agent, &request(&s0, "c1"))
        .unwrap()
        .edge;
    clock.advance(1);
    let s1 = e1.successor_session_id.clone();
    let e2 = continue_with_new_session(&mut store, &agent, &request(&s1, "c2"))
        .unwrap()
        .edge;
    clock.advance(1);
    let s2 = e2.successor_session_id.clone();
    let e3 = continue_with_new_session(&mut store, &agent, &request(&s2, "c3"))
        .unwrap()
        .edge;
    assert_eq!(e3.origin_session_id, s0);
    assert_eq!(store.continuation_of(A, &s2).unwrap().unwrap(), e2);
    for from in [&s0, &s1, &e3.successor_session_id] {
        let chain: Vec<String> = store
            .continuation_chain(A, from)
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(chain, [e1.id.clone(), e2.id.clone(), e3.id.clone()]);
    }
    assert!(store.continuation_chain(B, &s1).unwrap().is_empty());

    // A successor must be new: an existing member of a chain is refused (no loops).
    let err = store
        .record_continuation(A, &request(&s2, "c4"), &s0)
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    let err = store
        .record_continuation(A, &request(&s2, "c5"), &s1)
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(matches!(
        store.record_continuation(A, &request(&s2, "c6"), &s2),
        Err(Error::Invalid {
            field: "successor_session_id",
            ..
        })
    ));
    assert!(matches!(
        store.record_continuation(A, &request("nope", "c7"), &s2),
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
}

#[test]
fn a_failing_successor_leaves_nothing() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    let origin = session(&mut store, &agent);
    let before = sessions::count_all(&store.reading().unwrap()).unwrap();
    let err = store
        .continue_session_with(A, &request(&origin, "c1"), |conn, now| {
            let new = NewSession {
                agent_id: agent.clone(),
                ..NewSession::default()
            };
            seed_agents_store::sessions::create_session(conn, now, A, &new)?;
            Err(Error::Invalid {
                field: "manifest",
                reason: "refused by caller".into(),
            })
        })
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Invalid {
            field: "manifest",
            ..
        }
    ));
    assert_eq!(
        sessions::count_all(&store.reading().unwrap()).unwrap(),
        before
    );
    assert_eq!(
        session_continuations::count_all(&store.reading().unwrap()).unwrap(),
        0
    );
}

#[test]
fn reason_limit_at_its_boundary() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    let origin = session(&mut store, &agent);
    let mut req = request(&origin, "c1");
    req.reason = Some("r".repeat(MAX_REASON_BYTES));
    continue_with_new_session(&mut store, &agent, &req).unwrap();
    let mut req = request(&origin, "c2");
    req.reason = Some("r".repeat(MAX_REASON_BYTES + 1));
    assert!(matches!(
        continue_with_new_session(&mut store, &agent, &req),
        Err(Error::Invalid {
            field: "reason",
            ..
        })
    ));
    let mut req = request(&origin, "");
    req.reason = None;
    assert!(matches!(
        continue_with_new_session(&mut store, &agent, &req),
        Err(Error::Invalid {
            field: "tool_call_id",
            ..
        })
    ));
}
