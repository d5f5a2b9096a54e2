//! The audit log's hash chain: `verify_audit_log` finds an edited, a deleted, a reordered and a
//! cut-off row, each named by its seq, after raw SQL tampering on the database (the file, or the
//! PostgreSQL database); pruning keeps the chain verifiable from its moved anchor and is off
//! unless called.

use std::path::PathBuf;
use std::time::Duration;

use seed_agents_store::audit::{AuditProblem, AuditReport, ProblemKind};
use seed_agents_store::{Error, Store};
use support::tools::{open, A, B};

/// The database under a store, to tamper with behind its back.
struct Raw(PathBuf);

impl Raw {
    /// Runs one statement, as written for SQLite, on whichever backend holds the store.
    fn execute(&self, sql: &str) {
        support::backend::exec(&self.0, sql, &[]);
    }
}

/// A store with `n` secret events (seq 1..=n), and its database to tamper with.
fn logged(
    n: usize,
) -> (
    tempfile::TempDir,
    Store,
    Raw,
    seed_agents_store::clock::ManualClock,
) {
    let (dir, store, clock) = open();
    for i in 0..n {
        store.set_secret(A, &format!("s{i}"), b"v", None).unwrap();
        clock.advance(1_000);
    }
    let raw = Raw(support::backend::location(dir.path(), "db.sqlite"));
    (dir, store, raw, clock)
}

fn problems(report: &AuditReport) -> Vec<(i64, ProblemKind)> {
    report.problems.iter().map(|p| (p.seq, p.kind)).collect()
}

#[test]
fn an_untouched_log_verifies_and_an_empty_one_too() {
    let (_dir, store, _clock) = open();
    let empty = store.verify_audit_log().unwrap();
    assert!(empty.is_intact());
    assert_eq!((empty.rows, empty.head_seq), (0, 0));
    let (_dir, store, _raw, _clock) = logged(5);
    let r = store.verify_audit_log().unwrap();
    assert!(r.is_intact(), "{:?}", r.problems);
    assert_eq!((r.rows, r.anchor_seq, r.head_seq), (5, 0, 5));
    assert_eq!(r.head_hash.len(), 64);
}

#[test]
fn an_edited_row_is_found_by_its_seq() {
    let (_dir, store, raw, _clock) = logged(5);
    raw.execute("UPDATE audit_events SET target = 'secret x' WHERE seq = 3");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(3, ProblemKind::Edited)]
    );
    // An edit to a value outside the enum's set is a finding too, not a decoding error.
    raw.execute("UPDATE audit_events SET outcome = 'fine' WHERE seq = 4");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(3, ProblemKind::Edited), (4, ProblemKind::Edited)]
    );
}

#[test]
fn an_edit_with_its_hash_recomputed_still_breaks_the_next_link() {
    let (_dir, store, raw, _clock) = logged(5);
    // Replace row 2's hash with row 4's: row 2 no longer matches, row 3 no longer chains.
    raw.execute("UPDATE audit_events SET hash = (SELECT hash FROM audit_events WHERE seq = 4) WHERE seq = 2");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(2, ProblemKind::Edited), (3, ProblemKind::Unchained)]
    );
}

#[test]
fn a_deleted_row_is_found_by_its_seq() {
    let (_dir, store, raw, _clock) = logged(5);
    raw.execute("DELETE FROM audit_events WHERE seq = 3");
    let report = store.verify_audit_log().unwrap();
    assert_eq!(
        problems(&report),
        [(3, ProblemKind::Missing), (4, ProblemKind::Unchained)]
    );
    assert_eq!(report.problems[0].missing, 1);
    assert_eq!(
        report.problems[0].to_string(),
        "1 row(s) missing from seq 3"
    );
    // The oldest row too: the first retained row must follow the anchor.
    raw.execute("DELETE FROM audit_events WHERE seq = 1");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap())[..2],
        [(1, ProblemKind::Missing), (2, ProblemKind::Unchained)]
    );
}

#[test]
fn reordered_rows_are_found_by_their_seqs() {
    let (_dir, store, raw, _clock) = logged(5);
    raw.execute("UPDATE audit_events SET seq = -2 WHERE seq = 2");
    raw.execute("UPDATE audit_events SET seq = 2 WHERE seq = 4");
    raw.execute("UPDATE audit_events SET seq = 4 WHERE seq = -2");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [
            (2, ProblemKind::Edited),
            (2, ProblemKind::Unchained),
            (3, ProblemKind::Unchained),
            (4, ProblemKind::Edited),
            (4, ProblemKind::Unchained),
            (5, ProblemKind::Unchained),
        ]
    );
}

#[test]
fn the_newest_rows_cut_off_are_found_from_the_head() {
    let (_dir, store, raw, _clock) = logged(5);
    raw.execute("DELETE FROM audit_events WHERE seq >= 4");
    assert_eq!(
        store.verify_audit_log().unwrap().problems,
        [AuditProblem {
            chain: A.into(),
            seq: 4,
            kind: ProblemKind::Truncated,
            missing: 2
        }]
    );
    // Moving the head back with the rows is still found: its hash is the deleted row's.
    raw.execute("UPDATE audit_chain SET head_seq = 3");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(3, ProblemKind::HeadMismatch)]
    );
    raw.execute("DELETE FROM audit_chain");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(3, ProblemKind::HeadMismatch)]
    );
}

#[test]
fn appends_after_tampering_keep_the_finding() {
    let (_dir, store, raw, _clock) = logged(3);
    raw.execute("UPDATE audit_events SET actor = 'mallory' WHERE seq = 2");
    store.set_secret(A, "later", b"v", None).unwrap();
    let report = store.verify_audit_log().unwrap();
    assert_eq!(problems(&report), [(2, ProblemKind::Edited)]);
    assert_eq!(report.head_seq, 4);
}

#[test]
fn pruning_removes_the_oldest_rows_in_batches_and_the_rest_still_verifies() {
    let (_dir, store, raw, _clock) = logged(10);
    // Now is T + 10s; rows 1..=10 are at T, T + 1s, ... T + 9s.
    let pruned = store
        .prune_audit_log(Duration::from_millis(4_500), 2)
        .unwrap();
    // Rows older than T + 5.5s: seq 1..=6, in 3 batches, each recording an `audit.prune`.
    assert_eq!((pruned.rows, pruned.batches, pruned.anchor_seq), (6, 3, 6));
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(
        (report.rows, report.anchor_seq, report.head_seq),
        (7, 6, 13)
    );
    let prunes = support::backend::query_strings(
        &raw.0,
        "SELECT target FROM audit_events WHERE action = 'audit.prune' ORDER BY seq",
    );
    assert_eq!(
        prunes,
        [
            "audit events 1..=2",
            "audit events 3..=4",
            "audit events 5..=6"
        ]
    );
    // The first retained row is still checked against the anchor.
    raw.execute("DELETE FROM audit_events WHERE seq = 7");
    assert_eq!(
        problems(&store.verify_audit_log().unwrap()),
        [(7, ProblemKind::Missing), (8, ProblemKind::Unchained)]
    );
}

#[test]
fn pruning_is_off_unless_called_and_keeps_rows_not_old_enough() {
    let (_dir, store, _raw, _clock) = logged(3);
    let pruned = store
        .prune_audit_log(Duration::from_secs(3_600), 100)
        .unwrap();
    assert_eq!((pruned.rows, pruned.batches), (0, 0));
    assert_eq!(store.verify_audit_log().unwrap().rows, 3);
    assert!(matches!(
        store.prune_audit_log(Duration::ZERO, 0),
        Err(Error::Invalid {
            field: "batch_rows",
            ..
        })
    ));
    // Everything old: every row goes, the log is its prune event and verifies.
    let pruned = store.prune_audit_log(Duration::ZERO, 100).unwrap();
    assert_eq!(pruned.rows, 3);
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.rows, report.anchor_seq, report.head_seq), (1, 3, 4));
}

#[test]
fn each_account_is_a_chain_of_its_own_verified_on_its_own() {
    let (_dir, store, raw, clock) = logged(3);
    for i in 0..2 {
        store.set_secret(B, &format!("b{i}"), b"v", None).unwrap();
        clock.advance(1_000);
    }
    store.set_secret(A, "later", b"v", None).unwrap();
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    // A: seqs 1..=4; B: 1..=2, counted from 1 in its own chain.
    assert_eq!((report.rows, report.chains, report.head_seq), (6, 2, 6));
    let column = |c: &str| {
        let sql = format!("SELECT CAST({c} AS TEXT) FROM audit_events ORDER BY chain, seq");
        support::backend::query_strings(&raw.0, &sql)
    };
    assert_eq!(column("chain"), [A, A, A, A, B, B]);
    assert_eq!(column("seq"), ["1", "2", "3", "4", "1", "2"]);
    // The heads' fingerprint follows every head.
    let fingerprint = report.head_hash.clone();
    store.set_secret(B, "b2", b"v", None).unwrap();
    assert_ne!(store.verify_audit_log().unwrap().head_hash, fingerprint);

    // A finding names its chain, and leaves the other chain alone.
    raw.execute(&format!(
        "UPDATE audit_events SET target = 'secret x' WHERE chain = '{B}' AND seq = 2"
    ));
    let report = store.verify_audit_log().unwrap();
    let found: Vec<(&str, i64, ProblemKind)> = report
        .problems
        .iter()
        .map(|p| (p.chain.as_str(), p.seq, p.kind))
        .collect();
    assert_eq!(found, [(B, 2, ProblemKind::Edited)]);
    // A row moved to another chain breaks both.
    raw.execute(&format!(
        "UPDATE audit_events SET chain = '{B}', seq = 9 WHERE chain = '{A}' AND seq = 4"
    ));
    let found: Vec<(String, i64, ProblemKind)> = store
        .verify_audit_log()
        .unwrap()
        .problems
        .into_iter()
        .map(|p| (p.chain, p.seq, p.kind))
        .collect();
    assert_eq!(
        found,
        [
            (A.to_string(), 4, ProblemKind::Truncated),
            (B.to_string(), 2, ProblemKind::Edited),
            (B.to_string(), 4, ProblemKind::Missing),
            (B.to_string(), 9, ProblemKind::Edited),
            (B.to_string(), 9, ProblemKind::Unchained),
            (B.to_string(), 9, ProblemKind::HeadMismatch),
        ]
    );
}

#[test]
fn a_chain_whose_rows_are_all_deleted_is_found_from_its_head() {
    let (_dir, store, raw, _clock) = logged(2);
    store.set_secret(B, "b", b"v", None).unwrap();
    raw.execute(&format!("DELETE FROM audit_events WHERE chain = '{B}'"));
    let problems: Vec<(String, i64, ProblemKind, i64)> = store
        .verify_audit_log()
        .unwrap()
        .problems
        .into_iter()
        .map(|p| (p.chain, p.seq, p.kind, p.missing))
        .collect();
    assert_eq!(problems, [(B.to_string(), 1, ProblemKind::Truncated, 1)]);
}

#[test]
fn pruning_moves_each_chains_anchor_and_records_it_in_that_chain() {
    let (_dir, store, raw, clock) = logged(4);
    for i in 0..3 {
        store.set_secret(B, &format!("b{i}"), b"v", None).unwrap();
        clock.advance(1_000);
    }
    // Now is T + 7s: A's rows are at T..T + 3s, B's at T + 4s..T + 6s. Older than T + 4.5s:
    // all of A's and B's first.
    let pruned = store
        .prune_audit_log(Duration::from_millis(2_500), 100)
        .unwrap();
    assert_eq!((pruned.rows, pruned.batches), (5, 2));
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.chains, 2);
    assert_eq!(pruned.anchor_seq, 4 + 1);
    let prunes = |c: &str| {
        let sql =
            format!("SELECT {c} FROM audit_events WHERE action = 'audit.prune' ORDER BY chain");
        support::backend::query_strings(&raw.0, &sql)
    };
    assert_eq!(prunes("chain"), [A, B]);
    assert_eq!(
        prunes("target"),
        ["audit events 1..=4", "audit events 1..=1"]
    );
}
