//! Enqueue (titles, children, chosen ids) and claim (order, not_before, caps, one live agent run
//! per session), and start.

use super::*;

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
