//! The run queue: enqueue, claim, start, park and wake, finalize with retries, cancel, leases,
//! continue-as-new, the boot sweep, tree queries, and the session status mirror.

use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::*;
use seed_agents_store::runs::*;
use seed_agents_store::schema::runs::{Kind, Queue, Status};
use seed_agents_store::schema::sessions;
use seed_agents_store::Error;
use support::execution::*;

fn no_caps() -> ClaimLimits {
    ClaimLimits::default()
}

#[test]
fn enqueue_trims_the_title_and_requires_one() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("  build  ")).unwrap();
    assert_eq!(run.title.as_deref(), Some("build"));
    assert_eq!(run.status, Status::Queued);
    assert_eq!(run.root_run_id, run.id);
    assert_eq!(run.depth, 0);
    assert_eq!(run.attempt, 0);
    for bad in ["", "   "] {
        let err = f.store.enqueue_run(&workflow_run(bad)).unwrap_err();
        assert!(
            matches!(err, Error::Invalid { field: "title", .. }),
            "{err:?}"
        );
    }
    let mut zero = workflow_run("x");
    zero.max_attempts = 0;
    assert!(matches!(
        f.store.enqueue_run(&zero).unwrap_err(),
        Error::Invalid {
            field: "max_attempts",
            ..
        }
    ));
}

#[test]
fn a_child_takes_root_and_depth_from_its_parent_in_the_same_account() {
    let f = fixture();
    let root = f.store.enqueue_run(&workflow_run("root")).unwrap();
    let mut child = workflow_run("child");
    child.parent_run_id = Some(root.id.clone());
    let child = f.store.enqueue_run(&child).unwrap();
    let mut grandchild = workflow_run("grandchild");
    grandchild.parent_run_id = Some(child.id.clone());
    let grandchild = f.store.enqueue_run(&grandchild).unwrap();
    assert_eq!(
        (child.root_run_id.as_str(), child.depth),
        (root.id.as_str(), 1)
    );
    assert_eq!(
        (grandchild.root_run_id.as_str(), grandchild.depth),
        (root.id.as_str(), 2)
    );

    let mut foreign = NewRun::new(
        B,
        Kind::Workflow,
        seed_agents_store::schema::runs::Origin::User,
        "x",
    );
    foreign.parent_run_id = Some(root.id.clone());
    let err = f.store.enqueue_run(&foreign).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "parent run",
                ..
            }
        ),
        "{err:?}"
    );
    let mut missing = workflow_run("x");
    missing.parent_run_id = Some("nope".into());
    assert!(matches!(
        f.store.enqueue_run(&missing).unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn a_duplicate_enqueue_with_a_chosen_id_returns_the_existing_row_and_never_another_accounts() {
    let f = fixture();
    let mut new = workflow_run("first");
    new.id = Some("run-fixed".into());
    let first = f.store.enqueue_run(&new).unwrap();
    f.clock.advance(1_000);
    new.title = "second".into();
    let again = f.store.enqueue_run(&new).unwrap();
    assert_eq!(again, first);
    assert_eq!(f.store.run_tree(A, "run-fixed").unwrap().len(), 1);

    let mut theirs = NewRun::new(
        B,
        Kind::Workflow,
        seed_agents_store::schema::runs::Origin::User,
        "t",
    );
    theirs.id = Some("run-fixed".into());
    let err = f.store.enqueue_run(&theirs).unwrap_err();
    assert!(
        matches!(err, Error::Conflict { what: "run", .. }),
        "{err:?}"
    );
    assert!(f.store.run(B, "run-fixed").unwrap().is_none());
}

#[test]
fn claim_takes_interactive_first_then_oldest_then_id_and_sets_the_lease() {
    let f = fixture();
    let mut ids = Vec::new();
    for (i, queue) in [Queue::Background, Queue::Background, Queue::Interactive]
        .into_iter()
        .enumerate()
    {
        let mut run = workflow_run(&format!("r{i}"));
        run.queue = queue;
        run.id = Some(format!("run-{i}"));
        ids.push(f.store.enqueue_run(&run).unwrap().id);
        f.clock.advance(10);
    }
    // Same created_at: the id breaks the tie.
    for id in ["run-b", "run-a"] {
        let mut run = workflow_run(id);
        run.id = Some(id.into());
        f.store.enqueue_run(&run).unwrap();
    }
    let now = f.store.now_ms();
    let first = f
        .store
        .claim_next_run("worker-1", no_caps())
        .unwrap()
        .unwrap();
    assert_eq!(first.id, "run-2");
    assert_eq!(first.status, Status::Claimed);
    assert_eq!(first.lease_owner.as_deref(), Some("worker-1"));
    assert_eq!(first.lease_expires_at, Some(now + 60_000));
    assert_eq!(first.attempt, 1);
    let order: Vec<String> = std::iter::from_fn(|| f.store.claim_next_run("w", no_caps()).unwrap())
        .map(|r| r.id)
        .collect();
    assert_eq!(order, ["run-0", "run-1", "run-a", "run-b"]);
    assert!(f.store.claim_next_run("w", no_caps()).unwrap().is_none());
}

#[test]
fn claim_waits_for_not_before() {
    let f = fixture();
    let mut later = workflow_run("later");
    later.not_before = Some(T0 + 5_000);
    let later = f.store.enqueue_run(&later).unwrap();
    assert!(f.store.claim_next_run("w", no_caps()).unwrap().is_none());
    f.clock.advance(5_000);
    assert_eq!(
        f.store.claim_next_run("w", no_caps()).unwrap().unwrap().id,
        later.id
    );
}

#[test]
fn a_delayed_run_that_is_due_competes_by_created_at() {
    let f = fixture();
    let mut old = workflow_run("old");
    old.not_before = Some(T0 + 100);
    let old = f.store.enqueue_run(&old).unwrap();
    f.clock.advance(10);
    let young = f.store.enqueue_run(&workflow_run("young")).unwrap();
    f.clock.advance(1_000);
    assert_eq!(
        f.store.claim_next_run("w", no_caps()).unwrap().unwrap().id,
        old.id
    );
    assert_eq!(
        f.store.claim_next_run("w", no_caps()).unwrap().unwrap().id,
        young.id
    );
}

#[test]
fn claim_respects_per_kind_caps() {
    let f = fixture();
    let s1 = f.session("s1");
    let s2 = f.session("s2");
    f.store.enqueue_run(&workflow_run("w1")).unwrap();
    f.store.enqueue_run(&workflow_run("w2")).unwrap();
    f.store.enqueue_run(&agent_run(&s1, "a1")).unwrap();
    f.store.enqueue_run(&agent_run(&s2, "a2")).unwrap();
    let caps = ClaimLimits {
        agent: 1,
        workflow: 1,
    };
    let mut kinds = Vec::new();
    while let Some(run) = f.store.claim_next_run("w", caps).unwrap() {
        kinds.push(run.kind);
    }
    kinds.sort();
    assert_eq!(kinds, [Kind::Agent, Kind::Workflow]);
}

#[test]
fn at_most_one_claimed_or_running_agent_run_per_session() {
    let f = fixture();
    let s = f.session("s");
    let first = f.store.enqueue_run(&agent_run(&s, "one")).unwrap();
    f.clock.advance(1);
    let second = f.store.enqueue_run(&agent_run(&s, "two")).unwrap();
    let claimed = f.store.claim_next_run("w", no_caps()).unwrap().unwrap();
    assert_eq!(claimed.id, first.id);
    assert!(f.store.claim_next_run("w", no_caps()).unwrap().is_none());
    assert!(f.store.claim_run(A, &second.id, "w").unwrap().is_none());
    f.store
        .start_run(&claim_as(&f.store, A, &first.id, "w"))
        .unwrap();
    assert!(f.store.claim_next_run("w", no_caps()).unwrap().is_none());
    f.store
        .finalize_run(
            &held(&f.store, A, &first.id),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();
    assert_eq!(
        f.store.claim_next_run("w", no_caps()).unwrap().unwrap().id,
        second.id
    );
}

#[test]
fn claim_a_specific_run() {
    let f = fixture();
    f.store.enqueue_run(&workflow_run("older")).unwrap();
    let target = f.store.enqueue_run(&workflow_run("target")).unwrap();
    let claimed = f.store.claim_run(A, &target.id, "w").unwrap().unwrap();
    assert_eq!(
        (claimed.id.as_str(), claimed.attempt),
        (target.id.as_str(), 1)
    );
    assert!(f.store.claim_run(A, &target.id, "w").unwrap().is_none());
    assert!(matches!(
        f.store.claim_run(B, &target.id, "w").unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn start_keeps_the_first_started_at_across_attempts() {
    let f = fixture();
    let mut new = workflow_run("retry me");
    new.max_attempts = 3;
    let run = f.store.enqueue_run(&new).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap().unwrap();
    assert!(matches!(
        f.store
            .start_run(&claim_as(&f.store, A, &run.id, "other"))
            .unwrap_err(),
        Error::LeaseLost { .. }
    ));
    let started = f
        .store
        .start_run(&claim_as(&f.store, A, &run.id, "w"))
        .unwrap();
    assert_eq!(
        (started.status, started.started_at),
        (Status::Running, Some(T0))
    );
    let mut error = RunErrorInfo::new("provider", "503");
    error.retryable = Some(true);
    f.store
        .finalize_run(&held(&f.store, A, &run.id), RunOutcome::Failed(error))
        .unwrap();
    f.clock.advance(10 * 60_000);
    f.store.claim_next_run("w", no_caps()).unwrap().unwrap();
    let again = f
        .store
        .start_run(&claim_as(&f.store, A, &run.id, "w"))
        .unwrap();
    assert_eq!(again.started_at, Some(T0));
    assert_eq!(again.attempt, 2);
}

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

#[test]
fn a_retryable_failure_with_attempts_left_requeues_with_backoff_and_jitter() {
    let f = fixture();
    let mut new = workflow_run("flaky");
    new.max_attempts = 2;
    let run = f.store.enqueue_run(&new).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    let mut error = RunErrorInfo::new("provider", "503");
    error.retryable = Some(true);
    let retry = match f
        .store
        .finalize_run(
            &held(&f.store, A, &run.id),
            RunOutcome::Failed(error.clone()),
        )
        .unwrap()
    {
        Finalized::Retrying(row) => row,
        other => panic!("{other:?}"),
    };
    assert_eq!(retry.status, Status::Queued);
    let delay = retry.not_before.unwrap() - T0;
    assert!((5_000..=6_000).contains(&delay), "{delay}");
    assert_eq!(retry.lease_owner, None);
    f.clock.advance(delay);
    f.store.claim_next_run("w", no_caps()).unwrap().unwrap();
    // Attempts used up: the failure is final.
    match f
        .store
        .finalize_run(&held(&f.store, A, &run.id), RunOutcome::Failed(error))
        .unwrap()
    {
        Finalized::Finished(row) => {
            assert_eq!(row.status, Status::Failed);
            assert_eq!(row.finished_at, Some(T0 + delay));
        }
        other => panic!("{other:?}"),
    }
    // A non-retryable failure never retries.
    let mut again = workflow_run("fatal");
    again.max_attempts = 5;
    let fatal = f.store.enqueue_run(&again).unwrap();
    f.store.claim_run(A, &fatal.id, "w").unwrap();
    let done = f
        .store
        .finalize_run(
            &held(&f.store, A, &fatal.id),
            RunOutcome::Failed(RunErrorInfo::new("bad", "no")),
        )
        .unwrap();
    assert!(matches!(done, Finalized::Finished(ref r) if r.status == Status::Failed));
}

#[test]
fn canceled_is_sticky_and_terminal_runs_refuse_another_finalize() {
    let f = fixture();
    let run = f.store.enqueue_run(&workflow_run("c")).unwrap();
    f.store.claim_next_run("w", no_caps()).unwrap();
    f.store
        .finalize_run(&held(&f.store, A, &run.id), RunOutcome::Canceled)
        .unwrap();
    let before = f.store.run(A, &run.id).unwrap().unwrap();
    f.clock.advance(1);
    let again = f
        .store
        .finalize_run(
            &held(&f.store, A, &run.id),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();
    assert_eq!(again, Finalized::AlreadyCanceled(before.clone()));
    assert_eq!(f.store.run(A, &run.id).unwrap().unwrap(), before);

    let ok = f.store.enqueue_run(&workflow_run("ok")).unwrap();
    f.store.claim_run(A, &ok.id, "w").unwrap();
    let claim = held(&f.store, A, &ok.id);
    f.store
        .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
        .unwrap();
    let done = f.store.run(A, &ok.id).unwrap().unwrap();
    assert!(matches!(
        f.store
            .finalize_run(&claim, RunOutcome::Canceled)
            .unwrap_err(),
        Error::LeaseLost { .. }
    ));
    assert_eq!(f.store.run(A, &ok.id).unwrap().unwrap(), done);
}

fn usage(entries: &[(&str, i128)]) -> RunUsage {
    RunUsage(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Ipld::Integer(*v)))
            .collect(),
    )
}

#[test]
fn a_terminal_child_rolls_its_usage_into_the_parents_children_usage() {
    let f = fixture();
    let parent = f.store.enqueue_run(&workflow_run("parent")).unwrap();
    f.store.claim_run(A, &parent.id, "w").unwrap();
    f.store
        .record_run_usage(
            &held(&f.store, A, &parent.id),
            &usage(&[("inputTokens", 7)]),
        )
        .unwrap();
    let mut kids = Vec::new();
    for i in 0..2 {
        let mut child = workflow_run(&format!("child {i}"));
        child.parent_run_id = Some(parent.id.clone());
        let child = f.store.enqueue_run(&child).unwrap();
        f.store.claim_run(A, &child.id, "w").unwrap();
        f.store
            .record_run_usage(
                &held(&f.store, A, &child.id),
                &usage(&[("inputTokens", 10), ("outputTokens", 1 + i)]),
            )
            .unwrap();
        kids.push(child.id);
    }
    f.store
        .finalize_run(
            &held(&f.store, A, &kids[0]),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();
    f.store
        .finalize_run(&held(&f.store, A, &kids[1]), RunOutcome::Canceled)
        .unwrap();
    let parent = f.store.run(A, &parent.id).unwrap().unwrap();
    let usage = parent.usage_cbor.unwrap().decode().unwrap();
    assert_eq!(usage.get("inputTokens"), Some(&Ipld::Integer(7)));
    let children = match usage.get("children") {
        Some(Ipld::Map(map)) => map.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(children.get("inputTokens"), Some(&Ipld::Integer(20)));
    assert_eq!(children.get("outputTokens"), Some(&Ipld::Integer(3)));
    // A later turn-boundary write keeps the roll-up.
    f.store
        .record_run_usage(&held(&f.store, A, &parent.id), &usage_of(8))
        .unwrap();
    let usage = f
        .store
        .run(A, &parent.id)
        .unwrap()
        .unwrap()
        .usage_cbor
        .unwrap()
        .decode()
        .unwrap();
    assert!(usage.contains_key("children"));
}

fn usage_of(tokens: i128) -> RunUsage {
    usage(&[("inputTokens", tokens)])
}

#[test]
fn unmet_obligations_are_carried_in_output_and_error() {
    let f = fixture();
    let obligation = UnmetObligation::TypedResult(UnmetTypedResult::default());
    let a = f.store.enqueue_run(&workflow_run("a")).unwrap();
    f.store.claim_run(A, &a.id, "w").unwrap();
    let output = RunOutput {
        unmet_obligations: Some(vec![obligation.clone()]),
        extra: OpenMap::new(),
    };
    f.store
        .finalize_run(
            &held(&f.store, A, &a.id),
            RunOutcome::Succeeded(output.clone()),
        )
        .unwrap();
    let stored = f
        .store
        .run(A, &a.id)
        .unwrap()
        .unwrap()
        .output_cbor
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(stored, output);

    let b = f.store.enqueue_run(&workflow_run("b")).unwrap();
    f.store.claim_run(A, &b.id, "w").unwrap();
    let mut error = RunErrorInfo::new("budget", "ran out");
    error.unmet_obligations = Some(vec![obligation]);
    f.store
        .finalize_run(&held(&f.store, A, &b.id), RunOutcome::Failed(error.clone()))
        .unwrap();
    let stored = f
        .store
        .run(A, &b.id)
        .unwrap()
        .unwrap()
        .error_cbor
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(stored, error);
}

#[test]
fn cancel_tree_cancels_queued_and_waiting_members_and_reports_live_ones() {
    let f = fixture();
    let root = f.store.enqueue_run(&workflow_run("root")).unwrap();
    let mut ids = Vec::new();
    for title in ["queued", "waiting", "running", "done"] {
        let mut child = workflow_run(title);
        child.parent_run_id = Some(root.id.clone());
        ids.push(f.store.enqueue_run(&child).unwrap().id);
    }
    let mut grandchild = workflow_run("grandchild");
    grandchild.parent_run_id = Some(ids[1].clone());
    let grandchild = f.store.enqueue_run(&grandchild).unwrap();
    f.store.claim_run(A, &root.id, "w").unwrap();
    f.store.claim_run(A, &ids[1], "w").unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &ids[1]),
            &event_wait("1", None),
            &signal("s"),
        )
        .unwrap();
    f.store.claim_run(A, &ids[2], "w").unwrap();
    f.store
        .start_run(&claim_as(&f.store, A, &ids[2], "w"))
        .unwrap();
    f.store.claim_run(A, &ids[3], "w").unwrap();
    f.store
        .finalize_run(
            &held(&f.store, A, &ids[3]),
            RunOutcome::Succeeded(RunOutput::default()),
        )
        .unwrap();

    let mut report = f.store.cancel_run_tree(A, &root.id).unwrap();
    report.canceled.sort();
    report.live.sort();
    let mut canceled = vec![ids[0].clone(), ids[1].clone(), grandchild.id.clone()];
    canceled.sort();
    let mut live = vec![root.id.clone(), ids[2].clone()];
    live.sort();
    assert_eq!(report, CancelReport { canceled, live });
    assert!(f.store.run_waits(A, &ids[1]).unwrap().is_empty());
    assert_eq!(
        f.store.run(A, &ids[3]).unwrap().unwrap().status,
        Status::Succeeded
    );
    assert!(matches!(
        f.store.cancel_run_tree(B, &root.id).unwrap_err(),
        Error::NotFound { .. }
    ));
}

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

#[test]
fn enqueue_refuses_another_accounts_agent_session_or_firing() {
    let f = fixture();
    session_in(&f.store, B, AGENT_B, "theirs");
    let mut run = agent_run("theirs", "x");
    let err = f.store.enqueue_run(&run).unwrap_err();
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
    run.session_id = None;
    run.agent_id = Some(AGENT_B.into());
    let err = f.store.enqueue_run(&run).unwrap_err();
    assert!(
        matches!(err, Error::NotFound { what: "agent", .. }),
        "{err:?}"
    );
    let mut fired = workflow_run("x");
    fired.trigger_firing_id = Some("nope".into());
    let err = f.store.enqueue_run(&fired).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                what: "trigger firing",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn turns_of_one_session_enqueued_in_the_same_millisecond_are_claimed_in_enqueue_order() {
    let f = fixture();
    // The clock stands still: every turn is enqueued in the same millisecond, and the ids are
    // chosen so that id order is the reverse of enqueue order in half the sessions.
    let mut expected = Vec::new();
    for s in 0..20 {
        let session = f.session(&format!("s{s:02}"));
        let mut turns = Vec::new();
        for turn in 0..3 {
            let mut run = agent_run(&session, &format!("turn {turn}"));
            let rank = if s % 2 == 0 { turn } else { 2 - turn };
            run.id = Some(format!("run-{s:02}-{rank}"));
            run.queue = Queue::Interactive;
            turns.push(f.store.enqueue_run(&run).unwrap());
        }
        // The tie is broken in the row itself: created_at moves on by a millisecond per turn.
        assert!(turns.windows(2).all(|w| w[0].created_at < w[1].created_at));
        expected.push(turns.into_iter().map(|r| r.id).collect::<Vec<_>>());
    }
    // A second handle on the file (another process would do the same) enqueues in the same
    // millisecond too, and its turn lands after the first handle's.
    let other = f.reopen();
    let late = other.enqueue_run(&agent_run("s00", "turn 3")).unwrap();
    expected[0].push(late.id);
    let mut claimed: Vec<Vec<String>> = vec![Vec::new(); 20];
    while let Some(run) = f.store.claim_next_run("w", no_caps()).unwrap() {
        let session = run.session_id.clone().unwrap();
        let index: usize = session[1..].parse().unwrap();
        claimed[index].push(run.id.clone());
        f.store
            .finalize_run(
                &seed_agents_store::lease::Claim::of(&run).unwrap(),
                RunOutcome::Succeeded(RunOutput::default()),
            )
            .unwrap();
    }
    assert_eq!(claimed, expected);
}

#[test]
fn a_listing_built_at_run_time_runs_on_the_read_connection_and_decodes_rows() {
    use sea_query::{Expr, ExprTrait, Order, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let mut made = Vec::new();
    for title in ["one", "two", "three"] {
        made.push(f.store.enqueue_run(&workflow_run(title)).unwrap());
    }
    f.store.claim_run(A, &made[1].id, "w").unwrap().unwrap();
    // Filter, sort and page chosen at run time; the enum and the strings are bound values.
    let queued = |after: &str| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .and_where(Expr::col(runs::Column::Status).eq(Status::Queued))
            .and_where(Expr::col(runs::Column::Id).gt(after))
            .order_by(runs::Column::Id, Order::Asc)
            .limit(1)
            .to_owned()
    };
    let mut expected: Vec<&runs::Row> = [&made[0], &made[2]].into();
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    let first: Vec<runs::Row> = f.store.select(&queued("")).unwrap();
    assert_eq!(first, [expected[0].clone()]);
    let second: Vec<runs::Row> = f.store.select(&queued(&first[0].id)).unwrap();
    assert_eq!(second, [expected[1].clone()]);
    let last: Vec<runs::Row> = f.store.select(&queued(&second[0].id)).unwrap();
    assert!(last.is_empty());
    // Another account's runs never match its filter.
    let other: Vec<runs::Row> = f
        .store
        .select(
            Query::select()
                .columns(runs::Column::ALL.iter().copied())
                .from(runs::Column::Table)
                .and_where(Expr::col(runs::Column::AccountId).eq("someone-else")),
        )
        .unwrap();
    assert!(other.is_empty());
}

#[test]
fn a_value_sqlite_cannot_hold_is_a_typed_error_naming_the_statement() {
    use sea_query::{Expr, ExprTrait, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let err = f
        .store
        .select::<runs::Row>(
            Query::select()
                .columns(runs::Column::ALL.iter().copied())
                .from(runs::Column::Table)
                .and_where(Expr::col(runs::Column::Attempt).eq(u64::MAX)),
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Invalid { field: "statement", ref reason } if reason.contains("does not fit")),
        "{err:?}"
    );
}

/// A listing means the same on both backends: a sort key that may be NULL puts its NULLs first
/// ascending and last descending (SQLite's order), `LIKE` folds ASCII case only, and what the
/// two would evaluate differently is refused on both, naming it.
#[test]
fn a_listing_means_on_every_backend_what_it_means_on_sqlite() {
    use sea_query::{Expr, ExprTrait, Func, Order, Query};
    use seed_agents_store::schema::runs;

    let f = fixture();
    let mut delayed = workflow_run("Nightly report");
    delayed.not_before = Some(T0 + 1_000);
    let delayed = f.store.enqueue_run(&delayed).unwrap();
    let undelayed = f.store.enqueue_run(&workflow_run("nightly ÉTÉ")).unwrap();
    let listing = |order: Order| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .order_by(runs::Column::NotBefore, order)
            .to_owned()
    };
    let ids = |rows: Vec<runs::Row>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let ascending = ids(f.store.select(&listing(Order::Asc)).unwrap());
    assert_eq!(ascending, [undelayed.id.clone(), delayed.id.clone()]);
    let descending = ids(f.store.select(&listing(Order::Desc)).unwrap());
    assert_eq!(descending, [delayed.id.clone(), undelayed.id.clone()]);

    let titled = |pattern: &str| {
        let mut select = listing(Order::Asc);
        select.and_where(Expr::col(runs::Column::Title).like(pattern));
        ids(f.store.select(&select).unwrap())
    };
    // ASCII letters match in either case; other letters only as written; `\` escapes nothing.
    assert_eq!(
        titled("NIGHTLY%"),
        [undelayed.id.clone(), delayed.id.clone()]
    );
    assert_eq!(titled("%été"), Vec::<String>::new());
    assert_eq!(titled("%ÉTÉ"), [undelayed.id]);
    assert_eq!(titled("nightly\\%"), Vec::<String>::new());
    let lowered = {
        let mut select = listing(Order::Asc);
        select.and_where(Func::lower(Expr::col(runs::Column::Title)).eq("nightly été"));
        ids(f.store.select(&select).unwrap())
    };
    assert_eq!(
        lowered,
        Vec::<String>::new(),
        "lower folds ASCII letters only"
    );

    for (what, condition) in [
        ("raw SQL", Expr::cust("random() > 0")),
        ("Div", Expr::col(runs::Column::Attempt).div(2).eq(0)),
        (
            "Greatest",
            Expr::expr(Func::greatest([
                Expr::col(runs::Column::Attempt),
                Expr::col(runs::Column::Depth),
            ]))
            .eq(1),
        ),
    ] {
        let mut select = listing(Order::Asc);
        select.and_where(condition);
        let err = f.store.select::<runs::Row>(&select).unwrap_err();
        assert!(
            matches!(&err, Error::Invalid { field: "statement", reason }
                if reason.contains(what) && reason.contains("PostgreSQL")),
            "{what}: {err:?}"
        );
    }
}
