//! Migrating the TypeScript server's version-11 file grown to 1,000,000 events (its fixture,
//! `tests/fixtures/ts-server-v11.sqlite`, plus 1,000 sessions and 1M events written with plain
//! rusqlite in its own schema): the whole-file check a migration now starts with
//! (`integrity_check` and `foreign_key_check`) against the `quick_check` it replaced, timed by
//! criterion on the unchanged file; then one real migration of a copy, each step timed from the
//! progress it reports, the `VACUUM` that gives back the pages migration 31 left free among
//! them, and the file's size before and after.
//!
//! The grown file is built once and kept under `target/bench-data` (about 330 MB).

mod common;

use common::event;
use criterion::{criterion_group, criterion_main, Criterion};
use rusqlite::{params, Connection};
use seed_agents_store::ids::new_id;
use seed_agents_store::{Progress, Store};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

const EVENTS: usize = 1_000_000;
const SESSIONS: usize = 1_000;

/// The fixture grown to [`EVENTS`] events over [`SESSIONS`] sessions of its `acct-1`/`agent-1`,
/// appended interleaved with random ids as a server would.
fn grown_v11(dir: &Path) -> PathBuf {
    let path = dir.join(format!("ts-v11-{EVENTS}.sqlite"));
    let done = dir.join(format!("ts-v11-{EVENTS}.done"));
    if done.exists() {
        return path;
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ts-server-v11.sqlite");
    std::fs::copy(fixture, &path).unwrap();
    let mut conn = Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    let t = 1_764_000_000_000_i64;
    let sessions: Vec<String> = (0..SESSIONS)
        .map(|i| format!("bench-sess-{i:04}"))
        .collect();
    for s in &sessions {
        tx.execute(
            "INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at) \
             VALUES (?1, 'acct-1', 'agent-1', 'idle', ?2, ?2)",
            params![s, t],
        )
        .unwrap();
    }
    let bytes = serde_ipld_dagcbor::to_vec(&event(0)).unwrap();
    let mut seqs = vec![0_i64; SESSIONS];
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        for i in 0..EVENTS {
            let s = i % SESSIONS;
            seqs[s] += 1;
            insert
                .execute(params![new_id(), sessions[s], seqs[s], bytes, t + i as i64])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    drop(conn);
    std::fs::write(done, "").unwrap();
    path
}

/// The rows a checking statement returns, as text.
fn rows(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| r.get::<_, rusqlite::types::Value>(0))
        .unwrap();
    rows.map(|r| format!("{:?}", r.unwrap())).collect()
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let began = Instant::now();
    let grown = grown_v11(&dir);
    println!(
        "the grown version-11 file: {:?} to build or find",
        began.elapsed()
    );

    let conn = Connection::open(&grown).unwrap();
    let mut g = c.benchmark_group("before_a_migration_1m_events");
    g.sample_size(10);
    g.bench_function("quick_check", |b| {
        b.iter(|| assert_eq!(rows(&conn, "PRAGMA quick_check"), ["Text(\"ok\")"]))
    });
    g.bench_function("integrity_check_and_foreign_key_check", |b| {
        b.iter(|| {
            assert_eq!(rows(&conn, "PRAGMA integrity_check"), ["Text(\"ok\")"]);
            assert!(rows(&conn, "PRAGMA foreign_key_check").is_empty());
        })
    });
    g.finish();
    drop(conn);

    // One migration of a copy, each step timed as the store reports it.
    let work = dir.join("ts-v11-migrate-work.sqlite");
    for stale in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{stale}", work.display()));
    }
    std::fs::copy(&grown, &work).unwrap();
    let size = std::fs::metadata(&work).unwrap().len();
    let marks: Rc<RefCell<Vec<(String, Instant)>>> = Rc::default();
    let seen = marks.clone();
    let start = Instant::now();
    let store = Store::options()
        .on_progress(move |p| {
            let what = match p {
                Progress::Checking => "check".to_string(),
                Progress::Migrating { name, .. } => name.to_string(),
                Progress::Verifying => "verify".to_string(),
                Progress::Compacting { .. } => "compact".to_string(),
                Progress::Compacted { .. } => "compacted".to_string(),
                _ => return,
            };
            seen.borrow_mut().push((what, Instant::now()));
        })
        .open(&work)
        .unwrap();
    let total = start.elapsed();
    drop(store);
    let marks = marks.borrow();
    let at = |name: &str| {
        marks
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .unwrap()
    };
    let check = at("0012_agent_collaborators") - at("check");
    let migrations = at("verify") - at("0012_agent_collaborators");
    let compaction = at("compacted") - at("compact");
    let after = std::fs::metadata(&work).unwrap().len();
    println!(
        "migrating {} ({} MB, version 11 to {}): {total:.2?} in all; the whole-file check {check:.2?}, \
         the migrations {migrations:.2?}, the compaction (VACUUM) {compaction:.2?}, the rest (gate, \
         verify, statistics) {:.2?}; the file is {} MB after",
        grown.display(),
        size / 1_000_000,
        seed_agents_store::schema::SCHEMA_VERSION,
        total - check - migrations - compaction,
        after / 1_000_000,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
