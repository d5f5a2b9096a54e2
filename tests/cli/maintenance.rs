//! The maintenance commands of `seed-agents-db`: retention and prune, rotate-key and move-key,
//! audit verify; that none of them creates a database where there is none, and that the
//! read-only ones leave no `-wal` or `-shm` beside an idle file, immutable or not.

use support::cli::{json, run, stderr, stdout};

#[test]
fn rotate_key_and_move_key_report_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.sqlite");
    let store = seed_agents_store::Store::open(&db).unwrap();
    for i in 0..5 {
        store
            .set_secret("acct", &format!("s{i}"), b"v", None)
            .unwrap();
    }
    drop(store);
    let db_arg = db.to_str().unwrap();
    let o = run(
        dir.path(),
        &[
            "--db-path",
            db_arg,
            "--json",
            "rotate-key",
            "--batch-rows",
            "2",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["key_id"], 2);
    assert_eq!(doc["rotated"]["secrets"], 5);
    assert_eq!(doc["batches"], 3);
    assert_eq!(doc["retired"], serde_json::json!([1]));
    assert_eq!(doc["complete"], true);
    // Progress goes to stderr, one line per batch.
    assert_eq!(stderr(&o).lines().count(), 3, "{}", stderr(&o));
    let o = run(dir.path(), &["--db-path", db_arg, "rotate-key"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("rotated to key 3\n"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("retired keys: 2\ncomplete\n"),
        "{}",
        stdout(&o)
    );

    let key_file = dir.path().join("secret.key");
    let to = format!("file:{}", key_file.display());
    let o = run(
        dir.path(),
        &["--db-path", db_arg, "move-key", "--to", &to],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("key 3 (fingerprint "),
        "{}",
        stdout(&o)
    );
    assert!(key_file.exists());
    // The key is out: a rotation through the file provider needs a new key in the file first.
    let o = run(
        dir.path(),
        &["--db-path", db_arg, "rotate-key", "--key-provider", &to],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("offers no new key"), "{}", stderr(&o));
    let o = run(
        dir.path(),
        &["--db-path", db_arg, "move-key", "--to", "vault:x"],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("key_provider"), "{}", stderr(&o));
}

#[test]
fn retention_is_off_until_set_and_prune_reports_per_table() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["open"], None).status.success());
    let db = dir.path().join("data/agents.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for id in ["r-1", "r-2", "r-3"] {
        // Recorded at the epoch: far outside any replay window.
        conn.execute(
            "INSERT INTO action_idempotency VALUES ('acct', 'CreateAgent', ?1, X'a0', X'a0', 0)",
            [id],
        )
        .unwrap();
    }
    drop(conn);
    let rows = || {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT count(*) FROM action_idempotency", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
    };

    let o = run(dir.path(), &["prune"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no retention policy is set"),
        "{}",
        stdout(&o)
    );
    assert_eq!(rows(), 3);

    let o = run(
        dir.path(),
        &["retention", "set", "action_idempotency", "--max-age", "7d"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("action_idempotency   pruned after 7d"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("runs                 kept forever"),
        "{}",
        stdout(&o)
    );

    let o = run(dir.path(), &["prune", "--dry-run"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("would remove"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("action_idempotency                    3"),
        "{}",
        stdout(&o)
    );
    assert_eq!(rows(), 3, "a dry run writes nothing");

    let o = run(dir.path(), &["--json", "prune", "--batch-rows", "2"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["dry_run"], false);
    assert_eq!(doc["removed"]["action_idempotency"], 3);
    assert_eq!(doc["batches"], 2);
    assert_eq!(rows(), 0);

    let o = run(
        dir.path(),
        &["--json", "retention", "clear", "action_idempotency"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        json(&o)["policies"]["action_idempotency"],
        serde_json::Value::Null
    );
}

#[test]
fn a_bad_policy_is_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["open"], None).status.success());
    let o = run(
        dir.path(),
        &["retention", "set", "runs", "--max-age", "30"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs a unit"), "{}", stderr(&o));
    let o = run(
        dir.path(),
        &["retention", "set", "events", "--max-age", "30d"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("session_events, runs, run_journal"),
        "{}",
        stderr(&o)
    );
    let o = run(
        dir.path(),
        &[
            "--json",
            "retention",
            "set",
            "runs",
            "--max-age",
            "30d",
            "--keep",
            "3",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let err: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(err["error"]["kind"], "invalid");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("policy.keep_count"));
}

#[test]
fn audit_verify_exits_0_on_an_intact_log_and_4_naming_the_seq_of_a_tampered_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agents.sqlite");
    {
        let store = seed_agents_store::Store::open(&db).unwrap();
        for name in ["a", "b", "c"] {
            store.set_secret("acct-1", name, b"v", None).unwrap();
        }
    }
    let db_arg = db.to_str().unwrap();
    let o = run(dir.path(), &["--db-path", db_arg, "audit", "verify"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("audit log: 3 row(s), seq 1..=3"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("result: the chain is intact"));

    let o = run(
        dir.path(),
        &["--db-path", db_arg, "audit", "list", "--limit", "2"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("3 "), "{out}");
    assert!(out.contains("secret.set secret c ok"), "{out}");
    assert!(out.contains("next: "), "{out}");

    let raw = rusqlite::Connection::open(&db).unwrap();
    raw.execute(
        "UPDATE audit_events SET target = 'secret z' WHERE seq = 2",
        [],
    )
    .unwrap();
    drop(raw);
    let o = run(dir.path(), &["--db-path", db_arg, "audit", "verify"], None);
    assert_eq!(o.status.code(), Some(4));
    assert!(
        stdout(&o).contains("row 2 does not match its hash (edited or moved)"),
        "{}",
        stdout(&o)
    );
    let o = run(
        dir.path(),
        &["--db-path", db_arg, "--json", "audit", "verify"],
        None,
    );
    assert_eq!(o.status.code(), Some(4));
    let doc = json(&o);
    assert_eq!(doc["intact"], false);
    assert_eq!(doc["problems"][0]["seq"], 2);
    assert_eq!(doc["problems"][0]["kind"], "edited");
}

#[test]
fn maintenance_commands_on_a_missing_file_name_it_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo/agents.sqlite");
    let db_arg = db.to_str().unwrap();
    for args in [
        &["prune", "--dry-run"][..],
        &["prune"],
        &["retention", "show"],
        &["retention", "set", "runs", "--max-age", "30d"],
        &["retention", "clear", "runs"],
        &["rotate-key"],
        &["move-key", "--to", "env:SEED_KEY"],
        &["audit", "verify"],
        &["audit", "list"],
    ] {
        let o = run(dir.path(), &[&["--db-path", db_arg], args].concat(), None);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(db_arg), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("delete"), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
    assert!(
        !dir.path().join("typo").exists(),
        "a command created a file"
    );
}

/// The commands that only read, each run on an idle file (no writer has it open).
const READ_ONLY: [&[&str]; 6] = [
    &["status"],
    &["check"],
    &["audit", "verify"],
    &["audit", "list"],
    &["retention", "show"],
    &["prune", "--dry-run"],
];

/// The names in `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A current WAL file with an audited write, closed: nothing beside it.
fn idle_file(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("idle.sqlite");
    let store = seed_agents_store::Store::open(&db).unwrap();
    store.set_secret("acct", "s", b"v", None).unwrap();
    drop(store);
    assert_eq!(listing(dir), ["idle.sqlite"]);
    db
}

/// Runs every read-only command on `db`, the one file in `dir`, and checks that each succeeds
/// and leaves nothing beside it.
fn run_read_only_commands(dir: &std::path::Path, db: &std::path::Path) {
    for args in READ_ONLY {
        let mut all = vec!["--db-path", db.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = run(dir, &all, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(listing(dir), ["idle.sqlite"], "after {args:?}");
    }
}

#[test]
fn read_only_commands_leave_no_wal_or_shm_beside_an_idle_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = idle_file(dir.path());
    let before = std::fs::read(&db).unwrap();
    run_read_only_commands(dir.path(), &db);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // The library's read-only handle too, with its pool of several connections.
    let store = seed_agents_store::Store::open_read_only(&db).unwrap();
    let readers: Vec<_> = (0..3).map(|_| store.reading().unwrap()).collect();
    assert!(store.table_counts().unwrap().contains(&("secrets", 1)));
    drop(readers);
    drop(store);
    assert_eq!(listing(dir.path()), ["idle.sqlite"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// Clears the immutable flag when dropped, so the temporary directory can be removed.
struct Immutable<'a>(&'a std::path::Path);

impl Drop for Immutable<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(self.0)
            .status();
    }
}

#[test]
fn read_only_commands_read_an_immutable_file_and_leave_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = idle_file(dir.path());
    let before = std::fs::read(&db).unwrap();
    let set = std::process::Command::new("chattr")
        .arg("+i")
        .arg(&db)
        .output();
    if !set.is_ok_and(|o| o.status.success()) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED read_only_commands_read_an_immutable_file: chattr +i is not allowed here \
             (needs root and a file system with the flag)"
        );
        return;
    }
    let _guard = Immutable(&db);
    run_read_only_commands(dir.path(), &db);
    let store = seed_agents_store::Store::open_read_only(&db).unwrap();
    assert!(store.table_counts().unwrap().contains(&("secrets", 1)));
    drop(store);
    assert_eq!(listing(dir.path()), ["idle.sqlite"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// A `-wal` holding a writer's frames is the writer's: a read-only store reads it but never
/// copies it into the file, even when it is the last to close.
#[test]
fn a_read_only_store_never_copies_a_writers_frames_into_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = idle_file(dir.path());
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer
        .execute("UPDATE accounts SET updated_at = updated_at + 1", [])
        .unwrap();
    let main = std::fs::read(&db).unwrap();
    let store = seed_agents_store::Store::open_read_only(&db).unwrap();
    assert!(store.table_counts().unwrap().contains(&("secrets", 1)));
    // The writer goes first, without its checkpoint (another connection is still open).
    drop(writer);
    drop(store);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        main,
        "the main file is as it was"
    );
}
