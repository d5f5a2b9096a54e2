//! Shared fixture of the gate tests: temp paths, and databases written with rusqlite directly at
//! a given version, so the store's gate and migrations are what is under test.

use crate::old_versions::build_at;
use rusqlite::Connection;
use std::fs;
use std::path::{Path, PathBuf};

/// A temp dir and `agents.sqlite` inside it (not created).
pub fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents.sqlite");
    (dir, path)
}

/// Writes a database with `sql` and closes it (checkpointing any WAL into the main file).
pub fn write_db(path: &Path, sql: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
    conn.close().unwrap();
}

/// Creates `path` in rollback-journal mode at version `v` ([`build_at`]) and closes it.
pub fn at_version(path: &Path, v: u32) {
    build_at(path, v).close().unwrap();
}

/// The names in `dir`, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
