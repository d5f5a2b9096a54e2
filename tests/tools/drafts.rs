//! Drafts: create, update, get, the three listings, publish (once), delete, and the limits.

use seed_agents_store::drafts::{DraftFields, Status, MAX_FORMAT_BYTES, MAX_TITLE_BYTES};
use seed_agents_store::payload::{DraftContent, DraftMetadata, Ipld, OpenMap};
use seed_agents_store::Error;
use support::tools::*;

fn fields(title: &str) -> DraftFields {
    DraftFields {
        signer_secret_name: None,
        title: Some(title.into()),
        content_format: "markdown".into(),
        content: DraftContent(s("# Hello\n\nBody")),
        metadata: Some(DraftMetadata(OpenMap::from([(
            "tags".to_string(),
            Ipld::List(vec![s("a")]),
        )]))),
        edit_target: None,
        location_target: Some("hm://z6Mk/notes".into()),
        path_name: Some("hello".into()),
        visibility: None,
    }
}

fn assert_invalid<T: std::fmt::Debug>(result: Result<T, Error>, field: &str) {
    match result {
        Err(Error::Invalid { field: f, .. }) if f == field => {}
        other => panic!("expected Invalid {{ field: {field:?} }}, got {other:?}"),
    }
}

#[test]
fn drafts_round_trip_and_list_by_account_agent_and_status() {
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &[]);
    let first = store.create_draft(A, Some(&agent), &fields("one")).unwrap();
    clock.advance(10);
    let second = store.create_draft(A, None, &fields("two")).unwrap();
    store.create_draft(B, None, &fields("other")).unwrap();
    assert_eq!(first.status, Status::Draft);
    assert_eq!(store.draft(A, &first.id).unwrap().unwrap(), first);
    assert_eq!(
        first.content_cbor.decode().unwrap(),
        DraftContent(s("# Hello\n\nBody"))
    );
    assert!(store.draft(B, &first.id).unwrap().is_none());

    let ids = |rows: Vec<seed_agents_store::drafts::Row>| {
        rows.into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.drafts(A).unwrap()),
        [second.id.clone(), first.id.clone()]
    );
    assert_eq!(
        ids(store.agent_drafts(A, &agent).unwrap()),
        [first.id.as_str()]
    );

    clock.advance(10);
    let updated = store
        .update_draft(A, &first.id, &fields("one, edited"))
        .unwrap();
    assert_eq!(updated.title.as_deref(), Some("one, edited"));
    assert_eq!((updated.created_at, updated.updated_at), (T, T + 20));
    assert_eq!(
        ids(store.drafts(A).unwrap()),
        [first.id.clone(), second.id.clone()]
    );

    clock.advance(10);
    let published = store
        .publish_draft(A, &first.id, "hm://z6Mk/notes/hello", "v1")
        .unwrap();
    assert_eq!(published.status, Status::Published);
    assert_eq!(published.published_at, Some(T + 30));
    assert_eq!(
        published.published_id.as_deref(),
        Some("hm://z6Mk/notes/hello")
    );
    assert_eq!(
        ids(store.drafts_by_status(A, Status::Published).unwrap()),
        [first.id.as_str()]
    );
    assert_eq!(
        ids(store.drafts_by_status(A, Status::Draft).unwrap()),
        [second.id.as_str()]
    );

    // A retried publish returns the row; another publication or an edit is a conflict.
    clock.advance(10);
    assert_eq!(
        store
            .publish_draft(A, &first.id, "hm://z6Mk/notes/hello", "v1")
            .unwrap(),
        published
    );
    assert!(matches!(
        store.publish_draft(A, &first.id, "hm://z6Mk/notes/hello", "v2"),
        Err(Error::Conflict { what: "draft", .. })
    ));
    assert!(matches!(
        store.update_draft(A, &first.id, &fields("late")),
        Err(Error::Conflict { what: "draft", .. })
    ));

    assert!(store.delete_draft(A, &second.id).unwrap());
    assert!(!store.delete_draft(A, &second.id).unwrap());
    assert!(!store.delete_draft(B, &first.id).unwrap());
    assert!(matches!(
        store.update_draft(A, &second.id, &fields("gone")),
        Err(Error::NotFound { what: "draft", .. })
    ));
}

#[test]
fn the_agent_and_the_signing_identity_belong_to_the_account() {
    let (_d, mut store, _c) = open();
    let other = agent(&mut store, B, &[]);
    assert!(matches!(
        store.create_draft(A, Some(&other), &fields("x")),
        Err(Error::NotFound { what: "agent", .. })
    ));
    let mut f = fields("x");
    f.signer_secret_name = Some("signer-1".into());
    assert!(matches!(
        store.create_draft(A, None, &f),
        Err(Error::NotFound { what: "secret", .. })
    ));
    store.set_secret(A, "signer-1", b"seed", None).unwrap();
    let row = store.create_draft(A, None, &f).unwrap();
    assert_eq!(row.signer_secret_name.as_deref(), Some("signer-1"));
}

#[test]
fn every_limit_at_its_boundary() {
    let (_d, store, _c) = open();
    let mut f = fields("x");
    f.content_format = "f".repeat(MAX_FORMAT_BYTES);
    store.create_draft(A, None, &f).unwrap();
    f.content_format.push('f');
    assert_invalid(store.create_draft(A, None, &f), "content_format");
    f.content_format = " ".into();
    assert_invalid(store.create_draft(A, None, &f), "content_format");
    let mut f = fields(&"t".repeat(MAX_TITLE_BYTES));
    store.create_draft(A, None, &f).unwrap();
    f.title = Some("t".repeat(MAX_TITLE_BYTES + 1));
    assert_invalid(store.create_draft(A, None, &f), "title");
    let mut f = fields("x");
    f.edit_target = Some("".into());
    assert_invalid(store.create_draft(A, None, &f), "edit_target");
    assert_invalid(store.publish_draft(A, "any", "", "v1"), "published_id");
    assert_eq!(store.drafts(A).unwrap().len(), 2);
}
