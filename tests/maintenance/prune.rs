//! Retention and pruning: nothing goes without a policy; old rows go in bounded batches; nothing
//! a live run, a continuation or a replay window needs ever goes; foreign keys hold afterwards;
//! a dry run counts exactly what a real prune removes.

use seed_agents_store::continuations::ContinuationRequest;
use seed_agents_store::idempotency::Action;
use seed_agents_store::integrity;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{ContinuationManifest, MessageEvent, OpenMap, RunOutput};
use seed_agents_store::prune::{PruneOptions, PruneReport};
use seed_agents_store::retention::{Kind, RetentionPolicy};
use seed_agents_store::runs::RunOutcome;
use seed_agents_store::schema::runs::Status;
use seed_agents_store::{Error, Store};
use support::execution::*;

const DAY: i64 = 24 * 60 * 60 * 1000;

fn events(f: &Fixture, session: &str, n: usize) {
    for i in 0..n {
        f.store
            .append_event(A, session, &MessageEvent::user(format!("m{i}")).into())
            .unwrap();
    }
}

fn count(store: &Store, sql: &str) -> i64 {
    support::backend::query_i64(store.path(), sql)
}

fn seqs(store: &Store, session: &str) -> Vec<i64> {
    store
        .events_after(A, session, 0, None)
        .unwrap()
        .into_iter()
        .map(|e| e.seq)
        .collect()
}

fn prune(store: &Store) -> PruneReport {
    store.prune(&PruneOptions::default()).unwrap()
}

fn dry(store: &Store) -> PruneReport {
    store
        .prune(&PruneOptions {
            dry_run: true,
            ..PruneOptions::default()
        })
        .unwrap()
}

/// Checks integrity and every foreign key of the file (PostgreSQL checks its own keys at every
/// statement, and has no file to check).
fn assert_clean(f: &Fixture) {
    if support::backend::postgres() {
        return;
    }
    let report = integrity::check(f.path()).unwrap();
    assert!(report.integrity.is_empty(), "{:?}", report.integrity);
    assert!(report.foreign_keys.is_empty(), "{:?}", report.foreign_keys);
}

/// A claimed workflow run of A (a child of `parent` when given) with `journal` entries.
fn claimed(f: &Fixture, parent: Option<&str>, journal: u64) -> Claim {
    let mut new = workflow_run("script");
    new.parent_run_id = parent.map(str::to_owned);
    let run = f.store.enqueue_run(&new).unwrap();
    let row = f.store.claim_run(A, &run.id, "w").unwrap().unwrap();
    let claim = Claim::of(&row).unwrap();
    for seq in 1..=journal {
        f.store
            .append_journal(
                &claim,
                &seed_agents_store::payload::WorkflowJournalEntry::Log(
                    seed_agents_store::payload::JournalEntryBody {
                        call_seq: seq,
                        key: None,
                        extra: OpenMap::new(),
                    },
                ),
            )
            .unwrap();
    }
    claim
}

fn succeed(f: &Fixture, claim: &Claim) {
    f.store
        .finalize_run(claim, RunOutcome::Succeeded(RunOutput::default()))
        .unwrap();
}

fn every_policy(store: &Store, age: i64) {
    for kind in Kind::ALL {
        store
            .set_retention_policy(*kind, &RetentionPolicy::max_age(age))
            .unwrap();
    }
}

#[test]
fn without_a_policy_nothing_goes_however_old() {
    let f = fixture();
    let s = f.session("s-1");
    events(&f, &s, 5);
    let c = claimed(&f, None, 3);
    succeed(&f, &c);
    f.store
        .record_idempotent(A, Action::MessageSession, "m-1", &1u64, 1u64)
        .unwrap();
    f.clock.advance(3650 * DAY);
    let report = prune(&f.store);
    assert_eq!(report.total(), 0);
    assert!(report.kinds.is_empty());
    assert_eq!(count(&f.store, "SELECT count(*) FROM session_events"), 5);
    assert_eq!(count(&f.store, "SELECT count(*) FROM run_journal"), 3);
    assert_eq!(
        count(&f.store, "SELECT count(*) FROM action_idempotency"),
        1
    );
}

#[test]
fn policies_are_checked_stored_and_shared() {
    let f = fixture();
    let refused = |kind, policy: RetentionPolicy| match f.store.set_retention_policy(kind, &policy)
    {
        Err(Error::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(Kind::Runs, RetentionPolicy::max_age(0)),
        "policy.max_age_ms"
    );
    let counted = |n| RetentionPolicy {
        max_age_ms: DAY,
        keep_count: Some(n),
    };
    assert_eq!(refused(Kind::Runs, counted(5)), "policy.keep_count");
    assert_eq!(
        refused(Kind::SessionEvents, counted(0)),
        "policy.keep_count"
    );
    assert!(f.store.retention_policies().unwrap().is_empty());

    f.store
        .set_retention_policy(Kind::SessionEvents, &counted(10))
        .unwrap();
    f.store
        .set_retention_policy(Kind::SessionEvents, &counted(20))
        .unwrap();
    // Another handle on the file (another process) prunes with the same policy.
    let other = f.reopen();
    let rows = other.retention_policies().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].kind, rows[0].keep_count),
        (Kind::SessionEvents, Some(20))
    );
    assert!(other.clear_retention_policy(Kind::SessionEvents).unwrap());
    assert!(!f.store.clear_retention_policy(Kind::SessionEvents).unwrap());
    assert!(matches!(
        f.store.prune(&PruneOptions {
            batch_rows: 0,
            ..PruneOptions::default()
        }),
        Err(Error::Invalid {
            field: "options.batch_rows",
            ..
        })
    ));
}

#[test]
fn old_sessions_keep_their_newest_events_and_seq_goes_on() {
    let f = fixture();
    let old = f.session("s-old");
    events(&f, &old, 10);
    f.clock.advance(40 * DAY);
    let young = f.session("s-young");
    events(&f, &young, 4);
    f.store
        .set_retention_policy(
            Kind::SessionEvents,
            &RetentionPolicy {
                max_age_ms: 30 * DAY,
                keep_count: Some(3),
            },
        )
        .unwrap();
    let would = dry(&f.store);
    assert_eq!(would.removed["session_events"], 7);
    assert_eq!(count(&f.store, "SELECT count(*) FROM session_events"), 14);
    let report = f
        .store
        .prune(&PruneOptions {
            batch_rows: 2,
            ..PruneOptions::default()
        })
        .unwrap();
    assert_eq!(report.removed, would.removed);
    assert_eq!(report.batches, 4, "7 rows in batches of 2");
    assert_eq!(seqs(&f.store, &old), vec![8, 9, 10]);
    assert_eq!(seqs(&f.store, &young), vec![1, 2, 3, 4]);
    // An append continues the log where it was: a client replaying after seq 10 sees it.
    events(&f, &old, 1);
    assert_eq!(f.store.events_after(A, &old, 10, None).unwrap()[0].seq, 11);
    assert_eq!(
        prune(&f.store).total(),
        0,
        "the appended session is young again"
    );
    assert_clean(&f);
}

#[test]
fn events_a_live_run_or_a_continuation_needs_stay() {
    if support::backend::skip_on_postgres(
        "events_a_live_run_or_a_continuation_needs_stay",
        "it reads SQLite's file (raw rows, free pages)",
    ) {
        return;
    }
    let f = fixture();
    // A session whose run is still queued, a child session whose parent has a live run's
    // session, a continued chain whose successor is young, and an old chain.
    let live = f.session("s-live");
    events(&f, &live, 3);
    f.store.enqueue_run(&agent_run(&live, "turn")).unwrap();
    let parent = f.session("s-parent");
    events(&f, &parent, 3);
    session_in(&f.store, A, AGENT, "s-child");
    raw(&f.store)
        .execute(
            "UPDATE sessions SET parent_session_id = 's-parent' WHERE id = 's-child'",
            [],
        )
        .unwrap();
    f.store
        .enqueue_run(&agent_run("s-child", "child turn"))
        .unwrap();
    let pred = f.session("s-pred");
    events(&f, &pred, 3);
    let old_pred = f.session("s-old-pred");
    let initiating = f
        .store
        .append_events(
            A,
            &old_pred,
            &[
                MessageEvent::user("a").into(),
                MessageEvent::user("continue").into(),
                MessageEvent::user("c").into(),
            ],
        )
        .unwrap()[1]
        .id
        .clone();
    let succ_old = f.session("s-succ-old");
    let request = |pred: &str, event: Option<String>| ContinuationRequest {
        predecessor_session_id: pred.into(),
        tool_call_id: "call-1".into(),
        initiating_event_id: event,
        reason: None,
        manifest: ContinuationManifest {
            handoff: "go on".into(),
            cited_sources: None,
            loaded: None,
            left_cold: None,
            extra: OpenMap::new(),
        },
    };
    f.store
        .record_continuation(A, &request(&old_pred, Some(initiating.clone())), &succ_old)
        .unwrap();
    f.clock.advance(40 * DAY);
    let succ = f.session("s-succ");
    events(&f, &succ, 1); // touched now: the chain is young
    f.store
        .record_continuation(A, &request(&pred, None), &succ)
        .unwrap();
    f.store
        .set_retention_policy(Kind::SessionEvents, &RetentionPolicy::max_age(30 * DAY))
        .unwrap();

    let report = prune(&f.store);
    assert_eq!(
        seqs(&f.store, &live),
        vec![1, 2, 3],
        "a queued run's session"
    );
    assert_eq!(
        seqs(&f.store, &parent),
        vec![1, 2, 3],
        "a live child's parent"
    );
    assert_eq!(
        seqs(&f.store, &pred),
        vec![1, 2, 3],
        "a young successor's chain"
    );
    // The old chain goes, except its newest event and the event the continuation names.
    assert_eq!(seqs(&f.store, &old_pred), vec![2, 3]);
    assert_eq!(report.removed["session_events"], 1);
    assert_clean(&f);
}

#[test]
fn run_trees_go_whole_and_only_when_every_run_ended_long_ago() {
    if support::backend::skip_on_postgres(
        "run_trees_go_whole_and_only_when_every_run_ended_long_ago",
        "it reads SQLite's file (raw rows, free pages)",
    ) {
        return;
    }
    let f = fixture();
    // An old ended tree: root and child with journals, and a wait left on the child.
    let root = claimed(&f, None, 4);
    let child = claimed(&f, Some(&root.run_id), 2);
    succeed(&f, &child);
    succeed(&f, &root);
    raw(&f.store)
        .execute(
            "INSERT INTO run_event_waits (run_id, wait_id, account_id, match_cbor, created_at) \
             SELECT ?1, 'w-1', ?2, X'a0', 0",
            (&child.run_id, A),
        )
        .unwrap();
    // An old tree whose root ended but whose child still runs.
    let live_root = claimed(&f, None, 3);
    let live_child = claimed(&f, Some(&live_root.run_id), 1);
    f.store
        .register_wait(&live_child, "w-live", &signal("go"), None)
        .unwrap();
    succeed(&f, &live_root);
    f.clock.advance(40 * DAY);
    // A young ended tree.
    let young = claimed(&f, None, 2);
    succeed(&f, &young);
    f.clock.advance(DAY);
    f.store
        .set_retention_policy(Kind::Runs, &RetentionPolicy::max_age(30 * DAY))
        .unwrap();
    let would = dry(&f.store);
    let report = f
        .store
        .prune(&PruneOptions {
            batch_rows: 3,
            ..PruneOptions::default()
        })
        .unwrap();
    assert_eq!(report.removed, would.removed);
    assert_eq!(report.removed["runs"], 2);
    assert_eq!(report.removed["run_journal"], 6);
    assert_eq!(report.removed["run_event_waits"], 1);
    assert!(f.store.run(A, &root.run_id).unwrap().is_none());
    assert!(f.store.run(A, &child.run_id).unwrap().is_none());
    for kept in [&live_root.run_id, &live_child.run_id, &young.run_id] {
        assert!(f.store.run(A, kept).unwrap().is_some(), "{kept}");
    }
    assert_eq!(
        count(&f.store, "SELECT count(*) FROM run_journal"),
        3 + 1 + 2
    );
    assert_eq!(
        f.store.run(A, &live_child.run_id).unwrap().unwrap().status,
        Status::Claimed
    );
    assert_eq!(f.store.run_waits(A, &live_child.run_id).unwrap().len(), 1);
    assert_clean(&f);
}

#[test]
fn journals_of_runs_that_ended_long_ago_go_and_the_runs_stay() {
    let f = fixture();
    let ended = claimed(&f, None, 5);
    succeed(&f, &ended);
    let live_root = claimed(&f, None, 0);
    let ended_child = claimed(&f, Some(&live_root.run_id), 2);
    succeed(&f, &ended_child);
    let running = claimed(&f, None, 3);
    f.clock.advance(40 * DAY);
    f.store
        .set_retention_policy(Kind::RunJournal, &RetentionPolicy::max_age(30 * DAY))
        .unwrap();
    assert_eq!(dry(&f.store).removed["run_journal"], 5);
    let report = f
        .store
        .prune(&PruneOptions {
            batch_rows: 2,
            ..PruneOptions::default()
        })
        .unwrap();
    assert_eq!(report.removed["run_journal"], 5);
    assert!(f.store.run(A, &ended.run_id).unwrap().is_some());
    assert_eq!(
        count(
            &f.store,
            &format!(
                "SELECT count(*) FROM run_journal WHERE run_id = '{}'",
                ended_child.run_id
            )
        ),
        2,
        "a child in a tree with a live run"
    );
    assert_eq!(
        count(
            &f.store,
            &format!(
                "SELECT count(*) FROM run_journal WHERE run_id = '{}'",
                running.run_id
            )
        ),
        3,
        "a live run"
    );
    assert_clean(&f);
}

#[test]
fn idempotency_rows_go_once_past_their_replay_window() {
    let f = fixture();
    for i in 0..10 {
        f.store
            .record_idempotent(A, Action::MessageSession, &format!("old-{i}"), &1u64, 1u64)
            .unwrap();
    }
    f.clock.advance(8 * DAY);
    f.store
        .record_idempotent(A, Action::MessageSession, "new", &1u64, 1u64)
        .unwrap();
    f.store
        .set_retention_policy(Kind::ActionIdempotency, &RetentionPolicy::max_age(7 * DAY))
        .unwrap();
    let report = f
        .store
        .prune(&PruneOptions {
            batch_rows: 3,
            ..PruneOptions::default()
        })
        .unwrap();
    assert_eq!(report.removed["action_idempotency"], 10);
    assert_eq!(report.batches, 4, "3 + 3 + 3 + 1");
    assert_eq!(
        count(&f.store, "SELECT count(*) FROM action_idempotency"),
        1
    );
    // Inside its window a retry still replays; outside, the id is free again.
    let replay: Option<u64> = f
        .store
        .idempotent_replay(A, Action::MessageSession, "new", &1u64)
        .unwrap();
    assert_eq!(replay, Some(1));
    let gone: Option<u64> = f
        .store
        .idempotent_replay(A, Action::MessageSession, "old-0", &2u64)
        .unwrap();
    assert_eq!(gone, None);
}

#[test]
fn a_prune_gives_the_freed_pages_back_to_the_file() {
    if support::backend::skip_on_postgres(
        "a_prune_gives_the_freed_pages_back_to_the_file",
        "it reads SQLite's file (raw rows, free pages)",
    ) {
        return;
    }
    let f = fixture();
    for n in 0..20 {
        let s = f.session(&format!("s-{n}"));
        let big = MessageEvent::user("x".repeat(4000));
        for _ in 0..20 {
            f.store.append_event(A, &s, &big.clone().into()).unwrap();
        }
    }
    f.clock.advance(40 * DAY);
    every_policy(&f.store, 30 * DAY);
    let report = prune(&f.store);
    assert_eq!(report.removed["session_events"], 20 * 19);
    assert!(report.pages_freed > 0);
    assert_eq!(count(&f.store, "PRAGMA freelist_count"), 0);
    assert_clean(&f);
}

#[test]
fn a_prune_spread_over_calls_removes_the_same_rows() {
    let f = fixture();
    let s = f.session("s-1");
    events(&f, &s, 10);
    f.clock.advance(40 * DAY);
    f.store
        .set_retention_policy(Kind::SessionEvents, &RetentionPolicy::max_age(30 * DAY))
        .unwrap();
    let step = PruneOptions {
        batch_rows: 4,
        max_batches: Some(1),
        ..PruneOptions::default()
    };
    let removed: Vec<u64> = (0..4)
        .map(|_| f.store.prune(&step).unwrap().removed["session_events"])
        .collect();
    assert_eq!(removed, vec![4, 4, 1, 0]);
    assert_eq!(seqs(&f.store, &s), vec![10]);
    assert!(matches!(
        f.store.prune(&PruneOptions {
            max_batches: Some(0),
            ..PruneOptions::default()
        }),
        Err(Error::Invalid {
            field: "options.max_batches",
            ..
        })
    ));
}

#[test]
fn with_every_policy_a_dry_run_counts_exactly_what_goes() {
    let f = fixture();
    let s = f.session("s-1");
    events(&f, &s, 6);
    // An old ended tree (its journal goes with it), and an old ended child in a tree whose
    // root ended recently (only the child's journal goes).
    let tree = claimed(&f, None, 4);
    succeed(&f, &tree);
    let root = claimed(&f, None, 3);
    let child = claimed(&f, Some(&root.run_id), 2);
    succeed(&f, &child);
    f.store
        .record_idempotent(A, Action::MessageSession, "m-1", &1u64, 1u64)
        .unwrap();
    f.clock.advance(40 * DAY);
    succeed(&f, &root);
    every_policy(&f.store, 30 * DAY);
    let would = dry(&f.store);
    let report = prune(&f.store);
    assert_eq!(report.removed, would.removed);
    assert_eq!(report.removed["runs"], 1);
    assert_eq!(report.removed["run_journal"], 4 + 2);
    assert_eq!(report.removed["session_events"], 5);
    assert_eq!(report.removed["action_idempotency"], 1);
    assert!(f.store.run(A, &child.run_id).unwrap().is_some());
    assert_eq!(count(&f.store, "SELECT count(*) FROM run_journal"), 3);
    assert_clean(&f);
}
