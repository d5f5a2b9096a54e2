//! 3. The TypeScript server's file

use super::*;

#[test]
fn the_typescript_servers_version_11_file_upgrades_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("agents.sqlite");
    std::fs::copy(TS_FIXTURE, &path).unwrap();

    let before = {
        let conn = Connection::open(&path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal", "the fixture is a WAL-mode file");
        assert_eq!(version_stamp(&conn), text("11"));
        let before = snapshot(&conn);
        conn.close().unwrap();
        before
    };
    // The fixture holds what the assertions below rely on.
    let total: usize = before.values().map(Vec::len).sum();
    assert!(total >= 20, "the fixture has {total} rows");
    assert!(!before.contains_key("trigger_event_claims"));
    assert_eq!(before["trigger_firings"].len(), 2);

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 11,
            to: SCHEMA_VERSION,
        },
    );
    assert_upgraded(11, &before, &store.conn().unwrap());
    assert_healthy(&store.conn().unwrap(), "the TypeScript file");

    // Spelled out: the activity firing is claimed, the schedule firing is not.
    let claims = rows_of(&store.conn().unwrap(), "trigger_event_claims");
    let expected: Row = [
        ("account_id", text("acct-1")),
        ("trigger_id", text("trig-1")),
        ("activity_key", text("blob-bafyabc")),
        ("firing_id", text("firing-1")),
        ("created_at", Value::Integer(1_764_000_000_000)),
    ]
    .into_iter()
    .map(|(c, v)| (c.to_string(), v))
    .collect();
    assert_eq!(claims, vec![expected]);
    // Version 11 already ran on this file: its untitled runs are not retitled.
    let titles = column_by_id(&store.conn().unwrap(), "runs", "title");
    assert_eq!(
        titles,
        vec![
            ("run-1".to_string(), Value::Null),
            ("run-2".to_string(), text("  "))
        ]
    );
    let signers: String = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT signer_id FROM account_authorizations WHERE account_id = 'acct-1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(signers, "signer-1");

    let fresh = fresh_store(dir.path());
    assert_same_structure(
        &store.conn().unwrap(),
        &fresh.conn().unwrap(),
        "the TypeScript file",
    );
    let after = snapshot(&store.conn().unwrap());
    drop(store);

    let again = open_expecting(
        &path,
        Outcome::Current {
            version: SCHEMA_VERSION,
        },
    );
    assert_eq!(
        snapshot(&again.conn().unwrap()),
        after,
        "reopening changed rows"
    );
}
