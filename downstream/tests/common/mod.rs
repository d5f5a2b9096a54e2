//! What the extension tests share: both backends, `server_config` keys set and read as
//! another program would, and a database left by the previous store and extension releases.

use std::path::Path;
use support::postgres::TempDb;

/// Runs `test` on a fresh SQLite file, then on a fresh PostgreSQL database when there is a
/// server.
pub fn on_both(name: &str, test: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    test(&dir.path().join("agents.sqlite"));
    if let Some(db) = TempDb::new(name) {
        test(Path::new(&db.url));
    }
}

pub fn is_postgres(location: &Path) -> bool {
    location.to_str().is_some_and(|l| l.starts_with("postgres"))
}

/// Sets `key` in `server_config` as another program would.
pub fn set_key(location: &Path, key: &str, value: &str) {
    if is_postgres(location) {
        let mut client = support::backend::connect(location.to_str().unwrap());
        client
            .execute(
                "INSERT INTO server_config (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value.as_bytes()],
            )
            .unwrap();
    } else {
        support::backend::exec(
            location,
            "INSERT OR REPLACE INTO server_config (key, value) VALUES (?1, CAST(?2 AS TEXT))",
            &[&key, &value],
        );
    }
}

/// The text stored under `key`.
pub fn key(location: &Path, key: &str) -> String {
    if is_postgres(location) {
        let mut client = support::backend::connect(location.to_str().unwrap());
        let row = client
            .query_one("SELECT value FROM server_config WHERE key = $1", &[&key])
            .unwrap();
        String::from_utf8(row.get::<_, Vec<u8>>(0)).unwrap()
    } else {
        support::backend::query_strings(
            location,
            &format!("SELECT CAST(value AS TEXT) FROM server_config WHERE key = '{key}'"),
        )
        .remove(0)
    }
}

/// The store one version back and the extension `name` at its genesis (`sqlite` or
/// `postgres`, its first migration in each dialect), written by hand as the previous release
/// of each would have left them.
pub fn previous_releases(location: &Path, name: &str, sqlite: &str, postgres: &str) {
    let before = seed_agents_store::schema::SCHEMA_VERSION - 1;
    if is_postgres(location) {
        let mut client = support::backend::connect(location.to_str().unwrap());
        for step in seed_agents_store::schema::POSTGRES_MIGRATIONS
            .iter()
            .filter(|m| m.version <= before)
        {
            client.batch_execute(step.sql).unwrap();
        }
        client.batch_execute(postgres).unwrap();
        drop(client);
        set_key(location, "schema_migration_version", &before.to_string());
    } else {
        let conn = support::old_versions::build_at(location, before);
        conn.execute_batch(sqlite).unwrap();
    }
    set_key(
        location,
        &seed_agents_store::extension_version_key(name),
        "0",
    );
}
