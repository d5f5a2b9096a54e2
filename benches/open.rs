//! `Store::open` of a current database holding 100k runs and 1M session events next to plain
//! rusqlite opening the same file with the same pragmas (target: at most 3 times plain), what the checks open does and does not run cost there (the size check on every open;
//! `quick_check`, which the store ran before a migration until `benches/migrate.rs`'s whole-file
//! check replaced it; the whole `check` command), and the build-time work of
//! codegen: replay of every version plus generation (target: under 1 s). The first open in a
//! process is timed in child processes of this bench (one open each, the store's and plain
//! rusqlite's interleaved), since every later open in a process finds what the first one
//! verified.

mod common;

use common::insert_owner_rows;
use criterion::{criterion_group, Criterion};
use rusqlite::params;
use seed_agents_store::Store;
use std::path::{Path, PathBuf};
use std::time::Duration;

const RUNS: usize = 100_000;
const EVENTS: usize = 1_000_000;
const SESSIONS: usize = 1_000;

/// Builds (once, cached under target/) a current database with RUNS runs and EVENTS events.
fn large_database() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("open-{RUNS}-runs-{EVENTS}-events.sqlite"));
    let done = dir.join(format!("open-{RUNS}-runs-{EVENTS}-events.done"));
    if done.exists() {
        return path;
    }
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    // Bulk rows through a plain connection: the store's own is read-only.
    let mut plain = rusqlite::Connection::open(store.path()).unwrap();
    let tx = plain.transaction().unwrap();
    let t = 1_764_000_000_000i64;
    insert_owner_rows(&tx, t, SESSIONS);
    {
        let mut s = tx
            .prepare(
                "INSERT INTO runs (id, account_id, root_run_id, kind, agent_id, session_id, origin, title, \
                 input_cbor, status, queue, created_at, updated_at) \
                 VALUES (?1, 'acct', ?1, 'agent', 'agent', ?2, 'user', 'Agent turn', x'a0', ?3, 'interactive', ?4, ?4)",
            )
            .unwrap();
        for i in 0..RUNS {
            let status = if i % 10 == 0 { "queued" } else { "succeeded" };
            s.execute(params![
                format!("run-{i:07}"),
                format!("sess-{:04}", i % SESSIONS),
                status,
                t + i as i64
            ])
            .unwrap();
        }
        let mut s = tx
            .prepare(
                "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        let payload = vec![
            0xa1u8, 0x64, b't', b'y', b'p', b'e', 0x67, b'm', b'e', b's', b's', b'a', b'g', b'e',
        ];
        for i in 0..EVENTS {
            s.execute(params![
                format!("ev-{i:08}"),
                format!("sess-{:04}", i % SESSIONS),
                (i / SESSIONS + 1) as i64,
                payload,
                t + i as i64
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
    drop(store);
    std::fs::write(&done, b"").unwrap();
    path
}

/// Plain rusqlite opening `path` with the store's pragmas, checking nothing.
fn plain_open(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA cache_size = -65536; \
         PRAGMA mmap_size = 536870912; PRAGMA temp_store = MEMORY;",
    )
    .unwrap();
    conn
}

fn open(c: &mut Criterion) {
    let path = large_database();
    // Warm the OS cache and settle the WAL once.
    drop(Store::open(&path).unwrap());
    let mut g = c.benchmark_group("open");
    g.sample_size(30).measurement_time(Duration::from_secs(10));
    g.bench_function("current_100k_runs_1m_events", |b| {
        b.iter(|| {
            let store = Store::open(&path).unwrap();
            assert!(matches!(
                store.outcome(),
                seed_agents_store::Outcome::Current { .. }
            ));
        })
    });
    // The floor: plain rusqlite opening the same file with the same pragmas, no checks.
    g.bench_function("plain_rusqlite_100k_runs_1m_events", |b| {
        b.iter(|| plain_open(&path))
    });
    // What the structure check costs when it introspects (a first open in a process, or a
    // changed catalog), against the cached check of an unchanged one that open runs.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version = seed_agents_store::schema::SCHEMA_VERSION;
    g.bench_function("introspect_and_fingerprint", |b| {
        b.iter(|| {
            seed_agents_codegen::introspect(&conn)
                .unwrap()
                .fingerprint()
        })
    });
    g.bench_function("verify_cached", |b| {
        b.iter(|| seed_agents_store::gate::verify(&conn, &path, version).unwrap())
    });
    drop(conn);
    g.bench_function("read_only_current_100k_runs_1m_events", |b| {
        b.iter(|| Store::open_read_only(&path).unwrap())
    });
    // What open's size check adds: two stats and two pragmas on an open connection.
    let conn = rusqlite::Connection::open(&path).unwrap();
    g.bench_function("size_check", |b| {
        b.iter(|| {
            let wal = std::fs::metadata(path.with_extension("sqlite-wal")).map_or(0, |m| m.len());
            let len = std::fs::metadata(&path).unwrap().len();
            let size: i64 = conn
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap();
            let count: i64 = conn
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .unwrap();
            assert!(wal > 0 || count * size <= len as i64);
        })
    });
    g.finish();
    let mut g = c.benchmark_group("checks");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("quick_check_100k_runs_1m_events", |b| {
        b.iter(|| {
            let ok: String = conn
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(ok, "ok");
        })
    });
    g.bench_function("check_command_100k_runs_1m_events", |b| {
        b.iter(|| {
            assert!(seed_agents_store::integrity::check(&path)
                .unwrap()
                .is_clean())
        })
    });
    g.finish();
}

fn codegen(c: &mut Criterion) {
    let root = Path::new(seed_agents_schema::DIR);
    let out = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("build_rs");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("replay_all_versions_and_generate", |b| {
        b.iter(|| {
            seed_agents_codegen::Builder::new(root)
                .out_dir(out.path())
                .cargo_directives(false)
                .run()
                .unwrap()
        })
    });
    g.finish();
}

/// The variable a child process of this bench reads: `store` or `plain`, the side it opens.
const FIRST_OPEN: &str = "SEED_BENCH_FIRST_OPEN";

/// In a child: opens the large file once, the first open in this process, and prints how long it
/// took in nanoseconds.
fn first_open_child(side: &str) {
    let path = large_database();
    let start = std::time::Instant::now();
    match side {
        "store" => drop(Store::open(&path).unwrap()),
        _ => drop(plain_open(&path)),
    }
    println!("{}", start.elapsed().as_nanos());
}

/// The first open in a process, the store's against plain rusqlite's, interleaved in child
/// processes: medians and their ratio (target: at most 3).
fn first_open() {
    let path = large_database();
    drop(Store::open(&path).unwrap());
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..40 {
        for (i, side) in ["store", "plain"].into_iter().enumerate() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env(FIRST_OPEN, side)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let nanos: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            times[i].push(Duration::from_nanos(nanos));
        }
    }
    let [store, plain] = times.map(common::median);
    println!(
        "open/first_in_a_process_100k_runs_1m_events: store {store:?}, plain rusqlite {plain:?}, \
         ratio {:.2} (median of 40 each, interleaved)",
        store.as_secs_f64() / plain.as_secs_f64()
    );
}

criterion_group!(benches, open, codegen);

fn main() {
    if let Ok(side) = std::env::var(FIRST_OPEN) {
        return first_open_child(&side);
    }
    first_open();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
