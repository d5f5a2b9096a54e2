//! The store's PostgreSQL connections, on a real server: the round trips a worker's hot path
//! costs (claim, start, heartbeat, finalize), the pool's acquire timeout, a connection the server closed or that outlived its
//! lifetime being replaced, and the sync handle used from inside an async task.
//!
//! Which backend serves which operation is read from `pg_stat_activity`; a test that waits for
//! the server to notice something polls it against a generous deadline, never a timing.

use seed_agents_store::agents::NewAgent;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{AgentDefinition, RunOutput};
use seed_agents_store::runs::{ClaimLimits, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{ErrorKind, Store};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::postgres::TempDb;

/// The backends serving `db` other than `client`'s own.
fn backends(client: &mut postgres::Client, db: &TempDb) -> BTreeSet<i32> {
    client
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&db.name],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Polls `done` until it holds, failing after a minute.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Claims and finalizes one queued run, returning the round trips that took.
fn claim_and_finalize(store: &Store) -> u64 {
    let before = store.round_trips();
    let row = store
        .claim_next_run("worker", ClaimLimits::default())
        .unwrap()
        .expect("a queued run");
    let claim = Claim::of(&row).unwrap();
    store
        .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
        .unwrap();
    store.round_trips() - before
}

#[test]
fn a_claim_and_a_finalize_take_at_most_four_round_trips() {
    let Some(db) = TempDb::new("round_trips") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let workflow = || {
        store
            .enqueue_run(&NewRun::new("acct", Kind::Workflow, Origin::Workflow, "w"))
            .unwrap();
    };
    // The first of each prepares its statements on the connection; the second runs them.
    for _ in 0..2 {
        workflow();
    }
    claim_and_finalize(&store);
    // An uncapped claim is one statement, and so is a root run's finalize, each outside a
    // transaction: the plain queue's two.
    assert_eq!(claim_and_finalize(&store), 2, "a root workflow run");

    // An agent run of a session: its finalize mirrors the session in its transaction, the
    // mirror travelling with the COMMIT.
    let agent = store
        .create_agent(
            "acct",
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: "/srv/agents/acct".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap()
        .id;
    let session = store
        .create_session(
            "acct",
            &NewSession {
                agent_id: agent.clone(),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id;
    for _ in 0..2 {
        let mut run = NewRun::new("acct", Kind::Agent, Origin::User, "turn");
        run.agent_id = Some(agent.clone());
        run.session_id = Some(session.clone());
        store.enqueue_run(&run).unwrap();
        claim_and_finalize(&store); // preparing its statements
    }
    let mut run = NewRun::new("acct", Kind::Agent, Origin::User, "turn");
    run.agent_id = Some(agent);
    run.session_id = Some(session.clone());
    store.enqueue_run(&run).unwrap();
    assert_eq!(claim_and_finalize(&store), 3, "an agent run of a session");
    assert_eq!(
        store.session("acct", &session).unwrap().unwrap().status,
        seed_agents_store::schema::sessions::Status::Idle,
        "the finalize mirrored the session"
    );
}

#[test]
fn a_start_and_a_heartbeat_take_one_round_trip_each() {
    let Some(db) = TempDb::new("round_trips_heartbeat") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let trips = |f: &dyn Fn()| {
        let before = store.round_trips();
        f();
        store.round_trips() - before
    };
    for round in 0..2 {
        store
            .enqueue_run(&NewRun::new("acct", Kind::Workflow, Origin::Workflow, "w"))
            .unwrap();
        let row = store
            .claim_next_run("worker", ClaimLimits::default())
            .unwrap()
            .unwrap();
        let claim = Claim::of(&row).unwrap();
        let start = trips(&|| {
            store.start_run(&claim).unwrap();
        });
        let renew = trips(&|| {
            store.renew_lease(&claim).unwrap();
        });
        // The first round prepares the statements on the connection.
        if round == 1 {
            assert_eq!((start, renew), (1, 1));
        }
        store
            .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
            .unwrap();
    }
}

/// A connection's settings travel with its first statement; a lease that ran none leaves the
/// connection as the server has it, so the next lease still sends what it needs.
#[test]
fn a_lease_that_ran_no_statement_leaves_its_connections_settings_true() {
    let Some(db) = TempDb::new("pool_settings") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let synchronous_commit = || {
        let reading = store.reading().unwrap();
        seed_agents_store::Query::new(
            "SELECT 1",
            "SELECT current_setting('synchronous_commit')",
            &[],
            |row| match row.value(0)? {
                rusqlite::types::ValueRef::Text(t) => Ok(String::from_utf8_lossy(t).into_owned()),
                other => panic!("{other:?}"),
            },
        )
        .fetch_one(&reading)
        .unwrap()
    };
    assert_eq!(synchronous_commit(), "on");
    store
        .set_durability(seed_agents_store::Durability::Normal)
        .unwrap();
    drop(store.reading().unwrap()); // takes the connection, sends nothing
    assert_eq!(synchronous_commit(), "off");
}

#[test]
fn waiting_longer_than_the_busy_timeout_for_a_connection_is_busy() {
    let Some(db) = TempDb::new("pool_busy") else {
        return;
    };
    let store = Store::options()
        .busy_timeout(Duration::from_millis(300))
        .read_connections(1)
        .open(&db.url)
        .unwrap();
    // Every pooled connection held: readings keep theirs until dropped.
    let mut held = Vec::new();
    let error = loop {
        match store.reading() {
            Ok(reading) => held.push(reading),
            Err(error) => break error,
        }
        assert!(held.len() <= 64, "the pool has no bound");
    };
    assert_eq!(error.kind(), ErrorKind::Busy, "{error}");
    assert!(error.to_string().contains("in use"), "{error}");
    // One handed back serves the next.
    held.pop();
    store.reading().unwrap();
}

#[test]
fn a_connection_the_server_closed_is_replaced() {
    let Some(db) = TempDb::new("pool_closed") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    store.touch_account("acct").unwrap();
    let mut admin = db.client();
    let before = backends(&mut admin, &db);
    assert!(!before.is_empty());
    for pid in &before {
        admin
            .execute("SELECT pg_terminate_backend($1)", &[pid])
            .unwrap();
    }
    eventually("the terminated backends are gone", || {
        backends(&mut admin, &db).is_disjoint(&before)
    });
    // A closed connection is never handed out again: at most each may fail the one operation
    // that finds it closed, with the server's error, and then a new one serves.
    let mut failures = 0;
    while let Err(error) = store.touch_account("acct") {
        assert_eq!(error.kind(), ErrorKind::Storage, "{error}");
        failures += 1;
        assert!(
            failures <= before.len(),
            "a closed connection came back: {error}"
        );
    }
    let after = backends(&mut admin, &db);
    assert!(!after.is_empty() && after.is_disjoint(&before));
}

#[test]
fn a_connection_older_than_its_lifetime_is_replaced() {
    let Some(db) = TempDb::new("pool_lifetime") else {
        return;
    };
    let mut admin = db.client();
    let serving = |store: &Store, admin: &mut postgres::Client| {
        store.touch_account("acct").unwrap();
        backends(admin, &db)
    };

    let kept = Store::open(&db.url).unwrap();
    let first = serving(&kept, &mut admin);
    assert_eq!(
        serving(&kept, &mut admin),
        first,
        "a young connection is reused"
    );
    drop(kept);
    eventually("the first store's connections are closed", || {
        backends(&mut admin, &db).is_empty()
    });

    let store = Store::options()
        .connection_lifetime(Duration::ZERO)
        .open(&db.url)
        .unwrap();
    let first = serving(&store, &mut admin);
    assert_eq!(first.len(), 1);
    store.touch_account("acct").unwrap();
    eventually("the old connection is closed for a new one", || {
        let now = backends(&mut admin, &db);
        now.len() == 1 && now.is_disjoint(&first)
    });
}

#[test]
fn the_sync_store_opens_and_runs_inside_an_async_task() {
    let Some(db) = TempDb::new("pool_in_task") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = db.url.clone();
    // Blocking the task's thread, but never starting a runtime inside this one (tokio panics
    // when that happens), opening included.
    let trips = runtime.block_on(async move {
        tokio::spawn(async move {
            let store = Store::open(&url).unwrap();
            for _ in 0..2 {
                store
                    .enqueue_run(&NewRun::new("acct", Kind::Workflow, Origin::Workflow, "w"))
                    .unwrap();
            }
            claim_and_finalize(&store);
            claim_and_finalize(&store)
        })
        .await
        .unwrap()
    });
    assert_eq!(trips, 2);
}
