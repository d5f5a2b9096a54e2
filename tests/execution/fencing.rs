//! Writes by a worker that lost its lease are fenced.
//!
//! The sequence each test drives: worker 1 claims a run, its lease expires, the multi-process
//! sweep requeues the run and worker 2 (or worker 1 again, at a new attempt) claims it. Every
//! write worker 1 still makes under its old claim must be refused with `LeaseLost`, and must
//! leave every row of the execution state as it was.

use seed_agents_store::lease::Claim;
use seed_agents_store::payload::*;
use seed_agents_store::runs::{ClaimLimits, ContinueAsNew, RunOutcome, SweepMode, LEASE_MS};
use seed_agents_store::Error;
use support::execution::*;

/// Every row of the tables a worker's writes touch, as text, in order.
fn snapshot(f: &Fixture) -> Vec<String> {
    use seed_agents_store::schema::{run_event_waits, run_journal, runs, session_events, sessions};
    macro_rules! rows {
        ($($table:ident),*) => {{
            let mut rows = Vec::new();
            $(
                let all: Vec<$table::Row> = f
                    .store
                    .select(
                        sea_query::Query::select()
                            .columns($table::Column::ALL.iter().copied())
                            .from($table::Column::Table),
                    )
                    .unwrap();
                rows.extend(all.iter().map(|r| format!("{}: {r:?}", stringify!($table))));
            )*
            rows
        }};
    }
    let mut rows = rows!(runs, run_journal, run_event_waits, sessions, session_events);
    rows.sort();
    rows
}

/// Worker 1's claim on an agent run of session "s", taken over after a sweep by `next_owner`.
fn swept_and_reclaimed(f: &mut Fixture, next_owner: &str) -> Claim {
    f.session("s");
    let run = f.store.enqueue_run(&agent_run("s", "turn")).unwrap();
    let first = f
        .store
        .claim_next_run("worker-1", ClaimLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(first.id, run.id);
    let stale = Claim::of(&first).unwrap();
    f.store.start_run(&stale).unwrap();
    f.clock.advance(LEASE_MS + 1);
    assert_eq!(
        f.store.boot_sweep(SweepMode::MultiProcess).unwrap(),
        vec![run.id.clone()]
    );
    let second = f
        .store
        .claim_next_run(next_owner, ClaimLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!((second.id.as_str(), second.attempt), (run.id.as_str(), 2));
    stale
}

fn journal_entry() -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 1,
        key: None,
        extra: OpenMap::new(),
    })
}

/// Every worker write under `stale`, each checked to be refused with `LeaseLost` and to change
/// nothing.
fn every_write_is_refused(f: &mut Fixture, stale: &Claim) {
    let before = snapshot(f);
    let mut refused = 0;
    let mut check = |name: &str, result: Result<(), Error>, f: &Fixture| {
        match result {
            Err(Error::LeaseLost { run_id, owner }) => {
                assert_eq!(
                    (run_id.as_str(), owner.as_str()),
                    (stale.run_id.as_str(), stale.owner.as_str()),
                    "{name}"
                );
            }
            other => panic!("{name} under a lost lease: {other:?}"),
        }
        assert_eq!(snapshot(f), before, "{name} wrote under a lost lease");
        refused += 1;
    };
    let r = f.store.start_run(stale).map(drop);
    check("start_run", r, f);
    let r = f.store.renew_lease(stale).map(drop);
    check("renew_lease", r, f);
    let timer = RunWait::Timer(RunWaitTimer {
        wake_at: T0 + 1,
        extra: OpenMap::new(),
    });
    let r = f.store.park_run(stale, &timer).map(drop);
    check("park_run", r, f);
    let mut usage = RunUsage::default();
    usage.insert("input".into(), Ipld::Integer(1));
    let r = f.store.record_run_usage(stale, &usage).map(drop);
    check("record_run_usage", r, f);
    let r = f.store.append_journal(stale, &journal_entry()).map(drop);
    check("append_journal", r, f);
    let r = f
        .store
        .register_wait(stale, "1", &signal("go"), None)
        .map(drop);
    check("register_wait", r, f);
    let r = f
        .store
        .park_for_event(stale, &event_wait("1", None), &signal("go"))
        .map(drop);
    check("park_for_event", r, f);
    for outcome in [
        RunOutcome::Succeeded(RunOutput::default()),
        RunOutcome::Failed(RunErrorInfo {
            retryable: Some(true),
            ..RunErrorInfo::new("provider-error", "503")
        }),
        RunOutcome::Canceled,
    ] {
        let r = f.store.finalize_run(stale, outcome).map(drop);
        check("finalize_run", r, f);
    }
    let next = ContinueAsNew {
        output: RunOutput::default(),
        input: RunInput::default(),
        title: None,
    };
    let r = f.store.continue_as_new(stale, &next).map(drop);
    check("continue_as_new", r, f);
    assert_eq!(refused, 11);
}

#[test]
fn a_worker_whose_run_was_swept_and_reclaimed_by_another_writes_nothing() {
    let mut f = fixture();
    let stale = swept_and_reclaimed(&mut f, "worker-2");
    every_write_is_refused(&mut f, &stale);
    // The new holder's claim works.
    let fresh = held(&f.store, A, &stale.run_id);
    assert_eq!(fresh.owner, "worker-2");
    f.store.start_run(&fresh).unwrap();
    f.store
        .finalize_run(&fresh, RunOutcome::Succeeded(RunOutput::default()))
        .unwrap();
}

#[test]
fn the_same_worker_reclaiming_its_swept_run_fences_its_own_old_attempt() {
    let mut f = fixture();
    let stale = swept_and_reclaimed(&mut f, "worker-1");
    every_write_is_refused(&mut f, &stale);
}

#[test]
fn a_worker_whose_run_was_swept_but_not_yet_reclaimed_writes_nothing() {
    let mut f = fixture();
    f.session("s");
    f.store.enqueue_run(&agent_run("s", "turn")).unwrap();
    let first = f
        .store
        .claim_next_run("worker-1", ClaimLimits::default())
        .unwrap()
        .unwrap();
    let stale = Claim::of(&first).unwrap();
    f.clock.advance(LEASE_MS + 1);
    f.store.boot_sweep(SweepMode::MultiProcess).unwrap();
    every_write_is_refused(&mut f, &stale);
}
