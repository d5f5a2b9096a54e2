//! Admission: schedule, webhook and run keys admit once; firing statuses; activity admission and
//! the run-completed loop guard.

use super::*;

#[test]
fn schedule_webhook_and_run_keys_admit_once() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("s", schedule()))
        .unwrap()
        .trigger;
    let firing = admitted(
        f.store
            .admit_firing(&request(&t.id, FiringKey::Schedule { scheduled_at: 42 }))
            .unwrap(),
    );
    assert_eq!(firing.activity_key, format!("schedule:{}:42", t.id));
    assert_eq!(firing.status, trigger_firings::Status::Created);
    assert_eq!(firing_run_id(&firing.id), format!("firing-{}", firing.id));
    match f
        .store
        .admit_firing(&request(&t.id, FiringKey::Schedule { scheduled_at: 42 }))
        .unwrap()
    {
        Admission::Duplicate(Some(row)) => assert_eq!(row.id, firing.id),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.store.trigger(A, &t.id).unwrap().unwrap().last_fired_at,
        Some(T0)
    );
    assert_eq!(
        FiringKey::RunCompleted {
            run_id: "r1".into()
        }
        .activity_key("t"),
        "run:r1"
    );
    assert_eq!(
        FiringKey::Webhook {
            idempotency_key: Some("k".into())
        }
        .activity_key("t"),
        "webhook:k"
    );
    let random = FiringKey::Webhook {
        idempotency_key: None,
    };
    assert_ne!(random.activity_key("t"), random.activity_key("t"));
    assert!(random.activity_key("t").starts_with("webhook:"));

    // Disabled triggers admit nothing.
    f.store.set_trigger_enabled(A, &t.id, false).unwrap();
    let err = f
        .store
        .admit_firing(&request(&t.id, FiringKey::Schedule { scheduled_at: 43 }))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Conflict {
                what: "trigger",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn firing_statuses_and_the_deterministic_run() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("s", schedule()))
        .unwrap()
        .trigger;
    let firing = admitted(
        f.store
            .admit_firing(&request(&t.id, FiringKey::Schedule { scheduled_at: 1 }))
            .unwrap(),
    );
    let mut run = NewRun::new(A, Kind::Workflow, Origin::Trigger, "fired");
    run.id = Some(firing_run_id(&firing.id));
    run.trigger_firing_id = Some(firing.id.clone());
    let first = f.store.enqueue_run(&run).unwrap();
    assert_eq!(
        f.store.enqueue_run(&run).unwrap(),
        first,
        "a retried dispatch enqueues the same run"
    );
    for status in [
        trigger_firings::Status::Started,
        trigger_firings::Status::Succeeded,
    ] {
        let update = FiringUpdate {
            status,
            error: None,
            session_id: None,
            run_id: Some(first.id.clone()),
        };
        assert_eq!(
            f.store
                .update_firing(A, &firing.id, &update)
                .unwrap()
                .status,
            status
        );
    }
    let failed = FiringUpdate {
        status: trigger_firings::Status::Failed,
        error: Some("boom".into()),
        session_id: None,
        run_id: None,
    };
    let row = f.store.update_firing(A, &firing.id, &failed).unwrap();
    assert_eq!(
        (row.error.as_deref(), row.run_id.as_deref()),
        (Some("boom"), Some(first.id.as_str()))
    );
    assert!(matches!(
        f.store.update_firing(B, &firing.id, &failed).unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn activity_admission_claims_first_and_snapshots_the_context() {
    let f = fixture();
    let source = activity(vec![("a", filter("document-comment", "d"))]);
    let t = f
        .store
        .create_trigger(&new_trigger("watch", source))
        .unwrap()
        .trigger;
    let matched = vec![ActivityAlternative {
        id: "a".into(),
        source: filter("document-comment", "d"),
        extra: OpenMap::new(),
    }];
    let mut req = request(
        &t.id,
        FiringKey::Activity {
            key: "event-1".into(),
        },
    );
    req.matched = Some(matched.clone());
    let firing = admitted(f.store.admit_firing(&req).unwrap());
    let context = firing.context_cbor.unwrap().decode().unwrap();
    assert_eq!(
        (context.name.as_str(), context.prompt.as_str()),
        ("watch", "prompt of watch")
    );
    assert_eq!(context.matched, Some(matched));
    let claims = f.store.trigger_claims(A, &t.id).unwrap();
    assert_eq!(claims.len(), 1);
    assert_eq!(
        (
            claims[0].activity_key.as_str(),
            claims[0].firing_id.as_deref()
        ),
        ("event-1", Some(firing.id.as_str()))
    );
    // A later prompt edit does not change the snapshot.
    f.store
        .update_trigger(
            A,
            &t.id,
            &TriggerPatch {
                prompt: Some("edited".into()),
                ..TriggerPatch::default()
            },
        )
        .unwrap();
    match f.store.admit_firing(&req).unwrap() {
        Admission::Duplicate(Some(row)) => {
            assert_eq!(row.id, firing.id);
            assert_eq!(
                row.context_cbor.unwrap().decode().unwrap().prompt,
                "prompt of watch"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.store.firings(A, &t.id).unwrap().len(), 1);
}

#[test]
fn the_run_completed_loop_guard_stops_at_eight_hops() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("chain", run_completed()))
        .unwrap()
        .trigger;
    let origin = f.store.enqueue_run(&workflow_run("origin")).unwrap();
    let mut completed = origin.id.clone();
    for hop in 1..=8 {
        let firing = admitted(
            f.store
                .admit_firing(&request(
                    &t.id,
                    FiringKey::RunCompleted {
                        run_id: completed.clone(),
                    },
                ))
                .unwrap(),
        );
        let mut next = NewRun::new(A, Kind::Workflow, Origin::Trigger, format!("hop {hop}"));
        next.id = Some(firing_run_id(&firing.id));
        next.trigger_firing_id = Some(firing.id.clone());
        completed = f.store.enqueue_run(&next).unwrap().id;
    }
    match f
        .store
        .admit_firing(&request(
            &t.id,
            FiringKey::RunCompleted { run_id: completed },
        ))
        .unwrap()
    {
        Admission::LoopGuard(row) => {
            assert_eq!(row.status, trigger_firings::Status::Skipped);
            assert!(row.error.unwrap().contains("loop guard"));
        }
        other => panic!("{other:?}"),
    }
}
