//! Snapshots and expectations: what every row must look like after the migrations.

use super::*;

/// Every row of `table` in primary-key order, as typed values.
pub(super) fn rows_of(conn: &Connection, table: &str) -> Vec<Row> {
    let order: Vec<String> = primary_key(conn, table)
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT * FROM \"{table}\" ORDER BY {}",
            order.join(", ")
        ))
        .unwrap();
    let names: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
    stmt.query_map([], |r| {
        names
            .iter()
            .enumerate()
            .map(|(i, c)| Ok((c.clone(), r.get::<_, Value>(i)?)))
            .collect::<rusqlite::Result<Row>>()
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

pub(super) fn snapshot(conn: &Connection) -> Snapshot {
    user_tables(conn)
        .into_iter()
        .map(|t| {
            let rows = rows_of(conn, &t);
            (t, rows)
        })
        .collect()
}

pub(super) fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The name a column of a version-k table has at the latest version.
pub(super) fn renamed<'a>(k: u32, table: &str, column: &'a str) -> &'a str {
    if k < 24 && table == "account_authorizations" && column == "signer" {
        "signer_id"
    } else {
        column
    }
}

/// Version 5: who wrote a session title.
pub(super) fn title_source_v5(title: &Value) -> &'static str {
    match title {
        Value::Null => "system",
        Value::Text(t) if t.is_empty() || t == "Untitled session" => "system",
        _ => "user",
    }
}

/// Version 11: a run's title. "Blank" is SQLite's `trim()`, which strips spaces only.
pub(super) fn run_title_v11(kind: &Value, parent_run_id: &Value, title: &Value) -> Value {
    let blank = match title {
        Value::Null => true,
        Value::Text(t) => t.trim_matches(' ').is_empty(),
        _ => false,
    };
    if !blank {
        title.clone()
    } else if *kind == text("workflow") {
        text("Workflow")
    } else if *parent_run_id != Value::Null {
        text("Sub-session")
    } else {
        text("Agent turn")
    }
}

/// Version 26: the claims seeded from `firings`, in the claims table's key order.
pub(super) fn claims_v26(firings: &[Row]) -> Vec<Row> {
    let key = |r: &Row, c: &str| match &r[c] {
        Value::Text(t) => t.clone(),
        other => panic!("trigger_firings.{c} is {other:?}"),
    };
    let mut claims = BTreeMap::new();
    for f in firings {
        let activity_key = key(f, "activity_key");
        if ["schedule:", "webhook:", "run:"]
            .iter()
            .any(|p| activity_key.starts_with(p))
        {
            continue;
        }
        let row: Row = [
            ("account_id", f["account_id"].clone()),
            ("trigger_id", f["trigger_id"].clone()),
            ("activity_key", f["activity_key"].clone()),
            ("firing_id", f["id"].clone()),
            ("created_at", f["created_at"].clone()),
        ]
        .into_iter()
        .map(|(c, v)| (c.to_string(), v))
        .collect();
        claims.insert(
            (key(f, "account_id"), key(f, "trigger_id"), activity_key),
            row,
        );
    }
    claims.into_values().collect()
}

/// The value the latest schema gives a column no earlier row wrote: its default, else NULL.
pub(super) fn default_of(conn: &Connection, table: &str, column: &str) -> Value {
    let dflt: Option<String> = conn
        .query_row(
            "SELECT dflt_value FROM pragma_table_xinfo(?1) WHERE name = ?2",
            [table, column],
            |r| r.get(0),
        )
        .unwrap();
    match dflt {
        Some(expr) => conn
            .query_row(&format!("SELECT {expr}"), [], |r| r.get(0))
            .unwrap(),
        None => Value::Null,
    }
}

/// What a row of `table` snapshotted at version `k` must look like at the latest version.
pub(super) fn expected_row(
    k: u32,
    table: &str,
    before: &Row,
    after_columns: &[String],
    conn: &Connection,
) -> Row {
    let mut e: Row = before
        .iter()
        .map(|(c, v)| (renamed(k, table, c).to_string(), v.clone()))
        .collect();
    if table == "server_config" && e["key"] == text(VERSION_KEY) {
        e.insert("value".into(), text(&SCHEMA_VERSION.to_string()));
    }
    if table == "runs" && k < 11 {
        let title = run_title_v11(&e["kind"], &e["parent_run_id"], &e["title"]);
        e.insert("title".into(), title);
    }
    for c in after_columns {
        if e.contains_key(c) {
            continue;
        }
        let v = if table == "sessions" && c == "title_source" && k < 5 {
            text(title_source_v5(&e["title"]))
        } else if c == "key_id" && k < 32 {
            // Version 32 names the key of every encrypted row: the one key there was, key 1.
            Value::Integer(1)
        } else if c == "chain" && k < 36 {
            // Version 36: the log written before it is one chain, named ''.
            text("")
        } else {
            default_of(conn, table, c)
        };
        e.insert(c.clone(), v);
    }
    e
}

/// A value for a failure message; blobs as their length and text.
pub(super) fn show(v: Option<&Value>) -> String {
    match v {
        None => "no such column".into(),
        Some(Value::Blob(b)) => format!("BLOB({} bytes {:?})", b.len(), String::from_utf8_lossy(b)),
        Some(v) => format!("{v:?}"),
    }
}

pub(super) fn compare_rows(
    table: &str,
    expected: &[Row],
    actual: &[Row],
    problems: &mut Vec<String>,
) {
    if expected.len() != actual.len() {
        problems.push(format!(
            "{table}: {} rows expected, {} found\n    expected {expected:?}\n    found    {actual:?}",
            expected.len(),
            actual.len()
        ));
        return;
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let cols: BTreeSet<&String> = e.keys().chain(a.keys()).collect();
        for c in cols {
            if e.get(c) != a.get(c) {
                problems.push(format!(
                    "{table} row {i}, column {c}: expected {}, found {}",
                    show(e.get(c)),
                    show(a.get(c))
                ));
            }
        }
    }
}

/// The key registry version 32 starts: key 1 in the database, its fingerprint not yet known,
/// whenever the file had the key or anything encrypted (its time is the migration's, taken from
/// `actual`).
pub(super) fn keys_v32(before: &Snapshot, actual: &[Row]) -> Vec<Row> {
    let has = |t: &str| before.get(t).is_some_and(|rows| !rows.is_empty());
    let key = before.get("server_config").is_some_and(|rows| {
        rows.iter()
            .any(|r| r["key"] == text("secret_encryption_key_v1"))
    });
    if !(key || has("secrets") || has("webhook_trigger_credentials")) {
        return Vec::new();
    }
    let created_at = actual
        .first()
        .map_or(Value::Null, |r| r["created_at"].clone());
    vec![Row::from([
        ("id".to_string(), Value::Integer(1)),
        ("provider".to_string(), text("database")),
        ("fingerprint".to_string(), Value::Null),
        ("created_at".to_string(), created_at),
        ("retired_at".to_string(), Value::Null),
    ])]
}

/// Asserts that `conn` (at the latest version) holds exactly what `before` (at version `k`) held,
/// transformed by the migrations after k: renamed columns, new columns at their defaults, the
/// backfills of versions 5 and 11, the claims seeded at 26, the new version stamp.
pub(super) fn assert_upgraded(k: u32, before: &Snapshot, conn: &Connection) {
    let after = snapshot(conn);
    let mut problems = Vec::new();
    for t in before.keys() {
        if !after.contains_key(t) {
            problems.push(format!("table {t} vanished"));
        }
    }
    for (table, actual) in &after {
        let expected: Vec<Row> = match before.get(table) {
            // Version 36 keys the head by chain: the one head there was (id 1, the only row
            // the store ever wrote) becomes the chain ''.
            Some(rows) if table == "audit_chain" && k < 36 => rows
                .iter()
                .filter(|r| r["id"] == Value::Integer(1))
                .map(|r| {
                    let mut head = r.clone();
                    head.remove("id");
                    head.insert("chain".into(), text(""));
                    head
                })
                .collect(),
            Some(rows) => {
                let cols: Vec<String> = table_info(conn, table)
                    .columns
                    .into_iter()
                    .map(|c| c.name)
                    .collect();
                rows.iter()
                    .map(|r| expected_row(k, table, r, &cols, conn))
                    .collect()
            }
            None if table == "trigger_event_claims" => {
                claims_v26(before.get("trigger_firings").map_or(&[], Vec::as_slice))
            }
            None if table == "secret_keys" => keys_v32(before, actual),
            None => Vec::new(),
        };
        compare_rows(table, &expected, actual, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "upgrading from version {k} changed data:\n  {}",
        problems.join("\n  ")
    );
}
