//! Generated helpers against the plain rusqlite way of doing the same thing: the same SQL through
//! `prepare_cached`, decoded by hand into a struct of plain types. Each pair runs in one group so
//! the ratio is read off one run (target: generated / hand-written at most 1.05). The generated
//! writes are crate-private (rows are written by the store's operations), so only reads compare.

mod common;

use common::{insert_owner_rows, ACCOUNT};
use criterion::{criterion_group, criterion_main, Criterion};
use rusqlite::{params, Connection};
use seed_agents_store::cbor::Cbor;
use seed_agents_store::schema::runs;
use seed_agents_store::Store;
use std::time::Duration;

const PRELOADED: usize = 10_000;
const PER_SESSION: usize = 20;
const SESSIONS: usize = PRELOADED / PER_SESSION;
const T: i64 = 1_764_000_000_000;

/// A run as hand-written code would hold it: enums as strings, payloads as bytes.
#[allow(dead_code)]
struct HandRun {
    id: String,
    account_id: String,
    root_run_id: String,
    parent_run_id: Option<String>,
    parent_tool_call_id: Option<String>,
    continued_from_run_id: Option<String>,
    depth: i64,
    kind: String,
    agent_id: Option<String>,
    session_id: Option<String>,
    trigger_firing_id: Option<String>,
    origin: String,
    title: Option<String>,
    model: Option<String>,
    source_cid: Option<String>,
    source_text: Option<String>,
    input_cbor: Vec<u8>,
    output_cbor: Option<Vec<u8>>,
    error_cbor: Option<Vec<u8>>,
    status: String,
    wait_cbor: Option<Vec<u8>>,
    attempt: i64,
    max_attempts: i64,
    not_before: Option<i64>,
    queue: String,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    budget_cbor: Option<Vec<u8>>,
    usage_cbor: Option<Vec<u8>>,
    plan_cbor: Option<Vec<u8>>,
    created_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    updated_at: i64,
}

const COLUMNS: &str = r#""id", "account_id", "root_run_id", "parent_run_id", "parent_tool_call_id", "continued_from_run_id", "depth", "kind", "agent_id", "session_id", "trigger_firing_id", "origin", "title", "model", "source_cid", "source_text", "input_cbor", "output_cbor", "error_cbor", "status", "wait_cbor", "attempt", "max_attempts", "not_before", "queue", "lease_owner", "lease_expires_at", "budget_cbor", "usage_cbor", "plan_cbor", "created_at", "started_at", "finished_at", "updated_at""#;

fn hand_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HandRun> {
    Ok(HandRun {
        id: r.get(0)?,
        account_id: r.get(1)?,
        root_run_id: r.get(2)?,
        parent_run_id: r.get(3)?,
        parent_tool_call_id: r.get(4)?,
        continued_from_run_id: r.get(5)?,
        depth: r.get(6)?,
        kind: r.get(7)?,
        agent_id: r.get(8)?,
        session_id: r.get(9)?,
        trigger_firing_id: r.get(10)?,
        origin: r.get(11)?,
        title: r.get(12)?,
        model: r.get(13)?,
        source_cid: r.get(14)?,
        source_text: r.get(15)?,
        input_cbor: r.get(16)?,
        output_cbor: r.get(17)?,
        error_cbor: r.get(18)?,
        status: r.get(19)?,
        wait_cbor: r.get(20)?,
        attempt: r.get(21)?,
        max_attempts: r.get(22)?,
        not_before: r.get(23)?,
        queue: r.get(24)?,
        lease_owner: r.get(25)?,
        lease_expires_at: r.get(26)?,
        budget_cbor: r.get(27)?,
        usage_cbor: r.get(28)?,
        plan_cbor: r.get(29)?,
        created_at: r.get(30)?,
        started_at: r.get(31)?,
        finished_at: r.get(32)?,
        updated_at: r.get(33)?,
    })
}

fn hand_insert(conn: &Connection, sql: &str, r: &HandRun) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params![
        r.id,
        r.account_id,
        r.root_run_id,
        r.parent_run_id,
        r.parent_tool_call_id,
        r.continued_from_run_id,
        r.depth,
        r.kind,
        r.agent_id,
        r.session_id,
        r.trigger_firing_id,
        r.origin,
        r.title,
        r.model,
        r.source_cid,
        r.source_text,
        r.input_cbor,
        r.output_cbor,
        r.error_cbor,
        r.status,
        r.wait_cbor,
        r.attempt,
        r.max_attempts,
        r.not_before,
        r.queue,
        r.lease_owner,
        r.lease_expires_at,
        r.budget_cbor,
        r.usage_cbor,
        r.plan_cbor,
        r.created_at,
        r.started_at,
        r.finished_at,
        r.updated_at
    ])
}

fn hand_get(conn: &Connection, sql: &str, id: &str) -> rusqlite::Result<Option<HandRun>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params![ACCOUNT, id])?;
    rows.next()?.map(hand_from_row).transpose()
}

fn hand_list(conn: &Connection, sql: &str, session: &str) -> rusqlite::Result<Vec<HandRun>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params![ACCOUNT, session], hand_from_row)?;
    rows.collect()
}

fn generated_row(i: usize) -> runs::Row {
    runs::Row {
        id: format!("run-{i:08}"),
        account_id: ACCOUNT.into(),
        root_run_id: format!("run-{i:08}"),
        parent_run_id: None,
        parent_tool_call_id: Some("call-1".into()),
        continued_from_run_id: None,
        depth: 0,
        kind: runs::Kind::Agent,
        agent_id: Some("agent".into()),
        session_id: Some(format!("sess-{:04}", (i / PER_SESSION) % SESSIONS)),
        trigger_firing_id: None,
        origin: runs::Origin::User,
        title: Some("Agent turn".into()),
        model: Some("model-x".into()),
        source_cid: None,
        source_text: None,
        input_cbor: Cbor::from_bytes(vec![0xa1, 0x64, b't', b'e', b'x', b't', 0x62, b'h', b'i']),
        output_cbor: None,
        error_cbor: None,
        status: runs::Status::Succeeded,
        wait_cbor: None,
        attempt: 1,
        max_attempts: 1,
        not_before: None,
        queue: runs::Queue::Interactive,
        lease_owner: None,
        lease_expires_at: None,
        budget_cbor: None,
        usage_cbor: Some(Cbor::from_bytes(vec![0xa1, 0x62, b'i', b'n', 0x18, 0x64])),
        plan_cbor: None,
        created_at: T + i as i64,
        started_at: Some(T + i as i64),
        finished_at: Some(T + i as i64 + 10),
        updated_at: T + i as i64 + 10,
    }
}

fn hand_row(i: usize) -> HandRun {
    let g = generated_row(i);
    HandRun {
        id: g.id,
        account_id: g.account_id,
        root_run_id: g.root_run_id,
        parent_run_id: g.parent_run_id,
        parent_tool_call_id: g.parent_tool_call_id,
        continued_from_run_id: g.continued_from_run_id,
        depth: g.depth,
        kind: g.kind.as_str().into(),
        agent_id: g.agent_id,
        session_id: g.session_id,
        trigger_firing_id: g.trigger_firing_id,
        origin: g.origin.as_str().into(),
        title: g.title,
        model: g.model,
        source_cid: g.source_cid,
        source_text: g.source_text,
        input_cbor: g.input_cbor.into_bytes(),
        output_cbor: None,
        error_cbor: None,
        status: g.status.as_str().into(),
        wait_cbor: None,
        attempt: g.attempt,
        max_attempts: g.max_attempts,
        not_before: g.not_before,
        queue: g.queue.as_str().into(),
        lease_owner: None,
        lease_expires_at: None,
        budget_cbor: None,
        usage_cbor: g.usage_cbor.map(Cbor::into_bytes),
        plan_cbor: None,
        created_at: g.created_at,
        started_at: g.started_at,
        finished_at: g.finished_at,
        updated_at: g.updated_at,
    }
}

/// A store with an account, an agent, sessions and PRELOADED runs.
fn setup() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.sqlite");
    drop(Store::open(&path).unwrap());
    // The fixture is written through a plain connection (the store's own is read-only and the
    // generated writes are crate-private), then the store opens the file as a server would, with
    // the planner statistics of its rows.
    let mut plain = Connection::open(&path).unwrap();
    let tx = plain.transaction().unwrap();
    insert_owner_rows(&tx, T, SESSIONS);
    let placeholders: Vec<String> = (1..=34).map(|i| format!("?{i}")).collect();
    let insert_sql = format!(
        "INSERT INTO \"runs\" ({COLUMNS}) VALUES ({})",
        placeholders.join(", ")
    );
    for i in 0..PRELOADED {
        hand_insert(&tx, &insert_sql, &hand_row(i)).unwrap();
    }
    tx.commit().unwrap();
    plain.execute_batch("ANALYZE").unwrap();
    drop(plain);
    (dir, Store::open(&path).unwrap())
}

fn bench(c: &mut Criterion) {
    let (_dir, store) = setup();
    let get_sql = format!(r#"SELECT {COLUMNS} FROM "runs" WHERE "account_id" = ?1 AND "id" = ?2"#);
    let list_sql = format!(
        r#"SELECT {COLUMNS} FROM "runs" WHERE "account_id" = ?1 AND "session_id" = ?2 ORDER BY "created_at" DESC, "id" ASC"#
    );

    let mut g = c.benchmark_group("runs_get_by_primary_key");
    g.measurement_time(Duration::from_secs(5));
    let mut i = 0usize;
    g.bench_function("generated", |b| {
        b.iter(|| {
            i = (i + 7919) % PRELOADED;
            runs::get(&store.conn().unwrap(), ACCOUNT, &format!("run-{i:08}"))
                .unwrap()
                .unwrap()
        })
    });
    let mut i = 0usize;
    g.bench_function("hand_written", |b| {
        b.iter(|| {
            i = (i + 7919) % PRELOADED;
            hand_get(&store.conn().unwrap(), &get_sql, &format!("run-{i:08}"))
                .unwrap()
                .unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("runs_list_by_session_20_rows");
    g.measurement_time(Duration::from_secs(5));
    let mut s = 0usize;
    g.bench_function("generated", |b| {
        b.iter(|| {
            s = (s + 31) % SESSIONS;
            let rows =
                runs::list_by_session_id(&store.conn().unwrap(), ACCOUNT, &format!("sess-{s:04}"))
                    .unwrap();
            assert_eq!(rows.len(), PER_SESSION);
            rows
        })
    });
    let mut s = 0usize;
    g.bench_function("hand_written", |b| {
        b.iter(|| {
            s = (s + 31) % SESSIONS;
            let rows =
                hand_list(&store.conn().unwrap(), &list_sql, &format!("sess-{s:04}")).unwrap();
            assert_eq!(rows.len(), PER_SESSION);
            rows
        })
    });
    g.finish();

    // Inserts inside one open transaction per sample, so fsync does not drown the difference.
}

criterion_group!(benches, bench);
criterion_main!(benches);
