//! Cbor<T> as an SQLite BLOB

use super::*;

#[test]
fn cbor_column_through_sqlite() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute("CREATE TABLE t (b BLOB)", ()).unwrap();
    let plan = RunPlan {
        title: Some("Plan".into()),
        steps: vec![step("1", "done")],
        settled_at: Some(1_790_000_000_000),
        extra: OpenMap::new(),
    };
    let value = Cbor::encode(&plan).unwrap();
    conn.execute("INSERT INTO t (b) VALUES (?1)", (&value,))
        .unwrap();
    let kind: String = conn
        .query_row("SELECT typeof(b) FROM t", (), |row| row.get(0))
        .unwrap();
    assert_eq!(kind, "blob");
    let back: Cbor<RunPlan> = conn
        .query_row("SELECT b FROM t", (), |row| row.get(0))
        .unwrap();
    assert_eq!(back, value);
    assert_eq!(back.decode().unwrap(), plan);

    // Not a BLOB: an error, never a panic.
    conn.execute("INSERT INTO t (b) VALUES (42)", ()).unwrap();
    let read = conn.query_row("SELECT b FROM t WHERE typeof(b) = 'integer'", (), |row| {
        row.get::<_, Cbor<RunPlan>>(0)
    });
    assert!(
        matches!(read, Err(rusqlite::Error::InvalidColumnType(..))),
        "{read:?}"
    );

    // A NULL column reads as None through Option, and as an error otherwise.
    conn.execute("INSERT INTO t (b) VALUES (NULL)", ()).unwrap();
    let null = "SELECT b FROM t WHERE b IS NULL";
    let none: Option<Cbor<RunPlan>> = conn.query_row(null, (), |row| row.get(0)).unwrap();
    assert_eq!(none, None);
    assert!(conn
        .query_row(null, (), |row| row.get::<_, Cbor<RunPlan>>(0))
        .is_err());

    // Stored bytes of the wrong type read fine, and decoding them is an error (a plan has no
    // `state`). (A tagged union would accept them as its `Other` map.)
    let wrong: Cbor<McpServerStatus> = Cbor::from_bytes(value.into_bytes());
    assert!(wrong.decode().is_err());
}
