//! Agents, collaborators and the access check; sessions, their lineage, listing, titles, plans
//! and the fields the agent maintains.

use std::collections::HashSet;
use std::sync::Arc;

use seed_agents_store::agents::{Access, NewAgent};
use seed_agents_store::clock::ManualClock;
use seed_agents_store::paging::Cursor;
use seed_agents_store::payload::*;
use seed_agents_store::schema::agent_collaborators::{Role, Status as InviteStatus};
use seed_agents_store::schema::agents::Status;
use seed_agents_store::schema::sessions::{Thoroughness, TitleSource};
use seed_agents_store::sessions::{NewSession, PlanWriter, SessionQuery};
use seed_agents_store::{Error, Store};
use support::backend::open;

const A: &str = "acct-a";
const B: &str = "acct-b";
const C: &str = "acct-c";
const T: i64 = 1_764_000_000_000;

fn new_agent(dir: &str) -> NewAgent {
    NewAgent {
        definition: AgentDefinition::default(),
        state_dir: dir.into(),
        public_read: false,
        public_chat: false,
    }
}

fn session_of(agent: &str) -> NewSession {
    NewSession {
        agent_id: agent.into(),
        ..NewSession::default()
    }
}

fn step(id: &str, status: &str) -> RunPlanStep {
    RunPlanStep {
        id: id.into(),
        label: id.into(),
        status: status.into(),
        resolved_by: None,
        extra: OpenMap::new(),
    }
}

fn plan(steps: Vec<RunPlanStep>) -> RunPlan {
    RunPlan {
        title: Some("plan".into()),
        steps,
        settled_at: None,
        extra: OpenMap::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Agents

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

// ---------------------------------------------------------------------------------------------
// Collaborators and access

#[test]
fn collaborators_are_invited_accepted_changed_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    let invite = store
        .invite_collaborator(A, &agent, B, Role::Reader)
        .unwrap();
    assert_eq!(
        (invite.status, invite.accepted_at),
        (InviteStatus::Pending, None)
    );
    assert_eq!(store.access(&agent, B).unwrap(), Access::None);
    // Re-inviting a pending invitee changes the role.
    store
        .invite_collaborator(A, &agent, B, Role::Writer)
        .unwrap();
    clock.set(T + 7);
    let accepted = store.accept_invitation(B, &agent).unwrap();
    assert_eq!(
        (accepted.status, accepted.accepted_at, accepted.role),
        (InviteStatus::Accepted, Some(T + 7), Role::Writer)
    );
    clock.set(T + 8);
    assert_eq!(
        store.accept_invitation(B, &agent).unwrap().accepted_at,
        Some(T + 7)
    );
    assert_eq!(store.access(&agent, B).unwrap(), Access::Writer);
    assert!(matches!(
        store.invite_collaborator(A, &agent, B, Role::Reader),
        Err(Error::Conflict { .. })
    ));
    store
        .set_collaborator_role(A, &agent, B, Role::Reader)
        .unwrap();
    assert_eq!(store.access(&agent, B).unwrap(), Access::Reader);
    store
        .invite_collaborator(A, &agent, C, Role::Reader)
        .unwrap();
    let listed: Vec<_> = store
        .collaborators(A, &agent)
        .unwrap()
        .into_iter()
        .map(|c| c.account_id)
        .collect();
    assert_eq!(listed, [B, C]);
    assert_eq!(store.collaborations(B).unwrap().len(), 1);
    assert!(matches!(
        store.collaborators(B, &agent),
        Err(Error::NotFound { .. })
    ));
    assert!(store.remove_collaborator(A, &agent, B).unwrap());
    assert!(
        matches!(
            store.access(&agent, B),
            Err(Error::NotFound { what: "agent", .. })
        ),
        "a removed collaborator is a stranger again"
    );
    assert!(matches!(
        store.invite_collaborator(A, &agent, A, Role::Reader),
        Err(Error::Invalid {
            field: "invitee",
            ..
        })
    ));
    assert!(matches!(
        store.accept_invitation(B, &agent),
        Err(Error::NotFound {
            what: "invitation",
            ..
        })
    ));
}

#[test]
fn access_answers_owner_writer_reader_public_reader_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let agent = store.create_agent(A, &new_agent("/d/a")).unwrap().id;
    assert_eq!(store.access(&agent, A).unwrap(), Access::Owner);
    assert!(
        matches!(
            store.access(&agent, C),
            Err(Error::NotFound { what: "agent", .. })
        ),
        "a stranger learns no more about a private agent than about a missing one"
    );
    store
        .set_agent_visibility(A, &agent, Some(true), None)
        .unwrap();
    assert_eq!(store.access(&agent, C).unwrap(), Access::PublicReader);
    store
        .invite_collaborator(A, &agent, B, Role::Writer)
        .unwrap();
    assert_eq!(
        store.access(&agent, B).unwrap(),
        Access::PublicReader,
        "a pending invitation grants nothing beyond public reading"
    );
    store.accept_invitation(B, &agent).unwrap();
    assert_eq!(store.access(&agent, B).unwrap(), Access::Writer);
    assert!(Access::Writer.may_write() && !Access::Reader.may_write());
    assert!(Access::PublicReader.may_read() && !Access::None.may_read());
    assert!(matches!(
        store.access("missing", A),
        Err(Error::NotFound { what: "agent", .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Sessions

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
