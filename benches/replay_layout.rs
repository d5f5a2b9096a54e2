//! The layout of the Log: replaying one session of 100,000 events in a file of 1,000,000, with
//! `session_events` keyed by `(session_id, seq)` as version 31 made it (a session's rows side by
//! side) against a copy in the layout before it (keyed by the random event id, so a session's
//! rows lie scattered over the file), and an append into each, alternating. Also prints how long
//! building the copy takes (a migration between the layouts costs about that).
//!
//! The store's file (`common::million_events_file`) is built once per schema version and kept
//! under `target/bench-data` (about 300 MB); the copy is rebuilt every run.

mod common;

use common::{event, million_events_file, paired, ACCOUNT, BIG_SESSION_EVENTS, MILLION_EVENTS};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rusqlite::{params, Connection, TransactionBehavior};
use seed_agents_store::ids::new_id;
use seed_agents_store::payload::SessionEventPayload;
use seed_agents_store::Store;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const EVENTS: usize = MILLION_EVENTS;
const BIG: usize = BIG_SESSION_EVENTS;

/// The layout before version 31, keyed by the event id, in a file of its own (the store's file
/// holds exactly its schema, or the gate refuses it).
const BY_ID: &str = "CREATE TABLE session_events (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_cbor BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) WITHOUT ROWID";

const REPLAY: &str = "SELECT id, session_id, seq, event_cbor, created_at FROM session_events \
                      WHERE session_id = ?1 AND seq > ?2 ORDER BY seq";

/// Builds the copy in the layout by id from the store's file, timed.
fn by_id_file(dir: &Path, from: &Path) -> PathBuf {
    let path = dir.join(format!("replay-{EVENTS}-by-id.sqlite"));
    let _ = std::fs::remove_file(&path);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(BY_ID).unwrap();
    conn.execute("ATTACH ?1 AS src", [from.to_str().unwrap()])
        .unwrap();
    let began = Instant::now();
    conn.execute_batch(
        "BEGIN; INSERT INTO main.session_events SELECT id, session_id, seq, event_cbor, created_at \
         FROM src.session_events; COMMIT;",
    )
    .unwrap();
    eprintln!(
        "copy of {EVENTS} events into the layout by id: {:?}",
        began.elapsed()
    );
    path
}

fn plain(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA cache_size = -65536; PRAGMA mmap_size = 536870912; \
         PRAGMA synchronous = NORMAL;",
    )
    .unwrap();
    conn
}

fn replay(conn: &Connection) -> usize {
    let mut stmt = conn.prepare_cached(REPLAY).unwrap();
    let rows = stmt
        .query_map(params!["sess-0000", 0], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Vec<u8>>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).count()
}

/// One append, as the store does it (next seq and insert, one transaction), to a small session:
/// the big one stays as built, since the file is kept between runs.
fn append(conn: &mut Connection, bytes: &[u8]) {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let seq: i64 = tx
        .prepare_cached(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM session_events WHERE session_id = ?1",
        )
        .unwrap()
        .query_row(["sess-0999"], |r| r.get(0))
        .unwrap();
    tx.prepare_cached(
        "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) VALUES (?1, ?2, ?3, ?4, 0)",
    )
    .unwrap()
    .execute(params![new_id(), "sess-0999", seq, bytes])
    .unwrap();
    tx.commit().unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let clustered_path = million_events_file(&dir);
    let scattered_path = by_id_file(&dir, &clustered_path);
    let store = Store::open(&clustered_path).unwrap();
    let scattered = plain(&scattered_path);
    let clustered = plain(&clustered_path);
    assert_eq!(replay(&scattered), BIG);
    assert_eq!(replay(&clustered), BIG);

    let mut g = c.benchmark_group("replay_100k_of_1m");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(BIG as u64));
    g.bench_function("store_events_after", |b| {
        b.iter(|| {
            let events = store.events_after(ACCOUNT, "sess-0000", 0, None).unwrap();
            assert_eq!(events.len(), BIG);
        })
    });
    // Decoded: every event's payload too, by the store's decoder and by serde's alone.
    g.bench_function("store_events_after_decoded", |b| {
        b.iter(|| {
            let events = store.events_after(ACCOUNT, "sess-0000", 0, None).unwrap();
            let decoded: Vec<SessionEventPayload> = events
                .iter()
                .map(|e| e.event_cbor.decode().unwrap())
                .collect();
            assert_eq!(decoded.len(), BIG);
        })
    });
    g.bench_function("store_events_after_serde_decoded", |b| {
        b.iter(|| {
            let events = store.events_after(ACCOUNT, "sess-0000", 0, None).unwrap();
            let decoded = events
                .iter()
                .map(|e| {
                    serde_ipld_dagcbor::from_slice::<SessionEventPayload>(e.event_cbor.as_bytes())
                        .unwrap()
                })
                .collect::<Vec<_>>();
            assert_eq!(decoded.len(), BIG);
        })
    });
    g.bench_function("plain_by_id_layout", |b| b.iter(|| replay(&scattered)));
    g.bench_function("plain_by_session_seq_layout", |b| {
        b.iter(|| replay(&clustered))
    });
    g.finish();
    drop(store);

    let bytes = serde_ipld_dagcbor::to_vec(&event(1)).unwrap();
    let (mut by_id, mut by_seq) = (plain(&scattered_path), plain(&clustered_path));
    paired(
        "append (synchronous=NORMAL)",
        2_000,
        ["by (session_id, seq)", "by id"],
        || append(&mut by_seq, &bytes),
        || append(&mut by_id, &bytes),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
