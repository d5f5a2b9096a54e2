//! The "must show" races, each with threads and separately with processes sharing the file:
//! 8 claimers over 1,000 runs claim each run exactly once and never two agent runs of one
//! session at once; 8 admitters of one firing key produce exactly one firing; 6 racers, two
//! each delivering a signal, sweeping timeouts and canceling, resolve each wait at most once and
//! the journal holds at most one `event`.
//!
//! Processes: the test binary re-runs itself (`--exact race_child --nocapture`) with
//! `EXEC_RACE_ROLE` naming the child's part; each child opens its own `Store` on the same file and
//! prints what it did as `RESULT ...` lines.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Barrier};

use seed_agents_store::lease::Claim;
use seed_agents_store::payload::*;
use seed_agents_store::query;
use seed_agents_store::runs::{ClaimLimits, RunOutcome};
use seed_agents_store::schema::runs::Kind;
use seed_agents_store::triggers::{Admission, FiringKey, FiringRequest, NewTrigger};
use seed_agents_store::waits::{DeliverySource, SignalOutcome};
use seed_agents_store::Store;
use support::execution::*;

const WORKERS: usize = 8;
const RUNS: usize = 1_000;
const SESSIONS: usize = 25;
const SIGNAL_ROUNDS: usize = 40;
const ROLE: &str = "EXEC_RACE_ROLE";

/// The races run one at a time, so that a small machine runs at most eight racers at once.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------------------------
// The parts each racer plays, shared by threads and child processes.

/// Claims until the queue is empty; every claimed run is finalized. Returns the claimed ids and
/// the number of times a claim found another live agent run of its session.
fn claimer(store: &Store, name: &str) -> (Vec<String>, usize) {
    let mut claimed = Vec::new();
    let mut violations = 0;
    let mut idle_rounds = 0;
    loop {
        match store.claim_next_run(name, ClaimLimits::default()).unwrap() {
            Some(run) => {
                idle_rounds = 0;
                let claim = Claim::of(&run).expect("a claimed run carries its claim");
                if run.kind == Kind::Agent {
                    let session = run.session_id.clone().unwrap();
                    let live = query!(
                        "SELECT CAST(count(*) AS INTEGER) AS \"n!\" FROM runs WHERE session_id = ?1 \
                         AND kind = 'agent' AND status IN ('claimed', 'running')",
                        session
                    )
                    .fetch_one(&store.reading().unwrap())
                    .unwrap()
                    .n;
                    if live != 1 {
                        violations += 1;
                    }
                    store.start_run(&claim).unwrap();
                }
                store
                    .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
                    .unwrap();
                claimed.push(run.id);
            }
            None => {
                // Agent runs of a busy session are not claimable until it finishes: look again a
                // few times before concluding the queue is empty.
                let queued = query!(
                    "SELECT CAST(count(*) AS INTEGER) AS \"n!\" FROM runs WHERE status = 'queued'"
                )
                .fetch_one(&store.reading().unwrap())
                .unwrap()
                .n;
                if queued == 0 {
                    break;
                }
                idle_rounds += 1;
                assert!(
                    idle_rounds < 20_000,
                    "claimer stuck with {queued} queued runs"
                );
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        }
    }
    (claimed, violations)
}

fn admitter(store: &Store, trigger_id: &str) -> bool {
    let request = FiringRequest {
        account_id: A.into(),
        trigger_id: trigger_id.into(),
        key: FiringKey::Schedule {
            scheduled_at: 1_800_000_000_000,
        },
        activity: TriggerActivity::default(),
        body_digest: None,
        matched: None,
    };
    match store.admit_firing(&request).unwrap() {
        Admission::Admitted(_) => true,
        Admission::Duplicate(Some(_)) => false,
        other => panic!("{other:?}"),
    }
}

/// The racers for a parked run's wait: two of each way it can end, so each way also races
/// itself.
const SIGNAL_RACERS: [&str; 6] = ["signal", "timeout", "cancel", "signal", "timeout", "cancel"];

/// One of the signal racers over every prepared run; returns how many it resolved.
fn signal_racer(store: &Store, part: &str, runs: &[String]) -> usize {
    let mut resolved = 0;
    for run in runs {
        match part {
            "signal" => {
                if let SignalOutcome::Delivered(_) = store
                    .deliver_signal(A, Some(run), DeliverySource::Signal, "go", None)
                    .unwrap()
                {
                    resolved += 1;
                }
            }
            "timeout" => resolved += store.sweep_wait_timeouts().unwrap().len(),
            "cancel" => resolved += store.cancel_run_tree(A, run).unwrap().canceled.len(),
            other => panic!("unknown part {other}"),
        }
    }
    resolved
}

// ---------------------------------------------------------------------------------------------
// Setup and checks.

fn queue_runs(f: &mut Fixture) {
    let sessions: Vec<String> = (0..SESSIONS).map(|i| f.session(&format!("s{i}"))).collect();
    for i in 0..RUNS {
        let run = if i % 2 == 0 {
            agent_run(&sessions[i % SESSIONS], &format!("agent {i}"))
        } else {
            workflow_run(&format!("workflow {i}"))
        };
        f.store.enqueue_run(&run).unwrap();
        f.clock.advance(1);
    }
}

fn check_claims(f: &Fixture, all: Vec<String>, violations: usize) {
    assert_eq!(
        violations, 0,
        "two agent runs of one session were live at once"
    );
    assert_eq!(all.len(), RUNS, "every run claimed once, none twice");
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), RUNS);
    let attempts = query!(
        "SELECT CAST(count(*) AS INTEGER) AS \"n!\" FROM runs WHERE attempt = 1 AND status = 'succeeded'"
    )
    .fetch_one(&f.store.reading().unwrap())
    .map(|r| r.n)
        .unwrap();
    assert_eq!(attempts as usize, RUNS);
}

fn create_schedule_trigger(f: &mut Fixture) -> String {
    f.store
        .create_trigger(&NewTrigger {
            id: Some("trigger-race".into()),
            account_id: A.into(),
            agent_id: AGENT.into(),
            name: "race".into(),
            enabled: true,
            source: AgentTriggerSource::Schedule(ScheduleSource {
                schedule: Schedule::Interval(ScheduleInterval {
                    interval_ms: 1_000,
                    extra: OpenMap::new(),
                }),
                extra: OpenMap::new(),
            }),
            prompt: "p".into(),
            continuation: None,
        })
        .unwrap()
        .trigger
        .id
}

/// Parks SIGNAL_ROUNDS runs on an event wait whose timeout is already due.
fn park_signal_runs(f: &mut Fixture) -> Vec<String> {
    let mut runs = Vec::new();
    for i in 0..SIGNAL_ROUNDS {
        let run = f
            .store
            .enqueue_run(&workflow_run(&format!("waiter {i}")))
            .unwrap();
        f.store.claim_run(A, &run.id, "w").unwrap().unwrap();
        f.store
            .park_for_event(
                &held(&f.store, A, &run.id),
                &event_wait("1", Some(T0 - 1)),
                &signal("go"),
            )
            .unwrap();
        runs.push(run.id);
    }
    runs
}

fn check_signal_runs(f: &Fixture, runs: &[String], resolved: &HashMap<String, usize>) {
    let mut events_total = 0;
    for run in runs {
        let events = f
            .store
            .load_journal(A, run, 0)
            .unwrap()
            .into_iter()
            .filter(|r| r.entry.kind() == Some("event"))
            .count();
        assert!(events <= 1, "run {run} has {events} event entries");
        events_total += events;
        assert!(f.store.run_waits(A, run).unwrap().is_empty());
    }
    let delivered = resolved.get("signal").copied().unwrap_or(0)
        + resolved.get("timeout").copied().unwrap_or(0);
    assert_eq!(
        delivered, events_total,
        "every delivery journaled exactly one event"
    );
    assert!(delivered + resolved.get("cancel").copied().unwrap_or(0) >= runs.len());
}

// ---------------------------------------------------------------------------------------------
// Threads.

fn open_clone(path: &std::path::Path, f: &Fixture) -> Store {
    Store::open_with_clock(path, Arc::new(f.clock.clone())).unwrap()
}

/// A racing thread's handle: its own open of the file, or a clone of the fixture's handle.
fn racer_store(f: &Fixture, shared: bool) -> Store {
    if shared {
        f.store.clone()
    } else {
        open_clone(&f.path(), f)
    }
}

#[test]
fn threads_claim_each_run_exactly_once() {
    claim_race(false);
}

#[test]
fn threads_sharing_one_handle_claim_each_run_exactly_once() {
    claim_race(true);
}

fn claim_race(shared: bool) {
    let _serial = serial();
    let mut f = fixture();
    queue_runs(&mut f);
    let barrier = Arc::new(Barrier::new(WORKERS));
    let handles: Vec<_> = (0..WORKERS)
        .map(|i| {
            let store = racer_store(&f, shared);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                claimer(&store, &format!("thread-{i}"))
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut violations = 0;
    for h in handles {
        let (ids, v) = h.join().unwrap();
        all.extend(ids);
        violations += v;
    }
    check_claims(&f, all, violations);
}

#[test]
fn threads_admit_one_firing_per_key() {
    admit_race(false);
}

#[test]
fn threads_sharing_one_handle_admit_one_firing_per_key() {
    admit_race(true);
}

fn admit_race(shared: bool) {
    let _serial = serial();
    let mut f = fixture();
    let trigger = create_schedule_trigger(&mut f);
    let barrier = Arc::new(Barrier::new(WORKERS));
    let handles: Vec<_> = (0..WORKERS)
        .map(|_| {
            let store = racer_store(&f, shared);
            let (barrier, trigger) = (barrier.clone(), trigger.clone());
            std::thread::spawn(move || {
                barrier.wait();
                admitter(&store, &trigger)
            })
        })
        .collect();
    let admitted = handles
        .into_iter()
        .filter(|_| true)
        .map(|h| h.join().unwrap())
        .filter(|a| *a)
        .count();
    assert_eq!(admitted, 1);
    assert_eq!(f.store.firings(A, &trigger).unwrap().len(), 1);
}

#[test]
fn threads_resolve_a_signal_racing_a_timeout_and_a_cancel_at_most_once() {
    signal_race(false);
}

#[test]
fn threads_sharing_one_handle_resolve_a_signal_racing_a_timeout_and_a_cancel_at_most_once() {
    signal_race(true);
}

fn signal_race(shared: bool) {
    let _serial = serial();
    let mut f = fixture();
    let runs = park_signal_runs(&mut f);
    let barrier = Arc::new(Barrier::new(SIGNAL_RACERS.len()));
    let handles: Vec<_> = SIGNAL_RACERS
        .into_iter()
        .map(|part| {
            let store = racer_store(&f, shared);
            let (barrier, runs) = (barrier.clone(), runs.clone());
            std::thread::spawn(move || {
                barrier.wait();
                (part.to_owned(), signal_racer(&store, part, &runs))
            })
        })
        .collect();
    let mut resolved: HashMap<String, usize> = HashMap::new();
    for handle in handles {
        let (part, n) = handle.join().unwrap();
        *resolved.entry(part).or_default() += n;
    }
    check_signal_runs(&f, &runs, &resolved);
}

// ---------------------------------------------------------------------------------------------
// Processes.

/// The child side: does nothing unless started by `spawn_children`.
#[test]
fn race_child() {
    let Some((part, store)) = processes::child_start(ROLE) else {
        return;
    };
    let pid = std::process::id();
    match part.as_str() {
        "claimer" => {
            let (ids, violations) = claimer(&store, &format!("process-{pid}"));
            for id in ids {
                println!("RESULT claimed {id}");
            }
            println!("RESULT violations {violations}");
        }
        "admitter" => println!("RESULT admitted {}", admitter(&store, "trigger-race")),
        "signal" | "timeout" | "cancel" => {
            let runs: Vec<String> = std::env::var("EXEC_RACE_RUNS")
                .unwrap_or_default()
                .split(',')
                .map(str::to_owned)
                .collect();
            let runs = if runs == [""] {
                signal_runs_from(&store)
            } else {
                runs
            };
            println!("RESULT resolved {}", signal_racer(&store, &part, &runs));
        }
        other => panic!("unknown role {other}"),
    }
}

/// The waiting runs prepared by the parent, oldest first.
fn signal_runs_from(store: &Store) -> Vec<String> {
    query!("SELECT id FROM runs WHERE title LIKE 'waiter %' ORDER BY created_at, id")
        .fetch_all(&store.reading().unwrap())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect()
}

#[test]
fn processes_claim_each_run_exactly_once() {
    let _serial = serial();
    let mut f = fixture();
    queue_runs(&mut f);
    let results = processes::spawn(
        &f,
        &support::child_test!("race_child"),
        ROLE,
        &["claimer"; WORKERS],
    );
    let mut all = Vec::new();
    let mut violations = 0;
    for (_, lines) in results {
        for line in lines {
            if let Some(id) = line.strip_prefix("claimed ") {
                all.push(id.to_owned());
            } else if let Some(v) = line.strip_prefix("violations ") {
                violations += v.parse::<usize>().unwrap();
            }
        }
    }
    check_claims(&f, all, violations);
}

#[test]
fn processes_admit_one_firing_per_key() {
    let _serial = serial();
    let mut f = fixture();
    let trigger = create_schedule_trigger(&mut f);
    let results = processes::spawn(
        &f,
        &support::child_test!("race_child"),
        ROLE,
        &["admitter"; WORKERS],
    );
    let admitted = results
        .iter()
        .flat_map(|(_, l)| l)
        .filter(|l| *l == "admitted true")
        .count();
    assert_eq!(admitted, 1);
    assert_eq!(results.iter().flat_map(|(_, l)| l).count(), WORKERS);
    assert_eq!(f.store.firings(A, &trigger).unwrap().len(), 1);
}

#[test]
fn processes_resolve_a_signal_racing_a_timeout_and_a_cancel_at_most_once() {
    let _serial = serial();
    let mut f = fixture();
    let runs = park_signal_runs(&mut f);
    let results = processes::spawn(
        &f,
        &support::child_test!("race_child"),
        ROLE,
        &SIGNAL_RACERS,
    );
    let mut resolved: HashMap<String, usize> = HashMap::new();
    for (part, lines) in results {
        let n: usize = lines
            .iter()
            .find_map(|l| l.strip_prefix("resolved "))
            .unwrap()
            .parse()
            .unwrap();
        *resolved.entry(part).or_default() += n;
    }
    check_signal_runs(&f, &runs, &resolved);
}
