//! Listings: the order of the generated `list_by_*` helpers, and statements built at run time
//! with the sea-query identifiers.

use super::*;

#[test]
fn list_helpers_return_rows_in_index_order_then_by_primary_key() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;

    // agents_by_account (account_id, updated_at DESC): agent-1 has updated_at T + 12.
    for (id, updated_at) in [
        ("agent-3", T + 5),
        ("agent-2", T + 100),
        ("agent-0", T + 12),
    ] {
        agents::insert(
            conn,
            &agents::Row {
                updated_at,
                ..agent(id, A)
            },
        )
        .unwrap();
    }
    let order: Vec<String> = agents::list_by_account_id(conn, A)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    assert_eq!(order, ["agent-2", "agent-0", "agent-1", "agent-3"]);

    // runs_dispatch (status, queue, not_before, created_at): NULL not_before first (SQLite
    // sorts NULL lowest), then by time, ties by primary key.
    for (id, not_before) in [
        ("run-c", Some(T + 1)),
        ("run-b", Some(T + 2)),
        ("run-a", Some(T + 2)),
        ("run-z", None),
    ] {
        let row = runs::Row {
            not_before,
            ..run(id, A, None, runs::Status::Queued, runs::Queue::Background)
        };
        runs::insert(conn, &row).unwrap();
    }
    let order: Vec<String> =
        runs::list_by_status_and_queue(conn, A, runs::Status::Queued, runs::Queue::Background)
            .unwrap()
            .into_iter()
            .map(|row| row.id)
            .collect();
    assert_eq!(order, ["run-z", "run-c", "run-a", "run-b"]);
    assert_eq!(
        runs::list_by_status_and_queue(conn, A, runs::Status::Queued, runs::Queue::Interactive)
            .unwrap(),
        vec![]
    );
}

/// Binds sea-query's values for rusqlite (the kinds this test uses).
fn bind(values: &sea_query::Values) -> Vec<rusqlite::types::Value> {
    values
        .iter()
        .map(|value| match value {
            sea_query::Value::String(Some(text)) => rusqlite::types::Value::Text(text.clone()),
            sea_query::Value::BigInt(Some(n)) => rusqlite::types::Value::Integer(*n),
            other => panic!("unexpected value {other:?}"),
        })
        .collect()
}

fn ids(conn: &Connection, sql: &str, params: &[rusqlite::types::Value]) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |row| row.get(0))
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

#[test]
fn sea_query_columns_build_statements_sqlite_runs() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;
    for (id, account, status) in [
        ("run-q2", A, runs::Status::Queued),
        ("run-q1", A, runs::Status::Queued),
        ("run-w", A, runs::Status::Waiting),
        ("run-qb", B, runs::Status::Queued),
    ] {
        let row = run(id, account, None, status, runs::Queue::Background);
        runs::insert(conn, &row).unwrap();
    }

    // Inline values.
    let sql = Query::select()
        .columns([runs::Column::Id])
        .from(runs::Column::Table)
        .and_where(Expr::col(runs::Column::Status).eq(runs::Status::Queued.as_str()))
        .and_where(Expr::col(runs::Column::AccountId).eq(A))
        .order_by(runs::Column::Id, Order::Asc)
        .to_string(SqliteQueryBuilder);
    assert_eq!(
        sql,
        r#"SELECT "id" FROM "runs" WHERE "status" = 'queued' AND "account_id" = 'acct-a' ORDER BY "id" ASC"#
    );
    assert_eq!(ids(conn, &sql, &[]), ["run-q1", "run-q2"]);
    let mut listed: Vec<String> = runs::list_by_status(conn, A, runs::Status::Queued)
        .unwrap()
        .into_iter()
        .map(|row| row.id)
        .collect();
    listed.sort();
    assert_eq!(listed, ["run-q1", "run-q2"], "agrees with list_by_status");

    // Bound values, and a column named by an SQL keyword (`model_providers.type`).
    model_providers::insert(
        conn,
        &model_providers::Row {
            id: "provider-1".into(),
            account_id: A.into(),
            name: "openai-main".into(),
            r#type: "openai".into(),
            config_cbor: enc(&ModelProviderConfig::new("openai")),
            created_at: T,
            updated_at: T,
        },
    )
    .unwrap();
    let (sql, values) = Query::select()
        .columns([model_providers::Column::Id, model_providers::Column::Type])
        .from(model_providers::Column::Table)
        .and_where(Expr::col(model_providers::Column::Type).eq("openai"))
        .and_where(Expr::col(model_providers::Column::CreatedAt).gte(T))
        .build(SqliteQueryBuilder);
    assert_eq!(
        sql,
        r#"SELECT "id", "type" FROM "model_providers" WHERE "type" = ? AND "created_at" >= ?"#
    );
    assert_eq!(ids(conn, &sql, &bind(&values)), ["provider-1"]);

    // A write: the generated helpers see what a sea-query UPDATE did.
    let (sql, values) = Query::update()
        .table(runs::Column::Table)
        .value(runs::Column::Status, runs::Status::Canceled.as_str())
        .value(runs::Column::UpdatedAt, T + 500)
        .and_where(Expr::col(runs::Column::Id).eq("run-q1"))
        .and_where(Expr::col(runs::Column::AccountId).eq(A))
        .build(SqliteQueryBuilder);
    let changed = conn
        .execute(&sql, rusqlite::params_from_iter(bind(&values)))
        .unwrap();
    assert_eq!(changed, 1);
    let row = runs::get(conn, A, "run-q1").unwrap().unwrap();
    assert_eq!(row.status, runs::Status::Canceled);
    assert_eq!(row.updated_at, T + 500);

    // Column::Table names the table in a FROM clause.
    let sql = Query::select()
        .expr(Expr::cust("count(*)"))
        .from(sessions::Column::Table)
        .to_string(SqliteQueryBuilder);
    assert_eq!(sql, r#"SELECT count(*) FROM "sessions""#);
    let count: i64 = conn.query_row(&sql, (), |row| row.get(0)).unwrap();
    assert_eq!(count, 2);
    assert_eq!(runs::Column::Status.name(), "status");
    assert_eq!(model_providers::Column::Type.name(), "type");
    assert_eq!(runs::Column::Table.name(), runs::TABLE);
}

#[test]
fn a_listing_built_at_run_time_selects_every_column_and_decodes_rows() {
    let (_dir, store) = world();
    let raw = store.sqlite_writer().unwrap().raw();
    let conn = &*raw;
    for (id, status) in [
        ("run-q3", runs::Status::Queued),
        ("run-q1", runs::Status::Queued),
        ("run-w", runs::Status::Waiting),
        ("run-q2", runs::Status::Queued),
    ] {
        runs::insert(conn, &run(id, A, None, status, runs::Queue::Background)).unwrap();
    }
    // A filter, a sort and a page chosen at run time; the enum binds as its stored text.
    let page = |after: &str| {
        Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .and_where(Expr::col(runs::Column::AccountId).eq(A))
            .and_where(Expr::col(runs::Column::Status).eq(runs::Status::Queued))
            .and_where(Expr::col(runs::Column::Id).gt(after))
            .order_by(runs::Column::Id, Order::Asc)
            .limit(2)
            .to_string(SqliteQueryBuilder)
    };
    let read = |sql: &str| -> Vec<runs::Row> {
        let mut stmt = conn.prepare(sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut out = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            out.push(runs::Row::from_row(row).unwrap());
        }
        out
    };
    let first = read(&page(""));
    assert_eq!(
        first.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["run-q1", "run-q2"]
    );
    assert_eq!(
        first[0],
        runs::get(conn, A, "run-q1").unwrap().unwrap(),
        "Column::ALL selects every column in the order from_row reads"
    );
    let second = read(&page(&first[1].id));
    assert_eq!(
        second.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["run-q3"]
    );
    assert_eq!(runs::Column::ALL.len(), runs::COLUMNS.len());
}
