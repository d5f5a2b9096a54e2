//! Helpers shared by the tests that load broken or extended copies of the real schema directory,
//! and the small schema the query checker's tests describe statements against.

use seed_agents_codegen::Project;
use std::fs;
use std::path::{Path, PathBuf};

pub fn schema_dir() -> PathBuf {
    PathBuf::from(seed_agents_schema::DIR)
}

/// A temporary copy of schema.sql, migrations/ (with the lock) and postgres/.
pub fn copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        schema_dir().join("schema.sql"),
        dir.path().join("schema.sql"),
    )
    .unwrap();
    for sub in ["migrations", "postgres"] {
        fs::create_dir(dir.path().join(sub)).unwrap();
        for e in fs::read_dir(schema_dir().join(sub)).unwrap() {
            let p = e.unwrap().path();
            fs::copy(&p, dir.path().join(sub).join(p.file_name().unwrap())).unwrap();
        }
    }
    dir
}

pub fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

pub fn schema(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("schema.sql")
}

pub fn migration(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join("migrations").join(name)
}

/// The version one past the real project's newest, and the file name of a migration to it.
pub fn next(what: &str) -> (u32, String) {
    let version = Project::load(schema_dir()).unwrap().latest_version() + 1;
    (version, format!("{version:04}_{what}.sql"))
}

pub fn load_err(dir: &tempfile::TempDir) -> String {
    match Project::load(dir.path()) {
        Ok(_) => panic!("expected the project to be refused"),
        Err(e) => e.to_string(),
    }
}

pub fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message lacks {p:?}:\n{msg}");
    }
}

/// Two tables, `a` and `b`, that share the column names `id` and `n`: the statements of the
/// query checker's tests are read against them.
const SMALL_SCHEMA: &str = "\
CREATE TABLE a (id TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL, note TEXT);
CREATE TABLE b (id TEXT PRIMARY KEY NOT NULL, a_id TEXT NOT NULL REFERENCES a (id), n REAL);
";

/// A query checker over [`SMALL_SCHEMA`].
pub fn small_checker() -> seed_agents_codegen::query::Checker {
    let baseline = seed_agents_codegen::Baseline::from_sql("schema.sql", SMALL_SCHEMA).unwrap();
    seed_agents_codegen::query::Checker::new(baseline, "::rt", "::schema").unwrap()
}
