//! A value PostgreSQL returned that cannot be read as the type asked for is `Error::Decode`,
//! naming PostgreSQL and the column, of kind `Invalid`: never one of SQLite's errors, which the
//! same read gives on SQLite (`tests/generated/macros.rs`).

use seed_agents_store::{query, Error, ErrorKind, Store};
use support::postgres::TempDb;
use support::reliability::store_with_sessions;

#[test]
fn a_null_read_through_a_non_null_alias_names_postgresql_and_the_column() {
    let Some(db) = TempDb::new("decode_error") else {
        return;
    };
    let (store, sessions): (Store, _) = store_with_sessions(std::path::Path::new(&db.url), 1);
    let reading = store.reading().unwrap();
    let Err(err) = query!(
        r#"SELECT title AS "title!" FROM sessions WHERE id = ?1"#,
        &sessions[0]
    )
    .fetch_one(&reading) else {
        panic!("the session has no title: reading it as never NULL must fail");
    };
    match &err {
        Error::Decode {
            backend, column, ..
        } => {
            assert_eq!(*backend, "PostgreSQL");
            assert_eq!(column, "title!");
        }
        other => panic!("expected Error::Decode, got {other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::Invalid);
    let text = err.to_string();
    assert!(
        text.contains("PostgreSQL") && text.contains("title!") && !text.contains("SQLite"),
        "{text}"
    );
}
