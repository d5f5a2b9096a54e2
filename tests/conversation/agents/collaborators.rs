//! Collaborators and access

use super::*;

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
