//! What the PostgreSQL benches share: the server they run against and fresh databases on it.

/// The server's admin URL: `SEED_AGENTS_BENCH_POSTGRES`, else `SEED_AGENTS_TEST_POSTGRES`.
pub fn server() -> Option<String> {
    ["SEED_AGENTS_BENCH_POSTGRES", "SEED_AGENTS_TEST_POSTGRES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
}

pub use support::backend::with_database;

/// A fresh, empty database `name` on the server at `admin`; its URL.
#[allow(dead_code)] // not every bench makes its databases afresh
pub fn fresh_database(admin: &str, name: &str) -> String {
    let mut client = postgres::Client::connect(admin, postgres::NoTls).unwrap();
    // One statement each: a multi-statement batch runs as one transaction, which neither may.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        client.batch_execute(&sql).unwrap();
    }
    with_database(admin, name)
}
