//! Races between processes: the test binary re-runs itself (`--exact <child test> --nocapture`)
//! with a role variable naming each child's part; each child opens its own `Store` at the
//! fixture's location (a file, or the PostgreSQL database: separate processes are separate
//! nodes there) and prints what it did as `RESULT ...` lines. The children start together,
//! once all have opened their stores.

use super::Fixture;
use seed_agents_store::Store;
use std::path::{Path, PathBuf};

const DB: &str = "EXEC_RACE_DB";
const SIGNALS: &str = "EXEC_RACE_SIGNALS";
const INDEX: &str = "EXEC_RACE_INDEX";

/// Spawns one child per entry of `parts`, running the test `child_test` with `role` set to its
/// part; waits for all and returns each child's part and RESULT lines.
pub fn spawn(
    f: &Fixture,
    child_test: &str,
    role: &str,
    parts: &[&str],
) -> Vec<(String, Vec<String>)> {
    spawn_with(f, child_test, role, parts, &[])
}

/// [`spawn`] with extra environment variables for the children.
pub fn spawn_with(
    f: &Fixture,
    child_test: &str,
    role: &str,
    parts: &[&str],
    env: &[(&str, String)],
) -> Vec<(String, Vec<String>)> {
    // The start signal lives in the test's directory, whichever backend holds the store.
    let signals = f.dir.path().join("agents.sqlite");
    let go = go_file(&signals);
    let _ = std::fs::remove_file(&go);
    let children: Vec<_> = parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let mut command = crate::rerun(child_test);
            command
                .env(role, part)
                .env(DB, f.path())
                .env(SIGNALS, &signals)
                .env(INDEX, i.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            for (k, v) in env {
                command.env(k, v);
            }
            (part.to_string(), command.spawn().unwrap())
        })
        .collect();
    // Start together once every child has opened its store (opening should not compete with
    // the race itself).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while (0..parts.len()).any(|i| !ready_file(&signals, i).exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "children did not get ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    std::fs::write(&go, b"go").unwrap();
    children
        .into_iter()
        .map(|(part, child)| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "child {part} failed:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let results = crate::results(&stdout);
            (part, results)
        })
        .collect()
}

/// The child side: `None` unless this process was started by [`spawn`] with `role` set; else
/// the part it plays and its store, returned once every child is ready and the parent said go.
pub fn child_start(role: &str) -> Option<(String, Store)> {
    let part = std::env::var(role).ok()?;
    let path = std::env::var(DB).unwrap();
    let store = Store::open(&path).unwrap();
    let index: usize = std::env::var(INDEX).unwrap().parse().unwrap();
    let signals = PathBuf::from(std::env::var(SIGNALS).unwrap());
    std::fs::write(ready_file(&signals, index), b"ready").unwrap();
    while !go_file(&signals).exists() {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    Some((part, store))
}

fn ready_file(db: &Path, index: usize) -> PathBuf {
    db.with_extension(format!("ready{index}"))
}

fn go_file(db: &Path) -> PathBuf {
    db.with_extension("go")
}
