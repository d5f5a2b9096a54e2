//! Trigger definitions: create, update, enable, list and validate; every source kind; a legacy
//! single-source row.

use super::*;

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
