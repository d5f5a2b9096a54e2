//! Shared fixture of the execution-state tests: a store on a temp file with a manual clock, an
//! account, an agent and sessions.

use std::sync::Arc;

use seed_agents_store::cbor::Cbor;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{
    AgentDefinition, OpenMap, RunWaitEvent, WaitMatch, WaitMatchSignal,
};
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::schema::sessions;
use seed_agents_store::Store;

use crate::backend;
pub mod processes;

/// The account under test.
pub const A: &str = "acct-a";
/// Another account, which must never see A's rows.
pub const B: &str = "acct-b";
/// The agent of A.
pub const AGENT: &str = "agent-1";
/// The agent of B.
pub const AGENT_B: &str = "agent-b";
/// The start time.
pub const T0: i64 = 1_764_000_000_000;

/// A store on a temp file, its clock, and the temp dir (kept alive).
pub struct Fixture {
    /// The store.
    pub store: Store,
    /// Its clock.
    pub clock: ManualClock,
    /// The directory holding its file (and the children's signals).
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// Where the store lives (see [`backend::location`]).
    pub fn path(&self) -> std::path::PathBuf {
        backend::location(self.dir.path(), "agents.sqlite")
    }

    /// Another connection to the same file, sharing the clock.
    pub fn reopen(&self) -> Store {
        Store::open_with_clock(self.path(), Arc::new(self.clock.clone())).expect("reopen")
    }

    /// A session of A's agent.
    pub fn session(&self, id: &str) -> String {
        session_in(&self.store, A, AGENT, id);
        id.to_owned()
    }

    /// The status of A's session `id`.
    pub fn session_status(&self, id: &str) -> sessions::Status {
        sessions::get(&self.store.reading().unwrap(), A, id)
            .unwrap()
            .unwrap()
            .status
    }
}

/// Opens a fresh fixture with accounts A and B, an agent each.
pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = Store::open_with_clock(
        backend::location(dir.path(), "agents.sqlite"),
        Arc::new(clock.clone()),
    )
    .expect("open");
    agent_in(&store, A, AGENT);
    agent_in(&store, B, AGENT_B);
    Fixture { store, clock, dir }
}

/// A plain writable connection to the store's file, for rows the tests write by hand (the
/// store's own connection is read-only), with foreign keys checked as the store checks them.
pub fn raw(store: &Store) -> rusqlite::Connection {
    assert!(
        !backend::postgres(),
        "a raw SQLite connection on PostgreSQL: skip this test there"
    );
    let conn = rusqlite::Connection::open(store.path()).expect("raw connection");
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    conn
}

/// An idle agent `id` of `account` (created when missing) with the default definition.
pub fn agent_in(store: &Store, account: &str, id: &str) {
    backend::exec(
        store.path(),
        "INSERT OR IGNORE INTO accounts (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
        &[&account, &T0],
    );
    let definition = Cbor::encode(&AgentDefinition::default()).unwrap();
    backend::exec(
        store.path(),
        "INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'idle', ?5, ?5)",
        &[&id, &account, &definition.as_bytes(), &format!("/tmp/{id}"), &T0],
    );
}

/// An idle session `id` of `agent` in `account`.
pub fn session_in(store: &Store, account: &str, agent: &str, id: &str) {
    backend::exec(
        store.path(),
        "INSERT INTO sessions (id, account_id, agent_id, title_source, status, created_at, updated_at)
         VALUES (?1, ?2, ?3, 'system', 'idle', ?4, ?4)",
        &[&id, &account, &agent, &T0],
    );
}

/// An agent run of A in `session`.
pub fn agent_run(session: &str, title: &str) -> NewRun {
    let mut run = NewRun::new(A, Kind::Agent, Origin::User, title);
    run.agent_id = Some(AGENT.into());
    run.session_id = Some(session.into());
    run
}

/// A workflow run of A.
pub fn workflow_run(title: &str) -> NewRun {
    let mut run = NewRun::new(A, Kind::Workflow, Origin::Workflow, title);
    run.agent_id = Some(AGENT.into());
    run
}

/// A wait matching the signal `name`.
pub fn signal(name: &str) -> WaitMatch {
    WaitMatch::Signal(WaitMatchSignal {
        signal: name.into(),
        extra: OpenMap::new(),
    })
}

/// The claim the run `id` of `account` is held under now (a claim that holds nothing when the
/// run is not claimed, so a write under it is refused as a worker without the lease would be).
pub fn held(store: &Store, account: &str, id: &str) -> Claim {
    let row = store.run(account, id).unwrap();
    match row.as_ref().and_then(Claim::of) {
        Some(claim) => claim,
        None => Claim {
            account_id: account.into(),
            run_id: id.into(),
            owner: String::new(),
            attempt: row.map_or(0, |r| r.attempt),
        },
    }
}

/// The claim `owner` would hold on the run `id` at its current attempt.
pub fn claim_as(store: &Store, account: &str, id: &str, owner: &str) -> Claim {
    Claim {
        owner: owner.into(),
        ..held(store, account, id)
    }
}

/// An event wait `wait_id` with an optional timeout.
pub fn event_wait(wait_id: &str, timeout_at: Option<i64>) -> RunWaitEvent {
    RunWaitEvent {
        wait_id: wait_id.into(),
        timeout_at,
        label: None,
        answer_with: None,
        extra: OpenMap::new(),
    }
}
