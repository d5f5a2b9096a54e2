//! Waits and signals: registration, match rules, exactly-once delivery of signals and activity
//! events, and the timeout sweep.

use seed_agents_store::payload::*;
use seed_agents_store::schema::runs::Status;
use seed_agents_store::waits::*;
use seed_agents_store::Error;
use support::execution::*;

fn activity(event_type: &str, resource: &str, author: &str) -> WaitMatch {
    WaitMatch::Activity(WaitMatchActivity {
        event_type: event_type.into(),
        resource: resource.into(),
        author: author.into(),
        extra: OpenMap::new(),
    })
}

fn open_match(entries: &[(&str, &str)]) -> WaitMatch {
    WaitMatch::Other(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Ipld::String(v.to_string())))
            .collect(),
    )
}

fn event(event_type: &str, resource: &str, author: &str) -> ActivityEvent {
    ActivityEvent {
        event_type: event_type.into(),
        resource: resource.into(),
        author: author.into(),
        payload: Some(Ipld::String("body".into())),
    }
}

fn live_run(f: &mut Fixture) -> String {
    let run = f.store.enqueue_run(&workflow_run("waiter")).unwrap();
    f.store.claim_run(A, &run.id, "w").unwrap().unwrap();
    run.id
}

fn wait_entry(call_seq: u64, wait_id: &str) -> WorkflowJournalEntry {
    let mut extra = OpenMap::new();
    extra.insert("waitId".into(), Ipld::String(wait_id.into()));
    WorkflowJournalEntry::Wait(JournalEntryBody {
        call_seq,
        key: Some("wait|x".into()),
        extra,
    })
}

#[test]
fn match_rules() {
    // An exact signal.
    assert!(matches_signal(&signal("approve"), "approve"));
    assert!(!matches_signal(&signal("approve"), "reject"));
    // No signal and no activity criteria: any signal.
    assert!(matches_signal(&open_match(&[]), "anything"));
    assert!(!matches_activity(
        &open_match(&[]),
        &event("comment", "hm://a/doc", "u")
    ));
    // Activity criteria never match a signal.
    assert!(!matches_signal(
        &activity("comment", "hm://a/doc", "u"),
        "comment"
    ));
    assert!(!matches_signal(&open_match(&[("author", "u")]), "x"));
    // A signal wait never matches activity.
    assert!(!matches_activity(
        &signal("comment"),
        &event("comment", "hm://a/doc", "u")
    ));
    // Activity: every present criterion must hold; resources ignore version and query.
    let full = activity("comment", "hm://a/doc?v=bafy1", "alice");
    assert!(matches_activity(
        &full,
        &event("comment", "hm://a/doc?v=bafy2&l", "alice")
    ));
    assert!(matches_activity(
        &full,
        &event("comment", "hm://a/doc", "alice")
    ));
    assert!(!matches_activity(
        &full,
        &event("comment", "hm://a/doc/sub", "alice")
    ));
    assert!(!matches_activity(
        &full,
        &event("mention", "hm://a/doc", "alice")
    ));
    assert!(!matches_activity(
        &full,
        &event("comment", "hm://a/doc", "bob")
    ));
    let partial = open_match(&[("resource", "hm://a/doc#frag")]);
    assert!(matches_activity(
        &partial,
        &event("anything", "hm://a/doc?v=1", "anyone")
    ));
    assert_eq!(resource_base("hm://a/doc?v=1#x"), "hm://a/doc");
}

#[test]
fn register_is_an_upsert_that_keeps_created_at() {
    let mut f = fixture();
    let run = live_run(&mut f);
    let first = f
        .store
        .register_wait(&held(&f.store, A, &run), "w1", &signal("a"), Some(T0 + 10))
        .unwrap();
    f.clock.advance(500);
    let second = f
        .store
        .register_wait(&held(&f.store, A, &run), "w1", &signal("b"), Some(T0 + 99))
        .unwrap();
    assert_eq!(second.created_at, first.created_at);
    assert_eq!(second.timeout_at, Some(T0 + 99));
    assert_eq!(second.match_cbor.decode().unwrap(), signal("b"));
    assert_eq!(f.store.run_waits(A, &run).unwrap().len(), 1);
    assert!(matches!(
        f.store
            .register_wait(&held(&f.store, A, &run), " ", &signal("a"), None)
            .unwrap_err(),
        Error::Invalid { .. }
    ));
    assert!(matches!(
        f.store
            .register_wait(&held(&f.store, B, &run), "w2", &signal("a"), None)
            .unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn a_signal_is_delivered_once_journaled_requeued_and_every_wait_deleted() {
    let mut f = fixture();
    let run = live_run(&mut f);
    f.store
        .append_journal(&held(&f.store, A, &run), &wait_entry(4, "w-approve"))
        .unwrap();
    f.store
        .register_wait(&held(&f.store, A, &run), "w-other", &signal("other"), None)
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &run),
            &event_wait("w-approve", Some(T0 + 60_000)),
            &signal("approve"),
        )
        .unwrap();
    assert_eq!(
        f.store
            .deliver_signal(A, Some(&run), DeliverySource::Signal, "nope", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );
    assert_eq!(
        f.store
            .deliver_signal(B, Some(&run), DeliverySource::Signal, "approve", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );

    let outcome = f
        .store
        .deliver_signal(
            A,
            Some(&run),
            DeliverySource::Signal,
            "approve",
            Some(Ipld::Bool(true)),
        )
        .unwrap();
    assert_eq!(
        outcome,
        SignalOutcome::Delivered(Delivered {
            run_id: run.clone(),
            wait_id: "w-approve".into(),
            seq: 2
        })
    );
    let row = f.store.run(A, &run).unwrap().unwrap();
    assert_eq!(
        (row.status, row.wait_cbor, row.not_before),
        (Status::Queued, None, None)
    );
    assert!(
        f.store.run_waits(A, &run).unwrap().is_empty(),
        "every wait of the run is deleted"
    );
    let journal = f.store.load_journal(A, &run, 0).unwrap();
    match &journal[1].entry {
        WorkflowJournalEntry::Event(body) => {
            assert_eq!(body.call_seq, 4, "joined to the wait entry's callSeq");
            // The TypeScript server's shape: {waitId, delivery: {source, signal, payload}}.
            let mut delivery = OpenMap::new();
            delivery.insert("source".into(), Ipld::String("signal".into()));
            delivery.insert("signal".into(), Ipld::String("approve".into()));
            delivery.insert("payload".into(), Ipld::Bool(true));
            assert_eq!(body.extra.get("delivery"), Some(&Ipld::Map(delivery)));
            assert_eq!(
                body.extra.get("waitId"),
                Some(&Ipld::String("w-approve".into()))
            );
        }
        other => panic!("{other:?}"),
    }
    // A second delivery writes nothing and says so.
    assert_eq!(
        f.store
            .deliver_signal(A, Some(&run), DeliverySource::Signal, "approve", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );
    assert_eq!(f.store.load_journal(A, &run, 0).unwrap().len(), 2);
}

#[test]
fn a_signal_without_a_run_goes_to_the_oldest_matching_wait_of_the_account() {
    let mut f = fixture();
    let older = live_run(&mut f);
    let newer = live_run(&mut f);
    f.store
        .park_for_event(
            &held(&f.store, A, &older),
            &event_wait("1", None),
            &open_match(&[]),
        )
        .unwrap();
    f.clock.advance(5);
    f.store
        .park_for_event(
            &held(&f.store, A, &newer),
            &event_wait("1", None),
            &signal("go"),
        )
        .unwrap();
    match f
        .store
        .deliver_signal(A, None, DeliverySource::Signal, "go", None)
        .unwrap()
    {
        SignalOutcome::Delivered(d) => assert_eq!(d.run_id, older, "the any-signal wait is older"),
        other => panic!("{other:?}"),
    }
    match f
        .store
        .deliver_signal(A, None, DeliverySource::Signal, "go", None)
        .unwrap()
    {
        SignalOutcome::Delivered(d) => assert_eq!(d.run_id, newer),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.store
            .deliver_signal(A, None, DeliverySource::Signal, "go", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );
}

#[test]
fn an_activity_event_resolves_each_matching_run_once() {
    let mut f = fixture();
    let one = live_run(&mut f);
    let two = live_run(&mut f);
    let signal_only = live_run(&mut f);
    f.store
        .register_wait(
            &held(&f.store, A, &one),
            "a",
            &activity("comment", "hm://a/doc", "alice"),
            None,
        )
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &one),
            &event_wait("b", None),
            &open_match(&[("eventType", "comment")]),
        )
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &two),
            &event_wait("1", None),
            &open_match(&[("resource", "hm://a/doc?v=old")]),
        )
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &signal_only),
            &event_wait("1", None),
            &signal("comment"),
        )
        .unwrap();
    let mut delivered = f
        .store
        .deliver_activity(A, &event("comment", "hm://a/doc?v=new", "alice"))
        .unwrap();
    delivered.sort_by(|x, y| x.run_id.cmp(&y.run_id));
    let mut runs: Vec<String> = delivered.iter().map(|d| d.run_id.clone()).collect();
    let mut want = vec![one.clone(), two.clone()];
    want.sort();
    runs.sort();
    assert_eq!(runs, want);
    assert_eq!(
        f.store.load_journal(A, &one, 0).unwrap().len(),
        1,
        "one event entry per run"
    );
    assert_eq!(
        f.store.run(A, &signal_only).unwrap().unwrap().status,
        Status::Waiting
    );
    assert!(f
        .store
        .deliver_activity(A, &event("comment", "hm://a/doc", "alice"))
        .unwrap()
        .is_empty());
}

#[test]
fn the_timeout_sweep_resolves_due_waits_with_no_payload() {
    let mut f = fixture();
    let run = live_run(&mut f);
    let forever = live_run(&mut f);
    f.store
        .park_for_event(
            &held(&f.store, A, &run),
            &event_wait("3", Some(T0 + 1_000)),
            &signal("s"),
        )
        .unwrap();
    f.store
        .park_for_event(
            &held(&f.store, A, &forever),
            &event_wait("3", None),
            &signal("s2"),
        )
        .unwrap();
    assert!(f.store.sweep_wait_timeouts().unwrap().is_empty());
    f.clock.advance(1_000);
    let swept = f.store.sweep_wait_timeouts().unwrap();
    assert_eq!(
        swept,
        [Delivered {
            run_id: run.clone(),
            wait_id: "3".into(),
            seq: 1
        }]
    );
    match &f.store.load_journal(A, &run, 0).unwrap()[0].entry {
        WorkflowJournalEntry::Event(body) => {
            assert_eq!(
                body.call_seq, 3,
                "a numeric wait id is the callSeq when no wait entry names it"
            );
            assert!(!body.extra.contains_key("payload"));
            assert!(!body.extra.contains_key("signal"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.store.run(A, &run).unwrap().unwrap().status,
        Status::Queued
    );
    // The signal lost to the timeout: nothing is written.
    assert_eq!(
        f.store
            .deliver_signal(A, Some(&run), DeliverySource::Signal, "s", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );
    assert_eq!(f.store.load_journal(A, &run, 0).unwrap().len(), 1);
    assert_eq!(
        f.store.run(A, &forever).unwrap().unwrap().status,
        Status::Waiting
    );
}

#[test]
fn a_signal_after_a_cancel_writes_nothing() {
    let mut f = fixture();
    let run = live_run(&mut f);
    f.store
        .park_for_event(
            &held(&f.store, A, &run),
            &event_wait("1", None),
            &signal("s"),
        )
        .unwrap();
    f.store.cancel_run_tree(A, &run).unwrap();
    assert_eq!(
        f.store
            .deliver_signal(A, Some(&run), DeliverySource::Signal, "s", None)
            .unwrap(),
        SignalOutcome::NotDelivered
    );
    assert!(f.store.load_journal(A, &run, 0).unwrap().is_empty());
    assert_eq!(
        f.store.run(A, &run).unwrap().unwrap().status,
        Status::Canceled
    );
}
