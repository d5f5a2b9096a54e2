//! Finalize: retries with backoff, sticky cancel, usage rolled into the parent, unmet obligations,
//! and cancelling a tree.

use super::*;

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
