//! The checked-SQL macros at run time: typed records, user types, partial projections, and the
//! typed errors of values outside their set.

use seed_agents_store::schema::runs;
use seed_agents_store::{query, query_as, Error, Row, Store};

const T: i64 = 1_764_000_000_000;

/// A store with account `acct` and runs r1 (queued) and r2 (running), plus a plain writable
/// connection to the same file: the store's own connection is read-only, and these tests check
/// the macros on writes too (as another process writing the file would run them).
fn store() -> (tempfile::TempDir, Store, rusqlite::Connection) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("m.sqlite")).unwrap();
    store.touch_account("acct").unwrap();
    let raw = rusqlite::Connection::open(store.path()).unwrap();
    for (id, status, title) in [
        ("r1", runs::Status::Queued, Some("one")),
        ("r2", runs::Status::Running, None),
    ] {
        query!(
            "INSERT INTO runs (id, account_id, root_run_id, kind, origin, title, input_cbor, status, created_at, updated_at) \
             VALUES (?1, 'acct', ?1, 'agent', 'user', ?2, x'a0', ?3, ?4, ?4)",
            id,
            title,
            status,
            T
        )
        .execute(&raw)
        .unwrap();
    }
    (dir, store, raw)
}

#[test]
fn query_types_rows_from_the_schema() {
    let (_d, store, _raw) = store();
    let rows = query!(
        "SELECT id, status, title, depth, created_at FROM runs WHERE account_id = ?1 ORDER BY id",
        "acct"
    )
    .fetch_all(&store.conn().unwrap())
    .unwrap();
    assert_eq!(rows.len(), 2);
    let first = &rows[0];
    let id: &String = &first.id;
    let status: runs::Status = first.status;
    let title: &Option<String> = &first.title;
    assert_eq!(
        (id.as_str(), status, title.as_deref()),
        ("r1", runs::Status::Queued, Some("one"))
    );
    assert_eq!(rows[1].title, None);
    assert_eq!(first.depth, 0);
}

#[test]
fn expressions_are_optional_unless_cast() {
    let (_d, store, _raw) = store();
    let row = query!(
        "SELECT count(*) AS n, CAST(max(depth) AS INTEGER) AS deepest FROM runs WHERE account_id = ?1",
        "acct"
    )
    .fetch_one(&store.conn().unwrap())
    .unwrap();
    let n: Option<rusqlite::types::Value> = row.n;
    assert_eq!(n, Some(rusqlite::types::Value::Integer(2)));
    let deepest: Option<i64> = row.deepest;
    assert_eq!(deepest, Some(0));
}

#[test]
fn outer_joins_make_table_columns_optional() {
    let (_d, store, _raw) = store();
    let rows = query!(
        "SELECT r.id, s.title FROM runs r LEFT JOIN sessions s ON s.id = r.session_id WHERE r.account_id = ?1 ORDER BY r.id",
        "acct"
    )
    .fetch_all(&store.conn().unwrap())
    .unwrap();
    let id: &Option<String> = &rows[0].id;
    assert_eq!(id.as_deref(), Some("r1"));
    assert_eq!(rows[0].title, None);
}

#[derive(Debug, PartialEq)]
struct Summary {
    id: String,
    status: runs::Status,
    title: Option<String>,
}

#[test]
fn query_as_fills_a_user_type() {
    let (_d, store, _raw) = store();
    let s = query_as!(
        Summary,
        "SELECT id, status, title FROM runs WHERE account_id = ?1 AND id = ?2",
        "acct",
        "r2"
    )
    .fetch_one(&store.conn().unwrap())
    .unwrap();
    assert_eq!(
        s,
        Summary {
            id: "r2".into(),
            status: runs::Status::Running,
            title: None
        }
    );
    let none = query_as!(
        Summary,
        "SELECT id, status, title FROM runs WHERE id = ?1",
        "zz"
    )
    .fetch_optional(&store.conn().unwrap())
    .unwrap();
    assert!(none.is_none());
    let err = query_as!(
        Summary,
        "SELECT id, status, title FROM runs WHERE id = ?1",
        "zz"
    )
    .fetch_one(&store.conn().unwrap())
    .unwrap_err();
    assert!(matches!(err, Error::NoRows { .. }), "{err}");
}

#[derive(Debug, PartialEq, Row)]
#[row(table = "runs")]
struct Lease {
    id: String,
    lease_owner: Option<String>,
    attempt: i64,
    queue: runs::Queue,
}

#[test]
fn derive_row_projects_columns() {
    let (_d, store, _raw) = store();
    assert_eq!(
        Lease::COLUMN_LIST,
        r#""id", "lease_owner", "attempt", "queue""#
    );
    let sql = format!("SELECT {} FROM runs WHERE id = ?1", Lease::COLUMN_LIST);
    let lease = store
        .conn()
        .unwrap()
        .query_row(&sql, ["r1"], |r| Ok(Lease::from_row(r)))
        .unwrap()
        .unwrap();
    assert_eq!(
        lease,
        Lease {
            id: "r1".into(),
            lease_owner: None,
            attempt: 0,
            queue: runs::Queue::Background
        }
    );
}

#[test]
fn a_value_outside_its_enum_is_a_typed_error_through_the_macros_too() {
    let (_d, store, raw) = store();
    query!("UPDATE runs SET status = 'exploded' WHERE id = ?1", "r1")
        .execute(&raw)
        .unwrap();
    let Err(err) =
        query!("SELECT status FROM runs WHERE id = ?1", "r1").fetch_one(&store.conn().unwrap())
    else {
        panic!("a stored value outside the enum must not decode");
    };
    assert!(
        matches!(err, Error::UnknownEnumValue { table: "runs", column: "status", ref value } if value == "exploded"),
        "{err}"
    );
}

#[test]
fn numbered_parameters_bind_by_number_not_by_position() {
    let (_d, store, raw) = store();
    // ?2 comes first in the text; the arguments are in number order.
    let n = query!(
        "UPDATE runs SET status = ?2 WHERE account_id = ?1 AND id = ?3",
        "acct",
        runs::Status::Canceled,
        "r1"
    )
    .execute(&raw)
    .unwrap();
    assert_eq!(n, 1);
    let row = query!("SELECT status FROM runs WHERE id = :id", "r1")
        .fetch_one(&store.conn().unwrap())
        .unwrap();
    assert_eq!(row.status, runs::Status::Canceled);
}

#[test]
fn a_parameter_tested_for_null_may_be_none() {
    let (_d, store, _raw) = store();
    let all = |id: Option<&str>| {
        query!(
            "SELECT id FROM runs WHERE account_id = ?1 AND (?2 IS NULL OR id = ?2) ORDER BY id",
            "acct",
            id
        )
        .fetch_all(&store.conn().unwrap())
        .unwrap()
        .len()
    };
    assert_eq!(all(None), 2);
    assert_eq!(all(Some("r2")), 1);
}

#[test]
fn casts_are_read_from_the_outer_select_of_a_with_statement() {
    let (_d, store, _raw) = store();
    let row = query!(
        "WITH counted AS (SELECT CAST(count(*) AS TEXT) AS n FROM runs) \
         SELECT CAST(n AS INTEGER) AS total FROM counted"
    )
    .fetch_one(&store.conn().unwrap())
    .unwrap();
    let total: Option<i64> = row.total;
    assert_eq!(total, Some(2));
}

/// The ids a checked query returns, in its order.
macro_rules! ids {
    ($query:expr, $conn:expr) => {
        $query
            .fetch_all($conn)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect::<Vec<String>>()
    };
}

#[test]
fn parameters_bind_to_the_column_in_every_comparison_form() {
    // The same forms with an argument of the wrong type are in ui/tests/ui/fail/argument_*.rs.
    let (_d, store, raw) = store();
    query!("UPDATE runs SET attempt = ?1 WHERE id = ?2", 3, "r2")
        .execute(&raw)
        .unwrap();
    let c = &store.conn().unwrap();
    let between = ids!(
        query!("SELECT id FROM runs WHERE attempt BETWEEN ?1 AND ?2", 1, 5),
        c
    );
    assert_eq!(between, ["r2"]);
    let not_between = ids!(
        query!(
            "SELECT id FROM runs WHERE attempt NOT BETWEEN ?1 AND ?2",
            1,
            5
        ),
        c
    );
    assert_eq!(not_between, ["r1"]);
    let left = ids!(query!("SELECT id FROM runs WHERE ?1 < attempt", 0), c);
    assert_eq!(left, ["r2"]);
    let left_eq = ids!(query!("SELECT id FROM runs WHERE ?1 = id", "r1"), c);
    assert_eq!(left_eq, ["r1"]);
    let left_qualified = ids!(
        query!("SELECT r.id FROM runs AS r WHERE ?1 >= r.attempt", 0),
        c
    );
    assert_eq!(left_qualified, ["r1"]);
    let parenthesized = ids!(query!("SELECT id FROM runs WHERE (id) = ?1", "r2"), c);
    assert_eq!(parenthesized, ["r2"]);
    let parenthesized_qualified = ids!(
        query!("SELECT r.id FROM runs r WHERE (r.attempt) < ?1", 1),
        c
    );
    assert_eq!(parenthesized_qualified, ["r1"]);
    let in_list = ids!(
        query!(
            "SELECT id FROM runs WHERE id IN (?1, ?2) ORDER BY id",
            "r1",
            "zz"
        ),
        c
    );
    assert_eq!(in_list, ["r1"]);
    let like = ids!(query!("SELECT id FROM runs WHERE title LIKE ?1", "o%"), c);
    assert_eq!(like, ["r1"]);
    let not_like = ids!(
        query!(
            "SELECT r.id FROM runs r WHERE r.title NOT LIKE ?1 OR r.title IS NULL ORDER BY r.id",
            "o%"
        ),
        c
    );
    assert_eq!(not_like, ["r2"]);
    let row_value = ids!(
        query!(
            "SELECT id FROM runs WHERE (created_at, id) < (?1, ?2)",
            T,
            "r2"
        ),
        c
    );
    assert_eq!(row_value, ["r1"]);
    // A subquery's columns resolve in the subquery first, then outward.
    let correlated = ids!(
        query!(
            "SELECT id FROM runs r WHERE EXISTS \
             (SELECT 1 FROM accounts WHERE accounts.id = r.account_id AND created_at > ?1)",
            0
        ),
        c
    );
    assert_eq!(correlated.len(), 2);
}

#[test]
fn a_cast_gives_a_parameter_its_type() {
    let (_d, store, _raw) = store();
    // A CTE's column has no type the macros know; the CAST states the parameter's.
    let rows = ids!(
        query!(
            "WITH t AS (SELECT id, attempt FROM runs) \
             SELECT id FROM t WHERE t.attempt < CAST(?1 AS INTEGER) ORDER BY id",
            1
        ),
        &store.conn().unwrap()
    );
    assert_eq!(rows, ["r1", "r2"]);
    // An enum is bound as its text and a bool as 0 or 1, so the casts to those take them.
    let queued = ids!(
        query!(
            "WITH t AS (SELECT id, status FROM runs) \
             SELECT id FROM t WHERE t.status = CAST(?1 AS TEXT) AND CAST(?2 AS INTEGER) = 1 \
             ORDER BY id",
            seed_agents_store::schema::runs::Status::Queued,
            true
        ),
        &store.conn().unwrap()
    );
    let raw: Vec<String> = query!("SELECT id FROM runs WHERE status = 'queued' ORDER BY id")
        .fetch_all(&store.conn().unwrap())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert!(!raw.is_empty());
    assert_eq!(queued, raw);
}

#[derive(Debug, PartialEq)]
struct Titled {
    id: String,
    title: String,
}

#[test]
fn aliases_override_nullability() {
    let (_d, store, _raw) = store();
    let c = &store.conn().unwrap();
    // `!`: never NULL, so not an `Option`; the field is named without the suffix.
    let n: i64 = query!(r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM runs"#)
        .fetch_one(c)
        .unwrap()
        .n;
    assert_eq!(n, 2);
    // `?`: may be NULL, so an `Option`, even of a NOT NULL column.
    let row = query!(
        r#"SELECT id AS "id?", title AS "title!" FROM runs WHERE id = ?1"#,
        "r1"
    )
    .fetch_one(c)
    .unwrap();
    let (id, title): (Option<String>, String) = (row.id, row.title);
    assert_eq!((id.as_deref(), title.as_str()), (Some("r1"), "one"));
    // A column under a LEFT JOIN that the statement knows is there.
    let joined = query!(
        r#"SELECT r.id AS "id!", a.created_at AS "account_created!" FROM runs r
           LEFT JOIN accounts a ON a.id = r.account_id WHERE r.id = ?1"#,
        "r2"
    )
    .fetch_one(c)
    .unwrap();
    let (id, _created): (String, i64) = (joined.id, joined.account_created);
    assert_eq!(id, "r2");
    // query_as! matches the field by the name without the suffix, of the overridden type.
    let titled = query_as!(
        Titled,
        r#"SELECT id, title AS "title!" FROM runs WHERE id = ?1"#,
        "r1"
    )
    .fetch_one(c)
    .unwrap();
    assert_eq!(
        titled,
        Titled {
            id: "r1".into(),
            title: "one".into()
        }
    );
}

#[test]
fn a_null_read_through_a_non_null_alias_is_a_typed_error() {
    let (_d, store, _raw) = store();
    let c = &store.conn().unwrap();
    let is_null_error = |err: &Error| {
        matches!(
            err,
            Error::Sqlite(rusqlite::Error::InvalidColumnType(0, name, rusqlite::types::Type::Null))
                if name == "title!"
        )
    };
    let Err(err) = query!(r#"SELECT title AS "title!" FROM runs WHERE id = ?1"#, "r2").fetch_one(c)
    else {
        panic!("r2 has no title: reading it as never NULL must fail");
    };
    assert!(is_null_error(&err), "{err}");
    let Err(err) = query_as!(
        Titled,
        r#"SELECT title AS "title!", id FROM runs WHERE id = ?1"#,
        "r2"
    )
    .fetch_one(c) else {
        panic!("r2 has no title: reading it as never NULL must fail");
    };
    assert!(is_null_error(&err), "{err}");
}

#[test]
fn each_argument_is_evaluated_once() {
    let (_d, store, _raw) = store();
    let mut evaluated = 0;
    let rows = ids!(
        query!(
            "SELECT id FROM runs WHERE id = ?1 AND CAST(?1 AS TEXT) = id",
            {
                evaluated += 1;
                "r1"
            }
        ),
        &store.conn().unwrap()
    );
    assert_eq!(rows, ["r1"]);
    assert_eq!(
        evaluated, 1,
        "the type checks must not evaluate the argument"
    );
}
