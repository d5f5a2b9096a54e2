//! Group commit: durable appends (`synchronous=FULL`) from 1, 8, 32 and 128 concurrent threads,
//! each to a session of its own (`distinct`) or all to one session (`one`), four ways:
//!
//! - `store`: one shared `Store` handle, its writer committing concurrent appends together
//!   (the default bounds);
//! - `plain group`: the plain group writer, about 60 lines of plain rusqlite ([`PlainGroup`]):
//!   one writer thread runs every pending append in one transaction, and each caller waits for
//!   its commit. The store is held to at least this;
//! - `plain`: plain rusqlite, a `Mutex<Connection>` running the same statements by hand, one
//!   append per `BEGIN IMMEDIATE` transaction (the floor of one fsync per append);
//! - `plain normal`: `plain` at `synchronous=NORMAL` (no fsync per commit): what durability
//!   costs.
//!
//! Criterion reports the time of one round (every thread's appends) and appends/s. Each append's
//! own latency (waiting for the lock or the batch included) is recorded too, and a table of
//! appends/s, p50 and p99 per case, with the ratios to `plain group` and `plain normal`, is
//! printed at the end. Before criterion, `interleaved` alternates the store and `plain group`
//! round by round, on files with the same history, and prints the median of the per-repetition
//! ratios, the figure held against the target of 1.0 (criterion's consecutive samples drift
//! with the machine by ±10%); with `GROUP_COMMIT_RESOLUTION` set, it then does the same with the
//! plain group writer on both sides. Then `single caller` alternates the store and `plain` call
//! by call, one thread, and prints the ratio of the medians: group commit must cost a lone
//! caller nothing (target at most 1.05).

mod common;

use common::{
    event, median, now_ms, plain_append, plain_append_statements, setup, setup_plain, ACCOUNT,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rusqlite::Connection;
use seed_agents_store::Store;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier, Mutex};
use std::time::{Duration, Instant};

const CONCURRENCY: [usize; 4] = [1, 8, 32, 128];

/// An append for the plain group writer: the session, the encoded event and where to say that
/// its batch committed.
type Job = (String, Vec<u8>, mpsc::SyncSender<()>);

/// The plain group writer: a writer thread takes every append pending, runs them in one
/// `BEGIN IMMEDIATE` transaction and tells each caller once it committed.
struct PlainGroup {
    jobs: mpsc::Sender<Job>,
    /// Batches committed and the appends they held.
    stats: std::sync::Arc<(AtomicUsize, AtomicUsize)>,
}

impl PlainGroup {
    fn new(mut conn: Connection) -> PlainGroup {
        let (jobs, pending) = mpsc::channel::<Job>();
        let stats = std::sync::Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
        let counted = stats.clone();
        let writer = std::thread::Builder::new().name("plain-writer".into());
        writer
            .spawn(move || {
                while let Ok(first) = pending.recv() {
                    let batch: Vec<Job> =
                        std::iter::once(first).chain(pending.try_iter()).collect();
                    let tx = conn
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                        .unwrap();
                    let now = now_ms();
                    for (session, bytes, _) in &batch {
                        plain_append_statements(&tx, now, session, bytes);
                    }
                    tx.commit().unwrap();
                    counted.0.fetch_add(1, Ordering::Relaxed);
                    counted.1.fetch_add(batch.len(), Ordering::Relaxed);
                    for (_, _, done) in batch {
                        let _ = done.send(());
                    }
                }
            })
            .unwrap();
        PlainGroup { jobs, stats }
    }

    /// (batches, appends) committed so far.
    fn stats(&self) -> (u64, u64) {
        let (batches, appends) = &*self.stats;
        (
            batches.load(Ordering::Relaxed) as u64,
            appends.load(Ordering::Relaxed) as u64,
        )
    }

    fn append(&self, session: &str, event: &seed_agents_store::payload::SessionEventPayload) {
        let bytes = serde_ipld_dagcbor::to_vec(event).unwrap();
        let (done, committed) = mpsc::sync_channel(1);
        self.jobs.send((session.to_owned(), bytes, done)).unwrap();
        committed.recv().unwrap();
    }
}

/// The four ways to append, each on a database of its own.
enum Way {
    Store(Store),
    PlainGroup(PlainGroup),
    Plain(Mutex<Connection>),
    PlainNormal(Mutex<Connection>),
}

impl Way {
    fn name(&self) -> &'static str {
        match self {
            Way::Store(_) => "store",
            Way::PlainGroup(_) => "plain group",
            Way::Plain(_) => "plain",
            Way::PlainNormal(_) => "plain normal",
        }
    }

    fn append(&self, session: &str, i: usize) {
        let event = event(i);
        match self {
            Way::Store(store) => {
                store.append_event(ACCOUNT, session, &event).unwrap();
            }
            Way::PlainGroup(group) => group.append(session, &event),
            Way::Plain(conn) | Way::PlainNormal(conn) => {
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
            // Named after the way, so that a profile tells the callers' time apart.
            let caller = std::thread::Builder::new().name(way.name().replace(' ', "-"));
            caller
                .spawn_scoped(s, move || {
                    let mut own = Vec::with_capacity(n);
                    start.wait();
                    for _ in 0..n {
                        let i = counter.fetch_add(1, Ordering::Relaxed);
                        let began = Instant::now();
                        way.append(session, i);
                        own.push(began.elapsed());
                    }
                    latencies.lock().unwrap().extend(own);
                })
                .unwrap();
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

/// One thread, the store and `plain` alternating call by call (the order rotating every round).
fn single_caller(ways: &[&Way], sessions: &[&Vec<String>]) {
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
    let plain = medians[medians.len() - 1].as_secs_f64();
    for (way, m) in ways.iter().zip(&medians) {
        eprintln!(
            "single caller {}: median {m:?}, {:.0} appends/s, {:.3} x plain",
            way.name(),
            1.0 / m.as_secs_f64(),
            m.as_secs_f64() / plain,
        );
    }
}

/// The store against the plain group writer, the sides interleaved round by round (the order
/// alternating) so that drift of the machine falls on both, and the ratio taken within each
/// repetition: prints the median ratio of appends/s and the p99 of each side.
fn interleaved(ways: [&Way; 2], sessions: [&[String]; 2], counter: &AtomicUsize) {
    let repetitions: usize = std::env::var(REPETITIONS)
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(30);
    let (a, b) = (ways[0].name(), ways[1].name());
    eprintln!("\n{a} against {b}, interleaved, {repetitions} repetitions of one round each:");
    for distinct in [true, false] {
        for threads in [8, 32, 128] {
            let latencies = [Mutex::new(Vec::new()), Mutex::new(Vec::new())];
            let mut ratios = Vec::with_capacity(repetitions);
            for r in 0..repetitions {
                let mut took = [Duration::ZERO; 2];
                for k in 0..2 {
                    let w = (r + k) % 2;
                    took[w] = round(
                        ways[w],
                        sessions[w],
                        threads,
                        distinct,
                        counter,
                        &latencies[w],
                    );
                }
                // Same appends on both sides: the ratio of appends/s is the inverse of times.
                ratios.push(took[1].as_secs_f64() / took[0].as_secs_f64());
            }
            ratios.sort_by(f64::total_cmp);
            let p99 = |l: &Mutex<Vec<Duration>>| {
                let mut all = l.lock().unwrap().clone();
                all.sort();
                percentile(&all, 0.99)
            };
            let (a_p99, b_p99) = (p99(&latencies[0]), p99(&latencies[1]));
            eprintln!(
                "{threads:>3} threads, {:>8}: {a} / {b} {:.2} x appends/s (median; \
                 quartiles {:.2} to {:.2}), p99 {a_p99:.3?} / {b_p99:.3?} = {:.2} x",
                if distinct { "distinct" } else { "one" },
                ratios[repetitions / 2],
                ratios[repetitions / 4],
                ratios[3 * repetitions / 4],
                a_p99.as_secs_f64() / b_p99.as_secs_f64(),
            );
        }
    }
}

/// With this variable set to `store` or `plain-group`, the bench only runs that way's appends
/// and exits: the run to count instructions with (`valgrind --tool=callgrind`), where the
/// machine's noise is larger than the difference between the two. Example:
/// `GROUP_COMMIT_COUNT=store valgrind --tool=callgrind target/release/deps/group_commit-*`.
const COUNT_ONLY: &str = "GROUP_COMMIT_COUNT";

/// Repetitions of the interleaved comparison (`GROUP_COMMIT_REPETITIONS`, default 30): more
/// narrow the medians where the machine's noise is close to the difference.
const REPETITIONS: &str = "GROUP_COMMIT_REPETITIONS";

/// With this variable set, the interleaved comparison is run a second time with the plain
/// group writer on both sides (each on a file of its own), to show the measure's resolution.
const RESOLUTION: &str = "GROUP_COMMIT_RESOLUTION";

/// Rounds of 32 threads, own sessions, through one way (`GROUP_COMMIT_COUNT_ROUNDS`, default 4:
/// the difference between two counts with different rounds leaves out the setup).
fn count_only(way: &str, ways: &[Way], sessions: &[Vec<String>], counter: &AtomicUsize) {
    let rounds: usize = std::env::var("GROUP_COMMIT_COUNT_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(4);
    let i = ways
        .iter()
        .position(|w| w.name().replace(' ', "-") == way)
        .unwrap_or_else(|| panic!("{COUNT_ONLY}: no way named {way}"));
    let latencies = Mutex::new(Vec::new());
    for _ in 0..rounds {
        round(&ways[i], &sessions[i], 32, true, counter, &latencies);
    }
    eprintln!("{way}: {} appends", latencies.into_inner().unwrap().len());
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let max = CONCURRENCY[CONCURRENCY.len() - 1];
    let (store, store_sessions) = setup(&dir, "store.sqlite", "FULL", max);
    let (plain_group, plain_group_sessions) = setup_plain(&dir, "group.sqlite", "FULL", max);
    let (plain, plain_sessions) = setup_plain(&dir, "plain.sqlite", "FULL", max);
    let (normal, normal_sessions) = setup_plain(&dir, "normal.sqlite", "NORMAL", max);
    let ways = [
        Way::Store(store),
        Way::PlainGroup(PlainGroup::new(plain_group)),
        Way::Plain(Mutex::new(plain)),
        Way::PlainNormal(Mutex::new(normal)),
    ];
    let sessions = [
        store_sessions,
        plain_group_sessions,
        plain_sessions,
        normal_sessions,
    ];

    let counter = AtomicUsize::new(0);
    if let Ok(way) = std::env::var(COUNT_ONLY) {
        return count_only(&way, &ways, &sessions, &counter);
    }
    // First, while the two files have the same history: a file's history alone moves the
    // figure (see RESOLUTION), and the single caller writes to the store's file.
    interleaved([&ways[0], &ways[1]], [&sessions[0], &sessions[1]], &counter);
    if std::env::var_os(RESOLUTION).is_some() {
        // The plain group writer against itself, on two fresh files made alike: how far from
        // 1.0 the same code lands, the resolution of the figure above.
        let (a, a_sessions) = setup_plain(&dir, "group-a.sqlite", "FULL", max);
        let (b, b_sessions) = setup_plain(&dir, "group-b.sqlite", "FULL", max);
        let (a, b) = (PlainGroup::new(a), PlainGroup::new(b));
        let (a, b) = (Way::PlainGroup(a), Way::PlainGroup(b));
        interleaved([&a, &b], [&a_sessions, &b_sessions], &counter);
    }
    single_caller(&[&ways[0], &ways[2]], &[&sessions[0], &sessions[2]]);

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
                let stats = || match way {
                    Way::Store(store) => {
                        let s = store.commit_stats();
                        Some((s.batches, s.operations))
                    }
                    Way::PlainGroup(group) => Some(group.stats()),
                    _ => None,
                };
                let before = stats();
                g.bench_function(way.name(), |b| {
                    b.iter_custom(|iters| {
                        let total: Duration = (0..iters)
                            .map(|_| round(way, sessions, threads, distinct, &counter, &latencies))
                            .sum();
                        measured += total;
                        total
                    })
                });
                let batch = match (before, stats()) {
                    (Some(before), Some(after)) => {
                        Some((after.1 - before.1) as f64 / (after.0 - before.0) as f64)
                    }
                    _ => None,
                };
                let mut all = latencies.into_inner().unwrap();
                if all.is_empty() {
                    continue; // filtered out on the command line
                }
                all.sort();
                cases.push(Case {
                    label: format!("{threads:>3} threads, {target:>8}, {:>12}", way.name()),
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
    for four in cases.chunks(4) {
        let [store, group, _, normal] = four else {
            continue; // a case filtered out on the command line
        };
        for case in four {
            let batch = case
                .batch
                .map(|b| format!(", {b:.1} appends per commit"))
                .unwrap_or_default();
            eprintln!(
                "{}: {:>8.0} appends/s, p50 {:>9.3?}, p99 {:>9.3?}{batch}",
                case.label, case.appends_per_s, case.p50, case.p99
            );
        }
        eprintln!(
            "  store / plain group: {:.2} x appends/s, {:.2} x p99; store / plain normal: {:.2} x",
            store.appends_per_s / group.appends_per_s,
            store.p99.as_secs_f64() / group.p99.as_secs_f64(),
            store.appends_per_s / normal.appends_per_s,
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
