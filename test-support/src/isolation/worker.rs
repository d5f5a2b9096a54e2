//! Claimed-run worker calls: every write a worker makes carries its claim, so the probes hand the
//! store a claim naming another account's run.

use seed_agents_store::lease::Claim;
use seed_agents_store::payload::*;
use seed_agents_store::runs::{ContinueAsNew, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::Store;

use super::{Case, B, T};

/// An account's runs that are claimed or parked, each named by a probe.
pub struct WorkerRuns {
    /// A claimed run.
    pub running: String,
    /// A run parked on a wait.
    pub waiting: String,
    /// A run parked on its children.
    pub parent: String,
    /// A paused run.
    pub paused: String,
}

/// A wait matching the signal `signal`.
pub fn signal_match(signal: &str) -> WaitMatch {
    WaitMatch::Signal(WaitMatchSignal {
        signal: signal.into(),
        extra: OpenMap::new(),
    })
}

/// A journal log entry for the call `call_seq`.
pub fn log_entry(call_seq: u64) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq,
        key: None,
        extra: OpenMap::new(),
    })
}

/// A workflow run of `agent` in `account` titled `title`.
pub fn workflow(account: &str, agent: &str, title: &str) -> NewRun {
    let mut run = NewRun::new(account, Kind::Workflow, Origin::Workflow, title);
    run.agent_id = Some(agent.into());
    run
}

/// Enqueues and claims a workflow run of `account`; returns the worker's claim.
pub fn claimed(store: &mut Store, account: &str, agent: &str, title: &str, owner: &str) -> Claim {
    let id = store
        .enqueue_run(&workflow(account, agent, title))
        .unwrap()
        .id;
    let row = store
        .claim_run(account, &id, owner)
        .unwrap()
        .expect("claimable");
    Claim::of(&row).expect("claimed")
}

/// The claim a worker of account B would present for `run` (A's), at its first attempt.
fn foreign(run: &str, owner: &str) -> Claim {
    Claim {
        account_id: B.into(),
        run_id: run.into(),
        owner: owner.into(),
        attempt: 1,
    }
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
    store.start_run(&running).unwrap();
    store.append_journal(&running, &log_entry(1)).unwrap();
    store
        .record_run_usage(&running, &RunUsage::default())
        .unwrap();
    let waiting = claimed(store, account, agent, "waiting", owner);
    store.append_journal(&waiting, &log_entry(1)).unwrap();
    let event = RunWaitEvent {
        wait_id: wait.into(),
        timeout_at: Some(T + 86_400_000),
        label: None,
        answer_with: None,
        extra: OpenMap::new(),
    };
    store
        .park_for_event(&waiting, &event, &signal_match(signal))
        .unwrap();
    let parent = claimed(store, account, agent, "parent", owner);
    let mut child = workflow(account, agent, "child");
    child.parent_run_id = Some(parent.run_id.clone());
    child.parent_tool_call_id = Some(child_call.into());
    store.enqueue_run(&child).unwrap();
    let children = RunWait::Children(RunWaitChildren {
        tool_call_ids: vec![child_call.into()],
        extra: OpenMap::new(),
    });
    store.park_run(&parent, &children).unwrap();
    let paused = claimed(store, account, agent, "paused", owner);
    let pause = RunWait::BudgetPause(RunWaitBudgetPause {
        note: Some("budget".into()),
        extra: OpenMap::new(),
    });
    store.park_run(&paused, &pause).unwrap();
    WorkerRuns {
        running: running.run_id,
        waiting: waiting.run_id,
        parent: parent.run_id,
        paused: paused.run_id,
    }
}

/// The probes of the calls a claimed-run worker makes.
pub fn worker_cases() -> Vec<Case> {
    vec![
        case!("start_run", "NotFound(run)", |s, a, _| s
            .start_run(&foreign(&a.running_run, &a.lease_owner))),
        case!("renew_lease", "NotFound(run)", |s, a, _| s
            .renew_lease(&foreign(&a.running_run, &a.lease_owner))),
        case!("park_run", "NotFound(run)", |s, a, _| s.park_run(
            &foreign(&a.running_run, &a.lease_owner),
            &RunWait::Timer(RunWaitTimer {
                wake_at: T + 1,
                extra: OpenMap::new(),
            })
        )),
        case!("record_run_usage", "NotFound(run)", |s, a, _| s
            .record_run_usage(
                &foreign(&a.running_run, &a.lease_owner),
                &RunUsage::default()
            )),
        case!("append_journal", "NotFound(run)", |s, a, _| s
            .append_journal(
                &foreign(&a.running_run, &a.lease_owner),
                &log_entry(2)
            )),
        case!("finalize_run", "NotFound(run)", |s, a, _| s.finalize_run(
            &foreign(&a.running_run, &a.lease_owner),
            RunOutcome::Canceled
        )),
        case!("continue_as_new", "NotFound(run)", |s, a, _| s
            .continue_as_new(
                &foreign(&a.running_run, &a.lease_owner),
                &ContinueAsNew {
                    output: RunOutput::default(),
                    input: RunInput::default(),
                    title: None,
                }
            )),
        case!("register_wait", "NotFound(run)", |s, a, _| s.register_wait(
            &foreign(&a.waiting_run, &a.lease_owner),
            &a.wait,
            &signal_match(&a.signal),
            None
        )),
        case!("park_for_event", "NotFound(run)", |s, a, _| s
            .park_for_event(
                &foreign(&a.running_run, &a.lease_owner),
                &RunWaitEvent {
                    wait_id: "probe".into(),
                    timeout_at: None,
                    label: None,
                    answer_with: None,
                    extra: OpenMap::new(),
                },
                &signal_match(&a.signal)
            )),
    ]
}
