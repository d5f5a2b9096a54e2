//! Deleting triggers, combining one into another, watermarks, and an undecryptable webhook secret.

use super::*;

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
