//! One `Store` shared by every thread: clones append and read concurrently, a long read blocks
//! no write, failures stay with their own caller, and the pool's bound is reported as busy.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use seed_agents_store::agents::NewAgent;
use seed_agents_store::payload::{AgentDefinition, MessageEvent, MessageRole, SessionEventPayload};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, ErrorKind, Store};

const A: &str = "acct-a";
const THREADS: usize = 8;
const PER_THREAD: usize = 25;

fn session(store: &Store) -> String {
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: "/tmp/agent".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let new = NewSession {
        agent_id: agent.id,
        ..NewSession::default()
    };
    store.create_session(A, &new).unwrap().id
}

fn message(text: &str) -> SessionEventPayload {
    MessageEvent::new(MessageRole::User, text).into()
}

fn seqs(store: &Store, session: &str) -> Vec<i64> {
    let events = store.events_after(A, session, 0, None).unwrap();
    events.iter().map(|e| e.seq).collect()
}

#[test]
fn clones_appending_from_many_threads_get_contiguous_seqs_in_shared_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.sqlite")).unwrap();
    let shared = session(&store);
    let own: Vec<String> = (0..THREADS).map(|_| session(&store)).collect();
    let before = store.commit_stats();
    let barrier = Arc::new(Barrier::new(THREADS));
    std::thread::scope(|s| {
        for (t, own) in own.iter().enumerate() {
            let (store, barrier, shared) = (store.clone(), barrier.clone(), &shared);
            s.spawn(move || {
                barrier.wait();
                for i in 0..PER_THREAD {
                    let text = format!("{t}-{i}");
                    store.append_event(A, shared, &message(&text)).unwrap();
                    store.append_event(A, own, &message(&text)).unwrap();
                }
            });
        }
    });
    let n = (THREADS * PER_THREAD) as i64;
    assert_eq!(seqs(&store, &shared), (1..=n).collect::<Vec<_>>());
    for own in &own {
        assert_eq!(
            seqs(&store, own),
            (1..=PER_THREAD as i64).collect::<Vec<_>>()
        );
    }
    let after = store.commit_stats();
    assert_eq!(after.operations - before.operations, 2 * n as u64);
    assert!(after.batches - before.batches <= 2 * n as u64);
}

#[test]
fn an_operation_that_fails_leaves_the_concurrent_ones_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.sqlite")).unwrap();
    let session = session(&store);
    let barrier = Arc::new(Barrier::new(THREADS));
    let failures: usize = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (store, barrier, session) = (store.clone(), barrier.clone(), &session);
                s.spawn(move || {
                    barrier.wait();
                    let mut failed = 0;
                    for i in 0..PER_THREAD {
                        // Odd threads also append to a session that does not exist.
                        if t % 2 == 1 {
                            let missing = store.append_event(A, "no-such-session", &message("x"));
                            assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
                            failed += 1;
                        }
                        store
                            .append_event(A, session, &message(&format!("{t}-{i}")))
                            .unwrap();
                    }
                    failed
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    assert_eq!(failures, THREADS / 2 * PER_THREAD);
    let n = (THREADS * PER_THREAD) as i64;
    assert_eq!(seqs(&store, &session), (1..=n).collect::<Vec<_>>());
}

#[test]
fn a_long_read_blocks_no_write_and_keeps_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.sqlite")).unwrap();
    let session = session(&store);
    store.append_event(A, &session, &message("first")).unwrap();
    let count = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM session_events", [], |r| r.get(0))
            .unwrap()
    };

    let long = store.conn().unwrap();
    long.execute_batch("BEGIN").unwrap();
    assert_eq!(
        count(&long),
        1,
        "the read transaction starts its snapshot here"
    );
    // Writes, from this thread and others, commit while the read transaction stays open.
    std::thread::scope(|s| {
        for t in 0..4 {
            let (store, session) = (store.clone(), &session);
            s.spawn(move || {
                store
                    .append_event(A, session, &message(&t.to_string()))
                    .unwrap()
            });
        }
    });
    store.append_event(A, &session, &message("last")).unwrap();
    assert_eq!(count(&long), 1, "the long read still sees its snapshot");
    assert_eq!(
        count(&store.conn().unwrap()),
        6,
        "a new read sees every commit"
    );
    long.execute_batch("COMMIT").unwrap();
    assert_eq!(count(&long), 6);
}

#[test]
fn an_exhausted_read_pool_is_reported_busy_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::options()
        .read_connections(2)
        .busy_timeout(Duration::from_millis(50))
        .open(dir.path().join("s.sqlite"))
        .unwrap();
    let first = store.conn().unwrap();
    let second = store.conn().unwrap();
    let error = store.conn().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Busy, "{error}");
    assert!(matches!(error, Error::Busy { .. }), "{error:?}");
    // Writes do not use the read pool.
    store.touch_account(A).unwrap();
    drop(first);
    let third = store.conn().unwrap();
    drop((second, third));
}

#[test]
fn a_read_only_handle_reads_from_its_pool_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let writable = Store::open(&path).unwrap();
    let session = session(&writable);
    writable.append_event(A, &session, &message("hi")).unwrap();

    let store = Store::open_read_only(&path).unwrap();
    assert!(store.is_read_only());
    let clones: Vec<Store> = (0..4).map(|_| store.clone()).collect();
    std::thread::scope(|s| {
        for store in &clones {
            let session = &session;
            s.spawn(move || assert_eq!(seqs(store, session), [1]));
        }
    });
    let error = store.touch_account("acct-b").unwrap_err();
    assert!(matches!(error, Error::ReadOnly { .. }), "{error:?}");
    assert_eq!(store.commit_stats().batches, 0);
}

#[test]
fn a_read_transaction_left_open_ends_when_its_connection_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::options()
        .read_connections(1)
        .open(dir.path().join("s.sqlite"))
        .unwrap();
    let accounts = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM accounts", [], |r| r.get(0))
            .unwrap()
    };
    let reader = store.conn().unwrap();
    reader.execute_batch("BEGIN").unwrap();
    assert_eq!(accounts(&reader), 0);
    drop(reader);
    store.touch_account(A).unwrap();
    // The pool's only connection: it must not still read the snapshot taken above.
    let reader = store.conn().unwrap();
    assert!(reader.is_autocommit());
    assert_eq!(accounts(&reader), 1);
}

/// A store whose commits skip the fsync, for the tests that push megabytes through the log.
fn fast_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.sqlite")).unwrap();
    store
        .set_durability(seed_agents_store::Durability::Normal)
        .unwrap();
    (dir, store)
}

#[test]
fn the_log_is_checkpointed_after_commits_not_left_to_grow() {
    let (_dir, store) = fast_store();
    let path = store.path().to_path_buf();
    let session = session(&store);
    // About 24 MB through the log, 6,000 pages, one commit per append.
    let text = "x".repeat(24 * 1024);
    for _ in 0..1_000 {
        store.append_event(A, &session, &message(&text)).unwrap();
    }
    let wal = std::fs::metadata(path.with_extension("sqlite-wal")).unwrap();
    // Checkpointed at 1,000 pages (4 MB), the log restarts from its beginning; never
    // checkpointed, it would hold all 24 MB.
    assert!(wal.len() < 12 << 20, "the log grew to {} bytes", wal.len());
    let db = std::fs::metadata(&path).unwrap();
    assert!(db.len() > 16 << 20, "the events reached the database file");
    // One checkpoint per 1,000 pages of log: the events' own 6,000, and a few pages of index
    // and rollups per commit.
    checkpointed_per_pages_not_per_commit(&store);
}

/// A checkpoint per 1,000 pages of log, never one per commit once the log first reached 1,000
/// pages (a checkpoint beside the writer never caught up, so every later commit asked for
/// another): at least a few, at most one per 20 commits.
fn checkpointed_per_pages_not_per_commit(store: &Store) {
    let (checkpoints, commits) = (store.checkpoints(), store.commit_stats().batches);
    assert!(
        (3..=commits / 20).contains(&checkpoints),
        "{checkpoints} checkpoints in {commits} commits"
    );
}

#[test]
fn the_log_stays_bounded_while_several_threads_keep_writing() {
    let (_dir, store) = fast_store();
    let path = store.path().to_path_buf();
    let sessions: Vec<String> = (0..4).map(|_| session(&store)).collect();
    // About 48 MB through the log from 4 threads that never pause: only a checkpoint that runs
    // while no batch is open catches up with the writer and lets the log restart from its
    // beginning.
    let text = "x".repeat(8 * 1024);
    let barrier = Arc::new(Barrier::new(sessions.len()));
    let threads: Vec<_> = sessions
        .into_iter()
        .map(|session| {
            let (store, barrier, text) = (store.clone(), barrier.clone(), text.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..1_500 {
                    store.append_event(A, &session, &message(&text)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let wal = std::fs::metadata(path.with_extension("sqlite-wal")).unwrap();
    assert!(wal.len() < 32 << 20, "the log grew to {} bytes", wal.len());
    // Tens of checkpoints: 12,000 pages of events, and index and rollup pages per commit.
    checkpointed_per_pages_not_per_commit(&store);
}
