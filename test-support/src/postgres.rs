//! A real PostgreSQL server for the tests of the PostgreSQL backend, and a fresh database on it
//! per test.
//!
//! The server is named by `SEED_AGENTS_TEST_POSTGRES` (a URL whose user may create databases,
//! e.g. `postgres://postgres@127.0.0.1:5432/postgres`); `.ci/run` starts one and sets it. Without
//! it the PostgreSQL tests say that they were skipped and how to run them, and pass, so the
//! SQLite half runs anywhere; with `SEED_AGENTS_REQUIRE_POSTGRES=1` (CI) a missing server fails.

use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the server.
pub const SERVER_ENV: &str = "SEED_AGENTS_TEST_POSTGRES";

/// The admin URL, or `None` (after saying so) when no server is configured.
pub fn server(test: &str) -> Option<String> {
    match std::env::var(SERVER_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("SEED_AGENTS_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("{test}: SEED_AGENTS_REQUIRE_POSTGRES=1 but {SERVER_ENV} is not set");
            }
            crate::backend::say(&format!(
                "SKIPPED {test}: no PostgreSQL server. Set {SERVER_ENV}=postgres://USER@HOST:PORT/postgres \
                 (a user that may create databases) to run it, or run the tests under \
                 scripts/with-postgres.sh, which starts one (see the README)."
            ));
            None
        }
    }
}

/// A database created for one test and dropped when it goes out of scope.
pub struct TempDb {
    admin: String,
    /// The database's name.
    pub name: String,
    /// Its URL.
    pub url: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl TempDb {
    /// A new, empty database on the server, or `None` when there is no server.
    pub fn new(test: &str) -> Option<TempDb> {
        let admin = server(test)?;
        let name = format!(
            "sa_{}_{}_{}",
            test.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(30)
                .collect::<String>()
                .to_ascii_lowercase(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = crate::backend::connect(&admin);
        // Each on its own: a multi-statement batch would run in one transaction, which
        // neither statement may.
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let url = crate::backend::with_database(&admin, &name);
        Some(TempDb { admin, name, url })
    }

    /// A plain client on this database, for arranging and checking what a test needs.
    pub fn client(&self) -> postgres::Client {
        crate::backend::connect(&self.url)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Every row of every table in the public schema, and the structure, as text: what a test
/// compares to show a database was left untouched.
pub fn contents(client: &mut postgres::Client) -> String {
    let mut out = String::new();
    let tables = client
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() ORDER BY 1",
            &[],
        )
        .unwrap();
    for t in tables {
        let table: String = t.get(0);
        out.push_str(&format!("table {table}\n"));
        let rows = client
            .query(
                &format!("SELECT CAST(t AS text) FROM {table} t ORDER BY 1"),
                &[],
            )
            .unwrap();
        for r in rows {
            out.push_str(&format!("  {}\n", r.get::<_, String>(0)));
        }
    }
    let defs = client
        .query(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1",
            &[],
        )
        .unwrap();
    for d in defs {
        out.push_str(&format!("{}\n", d.get::<_, String>(0)));
    }
    out
}
