//! Pruning on the 1M-event file (`common::million_events_file`): the time of one prune batch
//! (one write transaction removing at most `batch_rows` events of sessions untouched for a day),
//! for several batch sizes, against the 20 ms target; and a dry run's count over the whole file.
//!
//! Every batch really deletes, so it runs on a copy of the cached file made at each run; the
//! batches taken (about 100k events) stay well inside the fixture's 1M.

mod common;

use common::{median, million_events_file};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use seed_agents_store::prune::{PruneOptions, DEFAULT_BATCH_ROWS};
use seed_agents_store::retention::{Kind, RetentionPolicy};
use seed_agents_store::Store;
use std::path::Path;
use std::time::{Duration, Instant};

/// The batch sizes compared, besides the default the criterion group times.
const SIZES: [usize; 5] = [100, 250, 500, 1_000, 2_000];
/// Batches timed per size.
const ROUNDS: usize = 20;

/// One batch of at most `rows` rows; its time from asking for the write to its commit.
fn one_batch(store: &Store, rows: usize) -> Duration {
    let report = store
        .prune(&PruneOptions {
            batch_rows: rows,
            max_batches: Some(1),
            ..PruneOptions::default()
        })
        .unwrap();
    assert_eq!(
        report.removed["session_events"], rows as u64,
        "a full batch"
    );
    report.longest_batch
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let cached = million_events_file(&dir);
    let work = dir.join("prune-work.sqlite");
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", work.display()));
    }
    std::fs::copy(&cached, &work).unwrap();
    let store = Store::open(&work).unwrap();
    // The fixture's sessions were last touched in 2025: a day's age makes every one old.
    store
        .set_retention_policy(
            Kind::SessionEvents,
            &RetentionPolicy::max_age(24 * 60 * 60 * 1000),
        )
        .unwrap();

    let began = Instant::now();
    let dry = store
        .prune(&PruneOptions {
            dry_run: true,
            ..PruneOptions::default()
        })
        .unwrap();
    eprintln!(
        "dry run over the 1M-event file: {} events would go, counted in {:?}",
        dry.removed["session_events"],
        began.elapsed()
    );

    // The floor: a write of one row costs this much here (its commit and fsync).
    let floor: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let began = Instant::now();
            store
                .set_retention_policy(
                    Kind::SessionEvents,
                    &RetentionPolicy::max_age(24 * 60 * 60 * 1000),
                )
                .unwrap();
            began.elapsed()
        })
        .collect();
    eprintln!(
        "a one-row write (the commit floor): median {:?}",
        median(floor)
    );
    for rows in SIZES {
        let times: Vec<Duration> = (0..ROUNDS).map(|_| one_batch(&store, rows)).collect();
        let max = times.iter().max().copied().unwrap_or_default();
        eprintln!(
            "batch of {rows:>5} events: median {:?}, max {max:?} over {ROUNDS} batches",
            median(times)
        );
    }

    let mut g = c.benchmark_group("prune_1m_events");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(DEFAULT_BATCH_ROWS as u64));
    g.bench_function("one_batch_default_size", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| one_batch(&store, DEFAULT_BATCH_ROWS))
                .sum()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
