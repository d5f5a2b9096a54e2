//! The store's macros work from a crate that is not the store.

use seed_agents_downstream::{lines, queued, status_counts, QueuedRun, RunLine};
use seed_agents_store::schema::runs;
use seed_agents_store::{query, Store};

const T: i64 = 1_764_000_000_000;

#[test]
fn all_three_macros_work_from_a_downstream_crate() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("d.sqlite")).unwrap();
    store.touch_account("acct").unwrap();
    // The store's connection is read-only (writes go through its operations); these rows, in
    // states no single operation makes, are written as another process would write the file.
    let raw = rusqlite::Connection::open(store.path()).unwrap();
    query!(
        "INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at) \
         VALUES ('agent', 'acct', x'a0', '/tmp/agent', 'idle', ?1, ?1)",
        T
    )
    .execute(&raw)
    .unwrap();
    query!(
        "INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at) \
         VALUES ('s1', 'acct', 'agent', 'idle', ?1, ?1)",
        T
    )
    .execute(&raw)
    .unwrap();
    for (i, status) in [
        runs::Status::Queued,
        runs::Status::Running,
        runs::Status::Queued,
    ]
    .into_iter()
    .enumerate()
    {
        query!(
            "INSERT INTO runs (id, account_id, root_run_id, kind, session_id, origin, input_cbor, status, queue, created_at, updated_at) \
             VALUES (?1, 'acct', ?1, 'agent', 's1', 'user', x'a0', ?2, 'interactive', ?3, ?3)",
            format!("r{i}"),
            status,
            T + i as i64
        )
        .execute(&raw)
        .unwrap();
    }
    assert_eq!(
        queued(&store, "acct").unwrap(),
        vec![
            QueuedRun {
                id: "r0".into(),
                queue: runs::Queue::Interactive,
                not_before: None
            },
            QueuedRun {
                id: "r2".into(),
                queue: runs::Queue::Interactive,
                not_before: None
            },
        ]
    );
    assert_eq!(
        lines(&store, "acct", "s1").unwrap()[1],
        RunLine {
            id: "r1".into(),
            status: runs::Status::Running,
            title: None
        }
    );
    assert_eq!(
        status_counts(&store, "acct").unwrap(),
        vec![(runs::Status::Queued, 2), (runs::Status::Running, 1)]
    );
    assert!(status_counts(&store, "other").unwrap().is_empty());
}
