//! Races between nodes (separate processes, each with its own `Store` on one database; on
//! PostgreSQL these are the multi-node guarantees): eight nodes resolving one idempotency key
//! run the action once and all answer with its result; eight nodes claiming under a cap claim no
//! more than the cap together, also while other nodes finalize what they claimed; eight nodes
//! sweeping the expired leases of a dead node requeue each run exactly once, and the dead
//! node's claims are fenced afterwards; eight nodes appending to sessions of their own and to
//! one shared session keep every session's seqs contiguous; eight nodes writing audited rows
//! leave one chain that verifies.

use std::collections::HashSet;

use seed_agents_store::idempotency::Action;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{MessageEvent, RunOutput};
use seed_agents_store::runs::{ClaimLimits, RunOutcome, SweepMode};
use seed_agents_store::sessions::{create_session, NewSession};
use seed_agents_store::{Error, Store};
use support::execution::*;

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
        // Claims under the cap, checks while it holds the claim that no more than the cap are
        // live, and finalizes: the live count moves both ways across the nodes.
        "capped-finisher" => {
            use sea_query::ExprTrait;
            use seed_agents_store::schema::runs;
            let limits = ClaimLimits {
                workflow: CAP,
                ..ClaimLimits::default()
            };
            let live = sea_query::Query::select()
                .columns(runs::Column::ALL.iter().copied())
                .from(runs::Column::Table)
                .and_where(sea_query::Expr::col(runs::Column::Status).is_in(["claimed", "running"]))
                .to_owned();
            let mut idle = 0;
            while idle < 50 {
                let Some(run) = store.claim_next_run("finisher", limits).unwrap() else {
                    idle += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                };
                idle = 0;
                println!("RESULT claimed {}", run.id);
                let now_live = store.select::<runs::Row>(&live).unwrap().len();
                assert!(now_live <= CAP as usize, "{now_live} live runs");
                let claim = Claim::of(&run).unwrap();
                store
                    .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
                    .unwrap();
            }
        }
        part if part.starts_with("append ") => {
            for session in part.split(' ').skip(1) {
                for _ in 0..15 {
                    let appended = store
                        .append_event(A, session, &MessageEvent::user("hi").into())
                        .unwrap();
                    println!("RESULT {session} {}", appended.seq);
                }
            }
        }
        // Reads of another account's session: each is refused and recorded on the owner's
        // audit chain.
        part if part.starts_with("audit ") => {
            let session = part.split(' ').nth(1).unwrap();
            for _ in 0..15 {
                assert!(store.session(B, session).unwrap().is_none());
                println!("RESULT refused");
            }
        }
        // Secrets set in an account of the node's own: each is recorded on that account's chain.
        part if part.starts_with("secrets ") => {
            let account = format!("acct-node-{}", part.split(' ').nth(1).unwrap());
            for i in 0..15 {
                store
                    .set_secret(&account, &format!("s{i}"), b"v", None)
                    .unwrap();
                println!("RESULT set");
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
    let results = processes::spawn(
        &f,
        &support::child_test!("node_child"),
        ROLE,
        &["idempotent"; NODES],
    );
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
    let results = processes::spawn(
        &f,
        &support::child_test!("node_child"),
        ROLE,
        &["capped"; NODES],
    );
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
    let results = processes::spawn(
        &f,
        &support::child_test!("node_child"),
        ROLE,
        &["sweeper"; NODES],
    );
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

#[test]
fn nodes_claiming_under_a_cap_while_others_finalize_never_pass_it() {
    let _serial = serial();
    let f = fixture();
    for i in 0..60 {
        f.store
            .enqueue_run(&workflow_run(&format!("capped {i}")))
            .unwrap();
    }
    let results = processes::spawn(
        &f,
        &support::child_test!("node_child"),
        ROLE,
        &["capped-finisher"; NODES],
    );
    let claimed: Vec<&str> = results
        .iter()
        .flat_map(|(_, l)| l)
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    // Every run was claimed exactly once, never more than the cap live at once (each node
    // checked while it held its claim).
    let ids: HashSet<&str> = claimed.iter().copied().collect();
    assert_eq!(ids.len(), claimed.len(), "a run claimed twice");
    assert_eq!(ids.len(), 60);
}

#[test]
fn nodes_appending_to_their_own_sessions_and_to_one_keep_every_seq_contiguous() {
    let _serial = serial();
    let f = fixture();
    let new = |_| {
        f.store
            .create_session(
                A,
                &NewSession {
                    agent_id: AGENT.into(),
                    ..NewSession::default()
                },
            )
            .unwrap()
            .id
    };
    let shared = new(0);
    let own: Vec<String> = (0..NODES).map(new).collect();
    // Each node appends to its own session, then to the shared one.
    let parts: Vec<String> = own.iter().map(|s| format!("append {s} {shared}")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let results = processes::spawn(&f, &support::child_test!("node_child"), ROLE, &parts);
    let mut seqs: std::collections::HashMap<&str, Vec<i64>> = Default::default();
    for line in results.iter().flat_map(|(_, l)| l) {
        let mut words = line.split(' ');
        let (session, seq) = (words.next().unwrap(), words.next().unwrap());
        seqs.entry(session).or_default().push(seq.parse().unwrap());
    }
    for session in own.iter().chain([&shared]) {
        let mut got = seqs.remove(session.as_str()).unwrap_or_default();
        got.sort_unstable();
        let expected: Vec<i64> = (1..=got.len() as i64).collect();
        assert_eq!(got, expected, "session {session}");
        let stored = f.store.events_after(A, session, 0, None).unwrap();
        assert_eq!(stored.len(), got.len());
    }
    assert_eq!(
        f.store.events_after(A, &shared, 0, None).unwrap().len(),
        NODES * 15
    );
}

#[test]
fn nodes_writing_audited_rows_leave_chains_that_verify() {
    let _serial = serial();
    let f = fixture();
    let session = f
        .store
        .create_session(
            A,
            &NewSession {
                agent_id: AGENT.into(),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id;
    let before = f.store.verify_audit_log().unwrap();
    // Half the nodes append to A's chain at once; the others each to a chain of their own.
    let parts: Vec<String> = (0..NODES)
        .map(|i| match i % 2 {
            0 => format!("audit {session}"),
            _ => format!("secrets {i}"),
        })
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let results = processes::spawn(&f, &support::child_test!("node_child"), ROLE, &parts);
    let written = results.iter().flat_map(|(_, l)| l).count();
    assert_eq!(written, NODES * 15);
    let after = f.store.verify_audit_log().unwrap();
    assert!(after.is_intact(), "{:?}", after.problems);
    assert_eq!(after.rows, before.rows + written as u64, "{after:?}");
    assert_eq!(after.head_seq, before.head_seq + written as i64);
    assert_eq!(after.chains, before.chains.max(1) + NODES as u64 / 2);
}
