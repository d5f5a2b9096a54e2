//! Agents: created idle with their definition kept whole, safe state directories, keyset pages.

use super::*;

#[test]
fn an_agent_is_created_idle_and_its_definition_keeps_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let mut definition = AgentDefinition {
        mcp_servers: Some(vec!["linear".into()]),
        ..AgentDefinition::default()
    };
    definition
        .extra
        .insert("futureField".into(), Ipld::List(vec![Ipld::Integer(1)]));
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: definition.clone(),
                ..new_agent("/data/agents/a1")
            },
        )
        .unwrap();
    assert_eq!(agent.status, Status::Idle);
    assert_eq!(agent.activity_at, None);
    let stored = store.agent(A, &agent.id).unwrap().unwrap();
    assert_eq!(stored.definition_cbor.decode().unwrap(), definition);
    assert!(store.agent(B, &agent.id).unwrap().is_none());

    clock.set(T + 3);
    definition
        .extra
        .insert("name".into(), Ipld::String("Helper".into()));
    let updated = store
        .update_agent_definition(A, &agent.id, &definition)
        .unwrap();
    assert_eq!(updated.updated_at, T + 3);
    let back = store
        .agent(A, &agent.id)
        .unwrap()
        .unwrap()
        .definition_cbor
        .decode()
        .unwrap();
    assert_eq!(back, definition);
    assert!(back.extra.contains_key("futureField"));

    let v = store
        .set_agent_visibility(A, &agent.id, Some(true), None)
        .unwrap();
    assert!(v.public_read && !v.public_chat);
    let v = store
        .set_agent_visibility(A, &agent.id, None, Some(true))
        .unwrap();
    assert!(v.public_read && v.public_chat);
    assert_eq!(
        store
            .set_agent_status(A, &agent.id, Status::Running)
            .unwrap()
            .status,
        Status::Running
    );
    assert!(matches!(
        store.set_agent_status(B, &agent.id, Status::Stopped),
        Err(Error::NotFound { what: "agent", .. })
    ));
}

#[test]
fn a_state_dir_must_be_a_safe_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    for bad in ["", "  ", "/", "/data/../etc", "../x"] {
        assert!(
            matches!(
                store.create_agent(A, &new_agent(bad)),
                Err(Error::Invalid {
                    field: "state_dir",
                    ..
                })
            ),
            "{bad:?}"
        );
    }
    store.create_agent(A, &new_agent("data/agents/x")).unwrap();
}

#[test]
fn agents_list_newest_first_in_stable_keyset_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let mut ids = Vec::new();
    for i in 0..7 {
        clock.set(T + i / 2); // pairs share a timestamp: the id breaks the tie
        ids.push(store.create_agent(A, &new_agent("/d/x")).unwrap().id);
    }
    store.create_agent(B, &new_agent("/d/y")).unwrap();
    let first = store.agents(A, Some(3), None).unwrap();
    assert_eq!(first.items.len(), 3);
    // A new agent created between pages sorts first and does not disturb later pages.
    clock.set(T + 100);
    store.create_agent(A, &new_agent("/d/z")).unwrap();
    let second = store.agents(A, Some(3), first.next.as_ref()).unwrap();
    let third = store.agents(A, Some(3), second.next.as_ref()).unwrap();
    assert!(third.next.is_none());
    let seen: Vec<_> = [first.items, second.items, third.items]
        .concat()
        .into_iter()
        .map(|a| (a.updated_at, a.id))
        .collect();
    let mut expected = seen.clone();
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, expected, "newest first, ties by id descending");
    let seen_ids: HashSet<_> = seen.into_iter().map(|(_, id)| id).collect();
    assert_eq!(seen_ids, ids.into_iter().collect());
    assert!(matches!(
        store.agents(A, Some(0), None),
        Err(Error::Invalid {
            field: "page_size",
            ..
        })
    ));
    assert!(matches!(
        store.agents(A, Some(201), None),
        Err(Error::Invalid {
            field: "page_size",
            ..
        })
    ));
}
