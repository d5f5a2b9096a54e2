//! Races between nodes (separate processes, each with its own `Store` on one database; on
//! PostgreSQL these are the multi-node guarantees): eight nodes resolving one idempotency key
//! run the action once and all answer with its result; eight nodes claiming under a cap claim no
//! more than the cap together; eight nodes sweeping the expired leases of a dead node requeue
//! each run exactly once, and the dead node's claims are fenced afterwards.

mod execution_common;

use std::collections::HashSet;

use execution_common::*;
use seed_agents_store::idempotency::Action;
use seed_agents_store::lease::Claim;
use seed_agents_store::runs::{ClaimLimits, SweepMode};
use seed_agents_store::sessions::{create_session, NewSession};
use seed_agents_store::{Error, Store};

const NODES: usize = 8;
const ROLE: &str = "NODE_RACE_ROLE";
const LEASED: usize = 60;
const CAP: u32 = 3;

/// The races run one at a time, so that a small machine runs at most eight nodes at once.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Creates a session under the idempotency key every node shares.
fn idempotent_create(store: &Store) -> (String, bool) {
    let outcome = store
        .idempotent(
            A,
            Action::CreateSession,
            Some("race-key"),
            &"the same request",
            |tx, now| {
                let new = NewSession {
                    agent_id: AGENT.into(),
                    ..NewSession::default()
                };
                Ok(create_session(tx, now, A, &new)?.id)
            },
        )
        .unwrap();
    let replayed = outcome.is_replayed();
    (outcome.into_inner(), replayed)
}

#[test]
fn node_child() {
    let Some((part, store)) = processes::child_start(ROLE) else {
        return;
    };
    match part.as_str() {
        "idempotent" => {
            let (session, replayed) = idempotent_create(&store);
            println!(
                "RESULT session {session} {}",
                if replayed { "replayed" } else { "fresh" }
            );
        }
        // The child's clock is the real one, long after the fixture's: every lease the dead
        // node took has expired.
        "capped" => {
            let limits = ClaimLimits {
                workflow: CAP,
                ..ClaimLimits::default()
            };
            while let Some(run) = store.claim_next_run("capped-node", limits).unwrap() {
                println!("RESULT claimed {}", run.id);
            }
        }
        "sweeper" => {
            for id in store.boot_sweep(SweepMode::MultiProcess).unwrap() {
                println!("RESULT requeued {id}");
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn nodes_resolving_one_idempotency_key_run_it_once() {
    let _serial = serial();
    let f = fixture();
    let results = processes::spawn(&f, "node_child", ROLE, &["idempotent"; NODES]);
    let answers: Vec<&String> = results.iter().flat_map(|(_, l)| l).collect();
    assert_eq!(answers.len(), NODES);
    let sessions: HashSet<&str> = answers
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        sessions.len(),
        1,
        "every node answers with one session: {answers:?}"
    );
    let fresh = answers.iter().filter(|l| l.ends_with(" fresh")).count();
    assert_eq!(fresh, 1, "the action ran once: {answers:?}");
    // One session exists, and this node replays the same answer.
    let listed = f
        .store
        .sessions(
            A,
            AGENT,
            &seed_agents_store::sessions::SessionQuery::default(),
        )
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let (again, replayed) = idempotent_create(&f.store);
    assert!(replayed);
    assert!(sessions.contains(again.as_str()));
}

#[test]
fn nodes_claiming_under_a_cap_claim_no_more_than_it_together() {
    let _serial = serial();
    let f = fixture();
    for i in 0..40 {
        f.store
            .enqueue_run(&workflow_run(&format!("capped {i}")))
            .unwrap();
    }
    let results = processes::spawn(&f, "node_child", ROLE, &["capped"; NODES]);
    let claimed: Vec<&String> = results.iter().flat_map(|(_, l)| l).collect();
    assert_eq!(claimed.len(), CAP as usize, "{claimed:?}");
}

#[test]
fn nodes_sweeping_a_dead_nodes_leases_requeue_each_run_once_and_fence_it() {
    let _serial = serial();
    let f = fixture();
    for i in 0..LEASED {
        f.store
            .enqueue_run(&workflow_run(&format!("leased {i}")))
            .unwrap();
    }
    let mut stale = Vec::new();
    while let Some(run) = f
        .store
        .claim_next_run("dead-node", ClaimLimits::default())
        .unwrap()
    {
        stale.push(Claim::of(&run).unwrap());
    }
    assert_eq!(stale.len(), LEASED);
    let results = processes::spawn(&f, "node_child", ROLE, &["sweeper"; NODES]);
    let requeued: Vec<&str> = results
        .iter()
        .flat_map(|(_, l)| l)
        .filter_map(|l| l.strip_prefix("requeued "))
        .collect();
    let unique: HashSet<&str> = requeued.iter().copied().collect();
    assert_eq!(unique.len(), requeued.len(), "a run was requeued twice");
    let expected: HashSet<&str> = stale.iter().map(|c| c.run_id.as_str()).collect();
    assert_eq!(unique, expected, "every expired lease was swept");
    // The dead node's claims are fenced: its writes are refused and change nothing.
    for claim in &stale {
        let err = f.store.start_run(claim).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
        let row = f.store.run(A, &claim.run_id).unwrap().unwrap();
        assert_eq!(row.status, seed_agents_store::schema::runs::Status::Queued);
        assert_eq!(row.lease_owner, None);
    }
}
