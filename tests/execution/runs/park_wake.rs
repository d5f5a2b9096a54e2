//! Parking and waking: timers, requeues, the last child resolving its parent, and a budget pause.

use super::*;

fn timer(wake_at: i64) -> RunWait {
    RunWait::Timer(RunWaitTimer {
        wake_at,
        extra: OpenMap::new(),
    })
}

#[test]
fn park_clears_the_lease_and_sets_not_before_from_the_wake_time() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("sleep")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    let parked = f
        .store
        .park_run(&held(&f.store, A, &run.id), &timer(T0 + 30_000))
        .unwrap();
    assert_eq!(parked.status, Status::Waiting);
    assert_eq!(parked.not_before, Some(T0 + 30_000));
    assert_eq!((parked.lease_owner, parked.lease_expires_at), (None, None));
    assert_eq!(
        parked.wait_cbor.unwrap().decode().unwrap(),
        timer(T0 + 30_000)
    );
    // Parking twice is refused: parking gave up the lease.
    assert!(matches!(
        f.store
            .park_run(&claim_as(&f.store, A, &run.id, "w"), &timer(T0))
            .unwrap_err(),
        Error::LeaseLost { .. }
    ));
    let empty = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec![],
        extra: OpenMap::new(),
    });
    assert!(matches!(
        f.store
            .park_run(&held(&f.store, A, &run.id), &empty)
            .unwrap_err(),
        Error::Invalid { .. }
    ));
}

#[test]
fn wake_due_timers_requeues_timer_waits_only() {
    let f = fixture();
    let sleeper = f.store.enqueue_run(&workflow_run("sleeper")).unwrap();
    let listener = f.store.enqueue_run(&workflow_run("listener")).unwrap();
    f.store.claim_run(A, &sleeper.id, "w").unwrap();
    f.store.claim_run(A, &listener.id, "w").unwrap();
    f.store
        .park_run(&held(&f.store, A, &sleeper.id), &timer(T0 + 1_000))
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &listener.id),
            &event_wait("1", Some(T0 + 1_000)),
            &signal("go"),
        )
        .unwrap();
    assert!(f.store.wake_due_timers().unwrap().is_empty());
    f.clock.advance(1_000);
    assert_eq!(f.store.wake_due_timers().unwrap(), vec![sleeper.id.clone()]);
    let woken = f.store.run(A, &sleeper.id).unwrap().unwrap();
    assert_eq!((woken.status, woken.wait_cbor), (Status::Queued, None));
    assert_eq!(
        f.store.run(A, &listener.id).unwrap().unwrap().status,
        Status::Waiting
    );
}

#[test]
fn requeue_a_waiting_run() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("r")).unwrap();
    assert!(matches!(
        f.store.requeue_run(A, &run.id).unwrap_err(),
        Error::Conflict { .. }
    ));
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &run.id),
            &event_wait("1", None),
            &signal("x"),
        )
        .unwrap();
    let requeued = f.store.requeue_run(A, &run.id).unwrap();
    assert_eq!(requeued.status, Status::Queued);
    assert!(f.store.run_waits(A, &run.id).unwrap().is_empty());
}

#[test]
fn resolving_the_last_child_requeues_the_parent() {
    let f = fixture();
    let parent = f.store.enqueue_run(&workflow_run("parent")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    let wait = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec!["call-1".into(), "call-2".into()],
        extra: OpenMap::new(),
    });
    f.store
        .park_run(&held(&f.store, A, &parent.id), &wait)
        .unwrap();
    assert_eq!(
        f.store.resolve_child(A, &parent.id, "call-1").unwrap(),
        ChildResolution::Pending(vec!["call-2".into()])
    );
    assert_eq!(
        f.store.resolve_child(A, &parent.id, "call-1").unwrap(),
        ChildResolution::NotAwaited
    );
    match f.store.resolve_child(A, &parent.id, "call-2").unwrap() {
        ChildResolution::Requeued(row) => assert_eq!(row.status, Status::Queued),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_budget_pause_resumes() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("spender")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    assert!(matches!(
        f.store.resume_budget_pause(A, &run.id).unwrap_err(),
        Error::Conflict { .. }
    ));
    let pause = RunWait::BudgetPause(RunWaitBudgetPause {
        note: Some("over".into()),
        extra: OpenMap::new(),
    });
    let parked = f
        .store
        .park_run(&held(&f.store, A, &run.id), &pause)
        .unwrap();
    assert_eq!(parked.not_before, None);
    assert_eq!(
        f.store.resume_budget_pause(A, &run.id).unwrap().status,
        Status::Queued
    );
}

#[test]
fn backoff_doubles_from_five_seconds_to_a_five_minute_cap() {
    let expected = [
        5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000,
    ];
    for (attempt, want) in (1..).zip(expected) {
        assert_eq!(backoff_ms(attempt), want, "attempt {attempt}");
    }
    assert_eq!(backoff_ms(1_000), 300_000);
    assert_eq!(backoff_ms(0), 5_000);
}
