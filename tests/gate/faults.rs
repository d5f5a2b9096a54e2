//! Trouble is not a refusal, and damage is found before it is built on: a lock, a directory or a
//! path under a file, a write to a read-only store, and a failure after a migration committed
//! are each reported as what they are, naming the path; a damaged or cut-short file is refused
//! as damaged and left unchanged; `status` and `check` read without writing, never ignore a hot
//! journal, read any path and leave no `-shm` behind. An older file is checked whole before it
//! is migrated: an index that disagrees with its table is refused, not carried to the newest
//! version. Only a regular file can be a database: a device or a FIFO is named as such.

use rusqlite::Connection;
use seed_agents_store::schema::account_authorizations::Role;
use seed_agents_store::schema::SCHEMA_VERSION;
use seed_agents_store::{integrity, status, Error, ErrorKind, Outcome, Refusal, Store, Verdict};
use std::fs;
use std::path::Path;
use support::gate::{at_version, files, temp, write_db};

/// Asserts `e` is environment trouble naming `path`: not a refusal, no advice to delete.
fn trouble(e: &Error, path: &Path) {
    let msg = e.to_string();
    assert!(!matches!(e, Error::Refused { .. }), "{msg}");
    assert_ne!(e.kind(), ErrorKind::Refused, "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(!msg.contains("rm ") && !msg.contains("delete"), "{msg}");
}

/// Overwrites the b-tree header of `table`'s root page so that the page claims 65,535 cells: the
/// schema still reads, every check that walks the table fails.
fn damage_table(path: &Path, table: &str) {
    let conn = Connection::open(path).unwrap();
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    conn.close().unwrap();
    let mut bytes = fs::read(path).unwrap();
    let at = ((root - 1) * page) as usize;
    bytes[at + 3] = 0xff;
    bytes[at + 4] = 0xff;
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_lock_held_past_the_timeout_is_busy_naming_the_path_not_a_refusal() {
    let (_d, path) = temp();
    at_version(&path, SCHEMA_VERSION); // rollback-journal mode: an exclusive lock blocks readers
    let before = fs::read(&path).unwrap();
    // A writer in the middle of a transaction: its -journal exists and it holds the lock.
    let holder = Connection::open(&path).unwrap();
    holder
        .execute_batch("BEGIN EXCLUSIVE; INSERT INTO server_config VALUES ('k', 'v');")
        .unwrap();
    let (open, look) = std::thread::scope(|s| {
        let open = s.spawn(|| Store::open(&path).map(|_| ()));
        let look = s.spawn(|| status(&path).map(|_| ()));
        (open.join().unwrap(), look.join().unwrap())
    });
    for e in [open.unwrap_err(), look.unwrap_err()] {
        assert!(matches!(e, Error::Busy { .. }), "{e}");
        assert_eq!(e.kind(), ErrorKind::Busy);
        trouble(&e, &path);
    }
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_directory_given_as_the_path_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let errors = [
        Store::open(dir.path()).unwrap_err(),
        Store::open_read_only(dir.path()).unwrap_err(),
        status(dir.path()).unwrap_err(),
        integrity::check(dir.path()).unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, Error::NotAFilePath { .. }), "{e}");
        assert!(e.to_string().contains("it is a directory"), "{e}");
        trouble(&e, dir.path());
    }
    assert!(files(dir.path()).is_empty(), "nothing created inside");
}

#[test]
fn a_path_under_a_regular_file_is_named_as_such_by_open_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    fs::write(&blocker, b"a file where a directory should be").unwrap();
    let path = blocker.join("deeper/agents.sqlite");
    for e in [Store::open(&path).unwrap_err(), status(&path).unwrap_err()] {
        assert!(matches!(e, Error::NotAFilePath { .. }), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("{} is a regular file", blocker.display())),
            "{e}"
        );
        trouble(&e, &path);
    }
}

#[test]
fn a_read_only_store_reads_and_refuses_every_write_with_a_typed_error() {
    let (_d, path) = temp();
    {
        let store = Store::open(&path).unwrap();
        store.touch_account("acct").unwrap();
    }
    let before = fs::read(&path).unwrap();
    let store = Store::open_read_only(&path).unwrap();
    assert!(store.is_read_only());
    assert_eq!(
        store.outcome(),
        Outcome::Current {
            version: SCHEMA_VERSION
        }
    );
    let counts = store.table_counts().unwrap();
    assert!(counts.contains(&("accounts", 1)), "{counts:?}");
    let single = store.touch_account("other").unwrap_err();
    let in_tx = store
        .authorize_signer("acct", "signer", Role::Owner, None)
        .unwrap_err();
    for e in [single, in_tx] {
        assert!(
            matches!(&e, Error::ReadOnly { detail, .. } if detail.contains("opened read-only")),
            "{e}"
        );
        trouble(&e, &path);
    }
    drop(store);
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_read_only_open_does_not_install_or_migrate() {
    let (_d, path) = temp();
    fs::write(&path, b"").unwrap();
    let e = Store::open_read_only(&path).unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
    trouble(&e, &path);
    let (_d, path) = temp();
    at_version(&path, 27);
    let before = fs::read(&path).unwrap();
    let e = Store::open_read_only(&path).unwrap_err();
    assert!(e.to_string().contains("needs migrating to"), "{e}");
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_failure_after_the_migration_committed_says_the_file_is_at_the_new_version() {
    let (_d, path) = temp();
    at_version(&path, 27);
    // The migration runs in rollback-journal mode; switching to WAL afterwards needs a -shm
    // file, which a directory of that name makes impossible.
    let shm = sidecar(&path, "-shm");
    fs::create_dir(&shm).unwrap();
    let e = Store::open(&path).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::AfterCommit { version, .. } if version == SCHEMA_VERSION),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("already at version {SCHEMA_VERSION}")),
        "{msg}"
    );
    assert!(msg.contains("migration from version 27"), "{msg}");
    fs::remove_dir(&shm).unwrap();
    assert!(matches!(
        status(&path).unwrap().verdict,
        Verdict::Verified { version, .. } if version == SCHEMA_VERSION
    ));
}

fn sidecar(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

#[test]
fn a_copy_cut_short_by_its_last_byte_is_refused_as_damaged() {
    let (_d, path) = temp();
    {
        let store = Store::open(&path).unwrap();
        store.touch_account("acct").unwrap();
    }
    let mut bytes = fs::read(&path).unwrap();
    bytes.pop();
    fs::write(&path, &bytes).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Refused {
                reason: Refusal::Corrupt { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("cut short"), "{e}");
    assert_eq!(fs::read(&path).unwrap(), bytes);
    assert!(matches!(
        status(&path).unwrap().verdict,
        Verdict::Refused(Refusal::Corrupt { .. })
    ));
}

#[test]
fn a_damaged_older_file_is_refused_before_a_migration_writes() {
    let (_d, path) = temp();
    at_version(&path, 25);
    write_db(
        &path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
         INSERT INTO accounts SELECT 'acct-' || i, 1, 1 FROM n;",
    );
    damage_table(&path, "accounts");
    let before = fs::read(&path).unwrap();
    let e = Store::open(&path).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(&e, Error::Refused { reason: Refusal::Corrupt { detail }, .. } if detail.contains("integrity_check")),
        "{msg}"
    );
    assert!(msg.contains(".recover"), "{msg}");
    assert!(!msg.contains("rm "), "{msg}");
    assert_eq!(fs::read(&path).unwrap(), before, "left byte-for-byte");
}

#[test]
fn check_reports_integrity_foreign_keys_and_structure() {
    let (dir, path) = temp();
    drop(Store::open(&path).unwrap());
    let clean = integrity::check(&path).unwrap();
    assert!(clean.is_clean(), "{clean:?}");
    assert!(
        matches!(clean.verdict, Verdict::Verified { version, .. } if version == SCHEMA_VERSION)
    );

    write_db(
        &path,
        "PRAGMA foreign_keys = OFF; INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at)
         VALUES ('orphan', 'no-account', 'no-agent', 'idle', 1, 1);",
    );
    let before = fs::read(&path).unwrap();
    let fk = integrity::check(&path).unwrap();
    assert!(!fk.is_clean());
    assert!(fk.integrity.is_empty(), "{fk:?}");
    assert!(
        fk.foreign_keys.iter().any(|l| l.starts_with("sessions")),
        "{fk:?}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(
        files(dir.path()),
        ["agents.sqlite"],
        "check leaves nothing behind"
    );

    let (_d, path) = temp();
    at_version(&path, SCHEMA_VERSION);
    write_db(
        &path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
         INSERT INTO accounts SELECT 'acct-' || i, 1, 1 FROM n;
         ALTER TABLE runs ADD COLUMN shadow TEXT;",
    );
    damage_table(&path, "accounts");
    let bad = integrity::check(&path).unwrap();
    assert!(!bad.integrity.is_empty(), "{bad:?}");
    assert!(
        matches!(&bad.verdict, Verdict::Refused(Refusal::StructureMismatch { diff, .. }) if diff.contains("shadow")),
        "{bad:?}"
    );
}

#[test]
fn status_never_reads_past_a_hot_journal() {
    let (dir, path) = temp();
    at_version(&path, SCHEMA_VERSION);
    write_db(
        &path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO server_config SELECT 'k' || i, randomblob(200) FROM n;",
    );
    // A writer that spills half its transaction into the file, copied as a crash would leave it.
    let crashed = dir.path().join("crashed.sqlite");
    let writer = Connection::open(&path).unwrap();
    writer.pragma_update(None, "cache_size", 2).unwrap();
    writer
        .execute_batch(
            "BEGIN; CREATE TABLE half_written (x); UPDATE server_config SET value = randomblob(200) WHERE key LIKE 'k%';",
        )
        .unwrap();
    fs::copy(&path, &crashed).unwrap();
    fs::copy(
        dir.path().join("agents.sqlite-journal"),
        dir.path().join("crashed.sqlite-journal"),
    )
    .unwrap();
    writer.execute_batch("ROLLBACK").unwrap();
    let before = fs::read(&crashed).unwrap();
    let e = status(&crashed).unwrap_err();
    assert!(matches!(e, Error::HotJournal { .. }), "{e}");
    trouble(&e, &crashed);
    assert_eq!(fs::read(&crashed).unwrap(), before);
    assert!(dir.path().join("crashed.sqlite-journal").exists());
    // A read-write open rolls the journal back; then status agrees with it.
    drop(Store::open(&crashed).unwrap());
    assert!(matches!(
        status(&crashed).unwrap().verdict,
        Verdict::Verified { version, .. } if version == SCHEMA_VERSION
    ));
}

#[test]
fn status_reads_any_path() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("dätä €");
    let path = dir.join("agents ü?#%&=.sqlite");
    drop(Store::open(&path).unwrap());
    let s = status(&path).unwrap();
    assert!(
        matches!(s.verdict, Verdict::Verified { version, .. } if version == SCHEMA_VERSION),
        "{s:?}"
    );
    assert_eq!(files(&dir), ["agents ü?#%&=.sqlite"]);
}

#[test]
fn status_and_check_read_a_wal_without_shm_and_leave_no_shm() {
    let (dir, path) = temp();
    at_version(&path, 27);
    // Migrations 28 and 29 committed into the -wal and never checkpointed, then copied without
    // the -shm (as a crash or a copy leaves them).
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    for m in &seed_agents_store::schema::MIGRATIONS[28..] {
        conn.execute_batch(m.sql).unwrap();
    }
    conn.execute(
        "UPDATE server_config SET value = ?1 WHERE key = 'schema_migration_version'",
        [SCHEMA_VERSION.to_string()],
    )
    .unwrap();
    let copy = dir.path().join("copy.sqlite");
    fs::copy(&path, &copy).unwrap();
    fs::copy(
        dir.path().join("agents.sqlite-wal"),
        dir.path().join("copy.sqlite-wal"),
    )
    .unwrap();
    drop(conn);
    let main = fs::read(&copy).unwrap();
    let wal = fs::read(dir.path().join("copy.sqlite-wal")).unwrap();
    let s = status(&copy).unwrap();
    assert!(
        matches!(s.verdict, Verdict::Verified { version, .. } if version == SCHEMA_VERSION),
        "the committed -wal is read: {s:?}"
    );
    assert!(integrity::check(&copy).unwrap().is_clean());
    let left: Vec<String> = files(dir.path())
        .into_iter()
        .filter(|f| f.starts_with("copy"))
        .collect();
    assert_eq!(left, ["copy.sqlite", "copy.sqlite-wal"]);
    assert_eq!(fs::read(&copy).unwrap(), main);
    assert_eq!(fs::read(dir.path().join("copy.sqlite-wal")).unwrap(), wal);
}

/// The TypeScript server's own version-11 file (WAL mode, a row or more in every table).
const TS_V11: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ts-server-v11.sqlite"
);

/// A copy of the TypeScript server's version-11 file in `dir` with bytes flipped inside the
/// cells of `object`'s root page (an index or a table), as a failing disk would leave them.
fn damaged_v11(dir: &Path, object: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{object}.sqlite"));
    fs::copy(TS_V11, &path).unwrap();
    let conn = Connection::open_with_flags(
        format!("file:{}?immutable=1", path.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [object],
            |r| r.get(0),
        )
        .unwrap();
    drop(conn);
    let mut bytes = fs::read(&path).unwrap();
    let page = 4096; // the fixture's page size
    let at = (root as usize - 1) * page;
    // Flip a few bytes of a cell's values, leaving the page's structure readable: in an index,
    // the keys of the first cell (the cell content area starts where the leaf page's header,
    // bytes 5-6, says); in a table, the last values of the last cell (at the page's end).
    let index = bytes[at] == 0x0a; // a leaf index page
    let start = if index {
        at + u16::from_be_bytes([bytes[at + 5], bytes[at + 6]]) as usize + 2
    } else {
        at + page - 40
    };
    let (len, mask) = if index { (6, 0x21) } else { (10, 0x55) };
    for b in &mut bytes[start..start + len] {
        *b ^= mask;
    }
    fs::write(&path, bytes).unwrap();
    path
}

/// `quick_check` passes these files (it does not compare an index with its table), so before
/// the whole-file check they were migrated to the newest version with their damage.
#[test]
fn a_damaged_typescript_file_is_refused_whole_and_untouched_before_a_migration() {
    let dir = tempfile::tempdir().unwrap();
    // Index pages: quick_check passes them. A table page: whatever the checks make of it.
    for (object, finding) in [
        ("agents_by_account", "missing from index agents_by_account"),
        (
            "agent_triggers_by_agent",
            "missing from index agent_triggers_by_agent",
        ),
        ("sessions_by_agent", "missing from index sessions_by_agent"),
        ("agents", ""),
    ] {
        let path = damaged_v11(dir.path(), object);
        let before = fs::read(&path).unwrap();
        if !finding.is_empty() {
            let quick: String = Connection::open(&path)
                .unwrap()
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(
                quick, "ok",
                "{object}: quick_check does not see this damage"
            );
        }
        let listing = files(dir.path());

        let e = Store::open(&path).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(&e, Error::Refused { reason: Refusal::Corrupt { detail }, .. } if detail.contains(finding)),
            "{object}: {msg}"
        );
        assert_eq!(e.kind(), ErrorKind::Refused);
        assert!(msg.contains("found"), "{msg}");
        assert!(msg.contains("backup") && msg.contains(".recover"), "{msg}");
        assert!(!msg.contains("rm ") && !msg.contains("delete"), "{msg}");
        assert_eq!(
            fs::read(&path).unwrap(),
            before,
            "{object}: left byte for byte"
        );
        assert_eq!(
            files(dir.path()),
            listing,
            "{object}: no sidecar left behind"
        );
        // `status` still reads it as the version-11 file it claims to be; `check` names the damage.
        assert!(matches!(
            status(&path).unwrap().verdict,
            Verdict::Verified { version: 11, .. }
        ));
        let report = integrity::check(&path).unwrap();
        assert!(
            report.integrity.iter().any(|l| l.contains(finding)),
            "{report:?}"
        );
        fs::remove_file(&path).unwrap();
    }
}

/// A character device, a FIFO: anything but a regular file is named as such, before SQLite
/// opens it or creates a journal beside it.
#[test]
fn a_device_or_a_fifo_given_as_the_path_is_named_as_such() {
    let null = Path::new("/dev/null");
    for e in [
        Store::open(null).unwrap_err(),
        Store::open_read_only(null).unwrap_err(),
        status(null).unwrap_err(),
        integrity::check(null).unwrap_err(),
    ] {
        assert!(matches!(e, Error::NotAFilePath { .. }), "{e}");
        assert!(e.to_string().contains("it is a character device"), "{e}");
        trouble(&e, null);
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("x");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    for e in [Store::open(&fifo).unwrap_err(), status(&fifo).unwrap_err()] {
        assert!(e.to_string().contains("it is a FIFO"), "{e}");
        trouble(&e, &fifo);
    }
    assert_eq!(files(dir.path()), ["x"], "no journal beside it");
}
