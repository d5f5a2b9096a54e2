//! The writer's batching rules, driven deterministically: the first operation holds the writer
//! until every other one has asked for it, so all of them arrive while one batch is open.

use super::*;
use std::sync::mpsc;

const N: usize = 8;

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    writer: Writer,
}

fn fixture(operations: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;
         CREATE TABLE t (id INTEGER PRIMARY KEY);
         CREATE TABLE parent (id INTEGER PRIMARY KEY);
         CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);",
    )
    .unwrap();
    let bounds = Bounds {
        operations,
        age: Duration::from_secs(60),
    };
    Fixture {
        _dir: dir,
        path,
        writer: Writer::new(conn, bounds),
    }
}

/// The ids committed to `t`, read through a connection of its own.
fn committed(path: &std::path::Path) -> Vec<usize> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM t ORDER BY id").unwrap();
    let ids = stmt.query_map([], |r| r.get::<_, i64>(0)).unwrap();
    ids.map(|id| id.unwrap() as usize).collect()
}

fn insert(conn: &Connection, i: usize) -> Result<()> {
    conn.execute("INSERT INTO t (id) VALUES (?1)", [i as i64])?;
    Ok(())
}

/// Runs `op(i)` for `i` in `0..N`, each from its own thread, with operations `1..N` all waiting
/// for the writer while operation 0 runs. Returns each thread's outcome and whether its row was
/// committed at the moment its `run` returned.
fn race<F>(f: &Fixture, op: F) -> Vec<std::thread::Result<(Result<()>, bool)>>
where
    F: Fn(usize, &Connection) -> Result<()> + Sync,
{
    let (inside, entered) = mpsc::channel();
    let run = |i: usize| {
        let outcome = f.writer.run(|conn| {
            if i == 0 {
                inside.send(()).unwrap();
                while f.writer.arriving.load(Ordering::SeqCst) < N - 1 {
                    std::thread::yield_now();
                }
            }
            op(i, conn)
        });
        let visible = committed(&f.path).contains(&i);
        (outcome, visible)
    };
    std::thread::scope(|s| {
        let run = &run;
        let first = s.spawn(move || run(0));
        entered.recv().unwrap();
        let others: Vec<_> = (1..N).map(|i| s.spawn(move || run(i))).collect();
        std::iter::once(first)
            .chain(others)
            .map(|t| t.join())
            .collect()
    })
}

#[test]
fn a_lone_operation_is_its_own_batch() {
    let f = fixture(128);
    f.writer.run(|conn| insert(conn, 7)).unwrap();
    assert_eq!(committed(&f.path), [7]);
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, 1));
}

#[test]
fn concurrent_operations_share_one_commit_and_return_once_it_is_durable() {
    let f = fixture(128);
    let outcomes = race(&f, |i, conn| insert(conn, i));
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, visible) = outcome.unwrap();
        result.unwrap();
        assert!(visible, "operation {i} returned before its batch committed");
    }
    assert_eq!(committed(&f.path), (0..N).collect::<Vec<_>>());
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, N as u64));
}

#[test]
fn a_failing_operation_is_rolled_back_alone() {
    let f = fixture(128);
    let outcomes = race(&f, |i, conn| {
        insert(conn, i)?;
        if i == 3 {
            return Err(rusqlite::Error::QueryReturnedNoRows.into());
        }
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, _) = outcome.unwrap();
        assert_eq!(result.is_err(), i == 3, "operation {i}: {result:?}");
    }
    let expected: Vec<usize> = (0..N).filter(|i| *i != 3).collect();
    assert_eq!(committed(&f.path), expected);
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, N as u64 - 1));
}

#[test]
fn a_failing_first_operation_is_rolled_back_and_the_others_commit() {
    let f = fixture(128);
    let outcomes = race(&f, |i, conn| {
        insert(conn, i)?;
        if i == 0 {
            return Err(rusqlite::Error::QueryReturnedNoRows.into());
        }
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, visible) = outcome.unwrap();
        assert_eq!(result.is_err(), i == 0, "operation {i}: {result:?}");
        assert_eq!(visible, i != 0);
    }
    assert_eq!(committed(&f.path), (1..N).collect::<Vec<_>>());
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, N as u64 - 1));
}

#[test]
fn a_panicking_operation_panics_its_own_caller_only() {
    let f = fixture(128);
    let outcomes = race(&f, |i, conn| {
        insert(conn, i)?;
        assert_ne!(i, 5, "operation 5 panics after writing");
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Err(_) => assert_eq!(i, 5),
            Ok((result, visible)) => {
                result.unwrap();
                assert!(visible);
            }
        }
    }
    let expected: Vec<usize> = (0..N).filter(|i| *i != 5).collect();
    assert_eq!(committed(&f.path), expected);
}

#[test]
fn the_count_bound_closes_a_batch_while_others_still_wait() {
    let f = fixture(3);
    for outcome in race(&f, |i, conn| insert(conn, i)) {
        let (result, visible) = outcome.unwrap();
        result.unwrap();
        assert!(visible);
    }
    let stats = f.writer.stats();
    // 8 operations in batches of at most 3: 3 + 3 + 2.
    assert_eq!((stats.batches, stats.operations), (3, N as u64));
}

#[test]
fn a_failed_commit_fails_every_member_and_the_writer_recovers() {
    let f = fixture(128);
    let outcomes = race(&f, |i, conn| {
        insert(conn, i)?;
        if i == 2 {
            // A deferred foreign key passes its savepoint and fails the COMMIT.
            conn.execute("INSERT INTO child (p) VALUES (99)", [])?;
        }
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, visible) = outcome.unwrap();
        let error = result.expect_err("the batch failed to commit");
        assert_eq!(
            error.kind(),
            crate::ErrorKind::Conflict,
            "operation {i}: {error}"
        );
        assert!(!visible);
    }
    assert!(committed(&f.path).is_empty());
    assert_eq!(f.writer.stats().batches, 0);
    f.writer.run(|conn| insert(conn, 42)).unwrap();
    assert_eq!(committed(&f.path), [42]);
}
