//! The store on PostgreSQL against the store on SQLite, in one run: an event append, a replay of
//! 1,000 events, the claim with 1k and with 1M queued runs, append throughput of 8 nodes (each
//! its own handle) writing for 8 accounts or for one, and claim throughput with 8 concurrent
//! workers (each its own handle, as separate nodes are). Beside the store on
//! PostgreSQL, the append also runs through a plain `postgres` client with the same statements
//! and transaction shape (its session lock included), which is the overhead of the store itself.
//!
//! Needs a server: `SEED_AGENTS_BENCH_POSTGRES` (else `SEED_AGENTS_TEST_POSTGRES`) names one
//! whose user may create databases, e.g. `scripts/with-postgres.sh cargo bench --features
//! postgres --bench postgres`. Without one it says so and measures nothing. The 1M-run
//! databases are built once per server and kept (`sa_bench_claim_*`). Both backends commit
//! without waiting for the disk (SQLite `synchronous = NORMAL`, PostgreSQL
//! `synchronous_commit = off` on the benchmark's databases), so the comparison measures the
//! code and the engines rather than fsync.

mod common;
mod pg_common;

use common::{event, seed_sessions, seed_sessions_in, ACCOUNT};
use criterion::{criterion_group, criterion_main, Criterion};
use pg_common::{server, with_database};
use seed_agents_store::cbor::Cbor;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{RunInput, RunOutput};
use seed_agents_store::runs::{ClaimLimits, RunOutcome};
use seed_agents_store::{Durability, Store};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const T: i64 = 1_764_000_000_000;
const WORKERS: usize = 8;

/// A database `name` on the server, made afresh unless `keep` and it exists; its URL.
fn database(admin: &str, name: &str, keep: bool) -> (String, bool) {
    let mut client = postgres::Client::connect(admin, postgres::NoTls).unwrap();
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .unwrap()
        .is_some();
    if exists && !keep {
        client
            .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .unwrap();
    }
    if !exists || !keep {
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        client
            .batch_execute(&format!(
                "ALTER DATABASE {name} SET synchronous_commit = off"
            ))
            .unwrap();
    }
    (with_database(admin, name), exists && keep)
}

fn sqlite_store(dir: &tempfile::TempDir, name: &str) -> Store {
    let store = Store::open(dir.path().join(name)).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    store
}

/// `n` queued workflow runs, created_at in order (setup only: plain SQL on each backend).
fn fill_sqlite(store: &Store, n: usize) {
    store.touch_account(ACCOUNT).unwrap();
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    let input = Cbor::encode(&RunInput::default()).unwrap();
    conn.execute(
        "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?1)
         INSERT INTO runs (id, account_id, root_run_id, depth, kind, origin, title, input_cbor, status,
           attempt, max_attempts, queue, created_at, updated_at)
         SELECT 'r' || i, ?2, 'r' || i, 0, 'workflow', 'workflow', 'bench', ?3, 'queued', 0, 1,
           'background', ?4 + i, ?4 + i FROM g",
        rusqlite::params![n as i64, ACCOUNT, input.as_bytes(), T],
    )
    .unwrap();
    conn.execute_batch("ANALYZE").unwrap();
}

fn fill_postgres(url: &str, store: &Store, n: usize) {
    store.touch_account(ACCOUNT).unwrap();
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let input = Cbor::encode(&RunInput::default()).unwrap();
    client
        .execute(
            "INSERT INTO runs (id, account_id, root_run_id, depth, kind, origin, title, input_cbor, status,
               attempt, max_attempts, queue, created_at, updated_at)
             SELECT 'r' || g, $1, 'r' || g, 0, 'workflow', 'workflow', 'bench', $2, 'queued', 0, 1,
               'background', $3 + g, $3 + g FROM generate_series(1, $4::bigint) g",
            &[&ACCOUNT, &input.as_bytes(), &T, &(n as i64)],
        )
        .unwrap();
    client.batch_execute("VACUUM ANALYZE runs").unwrap();
}

/// Claims one run and finishes it, so the queue shrinks by one per iteration.
fn claim_one(store: &Store, owner: &str) -> bool {
    match store.claim_next_run(owner, ClaimLimits::default()).unwrap() {
        Some(run) => {
            let claim = Claim::of(&run).unwrap();
            store
                .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
                .unwrap();
            true
        }
        None => false,
    }
}

/// Puts a claimed run back where it was (outside the timed region).
const UNCLAIM_SQLITE: &str = "UPDATE runs SET status = 'queued', lease_owner = NULL, \
    lease_expires_at = NULL, attempt = 0 WHERE id = ?1";
const UNCLAIM_POSTGRES: &str = "UPDATE runs SET status = 'queued', lease_owner = NULL, \
    lease_expires_at = NULL, attempt = 0 WHERE id = $1";

/// `iters` claims, timed alone; each claimed run is put back by `unclaim`, untimed.
fn timed_claims(iters: u64, store: &Store, mut unclaim: impl FnMut(&str)) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let run = store
            .claim_next_run("bench", ClaimLimits::default())
            .unwrap()
            .unwrap();
        total += start.elapsed();
        unclaim(&run.id);
    }
    total
}

/// The plain side of an append on PostgreSQL: the store's statements, prepared once, through a
/// plain client in one transaction holding the session's row lock, as the store runs them.
struct PlainAppend {
    client: postgres::Client,
    lock: postgres::Statement,
    next: postgres::Statement,
    insert: postgres::Statement,
    session: postgres::Statement,
    agent: postgres::Statement,
}

impl PlainAppend {
    fn new(url: &str) -> PlainAppend {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let lock = client
            .prepare("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE")
            .unwrap();
        let next = client
            .prepare(
                "SELECT s.agent_id, (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM session_events e \
                 WHERE e.session_id = s.id) FROM sessions s WHERE s.id = $1 AND s.account_id = $2",
            )
            .unwrap();
        let insert = client
            .prepare(
                "INSERT INTO session_events (id, session_id, seq, event_cbor, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .unwrap();
        let session = client
            .prepare(
                "UPDATE sessions SET updated_at = $1, message_at = $1, message_from = 'user' \
                 WHERE id = $2",
            )
            .unwrap();
        let agent = client
            .prepare(
                "UPDATE agents SET activity_at = $1, activity_kind = 'message', message_at = $1, \
                 message_from = 'user', activity_session_id = $2 WHERE id = $3",
            )
            .unwrap();
        PlainAppend {
            client,
            lock,
            next,
            insert,
            session,
            agent,
        }
    }

    fn append(&mut self, session: &str, payload: &[u8], i: i64) {
        let mut tx = self.client.transaction().unwrap();
        tx.execute(&self.lock, &[&session]).unwrap();
        let row = tx.query_one(&self.next, &[&session, &ACCOUNT]).unwrap();
        let agent: String = row.get(0);
        let seq: i64 = row.get(1);
        let now = T + i;
        let id = format!("plain-{i}");
        tx.execute(&self.insert, &[&id, &session, &seq, &payload, &now])
            .unwrap();
        tx.execute(&self.session, &[&now, &session]).unwrap();
        tx.execute(&self.agent, &[&now, &session, &agent]).unwrap();
        tx.commit().unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let Some(admin) = server() else {
        eprintln!(
            "SKIPPED benches/postgres.rs: no PostgreSQL server; set SEED_AGENTS_BENCH_POSTGRES \
             (or run it under scripts/with-postgres.sh)"
        );
        return;
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();

    // Append and replay.
    let sqlite = sqlite_store(&dir, "events.sqlite");
    let sqlite_session = seed_sessions(&sqlite, 1).remove(0);
    let (url, _) = database(&admin, "sa_bench_events", false);
    let pg = Store::open(&url).unwrap();
    let pg_session = seed_sessions(&pg, 1).remove(0);
    let (plain_url, _) = database(&admin, "sa_bench_plain", false);
    let plain_store = Store::open(&plain_url).unwrap();
    let plain_session = seed_sessions(&plain_store, 1).remove(0);
    drop(plain_store);
    let mut plain = PlainAppend::new(&plain_url);
    let payload = Cbor::encode(&event(0)).unwrap();
    let mut group = c.benchmark_group("postgres_append");
    group.measurement_time(Duration::from_secs(4));
    let mut i = 0;
    group.bench_function("sqlite_store", |b| {
        b.iter(|| {
            i += 1;
            sqlite
                .append_event(ACCOUNT, &sqlite_session, &event(i))
                .unwrap()
        })
    });
    group.bench_function("postgres_store", |b| {
        b.iter(|| {
            i += 1;
            pg.append_event(ACCOUNT, &pg_session, &event(i)).unwrap()
        })
    });
    group.bench_function("postgres_plain", |b| {
        b.iter(|| {
            i += 1;
            plain.append(&plain_session, payload.as_bytes(), i as i64)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("postgres_replay_1000");
    for (name, store, session) in [
        ("sqlite_store", &sqlite, &sqlite_session),
        ("postgres_store", &pg, &pg_session),
    ] {
        let have = store.events_after(ACCOUNT, session, 0, None).unwrap().len();
        for n in have..1_000 {
            store.append_event(ACCOUNT, session, &event(n)).unwrap();
        }
        group.bench_function(name, |b| {
            b.iter(|| {
                let events = store
                    .events_after(ACCOUNT, session, 0, Some(1_000))
                    .unwrap();
                assert_eq!(events.len(), 1_000);
            })
        });
    }
    group.finish();

    // The claim with 1k and 1M queued runs (the 1M databases are kept between runs).
    let mut group = c.benchmark_group("postgres_claim");
    group.measurement_time(Duration::from_secs(4));
    for queued in [1_000usize, 1_000_000] {
        let path: PathBuf = target_data().join(format!("claim-{queued}.sqlite"));
        if !path.exists() {
            let store = Store::open(&path).unwrap();
            fill_sqlite(&store, queued);
        }
        let sqlite = Store::open(&path).unwrap();
        sqlite.set_durability(Durability::Normal).unwrap();
        let (url, kept) = database(&admin, &format!("sa_bench_claim_{queued}"), queued > 1_000);
        let pg = Store::open(&url).unwrap();
        if !kept {
            fill_postgres(&url, &pg, queued);
        }
        let side = rusqlite::Connection::open(&path).unwrap();
        group.bench_function(format!("sqlite_store/{queued}"), |b| {
            b.iter_custom(|iters| {
                timed_claims(iters, &sqlite, |id| {
                    side.execute(UNCLAIM_SQLITE, [id]).unwrap();
                })
            })
        });
        let mut side = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        group.bench_function(format!("postgres_store/{queued}"), |b| {
            b.iter_custom(|iters| {
                timed_claims(iters, &pg, |id| {
                    side.execute(UNCLAIM_POSTGRES, &[&id]).unwrap();
                })
            })
        });
    }
    group.finish();

    // Throughput: 8 nodes, each its own handle, appending to a session each: of an account each
    // (appends of different accounts run at once on PostgreSQL), or all of one account (one at
    // a time, as every write was before appends took their account's lock).
    let mut group = c.benchmark_group("postgres_append_8_nodes");
    group.sample_size(10);
    let (url, _) = database(&admin, "sa_bench_nodes", false);
    let pg = Store::open(&url).unwrap();
    for (name, store, path) in [
        ("sqlite_store", &sqlite, sqlite.path().to_path_buf()),
        ("postgres_store", &pg, PathBuf::from(&url)),
    ] {
        for layout in ["own_accounts", "one_account"] {
            let targets: Vec<(String, String)> = (0..WORKERS)
                .map(|w| {
                    let account = match layout {
                        "own_accounts" => format!("{name}-node-{w}"),
                        _ => format!("{name}-shared"),
                    };
                    (
                        account.clone(),
                        seed_sessions_in(store, &account, 1).remove(0),
                    )
                })
                .collect();
            let nodes: Vec<Store> = (0..WORKERS)
                .map(|_| {
                    let node = Store::open(&path).unwrap();
                    node.set_durability(Durability::Normal).unwrap();
                    node
                })
                .collect();
            group.bench_function(format!("{name}/{layout}"), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for (node, (account, session)) in nodes.iter().zip(&targets) {
                            s.spawn(move || {
                                for i in 0..iters as usize * NODE_APPENDS {
                                    node.append_event(account, session, &event(i)).unwrap();
                                }
                            });
                        }
                    });
                    start.elapsed()
                })
            });
        }
    }
    group.finish();

    // Throughput: 8 workers, each its own handle, drain a queue of runs.
    let mut group = c.benchmark_group("postgres_claim_8_workers");
    group.sample_size(10);
    const BATCH: usize = 400;
    let mut files = 0;
    group.bench_function("sqlite_store", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                files += 1;
                let path = dir.path().join(format!("workers-{files}.sqlite"));
                let store = Store::open(&path).unwrap();
                fill_sqlite(&store, BATCH);
                total += drain(|| {
                    let s = Store::open(&path).unwrap();
                    s.set_durability(Durability::Normal).unwrap();
                    s
                });
            }
            total
        })
    });
    group.bench_function("postgres_store", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (url, _) = database(&admin, "sa_bench_workers", false);
                let store = Store::open(&url).unwrap();
                fill_postgres(&url, &store, BATCH);
                total += drain(|| Store::open(&url).unwrap());
            }
            total
        })
    });
    group.finish();
}

/// Appends per node in one iteration of `postgres_append_8_nodes`.
const NODE_APPENDS: usize = 50;

/// Runs [`WORKERS`] threads, each on its own handle, claiming and finishing until the queue is
/// empty; the time from the start signal to the last finish.
fn drain(open: impl Fn() -> Store + Sync) -> Duration {
    let stores: Vec<Store> = (0..WORKERS).map(|_| open()).collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for (w, store) in stores.iter().enumerate() {
            s.spawn(move || while claim_one(store, &format!("worker-{w}")) {});
        }
    });
    start.elapsed()
}

fn target_data() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

criterion_group!(benches, bench);
criterion_main!(benches);
