//! Shared fixture of the gate tests: temp paths, and databases written with rusqlite directly at
//! a given version, so the store's gate and migrations are what is under test.

use rusqlite::Connection;
use seed_agents_store::schema::MIGRATIONS;
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

/// Creates `path` in rollback-journal mode at version `v`: genesis, migrations 1..=v, the stamp.
pub fn at_version(path: &Path, v: u32) {
    let conn = Connection::open(path).unwrap();
    for m in &MIGRATIONS[..=v as usize] {
        conn.execute_batch(m.sql).unwrap();
    }
    conn.execute(
        "INSERT INTO server_config (key, value) VALUES ('schema_migration_version', ?1)",
        [v.to_string()],
    )
    .unwrap();
    conn.close().unwrap();
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
