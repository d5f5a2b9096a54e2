//! Contention from other processes never fails an operation: 8 processes on one file, each in a
//! tight mixed loop of appends (to a shared session and its own), run enqueues and claims, reads
//! and re-opens, all succeed.
//!
//! `measure_contention` (ignored; run with `--ignored --nocapture`, length in
//! `RELIABILITY_SECONDS`, default 30) prints the figures: operations, failures, and the p50,
//! p99 and worst latency of an operation. The suite asserts failures only, never times.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use seed_agents_store::runs::{ClaimLimits, NewRun};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::Store;
use support::reliability::*;

const PROCESSES: usize = 8;
/// How long the suite's contention test runs.
const SUITE_SECONDS: u64 = 5;
const DB: &str = "RELIABILITY_CONTENTION_DB";
const SESSIONS: &str = "RELIABILITY_CONTENTION_SESSIONS";
const INDEX: &str = "RELIABILITY_CONTENTION_INDEX";
const MILLIS: &str = "RELIABILITY_CONTENTION_MILLIS";
/// Every this many operations a child drops its store and opens the file again (an open runs
/// the gate and writes planner statistics, so it contends like a write).
const REOPEN_EVERY: u64 = 200;

/// The operations of a child's loop, by kind.
const OPS: [&str; 6] = [
    "append to the shared session",
    "append to its own session",
    "enqueue and claim",
    "read events and runs",
    "read a session",
    "re-open",
];

/// What all children did.
#[derive(Debug, Default)]
struct Tally {
    ops: u64,
    errors: Vec<String>,
    /// Latencies in microseconds, by operation kind (an index into [`OPS`]).
    latencies_us: BTreeMap<usize, Vec<u64>>,
}

/// The `p` quantile of `latencies` (microseconds), nearest rank.
fn percentile(latencies: &[u64], p: f64) -> Duration {
    let mut l = latencies.to_vec();
    l.sort_unstable();
    let at = ((l.len() as f64 * p).ceil() as usize).clamp(1, l.len()) - 1;
    Duration::from_micros(l[at])
}

/// Runs `PROCESSES` children for `length` on a fresh file and gathers what they report.
fn contend(length: Duration) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents.sqlite");
    let (store, sessions) = store_with_sessions(&path, PROCESSES + 1);
    drop(store);
    let go = path.with_extension("go");
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            spawn(
                &support::child_test!("contention_child"),
                "contender",
                &[
                    (DB, path.display().to_string()),
                    (SESSIONS, sessions.join(",")),
                    (INDEX, i.to_string()),
                    (MILLIS, length.as_millis().to_string()),
                ],
            )
        })
        .collect();
    // Start together once every child has opened its store.
    let deadline = Instant::now() + Duration::from_secs(120);
    while (0..PROCESSES).any(|i| !path.with_extension(format!("ready{i}")).exists()) {
        assert!(Instant::now() < deadline, "the children did not get ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&go, b"go").unwrap();
    let mut tally = Tally::default();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in support::results(&stdout) {
            let (what, rest) = line.split_once(' ').unwrap_or((&line, ""));
            match what {
                "ops" => tally.ops += rest.parse::<u64>().unwrap(),
                "error" => tally.errors.push(rest.to_owned()),
                "lat" => {
                    let (kind, list) = rest.split_once(' ').unwrap();
                    tally
                        .latencies_us
                        .entry(kind.parse().unwrap())
                        .or_default()
                        .extend(list.split(',').map(|s| s.parse::<u64>().unwrap()));
                }
                other => panic!("unknown result {other}"),
            }
        }
    }
    tally
}

#[test]
fn eight_processes_in_tight_mixed_loops_never_fail_an_operation() {
    if role().is_some() {
        return;
    }
    let tally = contend(Duration::from_secs(SUITE_SECONDS));
    assert!(tally.ops > 0, "the children did nothing");
    println!(
        "{PROCESSES} processes for {SUITE_SECONDS} s: {} operations, {} failed",
        tally.ops,
        tally.errors.len()
    );
    assert!(
        tally.errors.is_empty(),
        "{} of {} operations failed under contention: {:?}",
        tally.errors.len(),
        tally.ops,
        &tally.errors[..tally.errors.len().min(5)]
    );
}

#[test]
#[ignore = "prints contention figures; run with --ignored --nocapture"]
fn measure_contention() {
    if role().is_some() {
        return;
    }
    let secs = std::env::var("RELIABILITY_SECONDS").map_or(30, |s| s.parse().unwrap());
    let tally = contend(Duration::from_secs(secs));
    let all: Vec<u64> = tally.latencies_us.values().flatten().copied().collect();
    println!(
        "{PROCESSES} processes, {secs} s: {} operations, {} failed ({:.4}%); latency p50 {:?}, p99 {:?}, worst {:?}",
        tally.ops,
        tally.errors.len(),
        tally.errors.len() as f64 * 100.0 / tally.ops.max(1) as f64,
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        percentile(&all, 1.0),
    );
    for (kind, l) in &tally.latencies_us {
        println!(
            "  {:<30} {:>7} ops, p50 {:?}, p99 {:?}, worst {:?}",
            OPS[*kind],
            l.len(),
            percentile(l, 0.50),
            percentile(l, 0.99),
            percentile(l, 1.0)
        );
    }
    for e in tally.errors.iter().take(10) {
        println!("  failure: {e}");
    }
}

/// The child side: does nothing unless started by [`contend`].
#[test]
fn contention_child() {
    if role().as_deref() != Some("contender") {
        return;
    }
    let env = |k: &str| std::env::var(k).unwrap();
    let path = env(DB);
    let sessions: Vec<String> = env(SESSIONS).split(',').map(str::to_owned).collect();
    let index: usize = env(INDEX).parse().unwrap();
    let length = Duration::from_millis(env(MILLIS).parse().unwrap());
    let (shared, own) = (&sessions[0], &sessions[1 + index]);
    let mut store = Store::open(&path).unwrap();
    std::fs::write(
        Path::new(&path).with_extension(format!("ready{index}")),
        b"ready",
    )
    .unwrap();
    while !Path::new(&path).with_extension("go").exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let owner = format!("worker-{index}");
    let mut ops = 0u64;
    let mut latencies: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let end = Instant::now() + length;
    while Instant::now() < end {
        let started = Instant::now();
        let kind = if ops % REOPEN_EVERY == 4 { 5 } else { ops % 5 };
        let outcome = match kind {
            0 => store
                .append_event(ACCOUNT, shared, &message(format!("{owner} {ops}")))
                .map(drop),
            1 => store
                .append_event(ACCOUNT, own, &message(format!("{owner} {ops}")))
                .map(drop),
            2 => store
                .enqueue_run(&NewRun::new(
                    ACCOUNT,
                    Kind::Workflow,
                    Origin::User,
                    "contend",
                ))
                .and_then(|_| store.claim_next_run(&owner, ClaimLimits::default()))
                .map(drop),
            3 => store
                .events_after(ACCOUNT, shared, ops.saturating_sub(20) as i64, Some(20))
                .and_then(|_| store.session_runs(ACCOUNT, own))
                .map(drop),
            4 => store.session(ACCOUNT, own).map(drop),
            _ => Store::open(&path).map(|s| store = s),
        };
        latencies
            .entry(kind)
            .or_default()
            .push(started.elapsed().as_micros().to_string());
        if let Err(e) = outcome {
            println!("RESULT error {} failed: {e}", OPS[kind as usize]);
        }
        ops += 1;
    }
    println!("RESULT ops {ops}");
    for (kind, l) in latencies {
        println!("RESULT lat {kind} {}", l.join(","));
    }
}
