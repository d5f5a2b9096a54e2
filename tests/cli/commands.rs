//! The `seed-agents-db` binary: reports, exit codes (0 ok, 1 error, 2 usage, 3 refused, 4 check
//! found problems), a closed pipe, and the `--db-path` / `SEED_AGENTS_DB_PATH` / default path
//! order.

use seed_agents_store::schema::{MIGRATIONS, SCHEMA_VERSION};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use support::cli::{json, run, stderr, stdout};

#[test]
fn open_creates_the_default_database_and_reports_tables() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &["open"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("database: data/agents.sqlite"), "{out}");
    assert!(
        out.contains(&format!(
            "outcome: fresh install at version {SCHEMA_VERSION}"
        )),
        "{out}"
    );
    assert!(out.contains("session_events"), "{out}");
    assert!(dir.path().join("data/agents.sqlite").exists());

    let o = run(dir.path(), &["open"], None);
    assert!(stdout(&o).contains(&format!("outcome: current at version {SCHEMA_VERSION}")));
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
        "4  check or audit verify found problems",
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
    let verified = format!("structure: verified against version {SCHEMA_VERSION}");
    for line in [
        "integrity_check: ok",
        "foreign_key_check: ok",
        &verified,
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
    for pending in &MIGRATIONS[28..] {
        assert!(out.contains(pending.name), "{out}");
    }
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

/// A copy of the TypeScript server's file at version 11, in `dir`.
fn ts_v11(dir: &Path) -> &'static str {
    fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ts-server-v11.sqlite"
        ),
        dir.join("ts.sqlite"),
    )
    .unwrap();
    "ts.sqlite"
}

#[test]
fn json_reports_of_open_status_and_check_are_one_document_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let db = ts_v11(dir.path());
    let latest = seed_agents_store::schema::SCHEMA_VERSION;

    let o = run(dir.path(), &["--db-path", db, "--json", "status"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = json(&o);
    assert_eq!(s["state"], "verified");
    assert_eq!(s["version"], 11);
    assert_eq!(s["binary_version"], latest);
    let pending = s["pending"].as_array().unwrap();
    assert_eq!(pending.len(), latest as usize - 11);
    assert_eq!(pending[0], "0012_agent_collaborators");

    let o = run(dir.path(), &["--db-path", db, "open", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    // Not a terminal: no progress, nothing on stderr.
    assert_eq!(stderr(&o), "");
    let v = json(&o);
    assert_eq!(v["database"], db);
    assert_eq!(v["outcome"]["kind"], "migrated");
    assert_eq!(v["outcome"]["from"], 11);
    assert_eq!(v["outcome"]["to"], latest);
    let raw = rusqlite::Connection::open(dir.path().join(db)).unwrap();
    let agents: i64 = raw
        .query_row("SELECT count(*) FROM agents", [], |r| r.get(0))
        .unwrap();
    assert!(agents > 0);
    assert_eq!(v["tables"]["agents"], agents);

    let o = run(dir.path(), &["--db-path", db, "--json", "check"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let c = json(&o);
    assert_eq!(c["state"], "verified");
    assert_eq!(c["version"], latest);
    assert_eq!(c["pending"].as_array().unwrap().len(), 0);
    assert_eq!(c["integrity_check"].as_array().unwrap().len(), 0);
    assert_eq!(c["clean"], true);
}

#[test]
fn json_refusals_and_errors_keep_their_exit_codes_and_name_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("text.sqlite"),
        "not a database, just text\n".repeat(200),
    )
    .unwrap();
    // status: the verdict is its result, on stdout, with exit code 3.
    let o = run(
        dir.path(),
        &["--db-path", "text.sqlite", "--json", "status"],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let s = json(&o);
    assert_eq!(s["state"], "refused");
    assert!(
        s["reason"].as_str().unwrap().contains("not a database"),
        "{s}"
    );
    // open: a refusal is an error, on stderr as JSON; stdout stays empty.
    let o = run(
        dir.path(),
        &["--db-path", "text.sqlite", "--json", "open"],
        None,
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    let e: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(e["error"]["kind"], "refused");
    // A directory where the file should be: trouble with the path, exit code 1.
    fs::create_dir(dir.path().join("a-dir")).unwrap();
    let o = run(dir.path(), &["--db-path", "a-dir", "--json", "open"], None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(e["error"]["kind"], "storage", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("a-dir"),
        "{e}"
    );
}

/// Under a pseudo-terminal (util-linux `script`), migrating draws its steps on stderr: one line
/// per migration with the rows it changed.
#[test]
fn a_migration_shows_its_steps_when_stderr_is_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed, so no pseudo-terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = ts_v11(dir.path());
    let bin = env!("CARGO_BIN_EXE_seed-agents-db");
    let o = Command::new("script")
        .current_dir(dir.path())
        .env_remove("SEED_AGENTS_DB_PATH")
        .args(["-qec", &format!("'{bin}' --db-path {db} open"), "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stdout(&o));
    let screen = stdout(&o);
    let steps = seed_agents_store::schema::SCHEMA_VERSION as usize - 11;
    assert!(
        screen.contains(&format!("[1/{steps}] 0012_agent_collaborators: ")),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "[{steps}/{steps}] {}: ",
            MIGRATIONS[MIGRATIONS.len() - 1].name
        )),
        "{screen}"
    );
    assert!(
        screen.contains("outcome: migrated from version 11"),
        "{screen}"
    );
    // A current file has nothing to show.
    let o = Command::new("script")
        .current_dir(dir.path())
        .args(["-qec", &format!("'{bin}' --db-path {db} open"), "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!stdout(&o).contains("rows"), "{}", stdout(&o));
}
