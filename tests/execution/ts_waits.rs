//! Runs parked by the TypeScript server resume after the upgrade.
//!
//! The TypeScript server tells its four waits apart by `reason` (`children`, `timer`, `event`,
//! `budget-pause`). Each test parks a run, then replaces its `wait_cbor` with the exact bytes the
//! TypeScript encoder (`@ipld/dag-cbor`) writes for that wait (from
//! `tests/fixtures/ts-payload-vectors.json`), and checks that the store resolves, wakes, delivers
//! to or resumes it as it would a wait it wrote itself.

use seed_agents_store::payload::{Ipld, RunWait, RunWaitBudgetPause, RunWaitChildren};
use seed_agents_store::runs::{ChildResolution, ClaimLimits, NewRun};
use seed_agents_store::schema::runs::Status;
use seed_agents_store::waits::{DeliverySource, SignalOutcome};
use serde::Deserialize;
use support::execution::*;

#[derive(Deserialize)]
struct Vector {
    #[serde(rename = "type")]
    type_name: String,
    name: String,
    hex: String,
}

/// The TypeScript encoder's bytes for the `RunWait` vector `name`.
fn ts_wait(name: &str) -> Vec<u8> {
    let vectors: Vec<Vector> =
        serde_json::from_str(include_str!("../fixtures/ts-payload-vectors.json")).unwrap();
    let v = vectors
        .into_iter()
        .find(|v| v.type_name == "RunWait" && v.name == name)
        .unwrap();
    hex::decode(v.hex).unwrap()
}

/// Claims and parks `id` with a stand-in wait, then puts the TypeScript bytes in its place (and
/// the wake time the TypeScript queue writes to `not_before`).
fn park_as_typescript(f: &mut Fixture, id: &str, wait: &[u8], not_before: Option<i64>) {
    f.store.claim_run(A, id, "ts-worker").unwrap().unwrap();
    let stand_in = RunWait::BudgetPause(RunWaitBudgetPause {
        note: None,
        extra: Default::default(),
    });
    f.store.park_run(&held(&f.store, A, id), &stand_in).unwrap();
    raw(&f.store)
        .execute(
            "UPDATE runs SET wait_cbor = ?1, not_before = ?2 WHERE id = ?3",
            (wait, not_before, id),
        )
        .unwrap();
}

#[test]
fn a_children_wait_written_by_typescript_requeues_the_parent_when_its_children_resolve() {
    if support::backend::skip_on_postgres(
        "a_children_wait_written_by_typescript_requeues_the_parent_when_its_children_resolve",
        "it arranges TypeScript-written rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let parent = f.store.enqueue_run(&workflow_run("parent")).unwrap();
    park_as_typescript(&mut f, &parent.id, &ts_wait("children"), None);
    assert!(matches!(
        f.store.run(A, &parent.id).unwrap().unwrap().wait_cbor.unwrap().decode().unwrap(),
        RunWait::Children(RunWaitChildren { ref tool_call_ids, .. }) if tool_call_ids == &["call-3", "call-4"]
    ));
    assert_eq!(
        f.store.resolve_child(A, &parent.id, "call-3").unwrap(),
        ChildResolution::Pending(vec!["call-4".into()])
    );
    match f.store.resolve_child(A, &parent.id, "call-4").unwrap() {
        ChildResolution::Requeued(row) => {
            assert_eq!((row.status, row.wait_cbor), (Status::Queued, None));
        }
        other => panic!("the last child must requeue the parent: {other:?}"),
    }
    let claimed = f.store.claim_next_run("w", ClaimLimits::default()).unwrap();
    assert_eq!(claimed.map(|r| r.id), Some(parent.id));
}

#[test]
fn a_timer_wait_written_by_typescript_wakes_when_due() {
    if support::backend::skip_on_postgres(
        "a_timer_wait_written_by_typescript_wakes_when_due",
        "it arranges TypeScript-written rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let run = f.store.enqueue_run(&workflow_run("sleeper")).unwrap();
    // The vector's wakeAt is T0 + 60 s.
    park_as_typescript(&mut f, &run.id, &ts_wait("timer"), Some(T0 + 60_000));
    f.clock.advance(59_999);
    assert!(f.store.wake_due_timers().unwrap().is_empty());
    f.clock.advance(1);
    assert_eq!(f.store.wake_due_timers().unwrap(), vec![run.id.clone()]);
    let row = f.store.run(A, &run.id).unwrap().unwrap();
    assert_eq!((row.status, row.wait_cbor), (Status::Queued, None));
}

#[test]
fn an_event_wait_written_by_typescript_takes_its_signal() {
    if support::backend::skip_on_postgres(
        "an_event_wait_written_by_typescript_takes_its_signal",
        "it arranges TypeScript-written rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let run = f.store.enqueue_run(&workflow_run("listener")).unwrap();
    // The vector waits on wait id "8"; the TypeScript server registers it in run_event_waits.
    park_as_typescript(
        &mut f,
        &run.id,
        &ts_wait("event with everything"),
        Some(T0 + 3_600_000),
    );
    let criteria = seed_agents_store::cbor::to_vec(&signal("approve")).unwrap();
    raw(&f.store)
        .execute(
            "INSERT INTO run_event_waits (run_id, wait_id, account_id, match_cbor, timeout_at, created_at)
             VALUES (?1, '8', ?2, ?3, ?4, ?5)",
            (&run.id, A, criteria, T0 + 3_600_000, T0),
        )
        .unwrap();
    let outcome = f
        .store
        .deliver_signal(
            A,
            Some(&run.id),
            DeliverySource::Signal,
            "approve",
            Some(Ipld::Bool(true)),
        )
        .unwrap();
    assert!(
        matches!(outcome, SignalOutcome::Delivered(ref d) if d.wait_id == "8"),
        "{outcome:?}"
    );
    let row = f.store.run(A, &run.id).unwrap().unwrap();
    assert_eq!((row.status, row.wait_cbor), (Status::Queued, None));
    assert!(f.store.run_waits(A, &run.id).unwrap().is_empty());
}

#[test]
fn a_budget_pause_written_by_typescript_resumes() {
    if support::backend::skip_on_postgres(
        "a_budget_pause_written_by_typescript_resumes",
        "it arranges TypeScript-written rows through a raw SQLite connection",
    ) {
        return;
    }
    for name in ["budget pause with note", "budget pause without note"] {
        let mut f = fixture();
        let run = f.store.enqueue_run(&workflow_run("paused")).unwrap();
        park_as_typescript(&mut f, &run.id, &ts_wait(name), None);
        let resumed = f.store.resume_budget_pause(A, &run.id).unwrap();
        assert_eq!(resumed.status, Status::Queued, "{name}");
    }
}

#[test]
fn the_stores_own_waits_are_the_typescript_bytes() {
    if support::backend::skip_on_postgres(
        "the_stores_own_waits_are_the_typescript_bytes",
        "it arranges TypeScript-written rows through a raw SQLite connection",
    ) {
        return;
    }
    let f = fixture();
    let run: NewRun = workflow_run("parent");
    let run = f.store.enqueue_run(&run).unwrap();
    f.store.claim_run(A, &run.id, "w").unwrap();
    let wait = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec!["call-3".into(), "call-4".into()],
        extra: Default::default(),
    });
    let parked = f
        .store
        .park_run(&held(&f.store, A, &run.id), &wait)
        .unwrap();
    assert_eq!(parked.wait_cbor.unwrap().as_bytes(), ts_wait("children"));
}
