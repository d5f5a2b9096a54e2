//! The async handle (`tokio` feature): operations as futures with the sync ones' results and
//! error kinds, contiguous seqs from many tasks appending through clones, a panic resumed on the
//! awaiting task, a runtime thread that keeps running other tasks while a write waits, and no
//! handle that panics when dropped, in a runtime or out of one. On both backends
//! (`support::backend`).

use std::collections::BTreeMap;
use std::time::Duration;

use sea_query::{Expr, ExprTrait, Query};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{AgentDefinition, MessageEvent, RunOutput, SessionEventPayload};
use seed_agents_store::runs::{ClaimLimits, Finalized, NewRun, RunOutcome};
use seed_agents_store::schema::{accounts, runs};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{AsyncStore, ErrorKind, Result, Store};

const A: &str = "acct-a";

/// Where the store of `dir` lives, on this run's backend. Making a PostgreSQL database blocks,
/// so it runs on the blocking pool.
async fn location(dir: &std::path::Path) -> std::path::PathBuf {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || support::backend::location(&dir, "agents.sqlite"))
        .await
        .unwrap()
}

/// An open store, its directory, an agent and a session of account [`A`].
async fn fixture() -> (AsyncStore, tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = AsyncStore::open(location(dir.path()).await).await.unwrap();
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: dir.path().join("agent").display().to_string(),
                public_read: false,
                public_chat: false,
            },
        )
        .await
        .unwrap();
    let session = new_session(&store, &agent.id).await;
    (store, dir, agent.id, session)
}

async fn new_session(store: &AsyncStore, agent_id: &str) -> String {
    let new = NewSession {
        agent_id: agent_id.into(),
        ..NewSession::default()
    };
    store.create_session(A, &new).await.unwrap().id
}

fn user(text: &str) -> SessionEventPayload {
    MessageEvent::user(text).into()
}

fn text_of(row: &seed_agents_store::schema::session_events::Row) -> String {
    match row.event_cbor.decode().unwrap() {
        SessionEventPayload::Message(m) => m.content,
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_answer_as_the_sync_ones_and_errors_keep_their_kind() {
    let (store, dir, agent, session) = fixture().await;

    let first = store.append_event(A, &session, &user("one")).await.unwrap();
    let turn = [user("two"), user("three")];
    let rest = store.append_events(A, &session, &turn).await.unwrap();
    assert_eq!(first.seq, 1);
    assert_eq!(rest.iter().map(|a| a.seq).collect::<Vec<_>>(), [2, 3]);
    let replay = store.events_after(A, &session, 1, None).await.unwrap();
    assert_eq!(
        replay.iter().map(text_of).collect::<Vec<_>>(),
        ["two", "three"]
    );
    // The sync handle is the same store (called where blocking is allowed).
    let sync = tokio::task::block_in_place(|| store.store().events_after(A, &session, 0, None));
    assert_eq!(sync.unwrap().len(), 3);
    // `Option<&str>` and by-value parameters.
    let described = store
        .set_session_description(A, &session, Some("notes"))
        .await
        .unwrap();
    assert_eq!(described.description.as_deref(), Some("notes"));
    let page = store.agents(A, Some(10), None).await.unwrap();
    assert_eq!(page.items.len(), 1);

    let missing = store
        .append_event(A, "no-such-session", &user("x"))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    let negative = store.events_after(A, &session, -1, None).await.unwrap_err();
    assert_eq!(negative.kind(), ErrorKind::Invalid);
    let other_account = store.delete_session("acct-b", &session).await.unwrap_err();
    assert_eq!(other_account.kind(), ErrorKind::NotFound);

    // A run: enqueue, claim once, finalize; a stale claim is a conflict.
    let mut new = NewRun::new(A, runs::Kind::Workflow, runs::Origin::Workflow, "build");
    new.agent_id = Some(agent.clone());
    let queued = store.enqueue_run(&new).await.unwrap();
    let claimed = store
        .claim_next_run("worker-1", ClaimLimits::default())
        .await
        .unwrap()
        .expect("a queued run");
    assert_eq!(claimed.id, queued.id);
    assert!(store
        .claim_next_run("worker-2", ClaimLimits::default())
        .await
        .unwrap()
        .is_none());
    let claim = Claim::of(&claimed).unwrap();
    let done = store
        .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
        .await
        .unwrap();
    assert!(matches!(done, Finalized::Finished(row) if row.status == runs::Status::Succeeded));
    let stale = store.renew_lease(&claim).await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::Conflict);

    // Generic operations and `call` for reads on `reading()`.
    let statement = Query::select()
        .columns(runs::Column::ALL.iter().copied())
        .from(runs::Column::Table)
        .and_where(Expr::col(runs::Column::AccountId).eq(A))
        .to_owned();
    let rows: Vec<runs::Row> = store.select(&statement).await.unwrap();
    assert_eq!(rows.len(), 1);
    let account = store
        .call(|store: &Store| accounts::get(&store.reading()?, A))
        .await
        .unwrap();
    assert!(account.is_some());

    // A read-only handle refuses writes with a storage error.
    let path = store.path().to_path_buf();
    drop(store);
    let read_only = AsyncStore::open_read_only(&path).await.unwrap();
    assert!(read_only.is_read_only());
    let refused = read_only.touch_account("acct-c").await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Storage);
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_appending_through_clones_get_contiguous_seqs() {
    const SESSIONS: usize = 4;
    const WRITERS: usize = 4;
    const EACH: usize = 10;
    let (store, _dir, agent, first) = fixture().await;
    let mut sessions = vec![first];
    for _ in 1..SESSIONS {
        sessions.push(new_session(&store, &agent).await);
    }
    let mut tasks = Vec::new();
    for session in &sessions {
        for writer in 0..WRITERS {
            let (store, session) = (store.clone(), session.clone());
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for n in 0..EACH {
                    let event = user(&format!("{writer}:{n}"));
                    seqs.push(store.append_event(A, &session, &event).await?.seq);
                }
                Ok::<_, seed_agents_store::Error>(seqs)
            }));
        }
    }
    for task in tasks {
        let seqs = task.await.unwrap().unwrap();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    }
    for session in &sessions {
        let events = store.events_after(A, session, 0, None).await.unwrap();
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        let expected: Vec<i64> = (1..=(WRITERS * EACH) as i64).collect();
        assert_eq!(seqs, expected);
        // Each writer's events are in the order it appended them.
        let mut by_writer: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for event in &events {
            let text = text_of(event);
            let (writer, n) = text.split_once(':').unwrap();
            by_writer
                .entry(writer.into())
                .or_default()
                .push(n.parse().unwrap());
        }
        assert_eq!(by_writer.len(), WRITERS);
        for ns in by_writer.values() {
            assert_eq!(*ns, (0..EACH).collect::<Vec<_>>());
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_in_the_operation_resumes_on_the_awaiting_task() {
    let (store, _dir, _, _) = fixture().await;
    let task = tokio::spawn(async move { store.call(|_| -> Result<()> { panic!("boom") }).await });
    let err = task.await.unwrap_err();
    let payload = err.into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
}

/// A write waiting on a lock another connection holds keeps a blocking thread, not the runtime:
/// on a one-thread runtime other tasks run to completion meanwhile, and the write finishes once
/// the lock is released. Had it run on the runtime thread, it would have blocked every task
/// until its busy timeout and failed with `Busy`.
#[test]
fn a_current_thread_runtime_keeps_running_while_a_write_waits() {
    if support::backend::skip_on_postgres(
        "a_current_thread_runtime_keeps_running_while_a_write_waits",
        "it holds SQLite's write lock with a connection of its own",
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.sqlite");
        let store = AsyncStore::open_with(&path, |options| {
            options.busy_timeout(Duration::from_secs(120))
        })
        .await
        .unwrap();
        let mut blocker = rusqlite::Connection::open(&path).unwrap();
        let lock = blocker
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();

        // Through `call`, which says when the operation has started on its blocking thread.
        let (started, has_started) = std::sync::mpsc::channel();
        let through_call = tokio::spawn({
            let store = store.clone();
            async move {
                store
                    .call(move |store| {
                        started.send(()).unwrap();
                        store.touch_account("acct-call")
                    })
                    .await
            }
        });
        // A generated operation.
        let generated = tokio::spawn({
            let store = store.clone();
            async move { store.touch_account("acct-generated").await }
        });
        while has_started.try_recv().is_err() {
            tokio::task::yield_now().await;
        }
        let ticker = tokio::spawn(async {
            let mut ticks = 0;
            for _ in 0..100 {
                tokio::task::yield_now().await;
                ticks += 1;
            }
            ticks
        });
        assert_eq!(ticker.await.unwrap(), 100);
        assert!(!through_call.is_finished(), "the write waits for the lock");
        assert!(!generated.is_finished(), "the write waits for the lock");

        lock.commit().unwrap();
        through_call.await.unwrap().unwrap();
        generated.await.unwrap().unwrap();
        let counts = store.table_counts().await.unwrap();
        assert!(counts.contains(&("accounts", 2)), "{counts:?}");
    });
}

fn new_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// No handle panics when it is dropped: the last `AsyncStore` dropped in a task, a sync `Store`
/// dropped on a runtime thread and on a plain one, and a runtime shut down while its tasks still
/// hold the store, some of them mid-operation. (On PostgreSQL the blocking client closes by
/// running a runtime of its own, which panicked inside a runtime and aborted the process.)
#[test]
fn no_handle_panics_when_dropped_in_a_runtime_or_out_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let location = support::backend::location(dir.path(), "agents.sqlite");
    let open = |runtime: &tokio::runtime::Runtime| {
        let store = runtime.block_on(AsyncStore::open(&location)).unwrap();
        runtime.block_on(store.touch_account(A)).unwrap();
        store
    };

    let runtime = new_runtime();
    let store = open(&runtime);
    let dropped = runtime.spawn(async move { drop(store) });
    runtime
        .block_on(dropped)
        .expect("the last AsyncStore dropped in a task");

    let sync = open(&runtime).store().clone();
    let dropped = runtime.spawn(async move { drop(sync) });
    runtime
        .block_on(dropped)
        .expect("a sync Store dropped on a runtime thread");

    let store = open(&runtime);
    std::thread::spawn(move || drop(store)).join().unwrap();

    let store = open(&runtime);
    let (ran, has_run) = std::sync::mpsc::channel();
    for task in 0..4 {
        let (store, ran) = (store.clone(), ran.clone());
        runtime.spawn(async move {
            for n in 0.. {
                let _ = store.touch_account(&format!("acct-{task}-{n}")).await;
                let _ = ran.send(());
            }
        });
    }
    drop(store);
    for _ in 0..8 {
        has_run.recv().unwrap();
    }
    drop(runtime); // the tasks, and with them the last handles, are dropped here

    // Nothing was lost on the way: the store opens again and holds what was written.
    let runtime = new_runtime();
    let store = runtime.block_on(AsyncStore::open(&location)).unwrap();
    let counts = runtime.block_on(store.table_counts()).unwrap();
    let accounts = counts.iter().find(|(t, _)| *t == "accounts").unwrap().1;
    assert!(
        accounts > 8,
        "account A and the 8 touched before the shutdown: {counts:?}"
    );
    drop(store);
}
