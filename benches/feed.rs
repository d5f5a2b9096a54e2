//! The change feed: how long an append takes from its commit to a follower, and what idle
//! followers cost.
//!
//! - **Latency** from an append's return (its commit is durable then) to a follower blocked in
//!   `EventFeed::next_within` holding it: p50, p99 and max over `FEED_APPENDS` appends
//!   (default 1,000), one every 2 ms. Three cases: the writer in this process; in another
//!   process on the same SQLite file; on another node of PostgreSQL (when a server is given).
//!   Across processes both sides read the wall clock (one machine, one clock).
//! - **Idle followers:** 1,000 `EventStream`s over 100 sessions, each a task awaiting its next
//!   event, on a 2-thread tokio runtime: the process's CPU time over 10 s, as a share of one
//!   core, against the same store with none.
//! - **Appends with them attached:** 4 threads appending to 4 other sessions, with and without
//!   the 1,000 followers, rounds interleaved, medians of `FEED_ROUNDS` (default 7).
//!
//! `cargo bench --features tokio --bench feed`; with `--features tokio,postgres` and
//! `SEED_AGENTS_BENCH_POSTGRES` (else `SEED_AGENTS_TEST_POSTGRES`) the PostgreSQL cases too.

mod common;
#[cfg(feature = "postgres")]
mod pg_common;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{event, seed_sessions, ACCOUNT};
use futures_util::StreamExt;
use seed_agents_store::{AsyncStore, Durability, Store};

const WRITER: &str = "FEED_BENCH_WRITER";
const SPACING: Duration = Duration::from_millis(2);
const FOLLOWED_SESSIONS: usize = 100;

fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Idle followers attached (`FEED_FOLLOWERS`, default 1,000).
fn followers() -> usize {
    std::env::var("FEED_FOLLOWERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

fn appends() -> usize {
    std::env::var("FEED_APPENDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

/// p50, p99 and max of `latencies` (nanoseconds), as milliseconds.
fn summary(mut latencies: Vec<i64>) -> String {
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize] as f64 / 1e6;
    format!(
        "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} appends)",
        at(0.5),
        at(0.99),
        at(1.0),
        latencies.len()
    )
}

/// Follows `session` from 0 on a thread of its own until it has `n` events; each one's arrival
/// (unix nanoseconds), by seq.
fn follow(store: &Store, session: &str, n: usize) -> std::thread::JoinHandle<Vec<i64>> {
    let mut feed = store.follow_events(ACCOUNT, session, 0).unwrap();
    std::thread::spawn(move || {
        let mut arrivals = Vec::with_capacity(n);
        while arrivals.len() < n {
            let row = feed
                .next_within(Duration::from_secs(30))
                .unwrap()
                .expect("an event within 30 s");
            assert_eq!(row.seq as usize, arrivals.len() + 1);
            arrivals.push(unix_nanos());
        }
        arrivals
    })
}

/// Appends `n` events to `session`, one every [`SPACING`]; each append's return (unix
/// nanoseconds), in order.
fn append_spaced(store: &Store, session: &str, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| {
            std::thread::sleep(SPACING);
            store.append_event(ACCOUNT, session, &event(i)).unwrap();
            unix_nanos()
        })
        .collect()
}

/// The latencies: arrival minus commit, never below zero (a follower may be woken before the
/// appending call has returned to its caller).
fn latencies(committed: &[i64], arrived: &[i64]) -> Vec<i64> {
    committed
        .iter()
        .zip(arrived)
        .map(|(c, a)| (a - c).max(0))
        .collect()
}

fn same_process(store: &Store, session: &str, n: usize) -> String {
    let follower = follow(store, session, n);
    let committed = append_spaced(store, session, n);
    summary(latencies(&committed, &follower.join().unwrap()))
}

/// The writer in another process (another node on PostgreSQL): this bench run as a child.
fn other_process(store: &Store, location: &str, session: &str, n: usize) -> String {
    let follower = follow(store, session, n);
    let out = Command::new(std::env::current_exe().unwrap())
        .env(WRITER, format!("{location}\n{session}\n{n}"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success());
    let committed: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("COMMITTED ")?.parse().ok())
        .collect();
    summary(latencies(&committed, &follower.join().unwrap()))
}

fn writer_child(spec: &str) {
    let mut parts = spec.lines();
    let (location, session, n) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap().parse().unwrap(),
    );
    let store = Store::open(location).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    for at in append_spaced(&store, session, n) {
        println!("COMMITTED {at}");
    }
}

/// Nanoseconds each live thread of this process has run, by thread id, from its `schedstat`
/// (precise; the tick-sampled `utime` overcharges a thread that wakes on a timer, as a watcher
/// does).
fn thread_nanos() -> std::collections::HashMap<String, u64> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let nanos = stat.split(' ').next()?.parse().ok()?;
            Some((task.file_name().to_string_lossy().into_owned(), nanos))
        })
        .collect()
}

/// The share of one core this process used over `span` (threads that ended meanwhile left out:
/// the blocking pool's idle ones).
fn core_share(span: Duration) -> f64 {
    let before = thread_nanos();
    std::thread::sleep(span);
    let used: u64 = thread_nanos()
        .iter()
        .map(|(tid, now)| now - before.get(tid).copied().unwrap_or(0))
        .sum();
    used as f64 / 1e9 / span.as_secs_f64()
}

/// Appends/s of 4 threads, `FEED_EACH` appends each (default 4,000), to `sessions`.
fn throughput(store: &Store, sessions: &[String]) -> f64 {
    let each: usize = std::env::var("FEED_EACH")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4_000);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for session in sessions {
            scope.spawn(move || {
                for i in 0..each {
                    store.append_event(ACCOUNT, session, &event(i)).unwrap();
                }
            });
        }
    });
    (sessions.len() * each) as f64 / started.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The idle followers' cost and the append throughput beside them.
fn idle_followers(store: &Store) {
    let followed = seed_sessions(store, FOLLOWED_SESSIONS);
    let written = seed_sessions(store, 4);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let idle = core_share(Duration::from_secs(10));
    let attach = |store: &Store| {
        let async_store = AsyncStore::new(store.clone());
        let followed = followed.clone();
        let count = Arc::new(Mutex::new(0usize));
        let tasks: Vec<_> = (0..followers())
            .map(|i| {
                let (store, session, count) = (
                    async_store.clone(),
                    followed[i % FOLLOWED_SESSIONS].clone(),
                    count.clone(),
                );
                runtime.spawn(async move {
                    let mut stream = store.follow_events(ACCOUNT, &session, 0).await.unwrap();
                    *count.lock().unwrap() += 1;
                    while let Some(item) = stream.next().await {
                        item.unwrap();
                    }
                })
            })
            .collect();
        while *count.lock().unwrap() < followers() {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Each stream's first read (its replay) runs after it is made, on tokio's blocking
        // pool, whose idle threads end after 10 s: let both settle.
        std::thread::sleep(Duration::from_secs(12));
        tasks
    };
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut attached_idle = 0.0;
    let rounds: usize = std::env::var("FEED_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(7);
    for round in 0..rounds {
        without.push(throughput(store, &written));
        let tasks = attach(store);
        if round == 0 {
            attached_idle = core_share(Duration::from_secs(10));
        }
        with.push(throughput(store, &written));
        tasks.iter().for_each(|t| t.abort());
        runtime.block_on(async {
            for t in tasks {
                let _ = t.await;
            }
        });
    }
    let (with, without) = (median(with), median(without));
    eprintln!(
        "  idle: {:.2}% of a core with {} followers on {FOLLOWED_SESSIONS} sessions, \
         {:.2}% with none",
        attached_idle * 100.0,
        followers(),
        idle * 100.0
    );
    eprintln!(
        "  appends beside them: {with:.0}/s with, {without:.0}/s without ({:.3} x)",
        with / without
    );
}

fn main() {
    if let Ok(spec) = std::env::var(WRITER) {
        writer_child(&spec);
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n = appends();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feed.sqlite");
    let store = Store::open(&path).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    let sessions = seed_sessions(&store, 2);
    eprintln!("SQLite, synchronous NORMAL:");
    eprintln!(
        "  same process:    {}",
        same_process(&store, &sessions[0], n)
    );
    eprintln!(
        "  another process: {}",
        other_process(&store, path.to_str().unwrap(), &sessions[1], n)
    );
    idle_followers(&store);
    drop(store);
    #[cfg(feature = "postgres")]
    postgres(n);
}

#[cfg(feature = "postgres")]
fn postgres(n: usize) {
    let Some(admin) = pg_common::server() else {
        eprintln!("PostgreSQL: no server (set SEED_AGENTS_BENCH_POSTGRES); not measured");
        return;
    };
    let url = pg_common::fresh_database(&admin, "sa_bench_feed");
    let store = Store::open(&url).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    let sessions = seed_sessions(&store, 2);
    eprintln!("PostgreSQL, synchronous_commit off:");
    eprintln!("  same node:    {}", same_process(&store, &sessions[0], n));
    eprintln!(
        "  another node: {}",
        other_process(&store, &url, &sessions[1], n)
    );
    idle_followers(&store);
    plain_postgres(&url);
}

/// The plain way on PostgreSQL, for the cost of being listened to: 4 plain clients each
/// inserting a row and notifying its session in one statement (autocommit), with and without
/// one plain client listening (`LISTEN`, draining what arrives), rounds interleaved.
#[cfg(feature = "postgres")]
fn plain_postgres(url: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let connect = || postgres::Client::connect(url, postgres::NoTls).unwrap();
    connect()
        .batch_execute(
            "CREATE TABLE plain_feed (session text, seq bigint, body bytea, \
             PRIMARY KEY (session, seq))",
        )
        .unwrap();
    let appends = |round: usize| {
        let each = 4_000;
        let started = Instant::now();
        std::thread::scope(|scope| {
            for t in 0..4 {
                scope.spawn(move || {
                    let mut client = connect();
                    client
                        .batch_execute("SET synchronous_commit = off")
                        .unwrap();
                    let insert = client
                        .prepare(
                            "WITH i AS (INSERT INTO plain_feed VALUES ($1, $2, $3) \
                             RETURNING session) SELECT pg_notify('plain_feed', session) FROM i",
                        )
                        .unwrap();
                    let session = format!("s{t}-{round}");
                    for seq in 0..each as i64 {
                        client
                            .execute(&insert, &[&session, &seq, &vec![7u8; 200]])
                            .unwrap();
                    }
                });
            }
        });
        (4 * each) as f64 / started.elapsed().as_secs_f64()
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..7 {
        without.push(appends(2 * round));
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let mut listener = connect();
            listener.batch_execute("LISTEN plain_feed").unwrap();
            let stop = &stop;
            scope.spawn(move || {
                let mut notifications = listener.notifications();
                while !stop.load(Ordering::Relaxed) {
                    use postgres::fallible_iterator::FallibleIterator;
                    let mut batch = notifications.timeout_iter(Duration::from_millis(50));
                    while batch.next().unwrap().is_some() {}
                }
            });
            with.push(appends(2 * round + 1));
            stop.store(true, Ordering::Relaxed);
        });
    }
    let (with, without) = (median(with), median(without));
    eprintln!(
        "  plain: 4 clients inserting and notifying, {with:.0}/s with a listener, \
         {without:.0}/s without ({:.3} x)",
        with / without
    );
}
