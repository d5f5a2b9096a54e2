//! The `seed-agents-db` binary: reports, exit codes (0 ok, 1 error, 2 usage, 3 refused, 4 check
//! found problems), a closed pipe, and the `--db-path` / `SEED_AGENTS_DB_PATH` / default path
//! order.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(cwd: &Path, args: &[&str], env: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seed-agents-db"));
    cmd.current_dir(cwd)
        .args(args)
        .env_remove("SEED_AGENTS_DB_PATH");
    if let Some(p) = env {
        cmd.env("SEED_AGENTS_DB_PATH", p);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn open_creates_the_default_database_and_reports_tables() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["open"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("database: data/agents.sqlite"), "{out}");
    assert!(
        out.contains("outcome: fresh install at version 29"),
        "{out}"
    );
    assert!(out.contains("session_events"), "{out}");
    assert!(dir.path().join("data/agents.sqlite").exists());

    let o = run(dir.path(), &["open"], None);
    assert!(stdout(&o).contains("outcome: current at version 29"));
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["open"], Some("from-env.sqlite"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("from-env.sqlite").exists());
    let o = run(
        dir.path(),
        &["--db-path", "from-flag.sqlite", "open"],
        Some("from-env.sqlite"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("from-flag.sqlite").exists());
    assert!(!dir.path().join("data").exists());
}

#[test]
fn a_refused_file_exits_3_with_the_reason_and_fitting_advice_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE server_config (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID; INSERT INTO server_config VALUES ('schema_version', '2');").unwrap();
    conn.close().unwrap();
    let before = fs::read(&db).unwrap();
    for cmd in ["open", "status"] {
        let o = run(dir.path(), &["--db-path", "old.sqlite", cmd], None);
        assert_eq!(o.status.code(), Some(3), "{cmd}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("legacy schema_version key"), "{err}");
        assert!(err.contains("Check --db-path"), "{err}");
        assert!(!err.contains("rm "), "{err}");
        assert_eq!(fs::read(&db).unwrap(), before);
    }
}

#[test]
fn a_usage_error_exits_2_and_help_documents_every_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["no-such-command"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(dir.path(), &["--help"], None);
    assert!(o.status.success());
    let help = stdout(&o);
    for line in [
        "0  success",
        "1  error",
        "2  usage error",
        "3  refused",
        "4  check found problems",
    ] {
        assert!(help.contains(line), "{line}: {help}");
    }
}

#[test]
fn a_closed_pipe_ends_open_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_seed-agents-db"))
        .current_dir(dir.path())
        .args(["--db-path", "a.sqlite", "open"])
        .env_remove("SEED_AGENTS_DB_PATH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the report is written, as `| head -0` would.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn check_exits_0_when_clean_4_with_problems_and_3_on_a_file_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["--db-path", "a.sqlite", "open"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(dir.path(), &["--db-path", "a.sqlite", "check"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "integrity_check: ok",
        "foreign_key_check: ok",
        "structure: verified against version 29",
        "result: no problems found",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let conn = rusqlite::Connection::open(dir.path().join("a.sqlite")).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at)
         VALUES ('orphan', 'no-account', 'no-agent', 'idle', 1, 1);",
    )
    .unwrap();
    conn.close().unwrap();
    let o = run(dir.path(), &["--db-path", "a.sqlite", "check"], None);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("foreign_key_check: 2 problem(s)"), "{out}");
    assert!(out.contains("result: problems found"), "{out}");

    fs::write(dir.path().join("text.sqlite"), b"not a database at all").unwrap();
    let o = run(dir.path(), &["--db-path", "text.sqlite", "check"], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("mistyped path"), "{}", stderr(&o));
}

#[test]
fn status_reports_pending_migrations_and_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v27.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for m in &seed_agents_store::schema::MIGRATIONS[..=27] {
        conn.execute_batch(m.sql).unwrap();
    }
    conn.execute_batch("INSERT INTO server_config VALUES ('schema_migration_version', '27');")
        .unwrap();
    conn.close().unwrap();
    let before = fs::read(&db).unwrap();
    let o = run(dir.path(), &["--db-path", "v27.sqlite", "status"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("claimed version: 27"), "{out}");
    assert!(
        out.contains("structure: verified against version 27"),
        "{out}"
    );
    assert!(out.contains("0028_runs_by_parent_tool_call"), "{out}");
    assert!(out.contains("0029_run_event_waits_by_timeout"), "{out}");
    assert_eq!(fs::read(&db).unwrap(), before);

    let o = run(dir.path(), &["--db-path", "missing.sqlite", "status"], None);
    assert!(o.status.success());
    assert!(!dir.path().join("missing.sqlite").exists());
}

#[test]
fn trouble_with_the_path_exits_1_naming_it_without_advice_to_delete() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("blocker"),
        b"a file where a directory should be",
    )
    .unwrap();
    let o = run(
        dir.path(),
        &["--db-path", "blocker/agents.sqlite", "open"],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("blocker is a regular file, not a directory"),
        "{}",
        stderr(&o)
    );
    let o = run(
        dir.path(),
        &["--db-path", "blocker/agents.sqlite", "status"],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("blocker"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("rm "), "{}", stderr(&o));
}

#[test]
fn docs_writes_one_page_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["docs", "--out", "pages"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    for t in seed_agents_store::schema::TABLES {
        assert!(
            dir.path().join("pages").join(format!("{t}.md")).exists(),
            "{t}"
        );
    }
}

#[test]
fn version_names_the_schema_version_the_binary_installs() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--version"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!(
            "seed-agents-db {} (schema version {})",
            env!("CARGO_PKG_VERSION"),
            seed_agents_store::schema::SCHEMA_VERSION
        )
    );
}
