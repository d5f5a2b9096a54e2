//! The gate on PostgreSQL: refusals that change nothing, nodes installing at once, an unreachable
//! server, the server's own words, collations, and durability.

use super::*;

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
