//! Sessions

use super::*;

#[test]
fn sessions_are_created_in_the_agents_account_with_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let parent = store.create_session(A, &session_of(&agent)).unwrap();
    assert_eq!(parent.title_source, TitleSource::System);
    let child = store
        .create_session(
            A,
            &NewSession {
                parent_session_id: Some(parent.id.clone()),
                run_id: Some("run-1".into()),
                thoroughness: Some(Thoroughness::Deep),
                ..session_of(&agent)
            },
        )
        .unwrap();
    let children = store.child_sessions(A, &parent.id).unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].id, child.id);
    assert!(matches!(
        store.create_session(B, &session_of(&agent)),
        Err(Error::NotFound { what: "agent", .. })
    ));
    assert!(matches!(
        store.create_session(
            A,
            &NewSession {
                parent_session_id: Some("missing".into()),
                ..session_of(&agent)
            }
        ),
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
}

#[test]
fn session_pages_are_stable_under_concurrent_inserts_and_filter_children() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let mut top = Vec::new();
    for i in 0..120 {
        clock.set(T + i / 3);
        top.push(store.create_session(A, &session_of(&agent)).unwrap().id);
    }
    let child = store
        .create_session(
            A,
            &NewSession {
                parent_session_id: Some(top[0].clone()),
                ..session_of(&agent)
            },
        )
        .unwrap()
        .id;
    let default_page = store.sessions(A, &agent, &SessionQuery::default()).unwrap();
    assert_eq!(default_page.items.len(), 50, "default page size");
    // Page through 25 at a time while another connection keeps inserting sessions.
    let path = support::backend::location(dir.path(), "db.sqlite");
    let writer = Store::open_with_clock(&path, Arc::new(ManualClock::new(T + 1_000))).unwrap();
    let mut seen = Vec::new();
    let mut after: Option<Cursor> = None;
    loop {
        let page = store
            .sessions(
                A,
                &agent,
                &SessionQuery {
                    include_children: false,
                    page_size: Some(25),
                    after: after.clone(),
                },
            )
            .unwrap();
        seen.extend(page.items.iter().map(|s| s.id.clone()));
        writer.create_session(A, &session_of(&agent)).unwrap();
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    // The first page was read before any concurrent insert: from there on, every original
    // top-level session appears exactly once and nothing inserted later leaks in.
    let unique: HashSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no session repeats");
    assert_eq!(unique, top.iter().cloned().collect(), "none lost");
    assert!(!unique.contains(&child), "children filtered out");
    let with_children = store
        .sessions(
            A,
            &agent,
            &SessionQuery {
                include_children: true,
                page_size: Some(200),
                after: None,
            },
        )
        .unwrap();
    assert!(with_children.items.iter().any(|s| s.id == child));
    assert!(matches!(
        store.sessions(
            A,
            &agent,
            &SessionQuery {
                page_size: Some(201),
                ..SessionQuery::default()
            }
        ),
        Err(Error::Invalid {
            field: "page_size",
            ..
        })
    ));
}

#[test]
fn a_user_title_is_never_overwritten_and_agent_replaces_system_but_not_user() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let s = store.create_session(A, &session_of(&agent)).unwrap().id;
    let title = |store: &Store| {
        let row = store.session(A, &s).unwrap().unwrap();
        (row.title, row.title_source)
    };
    assert!(store
        .set_session_title(A, &s, "draft", TitleSource::System)
        .unwrap());
    assert!(store
        .set_session_title(A, &s, "Named by agent", TitleSource::Agent)
        .unwrap());
    assert!(!store
        .set_session_title(A, &s, "system again", TitleSource::System)
        .unwrap());
    assert_eq!(
        title(&store),
        (Some("Named by agent".into()), TitleSource::Agent)
    );
    assert!(store
        .set_session_title(A, &s, "  Mine  ", TitleSource::User)
        .unwrap());
    for source in [TitleSource::Agent, TitleSource::System] {
        assert!(!store.set_session_title(A, &s, "automatic", source).unwrap());
    }
    assert_eq!(title(&store), (Some("Mine".into()), TitleSource::User));
    assert!(store
        .set_session_title(A, &s, "Mine, renamed", TitleSource::User)
        .unwrap());
    assert!(matches!(
        store.set_session_title(A, &s, "  ", TitleSource::User),
        Err(Error::Invalid { field: "title", .. })
    ));
}

#[test]
fn a_plan_settles_when_every_step_is_terminal_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let s = store.create_session(A, &session_of(&agent)).unwrap().id;
    let stored = |store: &Store| -> RunPlan {
        store
            .session(A, &s)
            .unwrap()
            .unwrap()
            .plan_cbor
            .unwrap()
            .decode()
            .unwrap()
    };
    let w = store
        .set_session_plan(
            A,
            &s,
            Some(plan(vec![step("a", "done"), step("b", "pending")])),
            PlanWriter::Model,
        )
        .unwrap();
    assert!(!w.settled_now);
    assert_eq!(stored(&store).settled_at, None);
    clock.set(T + 20);
    let w = store
        .set_session_plan(
            A,
            &s,
            Some(plan(vec![step("a", "done"), step("b", "skipped")])),
            PlanWriter::Model,
        )
        .unwrap();
    assert!(w.settled_now);
    assert_eq!(stored(&store).settled_at, Some(T + 20));
    // Rewriting a settled plan keeps the first settle time.
    clock.set(T + 30);
    let w = store
        .set_session_plan(
            A,
            &s,
            Some(plan(vec![step("a", "done"), step("b", "failed")])),
            PlanWriter::Model,
        )
        .unwrap();
    assert!(!w.settled_now);
    assert_eq!(stored(&store).settled_at, Some(T + 20));
    // Reopening a step clears it.
    store
        .set_session_plan(
            A,
            &s,
            Some(plan(vec![step("a", "done"), step("b", "in_progress")])),
            PlanWriter::Model,
        )
        .unwrap();
    assert_eq!(stored(&store).settled_at, None);
    store
        .set_session_plan(A, &s, None, PlanWriter::Model)
        .unwrap();
    assert!(store.session(A, &s).unwrap().unwrap().plan_cbor.is_none());
}

#[test]
fn resolved_by_and_settled_at_are_accepted_only_from_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let s = store.create_session(A, &session_of(&agent)).unwrap().id;
    let mut resolved = step("a", "done");
    resolved.resolved_by = Some(StepResolvedBy::Runtime);
    assert!(matches!(
        store.set_session_plan(A, &s, Some(plan(vec![resolved.clone()])), PlanWriter::Model),
        Err(Error::Invalid {
            field: "plan.steps.resolved_by",
            ..
        })
    ));
    let mut settled = plan(vec![step("a", "done")]);
    settled.settled_at = Some(T - 5);
    assert!(matches!(
        store.set_session_plan(A, &s, Some(settled.clone()), PlanWriter::Model),
        Err(Error::Invalid {
            field: "plan.settled_at",
            ..
        })
    ));
    let w = store
        .set_session_plan(A, &s, Some(settled), PlanWriter::Runtime)
        .unwrap();
    let p: RunPlan = w.session.plan_cbor.unwrap().decode().unwrap();
    assert_eq!(p.settled_at, Some(T - 5));
    let w = store
        .set_session_plan(A, &s, Some(plan(vec![resolved])), PlanWriter::Runtime)
        .unwrap();
    let p: RunPlan = w.session.plan_cbor.unwrap().decode().unwrap();
    assert_eq!(p.steps[0].resolved_by, Some(StepResolvedBy::Runtime));
    assert!(matches!(
        store.set_session_plan(
            A,
            &s,
            Some(plan(vec![step("a", "done"), step("a", "done")])),
            PlanWriter::Runtime
        ),
        Err(Error::Invalid {
            field: "plan.steps.id",
            ..
        })
    ));
}

#[test]
fn model_override_description_and_thoroughness_are_set_and_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let s = store.create_session(A, &session_of(&agent)).unwrap().id;
    clock.set(T + 4);
    let o = ModelOverride {
        provider: Some("openai".into()),
        model: Some("m-2".into()),
        extra: OpenMap::new(),
    };
    let row = store.set_session_model_override(A, &s, Some(&o)).unwrap();
    assert_eq!(row.model_override_cbor.unwrap().decode().unwrap(), o);
    assert_eq!(row.updated_at, T + 4);
    let row = store
        .set_session_description(A, &s, Some("reading the docs"))
        .unwrap();
    assert_eq!(row.description.as_deref(), Some("reading the docs"));
    let row = store
        .set_session_thoroughness(A, &s, Some(Thoroughness::Quick))
        .unwrap();
    assert_eq!(row.thoroughness, Some(Thoroughness::Quick));
    let row = store.set_session_model_override(A, &s, None).unwrap();
    assert!(row.model_override_cbor.is_none());
    let row = store.set_session_description(A, &s, None).unwrap();
    assert!(row.description.is_none());
    let row = store.set_session_thoroughness(A, &s, None).unwrap();
    assert!(row.thoroughness.is_none());
    assert!(matches!(
        store.set_session_description(A, &s, Some(&"x".repeat(4097))),
        Err(Error::Invalid {
            field: "description",
            ..
        })
    ));
    assert!(matches!(
        store.set_session_thoroughness(B, &s, None),
        Err(Error::NotFound { .. })
    ));
}
