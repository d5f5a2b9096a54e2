//! The backend the domain tests run on: SQLite files by default, or PostgreSQL databases with
//! `SEED_AGENTS_TEST_BACKEND=postgres` (and `SEED_AGENTS_TEST_POSTGRES` naming the server). One
//! suite, two backends: a test opens its store at [`location`], which is a file in its
//! temporary directory or a database made for that file on the server.
//!
//! The databases are named after the test process; a later run drops those of processes that
//! have ended (the throwaway server of `scripts/with-postgres.sh` goes away whole anyway).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use seed_agents_store::clock::ManualClock;
use seed_agents_store::Store;

/// The time a fixture's manual clock starts at (epoch milliseconds).
pub const T0: i64 = 1_764_000_000_000;

/// A fresh store at `dir/db.sqlite` ([`location`]: a file, or a database on the server) on a
/// manual clock at [`T0`], and the clock.
pub fn open(dir: &Path) -> (Store, ManualClock) {
    let clock = ManualClock::new(T0);
    let store = Store::open_with_clock(location(dir, "db.sqlite"), Arc::new(clock.clone()))
        .expect("open a fresh store");
    (store, clock)
}

/// The variable choosing the backend.
pub const BACKEND_ENV: &str = "SEED_AGENTS_TEST_BACKEND";

/// Whether this run is on PostgreSQL.
pub fn postgres() -> bool {
    std::env::var(BACKEND_ENV).as_deref() == Ok("postgres")
}

/// Writes `line` to the process's stderr itself: the test harness captures what `eprintln!`
/// writes (showing it only for a failing test), and a skip must be seen in a passing run too.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Says that `test` does not run on this backend, and why, when the run is on PostgreSQL.
pub fn skip_on_postgres(test: &str, why: &str) -> bool {
    if postgres() {
        say(&format!("SKIPPED {test} on PostgreSQL: {why}"));
    }
    postgres()
}

/// Says, once per test binary, that this run is the SQLite half of its suite and how to run the
/// PostgreSQL half.
fn say_sqlite_half() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let suite = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .map(|s| {
                s.rsplit_once('-')
                    .map_or(s.clone(), |(name, _)| name.to_string())
            })
            .unwrap_or_else(|| "this suite".into());
        let why = if std::env::var("SEED_AGENTS_TEST_POSTGRES").is_ok_and(|v| !v.is_empty()) {
            "it runs as a pass of its own"
        } else {
            "no PostgreSQL server"
        };
        say(&format!(
            "SKIPPED the PostgreSQL half of {suite} ({why}); run it with \
             SEED_AGENTS_TEST_BACKEND=postgres scripts/with-postgres.sh scripts/test-postgres.sh \
             (see the README's \"PostgreSQL\")"
        ));
    });
}

static DATABASES: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Where the store of `dir/file` lives: that path on SQLite, or the URL of a database made for
/// it (once; the same path gives the same database again).
pub fn location(dir: &Path, file: &str) -> PathBuf {
    let path = dir.join(file);
    if !postgres() {
        say_sqlite_half();
        return path;
    }
    let mut databases = DATABASES.lock().unwrap_or_else(|e| e.into_inner());
    let map = databases.get_or_insert_with(|| {
        drop_ended();
        HashMap::new()
    });
    if let Some(url) = map.get(&path) {
        return PathBuf::from(url);
    }
    let admin = admin_url();
    let name = format!(
        "sa_t_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut client = connect(&admin);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let url = with_database(&admin, &name);
    map.insert(path, url.clone());
    PathBuf::from(url)
}

/// A plain client on `url`, waiting up to 30 s while the server says it cannot take one now
/// (starting, recovering, or out of connection slots); a failure panics with everything the
/// server said, which the client's own `Display` ("db error") leaves out.
pub fn connect(url: &str) -> postgres::Client {
    use postgres::error::SqlState;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match postgres::Client::connect(url, postgres::NoTls) {
            Ok(client) => return client,
            Err(e)
                if matches!(
                    e.code(),
                    Some(&SqlState::CANNOT_CONNECT_NOW | &SqlState::TOO_MANY_CONNECTIONS)
                ) && std::time::Instant::now() < deadline =>
            {
                eprintln!("{url}: {e:?}; trying again");
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => match e.as_db_error() {
                Some(db) => panic!(
                    "{url}: {} {}: {}",
                    db.severity(),
                    db.code().code(),
                    db.message()
                ),
                None => panic!("{url}: {e:?}"),
            },
        }
    }
}

fn admin_url() -> String {
    std::env::var("SEED_AGENTS_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!("{BACKEND_ENV}=postgres needs SEED_AGENTS_TEST_POSTGRES naming a server (see the README)")
    })
}

/// Drops the test databases of processes that are no longer running.
fn drop_ended() {
    let mut client = connect(&admin_url());
    let Ok(rows) = client.query(
        "SELECT datname::text FROM pg_database WHERE datname LIKE 'sa\\_t\\_%'",
        &[],
    ) else {
        return;
    };
    for row in rows {
        let name: String = row.get(0);
        let pid = name.split('_').nth(2).unwrap_or("");
        if !Path::new("/proc").join(pid).exists() {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// `url` with its database replaced by `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    format!("{host}/{name}{query}")
}

/// Runs one statement written for SQLite (`?N` parameters) on the store at `location`, on
/// whichever backend it is: for rows a test arranges by hand. On PostgreSQL the statement is
/// translated as the store's own are (`seed_agents_codegen::postgres::translate`), and each
/// value is bound as the type the server gives its parameter.
pub fn exec(location: &Path, sql: &str, params: &[&dyn rusqlite::ToSql]) {
    use rusqlite::types::{ToSqlOutput, Value, ValueRef};
    let url = location.to_str().unwrap_or("");
    if !url.starts_with("postgres") {
        let conn = rusqlite::Connection::open(location).expect("raw connection");
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        conn.execute(sql, params).unwrap();
        return;
    }
    let pg =
        seed_agents_codegen::postgres::translate(sql, params.len(), &Default::default()).unwrap();
    let mut client = connect(url);
    let statement = client.prepare(&pg).unwrap();
    let mut values: Vec<Box<dyn postgres::types::ToSql + Sync>> = Vec::new();
    for (param, ty) in params.iter().zip(statement.params()) {
        let out = param.to_sql().unwrap();
        let value = match &out {
            ToSqlOutput::Borrowed(v) => *v,
            ToSqlOutput::Owned(v) => ValueRef::from(v),
            _ => panic!("a value the tests do not bind"),
        };
        let owned = Value::try_from(value).expect("text the tests bind is UTF-8");
        use postgres::types::Type;
        values.push(match (owned, ty) {
            (Value::Null, t) if *t == Type::INT8 => Box::new(None::<i64>),
            (Value::Null, t) if *t == Type::BYTEA => Box::new(None::<Vec<u8>>),
            (Value::Null, _) => Box::new(None::<String>),
            (Value::Integer(i), t) if *t == Type::INT4 => Box::new(i as i32),
            (Value::Integer(i), _) => Box::new(i),
            (Value::Real(r), _) => Box::new(r),
            (Value::Text(s), _) => Box::new(s),
            (Value::Blob(b), _) => Box::new(b),
        });
    }
    let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = values.iter().map(|v| &**v).collect();
    client.execute(&statement, &refs).unwrap();
}

/// The integer the SQLite statement `sql` (no parameters) selects, from the store at
/// `location`, on whichever backend it is.
pub fn query_i64(location: &Path, sql: &str) -> i64 {
    let url = location.to_str().unwrap_or("");
    if !url.starts_with("postgres") {
        let conn = rusqlite::Connection::open(location).expect("raw connection");
        return conn.query_row(sql, [], |r| r.get(0)).unwrap();
    }
    let pg = seed_agents_codegen::postgres::translate(sql, 0, &Default::default()).unwrap();
    let mut client = connect(url);
    client.query_one(&pg, &[]).unwrap().get(0)
}

/// The text column the SQLite statement `sql` (no parameters) selects, row by row, from the
/// store at `location`, on whichever backend it is.
pub fn query_strings(location: &Path, sql: &str) -> Vec<String> {
    let url = location.to_str().unwrap_or("");
    if !url.starts_with("postgres") {
        let conn = rusqlite::Connection::open(location).expect("raw connection");
        let mut stmt = conn.prepare(sql).unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        return rows.collect::<rusqlite::Result<_>>().unwrap();
    }
    let pg = seed_agents_codegen::postgres::translate(sql, 0, &Default::default()).unwrap();
    let mut client = connect(url);
    client
        .query(&pg, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Every row of every table not starting with `skip` (and none of SQLite's own), each row
/// rendered as text and the rows sorted: what a test compares before and after calls that must
/// change nothing. The rendering is each backend's own, so compare dumps of one backend only.
pub fn dump(location: &Path, skip: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    use rusqlite::types::ValueRef;
    let mut out = std::collections::BTreeMap::new();
    let url = location.to_str().unwrap_or("");
    if url.starts_with("postgres") {
        let mut client = connect(url);
        let tables = client
            .query(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = current_schema() ORDER BY 1",
                &[],
            )
            .unwrap();
        for t in tables {
            let table: String = t.get(0);
            if table.starts_with(skip) {
                continue;
            }
            let mut rows: Vec<String> = client
                .query(&format!("SELECT CAST(t AS text) FROM \"{table}\" t"), &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            rows.sort();
            out.insert(table, rows);
        }
        return out;
    }
    let conn = rusqlite::Connection::open(location).expect("raw connection");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    for table in tables.into_iter().filter(|t| !t.starts_with(skip)) {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |r| {
                let mut cells = Vec::with_capacity(columns);
                for i in 0..columns {
                    cells.push(match r.get_ref(i)? {
                        ValueRef::Null => "NULL".to_owned(),
                        ValueRef::Integer(v) => v.to_string(),
                        ValueRef::Real(v) => format!("{v:?}"),
                        ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                        ValueRef::Blob(b) => format!("x'{}'", hex::encode(b)),
                    });
                }
                Ok(cells.join("|"))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        rows.sort();
        out.insert(table, rows);
    }
    out
}
