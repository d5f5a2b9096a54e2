//! What the benchmarks share: the store and plain-rusqlite setups of one shape, and the append
//! written by hand with the store's statements, so every benchmark compares against the same
//! plain baseline.

// Each benchmark binary uses a part of this module.
#![allow(dead_code)]

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::clock::{Clock, SystemClock};
use seed_agents_store::ids::new_id;
use seed_agents_store::payload::*;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Durability, Store};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const ACCOUNT: &str = "acct";

pub fn event(i: usize) -> SessionEventPayload {
    MessageEvent {
        actor: Some(SessionActor::User),
        meta: Some(SessionEventMeta {
            account_id: Some(ACCOUNT.into()),
            signer_id: Some("signer".into()),
            ..SessionEventMeta::default()
        }),
        ..MessageEvent::user(format!(
            "message number {i}: please look at the attached notes"
        ))
    }
    .into()
}

/// A store with one agent and `sessions` top-level sessions; returns their ids.
pub fn setup(
    dir: &tempfile::TempDir,
    name: &str,
    synchronous: &str,
    sessions: usize,
) -> (Store, Vec<String>) {
    let store = Store::open(dir.path().join(name)).unwrap();
    let durability = match synchronous {
        "FULL" => Durability::Full,
        _ => Durability::Normal,
    };
    store.set_durability(durability).unwrap();
    let ids = seed_sessions(&store, sessions);
    (store, ids)
}

/// One agent and `sessions` top-level sessions in `store` (on either backend); their ids.
pub fn seed_sessions(store: &Store, sessions: usize) -> Vec<String> {
    seed_sessions_in(store, ACCOUNT, sessions)
}

/// [`seed_sessions`] in `account`.
pub fn seed_sessions_in(store: &Store, account: &str, sessions: usize) -> Vec<String> {
    let agent = store
        .create_agent(
            account,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: "/d/agent".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap()
        .id;
    let new = NewSession {
        agent_id: agent,
        ..NewSession::default()
    };
    (0..sessions)
        .map(|_| store.create_session(account, &new).unwrap().id)
        .collect()
}

/// The plain side: a store's file with its agent and sessions, then a plain rusqlite connection
/// configured as the store configures its own (cache, mmap, foreign keys, `synchronous`).
pub fn setup_plain(
    dir: &tempfile::TempDir,
    name: &str,
    synchronous: &str,
    sessions: usize,
) -> (Connection, Vec<String>) {
    let (store, sessions) = setup(dir, name, synchronous, sessions);
    let conn = Connection::open(store.path()).unwrap();
    drop(store);
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA mmap_size = 536870912; \
         PRAGMA temp_store = MEMORY; PRAGMA synchronous = {synchronous};"
    ))
    .unwrap();
    (conn, sessions)
}

/// Now, in epoch milliseconds, as the store's clock reads it.
pub fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// The append, written by hand: the same statements as the store's, the same rollup rule
/// (a user message in a top-level session moves the message columns), one `BEGIN IMMEDIATE`
/// transaction per append.
pub fn plain_append(
    conn: &mut Connection,
    now: i64,
    session_id: &str,
    event: &SessionEventPayload,
) {
    let bytes = serde_ipld_dagcbor::to_vec(event).unwrap();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    plain_append_statements(&tx, now, session_id, &bytes);
    tx.commit().unwrap();
}

/// The statements of [`plain_append`], inside a transaction the caller opened, for an event
/// already encoded.
pub fn plain_append_statements(tx: &Connection, now: i64, session_id: &str, bytes: &[u8]) {
    let (agent_id, top_level, seq): (String, bool, i64) = tx
        .prepare_cached(
            "SELECT s.agent_id, s.parent_session_id IS NULL, \
             (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM session_events e WHERE e.session_id = s.id) \
             FROM sessions s WHERE s.id = ?1 AND s.account_id = ?2",
        )
        .unwrap()
        .query_row([session_id, ACCOUNT], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()
        .unwrap()
        .unwrap();
    tx.prepare_cached(
        "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .unwrap()
    .execute((new_id(), session_id, seq, bytes, now))
    .unwrap();
    assert!(top_level);
    tx.prepare_cached(
        "UPDATE agents SET activity_at = ?1, activity_kind = ?2, message_at = ?1, \
         message_from = ?3, activity_session_id = ?4 WHERE id = ?5",
    )
    .unwrap()
    .execute((now, "message", "user", session_id, &agent_id))
    .unwrap();
    tx.prepare_cached(
        "UPDATE sessions SET updated_at = ?1, message_at = ?1, message_from = ?2 WHERE id = ?3",
    )
    .unwrap()
    .execute((now, "user", session_id))
    .unwrap();
}

/// Writes, through a plain connection (the store's writes are its operations only), the rows a
/// bulk fixture hangs off: the account, its agent `agent`, and `sessions` top-level sessions
/// named `sess-0000`, `sess-0001`, ...; returns the session ids.
pub fn insert_owner_rows(conn: &Connection, t: i64, sessions: usize) -> Vec<String> {
    conn.execute(
        "INSERT INTO accounts VALUES (?1, ?2, ?2)",
        params![ACCOUNT, t],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at) \
         VALUES ('agent', ?1, x'a0', '/tmp/agent', 'idle', ?2, ?2)",
        params![ACCOUNT, t],
    )
    .unwrap();
    let mut insert = conn
        .prepare(
            "INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at) \
             VALUES (?1, ?2, 'agent', 'idle', ?3, ?3)",
        )
        .unwrap();
    (0..sessions)
        .map(|i| {
            let id = format!("sess-{i:04}");
            insert.execute(params![id, ACCOUNT, t]).unwrap();
            id
        })
        .collect()
}

/// The median of `v`.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `a` and `b` alternately `rounds` times (swapping which goes first every round, so both
/// see the same load) and prints their medians, named by `names`, and the ratio `a / b`.
pub fn paired(
    label: &str,
    rounds: usize,
    names: [&str; 2],
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) {
    let (mut ta, mut tb) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds {
        let time = |f: &mut dyn FnMut(), out: &mut Vec<Duration>| {
            let start = Instant::now();
            f();
            out.push(start.elapsed());
        };
        if round % 2 == 0 {
            time(&mut a, &mut ta);
            time(&mut b, &mut tb);
        } else {
            time(&mut b, &mut tb);
            time(&mut a, &mut ta);
        }
    }
    let (ma, mb) = (median(ta), median(tb));
    let [na, nb] = names;
    eprintln!(
        "paired {label}: {na} {ma:?}, {nb} {mb:?}, ratio {:.3}, {na} {:.0}/s, {nb} {:.0}/s",
        ma.as_secs_f64() / mb.as_secs_f64(),
        1.0 / ma.as_secs_f64(),
        1.0 / mb.as_secs_f64()
    );
}

/// Events in the bulk fixture.
pub const MILLION_EVENTS: usize = 1_000_000;
/// Events of its big session, `sess-0000`.
pub const BIG_SESSION_EVENTS: usize = 100_000;
/// Its other sessions, `sess-0001` to `sess-0999`.
pub const OTHER_SESSIONS: usize = 999;

/// Builds (once per schema version, kept in `dir`) the store's file of the bulk fixture: one
/// agent, the big session and 999 others, all last touched in 2025, 1M events appended in an
/// interleaved order with random ids, as a server's would be. Returns its path.
pub fn million_events_file(dir: &Path) -> PathBuf {
    let version = seed_agents_store::schema::SCHEMA_VERSION;
    let path = dir.join(format!("replay-{MILLION_EVENTS}-v{version}.sqlite"));
    let done = dir.join(format!("replay-{MILLION_EVENTS}-v{version}.done"));
    if done.exists() {
        return path;
    }
    let _ = std::fs::remove_file(&path);
    drop(Store::open(&path).unwrap());
    let mut conn = Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    let t = 1_764_000_000_000i64;
    let sessions = insert_owner_rows(&tx, t, OTHER_SESSIONS + 1);
    let bytes = serde_ipld_dagcbor::to_vec(&event(0)).unwrap();
    let mut seqs = vec![0i64; sessions.len()];
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        for i in 0..MILLION_EVENTS {
            // Every tenth event goes to the big session, the rest round the others.
            let s = if i % 10 == 0 {
                0
            } else {
                1 + i % OTHER_SESSIONS
            };
            seqs[s] += 1;
            insert
                .execute(params![new_id(), sessions[s], seqs[s], bytes, t + i as i64])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    assert_eq!(seqs[0] as usize, BIG_SESSION_EVENTS);
    conn.execute_batch("ANALYZE").unwrap();
    std::fs::write(done, "").unwrap();
    path
}
