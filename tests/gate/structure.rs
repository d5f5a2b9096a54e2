//! The schema gate: fresh files are installed, known versions are verified and migrated, and
//! every other file is refused with the reason, both versions and the advice, left untouched.

use rusqlite::Connection;
use seed_agents_store::schema::{MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION};
use seed_agents_store::{Error, ErrorKind, Outcome, Progress, Refusal, Store};
use std::fs;
use std::path::Path;
use support::gate::{at_version, files, temp, write_db};

/// Opens `path`, expects a refusal, and checks the file is byte-for-byte unchanged.
fn refused(path: &Path) -> (Refusal, String) {
    let before = fs::read(path).unwrap();
    let err = Store::open(path).unwrap_err();
    let msg = err.to_string();
    let Error::Refused { path: p, reason } = err else {
        panic!("expected a refusal, got {msg}");
    };
    assert_eq!(p, path);
    assert_eq!(
        fs::read(path).unwrap(),
        before,
        "a refused file is unchanged"
    );
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(&reason.advice(path)), "{msg}");
    assert!(!msg.contains("rm "), "no refusal advises deleting: {msg}");
    assert_eq!(Store::open(path).unwrap_err().kind(), ErrorKind::Refused);
    (reason, msg)
}

#[test]
fn a_missing_file_is_created_with_its_directories_at_the_newest_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/deeper/agents.sqlite");
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.outcome(),
        Outcome::Fresh {
            version: SCHEMA_VERSION
        }
    );
    let v: String = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT value FROM server_config WHERE key = 'schema_migration_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION.to_string());
    let mode: String = store
        .conn()
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: bool = store
        .conn()
        .unwrap()
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert!(fk);
    drop(store);
    assert_eq!(
        Store::open(&path).unwrap().outcome(),
        Outcome::Current {
            version: SCHEMA_VERSION
        }
    );
}

#[test]
fn a_zero_byte_file_counts_as_fresh() {
    let (_d, path) = temp();
    fs::write(&path, b"").unwrap();
    assert_eq!(
        Store::open(&path).unwrap().outcome(),
        Outcome::Fresh {
            version: SCHEMA_VERSION
        }
    );
}

#[test]
fn a_file_that_is_not_a_database_is_refused_unchanged() {
    let (_d, path) = temp();
    fs::write(&path, b"this is a text file, not a database, and long enough to have a header........................................").unwrap();
    let (reason, msg) = refused(&path);
    assert!(matches!(reason, Refusal::NotADatabase { .. }), "{reason:?}");
    assert!(msg.contains("mistyped path"), "{msg}");
}

#[test]
fn a_non_empty_file_of_any_size_that_is_not_sqlite_is_refused_never_overwritten() {
    // SQLite's unix VFS reports a 1-byte file as empty; the gate must not.
    for content in [&b"x"[..], b"\0", b"SQLite format", b"SQLite format 3\0"] {
        let (_d, path) = temp();
        fs::write(&path, content).unwrap();
        let (reason, _) = refused(&path);
        assert!(
            matches!(
                reason,
                Refusal::NotADatabase { .. } | Refusal::Corrupt { .. }
            ),
            "{content:?}: {reason:?}"
        );
        assert_eq!(fs::read(&path).unwrap(), content);
    }
}

#[test]
fn no_server_config_is_refused() {
    let (_d, path) = temp();
    write_db(&path, "CREATE TABLE accounts (id TEXT PRIMARY KEY);");
    let (reason, msg) = refused(&path);
    assert_eq!(
        reason,
        Refusal::NoServerConfig {
            supported: SCHEMA_VERSION
        }
    );
    assert!(msg.contains("no server_config table"), "{msg}");
}

#[test]
fn the_legacy_schema_version_key_is_refused() {
    let (_d, path) = temp();
    write_db(
        &path,
        &format!(
            "{}; INSERT INTO server_config VALUES ('schema_version', '3');",
            MIGRATIONS[0].sql
        ),
    );
    let (reason, msg) = refused(&path);
    assert_eq!(
        reason,
        Refusal::LegacyVersionKey {
            value: "3".into(),
            supported: SCHEMA_VERSION
        }
    );
    assert!(
        msg.contains(&format!("this binary is at version {SCHEMA_VERSION}")),
        "{msg}"
    );
}

#[test]
fn a_missing_version_is_refused() {
    let (_d, path) = temp();
    write_db(&path, MIGRATIONS[0].sql);
    let (reason, _) = refused(&path);
    assert_eq!(
        reason,
        Refusal::MissingVersion {
            supported: SCHEMA_VERSION
        }
    );
}

#[test]
fn an_unparseable_version_is_refused() {
    for bad in ["abc", "", "7.0", "-1", " 7"] {
        let (_d, path) = temp();
        write_db(
            &path,
            &format!(
                "{}; INSERT INTO server_config VALUES ('schema_migration_version', '{bad}');",
                MIGRATIONS[0].sql
            ),
        );
        let (reason, msg) = refused(&path);
        assert_eq!(
            reason,
            Refusal::UnparseableVersion {
                value: bad.into(),
                supported: SCHEMA_VERSION
            }
        );
        assert!(msg.contains("is not a version number"), "{msg}");
    }
}

#[test]
fn a_version_ahead_of_the_binary_is_refused_naming_both_versions() {
    let (_d, path) = temp();
    at_version(&path, SCHEMA_VERSION);
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE server_config SET value = ?1 WHERE key = 'schema_migration_version'",
        [(SCHEMA_VERSION + 1).to_string()],
    )
    .unwrap();
    conn.close().unwrap();
    let (reason, msg) = refused(&path);
    assert_eq!(
        reason,
        Refusal::VersionAhead {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
    assert!(
        msg.contains(&format!(
            "schema version {}, newer than this binary's version {SCHEMA_VERSION}",
            SCHEMA_VERSION + 1
        )),
        "{msg}"
    );
    assert!(msg.contains("upgrade the binary"), "{msg}");
    assert!(msg.contains("do not delete"), "{msg}");
}

#[test]
fn a_structure_that_differs_from_its_claimed_version_is_refused_with_the_diff() {
    let (_d, path) = temp();
    at_version(&path, 11);
    write_db(
        &path,
        "ALTER TABLE runs ADD COLUMN shadow TEXT; DROP INDEX runs_by_root;",
    );
    let (reason, msg) = refused(&path);
    let Refusal::StructureMismatch { version, diff, .. } = reason else {
        panic!("{msg}");
    };
    assert_eq!(version, 11);
    assert!(diff.contains("table runs, column shadow"), "{diff}");
    assert!(diff.contains("table runs, index runs_by_root"), "{diff}");
    assert!(msg.contains("claims schema version 11"), "{msg}");
}

#[test]
fn a_database_claiming_a_later_version_than_its_structure_is_refused() {
    let (_d, path) = temp();
    at_version(&path, 20);
    let conn = Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE server_config SET value = '21' WHERE key = 'schema_migration_version'",
        [],
    )
    .unwrap();
    conn.close().unwrap();
    let (reason, _) = refused(&path);
    assert!(
        matches!(reason, Refusal::StructureMismatch { version: 21, ref diff, .. } if diff.contains("webhook_trigger_credentials")),
        "{reason:?}"
    );
}

#[test]
fn objects_this_store_does_not_own_are_ignored() {
    let (_d, path) = temp();
    at_version(&path, SCHEMA_VERSION);
    write_db(
        &path,
        "CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);
         CREATE TABLE _litestream_lock (id INTEGER);
         ANALYZE;",
    );
    assert_eq!(
        Store::open(&path).unwrap().outcome(),
        Outcome::Current {
            version: SCHEMA_VERSION
        }
    );
}

#[test]
fn an_older_version_is_migrated_and_matches_a_fresh_install() {
    let (_d, path) = temp();
    at_version(&path, 23);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.outcome(),
        Outcome::Migrated {
            from: 23,
            to: SCHEMA_VERSION
        }
    );
    let fresh = Connection::open_in_memory().unwrap();
    fresh.execute_batch(SCHEMA_SQL).unwrap();
    let a = seed_agents_codegen::introspect(&store.conn().unwrap()).unwrap();
    let b = seed_agents_codegen::introspect(&fresh).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
}

#[test]
fn two_connections_opening_one_fresh_file_install_it_once() {
    let (_d, path) = temp();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || Store::open(&path).map(|s| s.outcome()))
        })
        .collect();
    let outcomes: Vec<Outcome> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    let fresh = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Fresh { .. }))
        .count();
    assert_eq!(fresh, 1, "{outcomes:?}");
}

#[test]
fn status_is_read_only_and_reports_pending_migrations() {
    let (_d, path) = temp();
    at_version(&path, 27);
    let before = fs::read(&path).unwrap();
    let s = seed_agents_store::status(&path).unwrap();
    assert_eq!(
        s.verdict,
        seed_agents_store::Verdict::Verified {
            version: 27,
            pending: MIGRATIONS[28..].iter().map(|m| m.name).collect(),
        }
    );
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn status_leaves_no_wal_or_shm_files_behind() {
    let (dir, path) = temp();
    drop(Store::open(&path).unwrap()); // WAL mode, checkpointed and closed
    let files = || files(dir.path());
    assert_eq!(files(), ["agents.sqlite"]);
    let before = fs::read(&path).unwrap();
    let s = seed_agents_store::status(&path).unwrap();
    assert!(matches!(
        s.verdict,
        seed_agents_store::Verdict::Verified {
            version: SCHEMA_VERSION,
            ..
        }
    ));
    assert_eq!(files(), ["agents.sqlite"]);
    assert_eq!(fs::read(&path).unwrap(), before);
}

/// A version-25 file written with foreign keys off holds a firing whose trigger is gone: migration
/// 26 would seed trigger_event_claims from it and fail on the foreign key halfway through the
/// batch. The whole-file check before the batch finds the broken key first and refuses the file,
/// naming the row, before anything is written. (A batch failing halfway is rolled back whole:
/// `migrate::tests`, and the full-disk and kill trials.)
#[test]
fn real_data_that_would_fail_a_migration_is_refused_before_the_batch_writes() {
    let (_d, path) = temp();
    at_version(&path, 25);
    write_db(
        &path,
        "PRAGMA foreign_keys = OFF;
         INSERT INTO accounts VALUES ('acct', 1, 1);
         INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at)
             VALUES ('agent', 'acct', x'a0', '/tmp/a', 'idle', 1, 1);
         INSERT INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, activity_cbor, status, created_at)
             VALUES ('firing', 'acct', 'agent', 'deleted-trigger', 'blob-x', x'a0', 'created', 1);",
    );
    let before = fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, Error::Refused { reason: Refusal::Corrupt { detail }, .. }
            if detail.contains("foreign_key_check found: trigger_firings")
                && detail.contains("missing agent_triggers row")),
        "{msg}"
    );
    assert!(msg.contains("The file was left as it was"), "{msg}");
    assert_eq!(fs::read(&path).unwrap(), before, "nothing was written");
    let status = seed_agents_store::status(&path).unwrap();
    assert!(matches!(
        status.verdict,
        seed_agents_store::Verdict::Verified { version: 25, .. }
    ));
}

#[test]
fn a_fresh_install_gives_freed_pages_back_incrementally_and_an_existing_file_keeps_its_mode() {
    let auto_vacuum = |store: &Store| -> i64 {
        store
            .conn()
            .unwrap()
            .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
            .unwrap()
    };
    let (_d, fresh) = temp();
    assert_eq!(auto_vacuum(&Store::open(&fresh).unwrap()), 2, "INCREMENTAL");

    // A small file made before (here at version 27, as the TypeScript server makes them: NONE)
    // whose migration frees few pages is migrated without a rewrite, so it keeps its mode.
    let (_d, old) = temp();
    at_version(&old, 27);
    let store = Store::open(&old).unwrap();
    assert!(matches!(
        store.outcome(),
        Outcome::Migrated { from: 27, .. }
    ));
    assert_eq!(auto_vacuum(&store), 0, "NONE");
}

/// Migration 31 rebuilds the event log, leaving the old table's pages free: about half of a
/// file made mostly of events. The open that migrates gives them back with a VACUUM, reported
/// as a step, and turns on incremental auto-vacuum; every row is still there.
#[test]
fn a_migration_that_rebuilds_a_large_table_gives_its_old_pages_back() {
    let (_d, path) = temp();
    at_version(&path, 30);
    write_db(
        &path,
        "INSERT INTO accounts VALUES ('acct', 1, 1);
         INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at)
             VALUES ('agent', 'acct', x'a0', '/tmp/a', 'idle', 1, 1);
         INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at)
             VALUES ('s', 'acct', 'agent', 'idle', 1, 1);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO session_events (id, session_id, seq, event_cbor, created_at)
             SELECT 'ev-' || i, 's', i, randomblob(200), i FROM n;",
    );
    let before = fs::metadata(&path).unwrap().len();
    let steps = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = steps.clone();
    let store = Store::options()
        .on_progress(move |p| match p {
            Progress::Compacting { free_pages, pages } => seen
                .borrow_mut()
                .push(format!("compacting {free_pages} of {pages}")),
            Progress::Compacted { pages } => seen.borrow_mut().push(format!("compacted {pages}")),
            Progress::CompactionSkipped { reason } => {
                seen.borrow_mut().push(format!("skipped: {reason}"))
            }
            _ => {}
        })
        .open(&path)
        .unwrap();
    assert!(matches!(
        store.outcome(),
        Outcome::Migrated { from: 30, .. }
    ));
    let steps = steps.borrow().clone();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(steps[0].starts_with("compacting "), "{steps:?}");
    assert!(steps[1].starts_with("compacted "), "{steps:?}");
    let pragma = |name: &str| -> i64 {
        store
            .conn()
            .unwrap()
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(pragma("auto_vacuum"), 2, "INCREMENTAL");
    assert!(
        pragma("freelist_count") < 16,
        "{}",
        pragma("freelist_count")
    );
    let n: i64 = store
        .conn()
        .unwrap()
        .query_row("SELECT count(*) FROM session_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 20_000);
    drop(store);
    let after = fs::metadata(&path).unwrap().len();
    assert!(
        after < before * 5 / 4,
        "{before} bytes before, {after} after"
    );
    assert!(seed_agents_store::integrity::check(&path)
        .unwrap()
        .is_clean());
}
