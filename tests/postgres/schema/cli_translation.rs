//! The CLI on a PostgreSQL database, and translated statements that answer as SQLite does.

use super::*;

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
