//! Databases at an earlier schema version, built with rusqlite alone (never through the store),
//! so that the store's migration path is what the upgrade and reliability suites test.

use rusqlite::{params, Connection};
use seed_agents_store::schema::MIGRATIONS;
use std::path::Path;

/// The `server_config` key holding the schema version.
pub const VERSION_KEY: &str = "schema_migration_version";

/// Creates `path` at version `k` with rusqlite only: genesis, migrations 1..=k, the TEXT stamp.
pub fn build_at(path: &Path, k: u32) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    assert_eq!(MIGRATIONS[0].version, 0, "MIGRATIONS[0] is genesis");
    conn.execute_batch(MIGRATIONS[0].sql)
        .unwrap_or_else(|e| panic!("{}: {e}", MIGRATIONS[0].name));
    for (i, m) in MIGRATIONS[1..=k as usize].iter().enumerate() {
        assert_eq!(m.version as usize, i + 1, "{} is out of order", m.name);
        conn.execute_batch(m.sql)
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
    }
    conn.execute(
        "INSERT INTO server_config (key, value) VALUES (?1, ?2)",
        params![VERSION_KEY, k.to_string()],
    )
    .unwrap();
    conn
}

/// The version stamped in the file.
pub fn stamped_version(conn: &Connection) -> String {
    conn.query_row(
        "SELECT CAST(value AS TEXT) FROM server_config WHERE key = ?1",
        [VERSION_KEY],
        |r| r.get(0),
    )
    .expect("the version stamp")
}
