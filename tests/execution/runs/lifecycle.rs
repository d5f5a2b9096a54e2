//! Leases, continue-as-new, the boot sweep, the tree and session lookups, and the session status
//! that mirrors the runs table.

use super::*;

#[test]
fn a_live_worker_renews_its_lease_and_a_worker_that_lost_it_cannot() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("r")).unwrap();
    f.store.claim_next_run("w1", no_caps()).unwrap();
    f.clock.advance(30_000);
    assert_eq!(
        f.store
            .renew_lease(&claim_as(&f.store, A, &run.id, "w1"))
            .unwrap(),
        T0 + 90_000
    );
    assert!(matches!(
        f.store
            .renew_lease(&claim_as(&f.store, A, &run.id, "w2"))
            .unwrap_err(),
        Error::LeaseLost { .. }
    ));
    f.clock.advance(100_000);
    f.store.boot_sweep(SweepMode::MultiProcess).unwrap();
    f.store.claim_next_run("w2", no_caps()).unwrap().unwrap();
    let err = f
        .store
        .renew_lease(&claim_as(&f.store, A, &run.id, "w1"))
        .unwrap_err();
    assert!(
        matches!(err, Error::LeaseLost { ref owner, .. } if owner == "w1"),
        "{err:?}"
    );
    assert!(f
        .store
        .renew_lease(&claim_as(&f.store, A, &run.id, "w2"))
        .is_ok());
}

#[test]
fn continue_as_new_starts_a_successor_with_a_fresh_journal() {
    let f = fixture();
    let s = f.session("s");
    let mut new = agent_run(&s, "loop");
    new.queue = Queue::Interactive;
    let run = f.store.enqueue_run(&new).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    let entry = WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 1,
        key: None,
        extra: OpenMap::new(),
    });
    f.store
        .append_journal(&held(&f.store, A, &run.id), &entry)
        .unwrap();
    let next = ContinueAsNew {
        output: RunOutput::default(),
        input: RunInput::default(),
        title: None,
    };
    let successor = f
        .store
        .continue_as_new(&held(&f.store, A, &run.id), &next)
        .unwrap();
    assert_eq!(
        successor.continued_from_run_id.as_deref(),
        Some(run.id.as_str())
    );
    assert_eq!(successor.status, Status::Queued);
    assert_eq!(
        (successor.queue, successor.session_id.as_deref()),
        (Queue::Interactive, Some("s"))
    );
    assert_eq!(successor.root_run_id, run.root_run_id);
    assert_eq!(successor.title.as_deref(), Some("loop"));
    assert!(f
        .store
        .load_journal(A, &successor.id, 0)
        .unwrap()
        .is_empty());
    assert_eq!(
        f.store.run(A, &run.id).unwrap().unwrap().status,
        Status::Succeeded
    );
    assert_eq!(f.session_status("s"), sessions::Status::Streaming);
    assert!(matches!(
        f.store
            .continue_as_new(&claim_as(&f.store, A, &run.id, "w"), &next)
            .unwrap_err(),
        Error::LeaseLost { .. }
    ));
}

#[test]
fn boot_sweep_requeues_everything_single_process_and_only_expired_leases_multi_process() {
    let f = fixture();
    let a = f.store.enqueue_run(&workflow_run("a")).unwrap();
    let b = f.store.enqueue_run(&workflow_run("b")).unwrap();
    f.store.claim_run(A, &a.id, "dead").unwrap();
    f.clock.advance(61_000);
    f.store.claim_run(A, &b.id, "alive").unwrap();
    f.store
        .start_run(&claim_as(&f.store, A, &b.id, "alive"))
        .unwrap();
    assert_eq!(
        f.store.boot_sweep(SweepMode::MultiProcess).unwrap(),
        vec![a.id.clone()]
    );
    let swept = f.store.run(A, &a.id).unwrap().unwrap();
    assert_eq!((swept.status, swept.lease_owner), (Status::Queued, None));
    assert_eq!(
        f.store.run(A, &b.id).unwrap().unwrap().status,
        Status::Running
    );
    assert_eq!(
        f.store.boot_sweep(SweepMode::SingleProcess).unwrap(),
        vec![b.id.clone()]
    );
    assert_eq!(
        f.store.run(A, &b.id).unwrap().unwrap().status,
        Status::Queued
    );
}

#[test]
fn tree_session_and_tool_call_lookups() {
    let f = fixture();
    let s = f.session("s");
    let root = f.store.enqueue_run(&agent_run(&s, "root")).unwrap();
    f.clock.advance(1);
    let mut child = workflow_run("child");
    child.parent_run_id = Some(root.id.clone());
    child.parent_tool_call_id = Some("call-7".into());
    let child = f.store.enqueue_run(&child).unwrap();
    f.clock.advance(1);
    let later = f.store.enqueue_run(&agent_run(&s, "later")).unwrap();
    let tree: Vec<String> = f
        .store
        .run_tree(A, &root.id)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(tree, [root.id.clone(), child.id.clone()]);
    assert!(f.store.run_tree(B, &root.id).unwrap().is_empty());
    let in_session: Vec<String> = f
        .store
        .session_runs(A, &s)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(in_session, [later.id.clone(), root.id.clone()]);
    assert_eq!(
        f.store
            .find_child_by_tool_call(A, &root.id, "call-7")
            .unwrap()
            .unwrap()
            .id,
        child.id
    );
    assert!(f
        .store
        .find_child_by_tool_call(A, &root.id, "call-8")
        .unwrap()
        .is_none());
    assert!(f
        .store
        .find_child_by_tool_call(B, &root.id, "call-7")
        .unwrap()
        .is_none());
}

#[test]
fn the_session_status_mirrors_the_runs_table() {
    let f = fixture();
    let s = f.session("s");
    assert_eq!(f.session_status(&s), sessions::Status::Idle);
    let run = f.store.enqueue_run(&agent_run(&s, "turn")).unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Streaming);
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &run.id),
            &event_wait("1", None),
            &signal("x"),
        )
        .unwrap();
    assert_eq!(
        f.session_status(&s),
        sessions::Status::Streaming,
        "waiting is not terminal"
    );
    f.store.requeue_run(A, &run.id).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .finalize_run(
            &held(&f.store, A, &run.id),
            RunOutcome::Failed(RunErrorInfo::new("x", "y")),
        )
        .unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Error);
    f.clock.advance(1);
    let next = f.store.enqueue_run(&agent_run(&s, "again")).unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Streaming);
    f.store.cancel_run_tree(A, &next.id).unwrap();
    assert_eq!(
        f.session_status(&s),
        sessions::Status::Idle,
        "canceled mirrors to idle"
    );
    f.clock.advance(1);
    let ok = f.store.enqueue_run(&agent_run(&s, "ok")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .finalize_run(
            &held(&f.store, A, &ok.id),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Idle);
    // A crash leaves a running row; the boot sweep requeues it and the mirror still says streaming
    // for exactly as long as the row is live.
    f.clock.advance(1);
    let crashed = f.store.enqueue_run(&agent_run(&s, "crash")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store.boot_sweep(SweepMode::SingleProcess).unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Streaming);
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .finalize_run(
            &held(&f.store, A, &crashed.id),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();
    assert_eq!(f.session_status(&s), sessions::Status::Idle);
    let _ = Cbor::<RunOutput>::encode(&RunOutput::default());
}
