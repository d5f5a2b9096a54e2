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
        writer: Writer::new(conn, bounds),
        path,
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
                while f.writer.arriving() < N - 1 {
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

/// Runs the owned `op(i)` for `i` in `0..N`, each from its own thread, while the writer is held
/// until every one of them is queued (the writer thread waiting for the writer with the first):
/// held by a borrowed operation writing `Some(holder)`, whose batch the writer thread then joins,
/// or, with `None`, between batches, so that the writer thread opens a batch of its own. Returns
/// each thread's outcome, whether its row was committed when its `run_owned` returned, and the
/// thread its operation ran on; and the holder's outcome.
#[allow(clippy::type_complexity)]
fn race_owned<F>(
    f: &Fixture,
    holder: Option<usize>,
    op: F,
) -> (Result<()>, Vec<std::thread::Result<(Result<String>, bool)>>)
where
    F: Fn(usize, &Connection) -> Result<()> + Send + Sync + Clone + 'static,
{
    let (inside, entered) = mpsc::channel();
    let all_queued = || {
        while f.writer.queued() < N as isize || f.writer.arriving() < 1 {
            std::thread::yield_now();
        }
    };
    std::thread::scope(|s| {
        let holder = s.spawn(|| match holder {
            Some(holder) => f.writer.run(|conn| {
                inside.send(()).unwrap();
                all_queued();
                insert(conn, holder)
            }),
            None => f.writer.between_batches(|_| {
                inside.send(()).unwrap();
                all_queued();
                Ok(())
            }),
        });
        entered.recv().unwrap();
        let owned: Vec<_> = (0..N)
            .map(|i| {
                let op = op.clone();
                s.spawn(move || {
                    let outcome = f.writer.run_owned(move |conn| {
                        op(i, conn)?;
                        Ok(std::thread::current().name().unwrap_or("").to_owned())
                    });
                    (outcome, committed(&f.path).contains(&i))
                })
            })
            .collect();
        let held = holder.join().unwrap();
        (held, owned.into_iter().map(|t| t.join()).collect())
    })
}

/// Operations 3 and 5 (which failed) ran once, every other one twice.
fn ran_again_without_3_and_5(runs: &[AtomicUsize]) {
    for (i, runs) in runs.iter().enumerate() {
        let expected = if i == 3 || i == 5 { 1 } else { 2 };
        assert_eq!(runs.load(Ordering::SeqCst), expected, "operation {i}");
    }
}

#[test]
fn a_lone_owned_operation_runs_on_its_callers_thread() {
    let f = fixture(128);
    let ran_on = f
        .writer
        .run_owned(|conn| {
            insert(conn, 7)?;
            Ok(std::thread::current().id())
        })
        .unwrap();
    assert_eq!(ran_on, std::thread::current().id());
    assert_eq!(committed(&f.path), [7]);
    assert_eq!(f.writer.queued(), 0);
}

#[test]
fn queued_owned_operations_run_back_to_back_on_the_writer_thread_in_one_batch() {
    let f = fixture(128);
    let (held, outcomes) = race_owned(&f, Some(100), |i, conn| insert(conn, i));
    held.unwrap();
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, visible) = outcome.unwrap();
        assert_eq!(result.unwrap(), "seed-agents-writer", "operation {i}");
        assert!(visible, "operation {i} returned before its batch committed");
    }
    let mut expected: Vec<usize> = (0..N).collect();
    expected.push(100);
    assert_eq!(committed(&f.path), expected);
    // The holder left its batch open for the writer thread, which ran all N in it.
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, N as u64 + 1));
}

#[test]
fn a_failing_or_panicking_owned_operation_is_undone_alone_and_the_others_run_again() {
    let f = fixture(128);
    let runs: std::sync::Arc<Vec<AtomicUsize>> =
        std::sync::Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let counted = runs.clone();
    let (held, outcomes) = race_owned(&f, Some(100), move |i, conn| {
        counted[i].fetch_add(1, Ordering::SeqCst);
        insert(conn, i)?;
        assert_ne!(i, 5, "operation 5 panics after writing");
        if i == 3 {
            return Err(rusqlite::Error::QueryReturnedNoRows.into());
        }
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Err(_) => assert_eq!(i, 5, "only operation 5's caller panics"),
            Ok((result, visible)) => {
                assert_eq!(result.is_err(), i == 3, "operation {i}: {result:?}");
                assert_eq!(visible, i != 3);
            }
        }
    }
    let mut expected: Vec<usize> = (0..N).filter(|i| *i != 3 && *i != 5).collect();
    expected.push(100);
    assert_eq!(committed(&f.path), expected);
    held.unwrap();
    // One savepoint for the group: the first pass failed, it was undone, and the survivors ran
    // once more without the two that failed.
    ran_again_without_3_and_5(&runs);
    // The writer thread lives on for the next operation.
    let (held, _) = race_owned(&f, Some(300), |i, conn| insert(conn, 200 + i));
    held.unwrap();
    assert_eq!(committed(&f.path).len(), expected.len() + N + 1);
}

#[test]
fn in_a_batch_of_their_own_a_failing_member_is_undone_and_the_others_run_again() {
    let f = fixture(128);
    let runs: std::sync::Arc<Vec<AtomicUsize>> =
        std::sync::Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
    let counted = runs.clone();
    let (held, outcomes) = race_owned(&f, None, move |i, conn| {
        counted[i].fetch_add(1, Ordering::SeqCst);
        insert(conn, i)?;
        assert_ne!(i, 5, "operation 5 panics after writing");
        if i == 3 {
            return Err(rusqlite::Error::QueryReturnedNoRows.into());
        }
        Ok(())
    });
    held.unwrap();
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Err(_) => assert_eq!(i, 5, "only operation 5's caller panics"),
            Ok((result, visible)) => {
                assert_eq!(result.is_err(), i == 3, "operation {i}: {result:?}");
                assert_eq!(visible, i != 3);
            }
        }
    }
    let expected: Vec<usize> = (0..N).filter(|i| *i != 3 && *i != 5).collect();
    assert_eq!(committed(&f.path), expected);
    // No savepoint: the first pass was rolled back whole and the survivors ran again in a
    // transaction begun anew, committed once.
    ran_again_without_3_and_5(&runs);
    let stats = f.writer.stats();
    assert_eq!((stats.batches, stats.operations), (1, N as u64 - 2));
    // A batch of its own where every member succeeds is one commit too.
    let (held, outcomes) = race_owned(&f, None, |i, conn| insert(conn, 100 + i));
    held.unwrap();
    assert!(outcomes.into_iter().all(|o| o.unwrap().0.is_ok()));
    assert_eq!(committed(&f.path).len(), expected.len() + N);
    assert_eq!(f.writer.stats().batches, 2);
}

#[test]
fn a_failed_commit_fails_every_owned_member() {
    let f = fixture(128);
    let (held, outcomes) = race_owned(&f, Some(100), |i, conn| {
        insert(conn, i)?;
        if i == 2 {
            conn.execute("INSERT INTO child (p) VALUES (99)", [])?;
        }
        Ok(())
    });
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let (result, visible) = outcome.unwrap();
        let error = result.expect_err("the batch failed to commit");
        assert_eq!(error.kind(), crate::ErrorKind::Conflict, "{i}: {error}");
        assert!(!visible);
    }
    assert_eq!(held.unwrap_err().kind(), crate::ErrorKind::Conflict);
    assert!(committed(&f.path).is_empty());
    f.writer.run_owned(|conn| insert(conn, 42)).unwrap();
    assert_eq!(committed(&f.path), [42]);
}

#[test]
fn dropping_the_writer_stops_its_thread_and_closes_the_connection() {
    let Fixture { _dir, path, writer } = fixture(128);
    let f = Fixture {
        _dir,
        path: path.clone(),
        writer,
    };
    race_owned(&f, Some(100), |i, conn| insert(conn, i))
        .0
        .unwrap();
    let wal = path.with_extension("sqlite-wal");
    assert!(wal.exists());
    drop(f.writer);
    // SQLite removes the log when its last connection closes: the writer thread's is gone.
    assert!(!wal.exists(), "the writer's connection is still open");
}

/// The version a look reads moves only for another connection's commits, and a look at a busy
/// writer does not wait: it answers with the last version, and the batch's closer reads the
/// new one after its commit.
#[test]
fn a_look_at_the_data_version_sees_other_connections_and_never_waits() {
    let f = fixture(128);
    let first = f
        .writer
        .data_version()
        .unwrap()
        .expect("read at once when idle");
    f.writer.run(|conn| insert(conn, 1)).unwrap();
    assert_eq!(
        f.writer.data_version().unwrap(),
        Some(first),
        "its own commit"
    );
    let other = Connection::open(&f.path).unwrap();
    other.execute("INSERT INTO t (id) VALUES (2)", []).unwrap();
    let moved = f.writer.data_version().unwrap().unwrap();
    assert_ne!(moved, first, "another connection's commit");
    // Another commit, then a batch open: the look answers at once with what it had.
    other.execute("INSERT INTO t (id) VALUES (4)", []).unwrap();
    let look_inside_a_batch = |id: usize| {
        let (inside, entered) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let writer = &f.writer;
            scope.spawn(move || {
                writer
                    .run(|conn| {
                        inside.send(()).unwrap();
                        released.recv().unwrap();
                        insert(conn, id)
                    })
                    .unwrap();
            });
            entered.recv().unwrap();
            let seen = f.writer.data_version().unwrap();
            release.send(()).unwrap();
            seen
        })
    };
    assert_eq!(
        look_inside_a_batch(5),
        Some(moved),
        "the last version, at once"
    );
    // The first batch's closer read the version after its commit: a look inside the next
    // batch already sees the other connection's second commit.
    let closer_read = look_inside_a_batch(6).unwrap();
    assert_ne!(closer_read, moved);
    assert_eq!(f.writer.data_version().unwrap(), Some(closer_read));
}
