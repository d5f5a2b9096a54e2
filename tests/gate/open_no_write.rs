//! Opening a current database writes nothing and takes no lock: planner statistics are gathered
//! by the open that installs or migrates, refreshed only when missing or stale (and then only if
//! the write lock is free at once), and the structure check of an unchanged catalog is cached in
//! the process without weakening the refusal of a changed one.

use rusqlite::Connection;
use seed_agents_store::{Error, Outcome, Refusal, Store};
use std::path::Path;

/// The main file and the WAL, byte for byte (the `-shm` index changes with every reader).
fn bytes(path: &Path) -> (Vec<u8>, Vec<u8>) {
    let wal = path.with_extension("sqlite-wal");
    (
        std::fs::read(path).unwrap(),
        std::fs::read(wal).unwrap_or_default(),
    )
}

fn data_version(conn: &Connection) -> i64 {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
        .unwrap()
}

fn stat_rows(conn: &Connection, table: &str) -> i64 {
    conn.query_row(
        "SELECT count(*) FROM sqlite_stat1 WHERE tbl = ?1",
        [table],
        |r| r.get(0),
    )
    .unwrap()
}

/// Asserts that opening `path` (current) changes neither its bytes nor its `data_version` as seen
/// by `observer`, which stays open so that no close checkpoints the WAL.
fn assert_open_writes_nothing(path: &Path, observer: &Connection) {
    let (before, version) = (bytes(path), data_version(observer));
    let store = Store::open(path).unwrap();
    assert!(matches!(store.outcome(), Outcome::Current { .. }));
    drop(store);
    assert_eq!(data_version(observer), version, "open committed a write");
    assert!(bytes(path) == before, "open changed the file or its WAL");
}

/// A current file whose `accounts` has rows but no statistics (they were gathered while empty).
fn with_missing_statistics(path: &Path) {
    let store = Store::open(path).unwrap();
    for i in 0..50 {
        store.touch_account(&format!("acct-{i}")).unwrap();
    }
}

#[test]
fn reopening_a_fresh_install_with_empty_tables_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sqlite");
    drop(Store::open(&path).unwrap());
    let observer = Connection::open(&path).unwrap();
    assert_open_writes_nothing(&path, &observer);
    assert_open_writes_nothing(&path, &observer);
}

#[test]
fn missing_statistics_are_gathered_once_then_opens_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sqlite");
    with_missing_statistics(&path);
    let observer = Connection::open(&path).unwrap();
    assert_eq!(stat_rows(&observer, "accounts"), 0);
    let version = data_version(&observer);
    drop(Store::open(&path).unwrap());
    assert_ne!(
        data_version(&observer),
        version,
        "stale statistics were refreshed"
    );
    assert!(stat_rows(&observer, "accounts") > 0);
    assert_open_writes_nothing(&path, &observer);
    assert_open_writes_nothing(&path, &observer);
}

#[test]
fn opening_while_another_connection_holds_the_write_lock_does_not_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sqlite");
    with_missing_statistics(&path);
    // Statistics are missing now, so this open would refresh them if the lock were free.
    let writer = Connection::open(&path).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .execute(
            "INSERT INTO accounts (id, created_at, updated_at) VALUES ('held', 1, 1)",
            [],
        )
        .unwrap();
    // The store's busy handler waits up to 10 s and then fails: succeeding while the lock is
    // still held shows open never needed it.
    let store = Store::open(&path).unwrap();
    assert!(matches!(store.outcome(), Outcome::Current { .. }));
    assert!(!writer.is_autocommit(), "the write lock is still held");
    assert_eq!(
        stat_rows(&store.conn().unwrap(), "accounts"),
        0,
        "refresh was skipped"
    );
    drop(store);
    writer.execute_batch("COMMIT").unwrap();
    // With the lock free, the next open gathers them.
    let store = Store::open(&path).unwrap();
    assert!(stat_rows(&store.conn().unwrap(), "accounts") > 0);
    // And with fresh statistics too, an open beside a held write lock succeeds.
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    drop(Store::open(&path).unwrap());
    writer.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn a_structure_changed_behind_the_store_is_refused_after_a_cached_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sqlite");
    drop(Store::open(&path).unwrap());
    // Verified (and cached) by these opens.
    drop(Store::open(&path).unwrap());
    drop(Store::open(&path).unwrap());
    let plain = Connection::open(&path).unwrap();
    plain
        .execute_batch("ALTER TABLE accounts ADD COLUMN extra TEXT")
        .unwrap();
    drop(plain);
    for _ in 0..2 {
        match Store::open(&path) {
            Err(Error::Refused {
                reason: Refusal::StructureMismatch { .. },
                ..
            }) => {}
            other => panic!("expected a structure mismatch, got {other:?}"),
        }
    }
    // A second file with the verified catalog, then an index dropped on it alone.
    let other = dir.path().join("b.sqlite");
    drop(Store::open(&other).unwrap());
    drop(Store::open(&other).unwrap());
    let plain = Connection::open(&other).unwrap();
    let index: String = plain
        .query_row(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    plain
        .execute_batch(&format!("DROP INDEX \"{index}\""))
        .unwrap();
    drop(plain);
    assert!(matches!(
        Store::open(&other),
        Err(Error::Refused {
            reason: Refusal::StructureMismatch { .. },
            ..
        })
    ));
}
