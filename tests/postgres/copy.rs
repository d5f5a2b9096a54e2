//! `copy` from SQLite onto a real PostgreSQL server: every row of a TypeScript-written store
//! arrives with its bytes, counts and checksums verified; a non-empty target is refused; a value
//! the target cannot hold stops the copy with nothing written.

use seed_agents_store::postgres::{copy, Database, State};
use seed_agents_store::{schema, Error, Store};
use std::path::{Path, PathBuf};
use support::postgres::{contents, TempDb};

/// The TypeScript server's file as it wrote it (version 11), copied into `dir`.
fn ts_file(dir: &Path) -> PathBuf {
    let path = dir.join("agents.sqlite");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ts-server-v11.sqlite"
        ),
        &path,
    )
    .unwrap();
    path
}

/// The TypeScript server's file, migrated to this binary's version in `dir`.
fn ts_store(dir: &Path) -> PathBuf {
    let path = ts_file(dir);
    drop(Store::open(&path).unwrap());
    path
}

/// Every table's row count on PostgreSQL equals `counts`.
fn assert_counts(client: &mut postgres::Client, counts: &[(&str, i64)]) {
    for (table, n) in counts {
        let arrived: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(arrived, *n, "{table}");
    }
}

/// Every value of `table` on SQLite, as text comparable with PostgreSQL's (blobs and text in
/// hex), sorted.
fn sqlite_rows(path: &Path, table: &str, columns: &[&str]) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let select = columns
        .iter()
        .map(|c| format!("CASE WHEN typeof({c}) IN ('blob', 'text') THEN hex({c}) ELSE CAST({c} AS TEXT) END"))
        .collect::<Vec<_>>()
        .join(" || '|' || ");
    let mut stmt = conn
        .prepare(&format!("SELECT COALESCE({select}, 'NULL') FROM {table}"))
        .unwrap();
    let mut rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_typescript_store_arrives_whole_with_its_bytes() {
    let Some(db) = TempDb::new("copy_whole") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    let counts = Store::open_read_only(&path)
        .unwrap()
        .table_counts()
        .unwrap();
    assert!(counts.iter().map(|(_, n)| n).sum::<i64>() > 0);

    let report = copy(&path, &db.url).unwrap();
    assert_eq!(report.tables.len(), counts.len());
    for ((table, n), copied) in counts.iter().zip(&report.tables) {
        assert_eq!(*table, copied.table);
        assert_eq!(*n as u64, copied.rows, "{table}");
    }
    let mut client = db.client();
    assert_counts(&mut client, &counts);
    // Bytes, not just counts: the version key (TEXT in a BLOB column) and every event's CBOR.
    let version: Vec<u8> = client
        .query_one(
            "SELECT value FROM server_config WHERE key = 'schema_migration_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(version, schema::SCHEMA_VERSION.to_string().into_bytes());
    let mut events: Vec<String> = client
        .query(
            "SELECT upper(encode(convert_to(id, 'UTF8'), 'hex')) || '|' || upper(encode(event_cbor, 'hex')) \
             FROM session_events",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    events.sort();
    assert_eq!(
        events,
        sqlite_rows(&path, "session_events", &["id", "event_cbor"])
    );
    assert!(!events.is_empty());
    assert_eq!(
        Database::connect(&db.url).unwrap().inspect().unwrap(),
        State::At(schema::SCHEMA_VERSION)
    );
}

/// The TypeScript server's file as it is, at version 11: what arrives is the store as migrating
/// it gives, and the file (and its directory) is left byte for byte as it was.
#[test]
fn a_store_behind_this_version_arrives_migrated_and_the_file_is_left_as_it_was() {
    let Some(db) = TempDb::new("copy_behind") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_file(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let files = listing();

    let report = copy(&path, &db.url).unwrap();
    assert_eq!(report.source_version, 11);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(listing(), files);

    let migrated = tempfile::tempdir().unwrap();
    let counts = Store::open_read_only(ts_store(migrated.path()))
        .unwrap()
        .table_counts()
        .unwrap();
    let mut client = db.client();
    assert_counts(&mut client, &counts);
    assert_eq!(
        Database::connect(&db.url).unwrap().inspect().unwrap(),
        State::At(schema::SCHEMA_VERSION)
    );
}

/// A file the gate refuses (one from a newer binary, say) is refused by the copy too, with
/// nothing written to either side.
#[test]
fn a_source_the_gate_refuses_is_not_copied() {
    let Some(db) = TempDb::new("copy_refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE server_config SET value = '99' WHERE key = 'schema_migration_version'",
            [],
        )
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let err = copy(&path, &db.url).unwrap_err();
    assert!(matches!(err, Error::Refused { .. }), "{err:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(
        Database::connect(&db.url).unwrap().inspect().unwrap(),
        State::Fresh
    );
}

/// The CLI on the version-11 file says that it copied a migrated snapshot, and removes that
/// snapshot from the temporary directory.
#[test]
fn the_cli_copies_a_file_behind_and_leaves_no_snapshot_behind() {
    let Some(db) = TempDb::new("copy_cli_behind") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = ts_file(dir.path());
    let out = support::cli::command(dir.path())
        .args(["copy", "--from", path.to_str().unwrap(), "--to", &db.url])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = support::cli::stdout(&out);
    assert!(out.status.success(), "{}", support::cli::stderr(&out));
    assert!(
        stdout.contains(&format!(
            "at version 11: a private snapshot of it was migrated to {}",
            schema::SCHEMA_VERSION
        )),
        "{stdout}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// After the copy the PostgreSQL store answers as the SQLite one does: the same events with the
/// same bytes, and the next append takes the next seq on both.
#[test]
fn the_copied_store_serves_the_typescript_servers_log_and_continues_it() {
    let Some(db) = TempDb::new("copy_serves") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    copy(&path, &db.url).unwrap();
    let sqlite = Store::open(&path).unwrap();
    let postgres = Store::open(&db.url).unwrap();
    let bytes = |store: &Store| -> Vec<(i64, Vec<u8>)> {
        store
            .events_after("acct-1", "sess-1", 0, None)
            .unwrap()
            .into_iter()
            .map(|r| (r.seq, r.event_cbor.as_bytes().to_vec()))
            .collect()
    };
    let replayed = bytes(&sqlite);
    assert!(!replayed.is_empty());
    assert_eq!(bytes(&postgres), replayed);
    let event = seed_agents_store::payload::MessageEvent::user("after the move").into();
    let next = replayed.last().unwrap().0 + 1;
    assert_eq!(
        postgres
            .append_event("acct-1", "sess-1", &event)
            .unwrap()
            .seq,
        next
    );
    assert_eq!(
        sqlite.append_event("acct-1", "sess-1", &event).unwrap().seq,
        next
    );
    assert_eq!(bytes(&postgres), bytes(&sqlite));
}

#[test]
fn a_target_with_rows_is_refused_and_left_as_it_was() {
    let Some(db) = TempDb::new("copy_not_empty") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    copy(&path, &db.url).unwrap();
    let mut client = db.client();
    let before = contents(&mut client);
    let err = copy(&path, &db.url).unwrap_err();
    let Error::CopyTargetNotEmpty { tables, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        tables.iter().any(|t| t.starts_with("accounts")),
        "{tables:?}"
    );
    assert_eq!(err.kind(), seed_agents_store::ErrorKind::Conflict);
    assert_eq!(contents(&mut client), before);
}

/// A text with a NUL byte in `server_config`, which is copied after the tables before it in name
/// order: the copy stops naming the row, and the target is as empty as before (not even the
/// schema stays).
#[test]
fn a_value_the_target_cannot_hold_stops_the_copy_and_nothing_arrives() {
    let Some(db) = TempDb::new("copy_bad_value") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO server_config (key, value) VALUES ('bad' || char(0) || 'key', x'00')",
            [],
        )
        .unwrap();
    let err = copy(&path, &db.url).unwrap_err();
    let Error::CopyValue { table, column, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((table.as_str(), column.as_str()), ("server_config", "key"));
    assert!(err.to_string().contains("NUL"), "{err}");
    assert_eq!(
        Database::connect(&db.url).unwrap().inspect().unwrap(),
        State::Fresh
    );
}

#[test]
fn the_cli_copies_and_reports_every_table() {
    let Some(db) = TempDb::new("copy_cli") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = ts_store(dir.path());
    let from = path.to_str().unwrap();
    let out = support::cli::run(
        dir.path(),
        &["--json", "copy", "--from", from, "--to", &db.url],
        None,
    );
    assert!(out.status.success(), "{}", support::cli::stderr(&out));
    let doc = support::cli::json(&out);
    let tables = doc["tables"].as_array().unwrap();
    assert_eq!(tables.len(), schema::TABLES.len());
    assert!(tables
        .iter()
        .all(|t| t["checksum"].as_str().unwrap().len() == 64));
    assert!(
        doc["to"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{}", db.name)),
        "{doc}"
    );

    let again = support::cli::run(dir.path(), &["copy", "--from", from, "--to", &db.url], None);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        support::cli::stderr(&again).contains("not empty"),
        "{}",
        support::cli::stderr(&again)
    );
}
