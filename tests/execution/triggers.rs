//! Triggers, firings, claims, webhook credentials, combination, and activity watermarks.

use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::*;
use seed_agents_store::runs::{ClaimLimits, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::schema::{trigger_firings, webhook_trigger_credentials};
use seed_agents_store::triggers::*;
use seed_agents_store::Error;
use support::execution::*;

fn filter(kind: &str, doc: &str) -> AgentTriggerSource {
    let mut map = OpenMap::new();
    map.insert("kind".into(), Ipld::String(kind.into()));
    map.insert("document".into(), Ipld::String(doc.into()));
    seed_agents_store::cbor::from_slice(&seed_agents_store::cbor::to_vec(&map).unwrap()).unwrap()
}

fn activity(alternatives: Vec<(&str, AgentTriggerSource)>) -> AgentTriggerSource {
    AgentTriggerSource::Activity(ActivitySource {
        alternatives: alternatives
            .into_iter()
            .map(|(id, source)| ActivityAlternative {
                id: id.into(),
                source,
                extra: OpenMap::new(),
            })
            .collect(),
        extra: OpenMap::new(),
    })
}

fn schedule() -> AgentTriggerSource {
    AgentTriggerSource::Schedule(ScheduleSource {
        schedule: Schedule::Interval(ScheduleInterval {
            interval_ms: 60_000,
            extra: OpenMap::new(),
        }),
        extra: OpenMap::new(),
    })
}

fn webhook() -> AgentTriggerSource {
    AgentTriggerSource::Webhook(WebhookSource::default())
}

fn run_completed() -> AgentTriggerSource {
    AgentTriggerSource::RunCompleted(RunCompletedSource::default())
}

fn new_trigger(name: &str, source: AgentTriggerSource) -> NewTrigger {
    NewTrigger {
        id: None,
        account_id: A.into(),
        agent_id: AGENT.into(),
        name: name.into(),
        enabled: true,
        source,
        prompt: format!("prompt of {name}"),
        continuation: None,
    }
}

fn request(trigger: &str, key: FiringKey) -> FiringRequest {
    FiringRequest {
        account_id: A.into(),
        trigger_id: trigger.into(),
        key,
        activity: TriggerActivity::default(),
        body_digest: None,
        matched: None,
    }
}

fn admitted(admission: Admission) -> trigger_firings::Row {
    match admission {
        Admission::Admitted(row) => row,
        other => panic!("{other:?}"),
    }
}

#[test]
fn create_update_enable_list_and_validate() {
    let f = fixture();
    let created = f
        .store
        .create_trigger(&new_trigger("  daily  ", schedule()))
        .unwrap();
    assert!(created.webhook_secret.is_none());
    let t = created.trigger;
    assert_eq!(
        (t.name.as_str(), t.enabled, t.merged_into.as_deref()),
        ("daily", true, None)
    );
    assert_eq!(t.source_cbor.decode().unwrap(), schedule());

    f.clock.advance(10);
    let wake = TriggerContinuation::Wake(WakeContinuation {
        signal: "ping".into(),
        run_id: None,
        payload: None,
        extra: OpenMap::new(),
    });
    let patch = TriggerPatch {
        prompt: Some("new".into()),
        continuation: Some(Some(wake.clone())),
        ..TriggerPatch::default()
    };
    let updated = f.store.update_trigger(A, &t.id, &patch).unwrap().trigger;
    assert_eq!(updated.prompt, "new");
    assert_eq!(updated.continuation_cbor.unwrap().decode().unwrap(), wake);
    assert_eq!(updated.updated_at, T0 + 10);
    assert!(
        !f.store
            .set_trigger_enabled(A, &t.id, false)
            .unwrap()
            .enabled
    );
    assert_eq!(f.store.triggers(A, AGENT).unwrap().len(), 1);
    assert!(f.store.triggers(B, AGENT).unwrap().is_empty());
    assert!(f.store.trigger(B, &t.id).unwrap().is_none());

    let bad = [
        (new_trigger(" ", schedule()), "name"),
        (new_trigger("x", activity(vec![])), "source.alternatives"),
        (
            new_trigger("x", activity(vec![("a", schedule())])),
            "source.alternatives.source",
        ),
        (
            new_trigger(
                "x",
                activity(vec![
                    ("a", filter("site-update", "d")),
                    ("a", filter("user-mention", "d")),
                ]),
            ),
            "source.alternatives.id",
        ),
    ];
    for (trigger, field) in bad {
        let err = f.store.create_trigger(&trigger).unwrap_err();
        assert!(
            matches!(err, Error::Invalid { field: got, .. } if got == field),
            "{err:?}"
        );
    }
    let mut foreign = new_trigger("x", schedule());
    foreign.agent_id = AGENT_B.into();
    assert!(matches!(
        f.store.create_trigger(&foreign).unwrap_err(),
        Error::NotFound { what: "agent", .. }
    ));
}

#[test]
fn every_source_kind_is_accepted_and_read_back() {
    let f = fixture();
    let kinds = [
        filter("document-comment", "d"),
        filter("user-mention", "d"),
        filter("comment-reply", "d"),
        filter("document-author-comment", "d"),
        filter("site-update", "d"),
        activity(vec![
            ("a", filter("document-comment", "d")),
            ("b", filter("site-update", "s")),
        ]),
        schedule(),
        webhook(),
        run_completed(),
    ];
    for (i, source) in kinds.into_iter().enumerate() {
        let t = f
            .store
            .create_trigger(&new_trigger(&format!("t{i}"), source.clone()))
            .unwrap()
            .trigger;
        assert_eq!(
            f.store
                .trigger(A, &t.id)
                .unwrap()
                .unwrap()
                .source_cbor
                .decode()
                .unwrap(),
            source
        );
    }
}

#[test]
fn a_legacy_single_source_row_reads_unchanged() {
    if support::backend::skip_on_postgres(
        "a_legacy_single_source_row_reads_unchanged",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let f = fixture();
    // A legacy row: a filter map with fields this version does not type, written before the
    // activity list existed, with its original key order (canonical) and bytes.
    let mut legacy = OpenMap::new();
    legacy.insert("kind".into(), Ipld::String("user-mention".into()));
    legacy.insert("account".into(), Ipld::String("z6Mk".into()));
    legacy.insert("legacyFlag".into(), Ipld::Bool(true));
    let bytes = seed_agents_store::cbor::to_vec(&legacy).unwrap();
    raw(&f.store)
        .execute(
            "INSERT INTO agent_triggers (id, account_id, agent_id, name, enabled, source_cbor, prompt, created_at, updated_at)
             VALUES ('legacy', ?1, ?2, 'old', 1, ?3, 'p', ?4, ?4)",
            (A, AGENT, &bytes, T0),
        )
        .unwrap();
    let row = f.store.trigger(A, "legacy").unwrap().unwrap();
    assert_eq!(row.source_cbor.as_bytes(), bytes.as_slice());
    let source = row.source_cbor.decode().unwrap();
    assert_eq!(source.kind(), Some("user-mention"));
    assert_eq!(Cbor::encode(&source).unwrap().as_bytes(), bytes.as_slice());
}

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

#[test]
fn webhook_secrets_are_hashed_encrypted_returned_and_verified() {
    let f = fixture();
    let created = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap();
    let secret = created
        .webhook_secret
        .expect("a webhook trigger gets a secret");
    let t = created.trigger;
    assert!(secret.expose().starts_with("whsec_"));
    assert_eq!(format!("{secret:?}"), "WebhookSecret(..)");
    let stored = webhook_trigger_credentials::get(&f.store.reading().unwrap(), A, &t.id)
        .unwrap()
        .unwrap();
    assert_ne!(stored.secret_hash, secret.expose());
    assert!(!stored
        .secret_ciphertext
        .windows(secret.expose().len())
        .any(|w| w == secret.expose().as_bytes()));
    assert_eq!(stored.secret_hash.len(), 64);
    assert_eq!(
        f.store.webhook_secret(A, &t.id).unwrap().expose(),
        secret.expose()
    );
    assert!(f
        .store
        .verify_webhook_secret(A, &t.id, secret.expose())
        .unwrap());
    assert!(!f
        .store
        .verify_webhook_secret(A, &t.id, "whsec_wrong")
        .unwrap());
    assert!(!f
        .store
        .verify_webhook_secret(B, &t.id, secret.expose())
        .unwrap());
    assert!(matches!(
        f.store.webhook_secret(B, &t.id).unwrap_err(),
        Error::NotFound { .. }
    ));
    let rotated = f.store.rotate_webhook_secret(A, &t.id).unwrap();
    assert_ne!(rotated.expose(), secret.expose());
    assert!(!f
        .store
        .verify_webhook_secret(A, &t.id, secret.expose())
        .unwrap());
    assert!(f
        .store
        .verify_webhook_secret(A, &t.id, rotated.expose())
        .unwrap());
    // No longer a webhook: the credential goes; a webhook again: a new one.
    let patch = TriggerPatch {
        source: Some(schedule()),
        ..TriggerPatch::default()
    };
    assert!(f
        .store
        .update_trigger(A, &t.id, &patch)
        .unwrap()
        .webhook_secret
        .is_none());
    assert!(
        webhook_trigger_credentials::get(&f.store.reading().unwrap(), A, &t.id)
            .unwrap()
            .is_none()
    );
    let patch = TriggerPatch {
        source: Some(webhook()),
        ..TriggerPatch::default()
    };
    assert!(f
        .store
        .update_trigger(A, &t.id, &patch)
        .unwrap()
        .webhook_secret
        .is_some());
}

#[test]
fn a_reused_idempotency_key_with_another_body_is_refused() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap()
        .trigger;
    let first = admitted(
        f.store
            .admit_webhook(
                A,
                &t.id,
                Some("idem-1"),
                b"{\"a\":1}",
                TriggerActivity::default(),
            )
            .unwrap(),
    );
    assert_eq!(first.activity_key, "webhook:idem-1");
    assert!(first.body_digest.as_deref().unwrap().starts_with("sha256:"));
    assert!(matches!(
        f.store
            .admit_webhook(
                A,
                &t.id,
                Some("idem-1"),
                b"{\"a\":1}",
                TriggerActivity::default()
            )
            .unwrap(),
        Admission::Duplicate(Some(_))
    ));
    let err = f
        .store
        .admit_webhook(
            A,
            &t.id,
            Some("idem-1"),
            b"{\"a\":2}",
            TriggerActivity::default(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Conflict {
                what: "webhook delivery",
                ..
            }
        ),
        "{err:?}"
    );
    // Without a key every delivery is its own firing.
    for _ in 0..2 {
        admitted(
            f.store
                .admit_webhook(A, &t.id, None, b"x", TriggerActivity::default())
                .unwrap(),
        );
    }
    assert_eq!(f.store.firings(A, &t.id).unwrap().len(), 3);
}

#[test]
fn delete_detaches_runs_and_removes_firings_claims_and_credentials_at_once() {
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap()
        .trigger;
    let firing = admitted(
        f.store
            .admit_webhook(A, &t.id, Some("k"), b"x", TriggerActivity::default())
            .unwrap(),
    );
    let mut run = NewRun::new(A, Kind::Workflow, Origin::Trigger, "fired");
    run.id = Some(firing_run_id(&firing.id));
    run.trigger_firing_id = Some(firing.id.clone());
    f.store.enqueue_run(&run).unwrap();
    assert!(f.store.delete_trigger(A, &t.id).unwrap());
    assert!(!f.store.delete_trigger(A, &t.id).unwrap());
    let run = f.store.run(A, &firing_run_id(&firing.id)).unwrap().unwrap();
    assert_eq!(
        run.trigger_firing_id, None,
        "the run keeps its history, detached"
    );
    assert!(f.store.firings(A, &t.id).unwrap().is_empty());
    assert!(
        webhook_trigger_credentials::get(&f.store.reading().unwrap(), A, &t.id)
            .unwrap()
            .is_none()
    );
    assert!(f.store.trigger(A, &t.id).unwrap().is_none());
    let _ = f.store.claim_next_run("w", ClaimLimits::default());
    let _ = RunOutcome::Canceled;
}

#[test]
fn combining_retires_one_trigger_into_the_other_in_one_transaction() {
    if support::backend::skip_on_postgres(
        "combining_retires_one_trigger_into_the_other_in_one_transaction",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let f = fixture();
    let survivor = f
        .store
        .create_trigger(&new_trigger("comments", filter("document-comment", "d1")))
        .unwrap()
        .trigger;
    let retired = f
        .store
        .create_trigger(&new_trigger(
            "mentions",
            activity(vec![("m", filter("user-mention", "u"))]),
        ))
        .unwrap()
        .trigger;
    // A legacy firing (no context) on the survivor, and claims on both.
    let legacy = admitted(
        f.store
            .admit_firing(&request(
                &survivor.id,
                FiringKey::Activity { key: "e-1".into() },
            ))
            .unwrap(),
    );
    raw(&f.store)
        .execute(
            "UPDATE trigger_firings SET context_cbor = NULL WHERE id = ?1",
            [&legacy.id],
        )
        .unwrap();
    let retired_firing = admitted(
        f.store
            .admit_firing(&request(
                &retired.id,
                FiringKey::Activity { key: "e-2".into() },
            ))
            .unwrap(),
    );
    f.store
        .admit_firing(&request(
            &retired.id,
            FiringKey::Activity { key: "e-1".into() },
        ))
        .unwrap();

    f.clock.advance(100);
    let combine = CombineTriggers {
        survivor_id: survivor.id.clone(),
        retired_id: retired.id.clone(),
        prompt: Some("shared".into()),
        ..CombineTriggers::default()
    };
    let merged = f.store.combine_triggers(A, &combine).unwrap();
    assert_eq!(merged.prompt, "shared");
    match merged.source_cbor.decode().unwrap() {
        AgentTriggerSource::Activity(a) => {
            let ids: Vec<&str> = a.alternatives.iter().map(|x| x.id.as_str()).collect();
            assert_eq!(ids, [survivor.id.as_str(), "m"]);
        }
        other => panic!("{other:?}"),
    }
    let old = f.store.trigger(A, &retired.id).unwrap().unwrap();
    assert_eq!(
        (old.merged_into.as_deref(), old.enabled),
        (Some(survivor.id.as_str()), false)
    );
    // The legacy firing got the survivor's view from before the change, with no matches.
    let context = trigger_firings::get(&f.store.reading().unwrap(), A, &legacy.id)
        .unwrap()
        .unwrap()
        .context_cbor
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(
        (context.prompt.as_str(), context.matched),
        ("prompt of comments", None)
    );
    // Union of claims: e-2 now dedupes on the survivor; firings keep their ids and triggers.
    let mut keys: Vec<String> = f
        .store
        .trigger_claims(A, &survivor.id)
        .unwrap()
        .into_iter()
        .map(|c| c.activity_key)
        .collect();
    keys.sort();
    assert_eq!(keys, ["e-1", "e-2"]);
    assert!(matches!(
        f.store.admit_firing(&request(&survivor.id, FiringKey::Activity { key: "e-2".into() })).unwrap(),
        Admission::Duplicate(Some(ref row)) if row.id == retired_firing.id && row.trigger_id == retired.id
    ));
    // The retired trigger is immutable.
    for err in [
        f.store
            .set_trigger_enabled(A, &retired.id, true)
            .unwrap_err(),
        f.store
            .update_trigger(A, &retired.id, &TriggerPatch::default())
            .unwrap_err(),
        f.store
            .combine_triggers(
                A,
                &CombineTriggers {
                    survivor_id: retired.id.clone(),
                    retired_id: survivor.id.clone(),
                    ..CombineTriggers::default()
                },
            )
            .unwrap_err(),
    ] {
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
    // Deleting the retired predecessor keeps the claims the survivor imported.
    f.store.delete_trigger(A, &retired.id).unwrap();
    assert_eq!(f.store.trigger_claims(A, &survivor.id).unwrap().len(), 2);
    assert!(matches!(
        f.store
            .admit_firing(&request(
                &survivor.id,
                FiringKey::Activity { key: "e-2".into() }
            ))
            .unwrap(),
        Admission::Duplicate(None)
    ));
}

#[test]
fn combining_refuses_non_activity_triggers_and_self() {
    let f = fixture();
    let a = f
        .store
        .create_trigger(&new_trigger("a", filter("site-update", "s")))
        .unwrap()
        .trigger;
    let s = f
        .store
        .create_trigger(&new_trigger("s", schedule()))
        .unwrap()
        .trigger;
    let same = CombineTriggers {
        survivor_id: a.id.clone(),
        retired_id: a.id.clone(),
        ..CombineTriggers::default()
    };
    assert!(matches!(
        f.store.combine_triggers(A, &same).unwrap_err(),
        Error::Invalid { .. }
    ));
    let mixed = CombineTriggers {
        survivor_id: a.id.clone(),
        retired_id: s.id.clone(),
        ..CombineTriggers::default()
    };
    assert!(matches!(
        f.store.combine_triggers(A, &mixed).unwrap_err(),
        Error::Invalid {
            field: "source",
            ..
        }
    ));
    assert!(
        f.store
            .trigger(A, &s.id)
            .unwrap()
            .unwrap()
            .merged_into
            .is_none(),
        "nothing was written"
    );
}

#[test]
fn deleting_a_survivor_takes_its_retired_predecessors_along() {
    let f = fixture();
    let a = f
        .store
        .create_trigger(&new_trigger("a", filter("site-update", "s")))
        .unwrap()
        .trigger;
    let b = f
        .store
        .create_trigger(&new_trigger("b", filter("user-mention", "u")))
        .unwrap()
        .trigger;
    f.store
        .combine_triggers(
            A,
            &CombineTriggers {
                survivor_id: a.id.clone(),
                retired_id: b.id.clone(),
                ..CombineTriggers::default()
            },
        )
        .unwrap();
    assert!(f.store.delete_trigger(A, &a.id).unwrap());
    assert!(f.store.trigger(A, &b.id).unwrap().is_none());
}

#[test]
fn watermarks_cursor_poll_success_and_error() {
    let f = fixture();
    let url = "https://hm.example";
    let mut cursor = ActivityCursor::default();
    cursor.insert("after".into(), Ipld::String("c1".into()));
    let row = f.store.record_watermark_poll(A, url).unwrap();
    assert_eq!((row.last_poll_at, row.last_success_at), (Some(T0), None));
    f.clock.advance(10);
    let row = f.store.record_watermark_error(A, url, "timeout").unwrap();
    assert_eq!(
        (row.last_error.as_deref(), row.last_poll_at),
        (Some("timeout"), Some(T0))
    );
    f.clock.advance(10);
    let row = f.store.record_watermark_success(A, url, &cursor).unwrap();
    assert_eq!((row.last_error, row.last_success_at), (None, Some(T0 + 20)));
    assert_eq!(row.cursor_cbor.decode().unwrap(), cursor);
    let row = f.store.record_watermark_error(A, url, "again").unwrap();
    assert_eq!(
        row.cursor_cbor.decode().unwrap(),
        cursor,
        "an error keeps the cursor"
    );
    cursor.insert("after".into(), Ipld::String("c2".into()));
    let row = f.store.set_watermark_cursor(A, url, &cursor).unwrap();
    assert_eq!(
        (row.cursor_cbor.decode().unwrap(), row.last_error.as_deref()),
        (cursor, Some("again"))
    );
    assert_eq!(f.store.watermarks(A).unwrap().len(), 1);
    assert!(f.store.watermark(B, url).unwrap().is_none());
    assert!(matches!(
        f.store.record_watermark_poll(A, " ").unwrap_err(),
        Error::Invalid {
            field: "server_url",
            ..
        }
    ));
    // A new account's row needs no account set up first.
    assert!(f.store.record_watermark_poll("acct-new", url).is_ok());
}

#[test]
fn a_webhook_secret_that_does_not_decrypt_is_recorded_in_the_audit_log() {
    if support::backend::skip_on_postgres(
        "a_webhook_secret_that_does_not_decrypt_is_recorded_in_the_audit_log",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let f = fixture();
    let t = f
        .store
        .create_trigger(&new_trigger("hook", webhook()))
        .unwrap()
        .trigger;
    let raw = rusqlite::Connection::open(f.store.path()).unwrap();
    raw.execute(
        "UPDATE webhook_trigger_credentials SET secret_ciphertext = zeroblob(48)",
        [],
    )
    .unwrap();
    assert!(matches!(
        f.store.webhook_secret(A, &t.id),
        Err(Error::SecretTagMismatch)
    ));
    let page = f
        .store
        .audit_events(&Default::default(), None, None)
        .unwrap();
    let event = &page.items[0];
    assert_eq!(event.action, "secret.decrypt");
    assert_eq!(event.target, format!("webhook credential {}", t.id));
    assert_eq!(event.account_id, A);
}
