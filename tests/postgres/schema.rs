//! The PostgreSQL schema on a real server: fresh equals migrated at every version, the gate's
//! refusals leave the database untouched, and nodes preparing one database at once install it
//! exactly once.

use seed_agents_codegen::{postgres as dialect, Schema};
use seed_agents_store::postgres::{Database, State};
use seed_agents_store::{schema, Error, Outcome, Refusal};
use support::postgres::{contents, TempDb};

fn model(version: u32) -> Schema {
    dialect::portable(&Schema::from_canonical_json(schema::MODELS[version as usize]).unwrap())
}

fn set_version(client: &mut postgres::Client, version: &str) {
    client
        .execute(
            "INSERT INTO server_config (key, value) VALUES ('schema_migration_version', $1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&version.as_bytes()],
        )
        .unwrap();
}

#[test]
fn a_fresh_install_reads_back_as_the_latest_model() {
    let Some(db) = TempDb::new("fresh_install") else {
        return;
    };
    let mut database = Database::connect(&db.url).unwrap();
    assert_eq!(database.inspect().unwrap(), State::Fresh);
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Fresh {
            version: schema::SCHEMA_VERSION
        }
    );
    assert_eq!(database.structure().unwrap(), model(schema::SCHEMA_VERSION));
    assert_eq!(
        database.inspect().unwrap(),
        State::At(schema::SCHEMA_VERSION)
    );
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Current {
            version: schema::SCHEMA_VERSION
        }
    );
}

/// Genesis at the baseline, then every step one at a time: after each the catalogs read back as
/// that version's model and the gate accepts it at that version; at the end the structure is the
/// fresh install's.
#[test]
fn every_step_from_the_baseline_reads_back_as_its_version_and_ends_at_the_fresh_structure() {
    let Some(fresh) = TempDb::new("steps_fresh") else {
        return;
    };
    let Some(migrated) = TempDb::new("steps_migrated") else {
        return;
    };
    let mut fresh_db = Database::connect(&fresh.url).unwrap();
    fresh_db.prepare().unwrap();

    let mut client = migrated.client();
    let mut database = Database::connect(&migrated.url).unwrap();
    for step in schema::POSTGRES_MIGRATIONS {
        client.batch_execute(step.sql).unwrap_or_else(|e| {
            panic!("{} failed on PostgreSQL: {e}", step.name);
        });
        set_version(&mut client, &step.version.to_string());
        assert_eq!(
            database.structure().unwrap(),
            model(step.version),
            "{}",
            step.name
        );
        assert_eq!(database.inspect().unwrap(), State::At(step.version));
    }
    assert_eq!(database.structure().unwrap(), fresh_db.structure().unwrap());
}

/// The whole upgrade from the baseline as `prepare` runs it: one transaction, rows kept, the
/// data-moving step (0032) filling what its dialect file says.
#[test]
fn prepare_migrates_a_baseline_database_with_rows_in_one_go() {
    let Some(db) = TempDb::new("prepare_migrates") else {
        return;
    };
    let mut client = db.client();
    client
        .batch_execute(schema::POSTGRES_MIGRATIONS[0].sql)
        .unwrap();
    set_version(&mut client, &schema::POSTGRES_BASELINE.to_string());
    client
        .batch_execute(
            "INSERT INTO accounts (id, created_at, updated_at) VALUES ('acct', 1, 1);
             INSERT INTO secrets (id, account_id, name, ciphertext, created_at, updated_at)
                 VALUES ('s1', 'acct', 'token', '\\x00', 1, 1);",
        )
        .unwrap();
    let mut database = Database::connect(&db.url).unwrap();
    assert_eq!(
        database.prepare().unwrap(),
        Outcome::Migrated {
            from: schema::POSTGRES_BASELINE,
            to: schema::SCHEMA_VERSION
        }
    );
    let key: i64 = client
        .query_one("SELECT key_id FROM secrets WHERE id = 's1'", &[])
        .unwrap()
        .get(0);
    assert_eq!(key, 1);
    let provider: String = client
        .query_one("SELECT provider FROM secret_keys WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(provider, "database");
    assert_eq!(database.structure().unwrap(), model(schema::SCHEMA_VERSION));
}

fn refusal(database: &mut Database) -> Refusal {
    match database.inspect() {
        Err(Error::PostgresRefused { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Each refusal, by `inspect` and by `prepare`, leaves every row and every object as it was.
#[test]
fn the_gate_refuses_what_sqlite_refuses_and_changes_nothing() {
    let latest = schema::SCHEMA_VERSION;
    type Case = (&'static str, String, fn(&Refusal) -> bool);
    let cases: Vec<Case> = vec![
        (
            "foreign table",
            "CREATE TABLE notes (id text PRIMARY KEY)".into(),
            |r| matches!(r, Refusal::NoServerConfig { .. }),
        ),
        (
            "no version key",
            "CREATE TABLE server_config (key text PRIMARY KEY, value bytea NOT NULL)".into(),
            |r| matches!(r, Refusal::MissingVersion { .. }),
        ),
        (
            "legacy key",
            "CREATE TABLE server_config (key text PRIMARY KEY, value bytea NOT NULL);
             INSERT INTO server_config VALUES ('schema_version', '\\x3132')"
                .into(),
            |r| matches!(r, Refusal::LegacyVersionKey { value, .. } if value == "12"),
        ),
        (
            "unparseable version",
            "CREATE TABLE server_config (key text PRIMARY KEY, value bytea NOT NULL);
             INSERT INTO server_config VALUES ('schema_migration_version', '\\x7a')"
                .into(),
            |r| matches!(r, Refusal::UnparseableVersion { value, .. } if value == "z"),
        ),
        (
            "before the baseline",
            "CREATE TABLE server_config (key text PRIMARY KEY, value bytea NOT NULL);
             INSERT INTO server_config VALUES ('schema_migration_version', '\\x3132')"
                .into(),
            |r| matches!(r, Refusal::BeforePostgres { found: 12, .. }),
        ),
    ];
    for (what, sql, expected) in cases {
        let Some(db) = TempDb::new("gate_refuses") else {
            return;
        };
        let mut client = db.client();
        client.batch_execute(&sql).unwrap();
        let before = contents(&mut client);
        let mut database = Database::connect(&db.url).unwrap();
        let reason = refusal(&mut database);
        assert!(expected(&reason), "{what}: {reason:?}");
        assert!(matches!(
            database.prepare(),
            Err(Error::PostgresRefused { .. })
        ));
        assert_eq!(
            contents(&mut client),
            before,
            "{what}: the database changed"
        );
    }

    // A store from a newer binary, and one whose structure was changed by hand.
    let Some(db) = TempDb::new("gate_ahead") else {
        return;
    };
    let mut database = Database::connect(&db.url).unwrap();
    database.prepare().unwrap();
    let mut client = db.client();
    set_version(&mut client, &(latest + 1).to_string());
    let before = contents(&mut client);
    assert!(
        matches!(refusal(&mut database), Refusal::VersionAhead { found, .. } if found == latest + 1)
    );
    assert!(database.prepare().is_err());
    assert_eq!(contents(&mut client), before);

    set_version(&mut client, &latest.to_string());
    client.batch_execute("DROP INDEX runs_by_finished").unwrap();
    let before = contents(&mut client);
    let reason = refusal(&mut database);
    let Refusal::StructureMismatch { version, diff, .. } = &reason else {
        panic!("{reason:?}")
    };
    assert_eq!(*version, latest);
    assert!(diff.contains("runs_by_finished"), "{diff}");
    let message = database.prepare().unwrap_err().to_string();
    assert!(message.contains("runs_by_finished"), "{message}");
    assert!(!message.to_lowercase().contains("drop"), "{message}");
    assert_eq!(contents(&mut client), before);
}

/// Four nodes preparing one empty database at once: one installs, the others find it current.
#[test]
fn nodes_preparing_one_database_at_once_install_it_once() {
    let Some(db) = TempDb::new("prepare_race") else {
        return;
    };
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| Database::connect(&db.url).unwrap().prepare().unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let installs = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Fresh { .. }))
        .count();
    assert_eq!(installs, 1, "{outcomes:?}");
    let mut database = Database::connect(&db.url).unwrap();
    assert_eq!(
        database.inspect().unwrap(),
        State::At(schema::SCHEMA_VERSION)
    );
}

#[test]
fn an_unreachable_server_is_reported_as_storage_trouble_naming_the_database() {
    let err = Database::connect("postgres://nobody:secret@127.0.0.1:1/agents").unwrap_err();
    assert_eq!(err.kind(), seed_agents_store::ErrorKind::Storage);
    let message = err.to_string();
    assert!(
        message.contains("postgres://nobody@127.0.0.1:1/agents"),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
    // What the client's own text leaves out: the refused connection beneath it.
    assert!(message.contains("Connection refused"), "{message}");
}

/// What the server answered is in the message: its severity, SQLSTATE and words, not the
/// client's bare "db error".
#[test]
fn the_servers_own_words_are_in_the_message() {
    let Some(admin) = support::postgres::server("servers_own_words") else {
        return;
    };
    let url = support::backend::with_database(&admin, "sa_no_such_database");
    let err = Database::connect(&url).unwrap_err();
    let message = err.to_string();
    assert_eq!(
        err.kind(),
        seed_agents_store::ErrorKind::Storage,
        "{message}"
    );
    assert!(
        message.contains("FATAL 3D000")
            && message.contains("database \"sa_no_such_database\" does not exist"),
        "{message}"
    );
    assert!(!message.contains("db error"), "{message}");
}

/// Text compares byte by byte as on SQLite: a column collated otherwise is a structure the gate
/// refuses, naming the column.
#[test]
fn a_text_column_in_another_collation_is_refused() {
    let Some(db) = TempDb::new("gate_collation") else {
        return;
    };
    let mut database = Database::connect(&db.url).unwrap();
    database.prepare().unwrap();
    db.client()
        .batch_execute("ALTER TABLE sessions ALTER COLUMN title TYPE text COLLATE \"POSIX\"")
        .unwrap();
    let Refusal::StructureMismatch { diff, .. } = refusal(&mut database) else {
        panic!("expected a structure mismatch")
    };
    assert!(
        diff.contains("sessions") && diff.contains("POSIX"),
        "{diff}"
    );
}

/// `set_durability` is the sessions' `synchronous_commit` on PostgreSQL: `off` for Normal, `on`
/// again for Full, on the connections the store hands out; those connections also carry the
/// store's session bounds, JIT off among them.
#[test]
fn durability_is_every_connections_synchronous_commit() {
    use seed_agents_store::{Durability, Query, Store};
    let Some(db) = TempDb::new("durability") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    // Read on a connection the store hands out, through the checked-query runtime's own seam
    // (`Store::select` refuses raw SQL, which means nothing on SQLite).
    let setting = |store: &Store, name: &str| -> String {
        let sql = match name {
            "synchronous_commit" => "SELECT current_setting('synchronous_commit')",
            "jit" => "SELECT current_setting('jit')",
            _ => "SELECT current_setting('lock_timeout')",
        };
        let reading = store.reading().unwrap();
        Query::new("SELECT 1", sql, &[], |row| match row.value(0)? {
            rusqlite::types::ValueRef::Text(t) => Ok(String::from_utf8_lossy(t).into_owned()),
            other => panic!("{other:?}"),
        })
        .fetch_one(&reading)
        .unwrap()
    };
    assert_eq!(setting(&store, "synchronous_commit"), "on");
    store.set_durability(Durability::Normal).unwrap();
    assert_eq!(setting(&store, "synchronous_commit"), "off");
    store.set_durability(Durability::Full).unwrap();
    assert_eq!(setting(&store, "synchronous_commit"), "on");
    // The session bounds every connection is opened with; JIT never compiles a store statement.
    assert_eq!(setting(&store, "jit"), "off");
    assert_eq!(setting(&store, "lock_timeout"), "10s");
}

/// The CLI on a PostgreSQL database, named by `--db-url` or by `SEED_AGENTS_DB_URL`: `status`
/// judges without writing, `open` installs, and a database from a newer binary is refused with
/// exit 3 and left as it was.
#[test]
fn the_cli_takes_a_database_url_from_the_flag_or_the_environment() {
    let Some(db) = TempDb::new("cli_db_url") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // By the environment variable alone.
    let by_env = |args: &[&str]| {
        support::cli::command(dir.path())
            .args(args)
            .env("SEED_AGENTS_DB_URL", &db.url)
            .output()
            .unwrap()
    };
    let out = support::cli::run(dir.path(), &["--json", "--db-url", &db.url, "status"], None);
    assert!(out.status.success(), "{}", support::cli::stderr(&out));
    assert_eq!(support::cli::json(&out)["state"], "empty");
    assert_eq!(
        Database::connect(&db.url).unwrap().inspect().unwrap(),
        State::Fresh
    );

    let out = by_env(&["open"]);
    assert!(out.status.success(), "{}", support::cli::stderr(&out));
    assert!(
        support::cli::stdout(&out).contains(&format!(
            "fresh install at version {}",
            schema::SCHEMA_VERSION
        )),
        "{}",
        support::cli::stdout(&out)
    );
    let out = by_env(&["--json", "status"]);
    let doc = support::cli::json(&out);
    assert_eq!(
        (doc["state"].as_str(), doc["version"].as_u64()),
        (Some("verified"), Some(u64::from(schema::SCHEMA_VERSION)))
    );
    // No SQLite file was made on the way.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let mut client = db.client();
    set_version(&mut client, "99");
    let before = contents(&mut client);
    let out = support::cli::run(dir.path(), &["--db-url", &db.url, "open"], None);
    assert_eq!(out.status.code(), Some(3), "{}", support::cli::stderr(&out));
    assert!(
        support::cli::stderr(&out).contains("newer than this binary"),
        "{}",
        support::cli::stderr(&out)
    );
    assert_eq!(contents(&mut client), before);
}

/// What the translation rewrites to keep SQLite's meaning, run on both backends over the values
/// where the dialects part: `LIKE` folds ASCII case only and escapes nothing, `lower`/`upper`
/// fold ASCII letters only, scalar `max`/`min` are NULL when an argument is. Every answer of the
/// translated statement on PostgreSQL equals SQLite's.
#[test]
fn translated_statements_answer_as_sqlite_does() {
    let Some(db) = TempDb::new("translated_statements") else {
        return;
    };
    let mut pg = db.client();
    let lite = rusqlite::Connection::open_in_memory().unwrap();
    // id, title, a, b
    type Row<'a> = (&'a str, Option<&'a str>, Option<i64>, Option<i64>);
    let rows: [Row<'_>; 8] = [
        ("1", Some("Hello"), Some(1), Some(2)),
        ("2", Some("hello"), Some(5), None),
        ("3", Some("HÉLLO"), None, Some(3)),
        ("4", Some("hÉllo"), None, None),
        ("5", Some("a_b"), Some(-1), Some(-2)),
        ("6", Some("axb"), Some(7), Some(7)),
        ("7", Some("a\\b"), Some(0), Some(9)),
        ("8", None, Some(3), Some(1)),
    ];
    pg.batch_execute("CREATE TABLE t (id text COLLATE \"C\" PRIMARY KEY, title text COLLATE \"C\", a bigint, b bigint)")
        .unwrap();
    lite.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY, title TEXT, a INTEGER, b INTEGER)")
        .unwrap();
    for (id, title, a, b) in rows {
        pg.execute(
            "INSERT INTO t VALUES ($1, $2, $3, $4)",
            &[&id, &title, &a, &b],
        )
        .unwrap();
        lite.execute("INSERT INTO t VALUES (?1, ?2, ?3, ?4)", (id, title, a, b))
            .unwrap();
    }
    let none = Default::default();
    // Each answer row as text, NULL as "-".
    let on_sqlite = |sql: &str, param: Option<&str>| -> Vec<String> {
        let mut stmt = lite.prepare(sql).unwrap();
        let columns = stmt.column_count();
        let params: Vec<&dyn rusqlite::ToSql> = param.iter().map(|p| p as _).collect();
        stmt.query_map(params.as_slice(), |r| {
            Ok((0..columns)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "-".to_string(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    v => String::from_utf8_lossy(v.as_bytes().unwrap()).into_owned(),
                })
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let mut on_postgres = |sql: &str, param: Option<&str>| -> Vec<String> {
        let translated = dialect::translate(sql, usize::from(param.is_some()), &none).unwrap();
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
            param.iter().map(|p| p as _).collect();
        pg.query(&translated, &params)
            .unwrap_or_else(|e| panic!("{translated}: {e}"))
            .iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| {
                        match r.columns()[i].type_() {
                            &postgres::types::Type::INT8 => {
                                r.get::<_, Option<i64>>(i).map(|n| n.to_string())
                            }
                            _ => r.get::<_, Option<String>>(i),
                        }
                        .unwrap_or_else(|| "-".into())
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    };
    let like = "SELECT id FROM t WHERE title LIKE ?1 ORDER BY id";
    let not_like = "SELECT id FROM t WHERE title NOT LIKE ?1 ORDER BY id";
    for pattern in [
        "hello", "HELLO", "h%", "hÉllo", "hé%", "a_b", "a\\_b", "a\\b", "%\\%", "_",
    ] {
        for sql in [like, not_like] {
            assert_eq!(
                on_postgres(sql, Some(pattern)),
                on_sqlite(sql, Some(pattern)),
                "{sql} with {pattern:?}"
            );
        }
    }
    for sql in [
        "SELECT id, lower(title), upper(title) FROM t ORDER BY id",
        "SELECT id, max(a, b), min(a, b), max(a, 2, b) FROM t ORDER BY id",
        "SELECT max(a), min(b), count(*) FROM t",
        "SELECT id FROM t WHERE title LIKE 'A%' ESCAPE '!' ORDER BY id",
    ] {
        assert_eq!(on_postgres(sql, None), on_sqlite(sql, None), "{sql}");
    }
}

/// Every `query!`/`query_as!` statement in `source`, as written (the first string literal of the
/// macro's arguments).
fn checked_statements(source: &str) -> Vec<String> {
    use proc_macro2::{TokenStream, TokenTree};
    fn walk(tokens: TokenStream, out: &mut Vec<String>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            let TokenTree::Group(g) = t else { continue };
            let is_macro = i >= 2
                && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!')
                && matches!(&tokens[i - 2], TokenTree::Ident(id)
                    if id == "query" || id == "query_as");
            if is_macro {
                let sql = g.stream().into_iter().find_map(|t| match t {
                    TokenTree::Literal(l) => syn::parse_str::<syn::LitStr>(&l.to_string()).ok(),
                    _ => None,
                });
                out.extend(sql.map(|l| l.value()));
            }
            walk(g.stream(), out);
        }
    }
    let mut out = Vec::new();
    walk(source.parse().expect("the store's sources lex"), &mut out);
    out
}

/// Prepares `pg` as the store does: a parameter the server cannot type from the statement alone
/// (`$2 IS NULL OR id = $2`, a recursive query's seed) is typed by the value bound to it, which
/// is text wherever the store's statements leave one open.
fn prepare(client: &mut postgres::Client, pg: &str) -> Result<(), String> {
    let mut types = Vec::new();
    loop {
        let e = match client.prepare_typed(pg, &types) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let message = e
            .as_db_error()
            .map_or(e.to_string(), |d| d.message().to_string());
        let open = message
            .strip_prefix("could not determine data type of parameter $")
            .and_then(|n| n.parse::<usize>().ok());
        match open {
            Some(n)
                if types
                    .get(n - 1)
                    .is_none_or(|t| *t == postgres::types::Type::UNKNOWN) =>
            {
                types.resize(types.len().max(n), postgres::types::Type::UNKNOWN);
                types[n - 1] = postgres::types::Type::TEXT;
            }
            _ => return Err(message),
        }
    }
}

/// The `.rs` files under `dir`, recursively, sorted.
fn sources(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The store's files (under `store/`) whose checked statements run only on a SQLite store: the
/// gate and the planner statistics read SQLite's own catalog, and the migrator stamps SQLite's
/// version its own way (PostgreSQL's are in `store/postgres/`).
const SQLITE_ONLY: &[&str] = &[
    "sqlite/gate.rs",
    "sqlite/statistics.rs",
    "sqlite/migrate.rs",
];

/// Every checked statement of the store (each `query!`/`query_as!` in `store/`), translated as
/// the macros translate it, is prepared on a live server holding the newest schema: the tables,
/// columns and types it names exist there and line up, which the compile-time check cannot see.
#[test]
fn every_checked_statement_of_the_store_prepares_on_postgres() {
    let Some(db) = TempDb::new("checked_statements") else {
        return;
    };
    drop(seed_agents_store::Store::open(&db.url).unwrap());
    let latest =
        Schema::from_canonical_json(schema::MODELS[schema::SCHEMA_VERSION as usize]).unwrap();
    let non_null = dialect::non_null_columns(latest.tables.values());
    let mut client = db.client();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("store");
    let (mut prepared, mut failures) = (0, Vec::new());
    for file in sources(&root) {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if SQLITE_ONLY.contains(&relative.as_str()) {
            continue;
        }
        for sql in checked_statements(&std::fs::read_to_string(&file).unwrap()) {
            // The macro knows the parameter count; the translation accepts exactly that one.
            let Some(pg) = (0..=64).find_map(|n| dialect::translate(&sql, n, &non_null).ok())
            else {
                failures.push(format!("{}: no translation: {sql}", file.display()));
                continue;
            };
            match prepare(&mut client, &pg) {
                Ok(()) => prepared += 1,
                Err(e) => failures.push(format!("{}: {e}\n  {pg}", file.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(prepared > 100, "only {prepared} statements found");
    support::backend::say(&format!(
        "prepared {prepared} checked statements of the store on PostgreSQL"
    ));
}

/// Every generated query helper's statement (`schema::HELPER_STATEMENTS`, rendered for
/// PostgreSQL at build time) is prepared on a live server holding the newest schema, and each
/// has the parameters its SQLite text has.
#[test]
fn every_generated_helper_prepares_on_postgres() {
    let Some(db) = TempDb::new("helper_statements") else {
        return;
    };
    drop(seed_agents_store::Store::open(&db.url).unwrap());
    let mut client = db.client();
    let (mut prepared, mut failures) = (0, Vec::new());
    for (table, statements) in schema::HELPER_STATEMENTS {
        for (helper, sql, pg) in *statements {
            // The helpers number their parameters (`?1`, `?2`, ...).
            let wanted = sql
                .split('?')
                .skip(1)
                .filter_map(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<usize>().ok()
                })
                .max()
                .unwrap_or(0);
            match client.prepare(pg) {
                Ok(statement) if statement.params().len() == wanted => prepared += 1,
                Ok(statement) => failures.push(format!(
                    "{table}::{helper}: {} parameters on PostgreSQL, {wanted} on SQLite: {pg}",
                    statement.params().len()
                )),
                Err(e) => failures.push(format!("{table}::{helper}: {e:?}\n  {pg}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(prepared > 150, "only {prepared} helpers found");
    support::backend::say(&format!(
        "prepared {prepared} generated helpers of the store on PostgreSQL"
    ));
}
