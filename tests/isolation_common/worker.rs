//! Claimed-run worker calls. Their signatures are about to change (they will take the worker's
//! claim instead of an account, id and owner): every use of them by the isolation probes is in
//! this file, the rows they set up and the probes alike.

use seed_agents_store::payload::*;
use seed_agents_store::runs::{ContinueAsNew, RunOutcome};
use seed_agents_store::Store;

use super::setup::workflow;
use super::{outcome, Case, B, T};

/// An account's runs that are claimed or parked, each named by a probe.
pub struct WorkerRuns {
    pub running: String,
    pub waiting: String,
    pub parent: String,
    pub paused: String,
}

pub fn signal_match(signal: &str) -> WaitMatch {
    WaitMatch::Signal(WaitMatchSignal {
        signal: signal.into(),
        extra: OpenMap::new(),
    })
}

pub fn log_entry(call_seq: u64) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq,
        key: None,
        extra: OpenMap::new(),
    })
}

/// Enqueues and claims a workflow run of `account`.
pub fn claimed(store: &mut Store, account: &str, agent: &str, title: &str, owner: &str) -> String {
    let id = store
        .enqueue_run(&workflow(account, agent, title))
        .unwrap()
        .id;
    store
        .claim_run(account, &id, owner)
        .unwrap()
        .expect("claimable");
    id
}

/// A running run with a journal; a run parked on an event wait (`wait`, for `signal`); a parent
/// parked on its queued child (spawned by `child_call`); a run parked on a budget pause.
pub fn worker_setup(
    store: &mut Store,
    account: &str,
    agent: &str,
    owner: &str,
    signal: &str,
    wait: &str,
    child_call: &str,
) -> WorkerRuns {
    let running = claimed(store, account, agent, "running", owner);
    store.start_run(account, &running, owner).unwrap();
    store
        .append_journal(account, &running, &log_entry(1))
        .unwrap();
    store
        .record_run_usage(account, &running, &RunUsage::default())
        .unwrap();
    let waiting = claimed(store, account, agent, "waiting", owner);
    store
        .append_journal(account, &waiting, &log_entry(1))
        .unwrap();
    store
        .park_for_event(
            account,
            &waiting,
            wait,
            &signal_match(signal),
            Some(T + 86_400_000),
        )
        .unwrap();
    let parent = claimed(store, account, agent, "parent", owner);
    let mut child = workflow(account, agent, "child");
    child.parent_run_id = Some(parent.clone());
    child.parent_tool_call_id = Some(child_call.into());
    store.enqueue_run(&child).unwrap();
    let children = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec![child_call.into()],
        extra: OpenMap::new(),
    });
    store.park_run(account, &parent, &children).unwrap();
    let paused = claimed(store, account, agent, "paused", owner);
    let pause = RunWait::BudgetPause(RunWaitBudgetPause {
        note: "budget".into(),
        extra: OpenMap::new(),
    });
    store.park_run(account, &paused, &pause).unwrap();
    WorkerRuns {
        running,
        waiting,
        parent,
        paused,
    }
}

pub fn worker_cases() -> Vec<Case> {
    vec![
        case!("start_run", "NotFound(run)", |s, a, _| s.start_run(
            B,
            &a.running_run,
            &a.lease_owner
        )),
        case!("renew_lease", "NotFound(run)", |s, a, _| s.renew_lease(
            B,
            &a.running_run,
            &a.lease_owner
        )),
        case!("park_run", "NotFound(run)", |s, a, _| s.park_run(
            B,
            &a.running_run,
            &RunWait::Timer(RunWaitTimer {
                wake_at: T + 1,
                extra: OpenMap::new(),
            })
        )),
        case!("record_run_usage", "NotFound(run)", |s, a, _| s
            .record_run_usage(B, &a.running_run, &RunUsage::default())),
        case!("append_journal", "NotFound(run)", |s, a, _| s
            .append_journal(B, &a.running_run, &log_entry(2))),
        case!("finalize_run", "NotFound(run)", |s, a, _| s.finalize_run(
            B,
            &a.running_run,
            RunOutcome::Canceled
        )),
        case!("continue_as_new", "NotFound(run)", |s, a, _| s
            .continue_as_new(
                B,
                &a.running_run,
                &ContinueAsNew {
                    output: RunOutput::default(),
                    input: RunInput::default(),
                    title: None,
                }
            )),
        case!("park_for_event", "NotFound(run)", |s, a, _| s
            .park_for_event(
                B,
                &a.running_run,
                "probe",
                &signal_match(&a.signal),
                None
            )),
    ]
}
