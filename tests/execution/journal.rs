//! The workflow journal: seq allocation, caps on every path, loading after a seq, typed entries,
//! and the FIFO-by-key replay matcher.

use seed_agents_store::cbor::Cbor;
use seed_agents_store::journal::*;
use seed_agents_store::payload::*;
use seed_agents_store::runs::{ClaimLimits, RunOutcome};
use seed_agents_store::schema::runs::Status;
use seed_agents_store::waits::{DeliverySource, SignalOutcome};
use seed_agents_store::{Error, ErrorKind};
use support::execution::*;

fn log(call_seq: u64) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq,
        key: None,
        extra: OpenMap::new(),
    })
}

fn call(call_seq: u64, key: &str) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Call(JournalCall {
        call_seq,
        key: Some(key.into()),
        description: Some(format!("narration of {key}")),
        extra: OpenMap::new(),
    })
}

fn result(call_seq: u64, value: &str) -> WorkflowJournalEntry {
    let mut extra = OpenMap::new();
    extra.insert("value".into(), Ipld::String(value.into()));
    WorkflowJournalEntry::Result(JournalEntryBody {
        call_seq,
        key: None,
        extra,
    })
}

/// A claimed workflow run of A.
fn live_run(f: &mut Fixture) -> String {
    let run = f.store.enqueue_run(&workflow_run("script")).unwrap();
    f.store.claim_run(A, &run.id, "w").unwrap().unwrap();
    run.id
}

/// Writes `n` journal rows of `bytes` payload bytes each directly (setup only).
fn prefill(f: &Fixture, run_id: &str, n: i64, bytes: usize) {
    let mut extra = OpenMap::new();
    extra.insert("text".into(), Ipld::String("x".repeat(bytes)));
    let entry = Cbor::encode(&WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 0,
        key: None,
        extra,
    }))
    .unwrap();
    let mut conn = raw(&f.store);
    let tx = conn.transaction().unwrap();
    for seq in 1..=n {
        tx.execute(
            "INSERT INTO run_journal (run_id, seq, entry_cbor, created_at) VALUES (?1, ?2, ?3, ?4)",
            (run_id, seq, &entry, T0),
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// The CBOR size of a prefill entry with `bytes` payload bytes.
fn entry_size(bytes: usize) -> usize {
    let mut extra = OpenMap::new();
    extra.insert("text".into(), Ipld::String("x".repeat(bytes)));
    Cbor::encode(&WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 0,
        key: None,
        extra,
    }))
    .unwrap()
    .as_bytes()
    .len()
}

#[test]
fn seq_is_count_plus_one_and_load_reads_after_a_seq() {
    let mut f = fixture();
    let run = live_run(&mut f);
    let entries = [call(1, "tool|search|{}"), result(1, "found"), log(2)];
    let seqs: Vec<i64> = entries
        .iter()
        .map(|e| f.store.append_journal(&held(&f.store, A, &run), e).unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3]);
    let all = f.store.load_journal(A, &run, 0).unwrap();
    assert_eq!(
        all.iter().map(|r| r.entry.clone()).collect::<Vec<_>>(),
        entries
    );
    assert_eq!(all[0].created_at, T0);
    let tail = f.store.load_journal(A, &run, 2).unwrap();
    assert_eq!((tail.len(), tail[0].seq), (1, 3));
    assert!(matches!(
        f.store.load_journal(B, &run, 0).unwrap_err(),
        Error::NotFound { .. }
    ));
    assert!(matches!(
        f.store
            .append_journal(&held(&f.store, B, &run), &log(1))
            .unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn every_entry_kind_round_trips_with_call_seq_key_and_description() {
    let mut f = fixture();
    let run = live_run(&mut f);
    let kinds = [
        "result", "timer", "fired", "wait", "event", "now", "log", "step", "plan",
    ];
    let mut entries = vec![call(1, "agent|{}")];
    for (i, kind) in kinds.iter().enumerate() {
        let mut map = OpenMap::new();
        map.insert("kind".into(), Ipld::String((*kind).into()));
        map.insert("callSeq".into(), Ipld::Integer(i as i128 + 2));
        map.insert("key".into(), Ipld::String(format!("{kind}|k")));
        let bytes = seed_agents_store::cbor::to_vec(&map).unwrap();
        entries.push(seed_agents_store::cbor::from_slice(&bytes).unwrap());
    }
    for entry in &entries {
        f.store
            .append_journal(&held(&f.store, A, &run), entry)
            .unwrap();
    }
    let loaded = f.store.load_journal(A, &run, 0).unwrap();
    for (record, kind) in loaded.iter().skip(1).zip(kinds) {
        assert_eq!(record.entry.kind(), Some(kind));
        assert!(
            !matches!(record.entry, WorkflowJournalEntry::Other(_)),
            "{kind} decodes typed"
        );
        assert_eq!(record.entry.key(), Some(format!("{kind}|k").as_str()));
    }
    match &loaded[0].entry {
        WorkflowJournalEntry::Call(c) => {
            assert_eq!((c.call_seq, c.key.as_deref()), (1, Some("agent|{}")));
            assert_eq!(c.description.as_deref(), Some("narration of agent|{}"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_entry_cap_fails_the_run_with_journal_cap() {
    if support::backend::skip_on_postgres(
        "the_entry_cap_fails_the_run_with_journal_cap",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let run = live_run(&mut f);
    prefill(&f, &run, MAX_ENTRIES - 1, 1);
    let claim = held(&f.store, A, &run);
    assert_eq!(
        f.store.append_journal(&claim, &log(1)).unwrap(),
        MAX_ENTRIES
    );
    let err = f.store.append_journal(&claim, &log(1)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::JournalCap {
                entries: MAX_ENTRIES,
                ..
            }
        ),
        "{err:?}"
    );
    let failed = f.store.run(A, &run).unwrap().unwrap();
    assert_eq!(failed.status, Status::Failed);
    // The TypeScript server's journal-cap error, byte for byte: a code and a message, no nulls.
    assert_eq!(
        failed.error_cbor.unwrap().as_bytes(),
        hex::decode("a264636f64656b6a6f75726e616c2d636170676d6573736167657843576f726b666c6f77206a6f75726e616c2063617020726561636865643b2073706c69742074686520776f726b20696e746f20736d616c6c657220776f726b666c6f7773").unwrap()
    );
    assert_eq!(
        f.store.load_journal(A, &run, 0).unwrap().len() as i64,
        MAX_ENTRIES
    );
    // The journal of a terminal run is closed: the worker's claim no longer holds it.
    assert!(matches!(
        f.store.append_journal(&claim, &log(1)).unwrap_err(),
        Error::LeaseLost { .. }
    ));
}

#[test]
fn the_byte_cap_fails_the_run_with_journal_cap() {
    if support::backend::skip_on_postgres(
        "the_byte_cap_fails_the_run_with_journal_cap",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let run = live_run(&mut f);
    // Four entries that leave 4 bytes under the cap: no entry fits after them.
    let overhead = entry_size(70_000) - 70_000;
    prefill(&f, &run, 4, (MAX_BYTES as usize - 4) / 4 - overhead);
    let err = f
        .store
        .append_journal(&held(&f.store, A, &run), &log(1))
        .unwrap_err();
    match err {
        Error::JournalCap { entries, bytes, .. } => {
            assert_eq!(entries, 4);
            assert_eq!(bytes, MAX_BYTES - 4);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.store.run(A, &run).unwrap().unwrap().status,
        Status::Failed
    );
}

#[test]
fn the_cap_also_holds_on_the_signal_delivery_path() {
    if support::backend::skip_on_postgres(
        "the_cap_also_holds_on_the_signal_delivery_path",
        "it arranges rows through a raw SQLite connection",
    ) {
        return;
    }
    let mut f = fixture();
    let run = live_run(&mut f);
    f.store
        .park_for_event(
            &held(&f.store, A, &run),
            &event_wait("7", None),
            &signal("approve"),
        )
        .unwrap();
    prefill(&f, &run, MAX_ENTRIES, 1);
    let outcome = f
        .store
        .deliver_signal(A, Some(&run), DeliverySource::Signal, "approve", None)
        .unwrap();
    assert_eq!(outcome, SignalOutcome::NotDelivered);
    let failed = f.store.run(A, &run).unwrap().unwrap();
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(
        failed.error_cbor.unwrap().decode().unwrap().code,
        JOURNAL_CAP_CODE
    );
    assert!(f.store.run_waits(A, &run).unwrap().is_empty());
    assert_eq!(
        f.store.load_journal(A, &run, 0).unwrap().len() as i64,
        MAX_ENTRIES
    );
}

#[test]
fn finalized_runs_close_their_journal() {
    let mut f = fixture();
    let run = live_run(&mut f);
    let claim = held(&f.store, A, &run);
    f.store
        .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
        .unwrap();
    assert!(matches!(
        f.store.append_journal(&claim, &log(1)).unwrap_err(),
        Error::LeaseLost { .. }
    ));
    let _ = ClaimLimits::default();
}

fn record(seq: i64, entry: WorkflowJournalEntry) -> JournalRecord {
    JournalRecord {
        seq,
        entry,
        created_at: T0,
    }
}

#[test]
fn replay_consumes_each_keys_groups_fifo_not_by_arrival_order() {
    // Two parallel calls with the same key, whose results arrived in the opposite order, and one
    // other call.
    let journal = vec![
        record(1, call(1, "tool|fetch|{}")),
        record(2, call(2, "tool|fetch|{}")),
        record(3, call(3, "sleep|10")),
        record(4, result(2, "second")),
        record(5, result(1, "first")),
        record(6, log(4)),
    ];
    let mut matcher = ReplayMatcher::new(journal);
    let first = matcher.take("tool|fetch|{}").unwrap();
    assert_eq!(first.call_seq, 1);
    assert_eq!(
        first.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 5]
    );
    assert_eq!(first.entries[1].entry, result(1, "first"));
    let second = matcher.take("tool|fetch|{}").unwrap();
    assert_eq!((second.call_seq, second.entries[1].seq), (2, 4));
    assert!(
        matcher.take("tool|fetch|{}").is_none(),
        "a third call runs fresh"
    );
    assert!(matcher.take("tool|other|{}").is_none());
    let left: Vec<u64> = matcher.unconsumed().iter().map(|g| g.call_seq).collect();
    assert_eq!(
        left,
        [3],
        "the unconsumed sleep group is reported; keyless logs are not"
    );
    matcher.take("sleep|10").unwrap();
    assert!(matcher.unconsumed().is_empty());
}

#[test]
fn replay_reads_a_stored_journal() {
    let mut f = fixture();
    let run = live_run(&mut f);
    for entry in [call(1, "k"), call(2, "k"), result(2, "b"), result(1, "a")] {
        f.store
            .append_journal(&held(&f.store, A, &run), &entry)
            .unwrap();
    }
    let mut matcher = ReplayMatcher::new(f.store.load_journal(A, &run, 0).unwrap());
    assert_eq!(matcher.take("k").unwrap().entries[1].entry, result(1, "a"));
    assert_eq!(matcher.take("k").unwrap().entries[1].entry, result(2, "b"));
}

/// A stored entry that does not decode is the stored data's fault, not the caller's: its kind is
/// `Corrupt` (a server answers 500 and does not echo it), never `Invalid` (400).
#[test]
fn a_stored_entry_that_does_not_decode_is_corrupt_not_the_callers_fault() {
    let mut f = fixture();
    let run = live_run(&mut f);
    support::backend::exec(
        f.store.path(),
        "INSERT INTO run_journal (run_id, seq, entry_cbor, created_at) VALUES (?1, ?2, ?3, ?4)",
        &[&run, &1_i64, &vec![0xa1_u8, 0x61, 0x74], &T0],
    );
    let e = f.store.load_journal(A, &run, 0).unwrap_err();
    assert!(matches!(e, Error::Cbor(_)), "{e}");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}
