//! The `seed-agents-codegen` binary (feature `cli`): `check` reports what the build would, `lock`
//! appends a new migration without touching locked lines; results on stdout, errors on stderr.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seed-agents-codegen"))
        .args(args)
        .output()
        .unwrap()
}

/// A copy of the real schema directory.
fn copy_schema(to: &Path) {
    let from = Path::new(seed_agents_schema::DIR);
    fs::copy(from.join("schema.sql"), to.join("schema.sql")).unwrap();
    fs::create_dir(to.join("migrations")).unwrap();
    for e in fs::read_dir(from.join("migrations")).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, to.join("migrations").join(p.file_name().unwrap())).unwrap();
    }
}

/// The real project's newest version: its migrations after genesis.
fn latest() -> usize {
    let migrations = Path::new(seed_agents_schema::DIR).join("migrations");
    let files = fs::read_dir(migrations).unwrap().map(|e| e.unwrap().path());
    files
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .count()
        - 1
}

#[test]
fn check_reports_the_version_and_lock_appends_only_the_new_migration() {
    let latest = latest();
    let o = run(&["check", seed_agents_schema::DIR]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "schema.sql equals genesis + {latest} migrations (version {latest})"
        )),
        "{out}"
    );
    let extra = format!("{:04}_extra", latest + 1);

    let dir = tempfile::tempdir().unwrap();
    copy_schema(dir.path());
    let lock = dir.path().join("migrations/migrations.lock");
    let before = fs::read_to_string(&lock).unwrap();
    let mut schema = fs::read_to_string(dir.path().join("schema.sql")).unwrap();
    schema.push_str("\n-- Runs by model.\nCREATE INDEX runs_by_model ON runs (model);\n");
    fs::write(dir.path().join("schema.sql"), schema).unwrap();
    fs::write(
        dir.path().join(format!("migrations/{extra}.sql")),
        "CREATE INDEX runs_by_model ON runs (model);\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    // Not locked yet: check passes with a warning on stderr naming the command that locks it.
    let o = run(&["check", root]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: "), "{err}");
    assert!(
        err.contains(&format!("{extra}.sql is not locked yet")),
        "{err}"
    );
    assert!(err.contains("-- lock schema"), "{err}");
    let next = format!("(version {})", latest + 1);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&next));

    let o = run(&["lock", root]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let covers = format!("covers {} migrations", latest + 2);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&covers));
    let after = fs::read_to_string(&lock).unwrap();
    assert!(after.starts_with(&before), "a locked line changed");
    assert!(
        after[before.len()..].starts_with(&format!("{extra} ")),
        "{after}"
    );
    let o = run(&["check", root]);
    assert!(o.status.success());
    assert_eq!(o.stderr, b"", "locked: no warning left");

    // A shipped migration edited: an error on stderr, nothing on stdout, a failing exit.
    fs::write(
        dir.path().join(format!("migrations/{extra}.sql")),
        "CREATE INDEX runs_by_model ON runs (model, id);\n",
    )
    .unwrap();
    let o = run(&["check", root]);
    assert!(!o.status.success());
    assert_eq!(o.stdout, b"");
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: "));
}

#[test]
fn a_usage_error_exits_2() {
    let o = run(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Usage"));
}
