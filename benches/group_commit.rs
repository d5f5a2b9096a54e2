//! Group commit: durable appends (`synchronous=FULL`) from 1, 8, 32 and 128 concurrent threads,
//! each to a session of its own (`distinct`) or all to one session (`one`), three ways:
//!
//! - `group`: one shared `Store` handle, its writer committing concurrent appends together
//!   (the default bounds);
//! - `mutex`: today's design before the shared handle, a `Mutex<Store>` committing each append
//!   alone (`group_commit(1, ..)`);
//! - `plain`: plain rusqlite, a `Mutex<Connection>` running the same statements by hand, one
//!   append per `BEGIN IMMEDIATE` transaction (the floor of one fsync per append).
//!
//! Criterion reports the time of one round (every thread's appends) and appends/s. Each append's
//! own latency (waiting for the lock or the batch included) is recorded too, and a table of
//! appends/s, p50 and p99 per case, with the ratio to `plain`, is printed at the end. Before
//! criterion, `single caller` alternates the three ways call by call, one thread, and prints the
//! ratio of the medians: group commit must cost a lone caller nothing (target at most 1.05).

mod common;

use common::{event, median, now_ms, plain_append, setup, setup_plain, ACCOUNT};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rusqlite::Connection;
use seed_agents_store::Store;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const CONCURRENCY: [usize; 4] = [1, 8, 32, 128];

/// The three ways to append, each on a database of its own.
enum Way {
    Group(Store),
    Mutex(Mutex<Store>),
    Plain(Mutex<Connection>),
}

impl Way {
    fn name(&self) -> &'static str {
        match self {
            Way::Group(_) => "group",
            Way::Mutex(_) => "mutex",
            Way::Plain(_) => "plain",
        }
    }

    fn append(&self, session: &str, i: usize) {
        let event = event(i);
        match self {
            Way::Group(store) => {
                store.append_event(ACCOUNT, session, &event).unwrap();
            }
            Way::Mutex(store) => {
                let store = store.lock().unwrap();
                store.append_event(ACCOUNT, session, &event).unwrap();
            }
            Way::Plain(conn) => {
                let mut conn = conn.lock().unwrap();
                plain_append(&mut conn, now_ms(), session, &event);
            }
        }
    }
}

/// Appends per thread in one round: enough for the batches to fill, few enough that the plain
/// floor's round stays short.
fn per_thread(threads: usize) -> usize {
    (256 / threads).max(4)
}

/// One round: `threads` threads released together, each appending `per_thread` events to its
/// session (`distinct`) or to the first. Returns the round's time; records each append's.
fn round(
    way: &Way,
    sessions: &[String],
    threads: usize,
    distinct: bool,
    counter: &AtomicUsize,
    latencies: &Mutex<Vec<Duration>>,
) -> Duration {
    let start = Barrier::new(threads + 1);
    let n = per_thread(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (start, session) = (&start, &sessions[if distinct { t } else { 0 }]);
            s.spawn(move || {
                let mut own = Vec::with_capacity(n);
                start.wait();
                for _ in 0..n {
                    let i = counter.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    way.append(session, i);
                    own.push(began.elapsed());
                }
                latencies.lock().unwrap().extend(own);
            });
        }
        start.wait();
        let began = Instant::now();
        // Leaving the scope joins every thread: the round ends when the last append returned.
        began
    })
    .elapsed()
}

struct Case {
    label: String,
    /// Operations per committed batch (group commit only).
    batch: Option<f64>,
    appends_per_s: f64,
    p50: Duration,
    p99: Duration,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// One thread, the three ways alternating call by call (the order rotating every round).
fn single_caller(ways: &[Way], sessions: &[Vec<String>]) {
    const ROUNDS: usize = 1_500;
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(ROUNDS); ways.len()];
    for r in 0..ROUNDS {
        for k in 0..ways.len() {
            let w = (r + k) % ways.len();
            let began = Instant::now();
            ways[w].append(&sessions[w][0], r);
            times[w].push(began.elapsed());
        }
    }
    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    let plain = medians[2].as_secs_f64();
    for (way, m) in ways.iter().zip(&medians) {
        eprintln!(
            "single caller {}: median {m:?}, {:.0} appends/s, {:.3} x plain, {:.3} x mutex",
            way.name(),
            1.0 / m.as_secs_f64(),
            m.as_secs_f64() / plain,
            m.as_secs_f64() / medians[1].as_secs_f64(),
        );
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let max = CONCURRENCY[CONCURRENCY.len() - 1];
    let (group, group_sessions) = setup(&dir, "group.sqlite", "FULL", max);
    let (mutex, mutex_sessions) = setup(&dir, "mutex.sqlite", "FULL", max);
    // Today's design: every append its own transaction, behind one lock.
    let path = mutex.path().to_owned();
    drop(mutex);
    let mutex = Store::options()
        .group_commit(1, Duration::ZERO)
        .open(&path)
        .unwrap();
    let (plain, plain_sessions) = setup_plain(&dir, "plain.sqlite", "FULL", max);
    let ways = [
        Way::Group(group),
        Way::Mutex(Mutex::new(mutex)),
        Way::Plain(Mutex::new(plain)),
    ];
    let sessions = [group_sessions, mutex_sessions, plain_sessions];

    single_caller(&ways, &sessions);

    let counter = AtomicUsize::new(0);
    let mut cases = Vec::new();
    for distinct in [true, false] {
        for threads in CONCURRENCY {
            let target = if distinct { "distinct" } else { "one" };
            let mut g = c.benchmark_group(format!("append_{threads}_threads_{target}_session"));
            g.sample_size(10);
            g.warm_up_time(Duration::from_millis(500));
            g.measurement_time(Duration::from_secs(3));
            g.throughput(Throughput::Elements((threads * per_thread(threads)) as u64));
            for (way, sessions) in ways.iter().zip(&sessions) {
                let latencies = Mutex::new(Vec::new());
                let mut measured = Duration::ZERO;
                let before = match way {
                    Way::Group(store) => Some(store.commit_stats()),
                    _ => None,
                };
                g.bench_function(way.name(), |b| {
                    b.iter_custom(|iters| {
                        let total: Duration = (0..iters)
                            .map(|_| round(way, sessions, threads, distinct, &counter, &latencies))
                            .sum();
                        measured += total;
                        total
                    })
                });
                let batch = match (way, before) {
                    (Way::Group(store), Some(before)) => {
                        let after = store.commit_stats();
                        Some(
                            (after.operations - before.operations) as f64
                                / (after.batches - before.batches) as f64,
                        )
                    }
                    _ => None,
                };
                let mut all = latencies.into_inner().unwrap();
                if all.is_empty() {
                    continue; // filtered out on the command line
                }
                all.sort();
                cases.push(Case {
                    label: format!("{threads:>3} threads, {target:>8}, {:>5}", way.name()),
                    batch,
                    appends_per_s: all.len() as f64 / measured.as_secs_f64(),
                    p50: percentile(&all, 0.50),
                    p99: percentile(&all, 0.99),
                });
            }
            g.finish();
        }
    }
    eprintln!("\ngroup commit, synchronous=FULL: appends/s, per-append p50 and p99");
    for three in cases.chunks(3) {
        let plain = three[three.len() - 1].appends_per_s;
        for case in three {
            let batch = case
                .batch
                .map(|b| format!(", {b:.1} appends per commit"))
                .unwrap_or_default();
            eprintln!(
                "{}: {:>8.0} appends/s ({:>5.2} x plain), p50 {:>9.3?}, p99 {:>9.3?}{batch}",
                case.label,
                case.appends_per_s,
                case.appends_per_s / plain,
                case.p50,
                case.p99
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
