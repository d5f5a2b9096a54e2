//! Upgrades keep data: a database at any earlier version, filled with rows in every table, opens
//! as `Migrated` with every row and value intact, the data migrations (versions 5, 11 and 26)
//! applied row by row, and exactly the structure of a fresh install. The TypeScript server's
//! version-11 file upgrades the same way, and a current file reopens untouched.
//!
//! Databases at version k are built with rusqlite directly (genesis, then migrations 1..=k, then
//! the version stamp as TEXT), never through the store, so the store's migration path is what is
//! under test.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};
use seed_agents_store::schema::{MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION};
use seed_agents_store::{Outcome, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use support::old_versions::{build_at, VERSION_KEY};

/// The newest version this suite was written for; the per-version tests below cover 0..LATEST.
const LATEST: u32 = 36;

/// Rows inserted per table by [`fill`]. Every parent gets the same number of rows, and row n of a
/// child references row n of each parent, so foreign-key columns that are part of a key (e.g.
/// `webhook_trigger_credentials.trigger_id`, `agent_collaborators`) stay unique.
const ROWS: usize = 3;

/// The TypeScript server's file at version 11, copied into the project.
const TS_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ts-server-v11.sqlite"
);

/// One row: column name to value.
type Row = BTreeMap<String, Value>;
/// Every row of every table, each table's rows in primary-key order.
type Snapshot = BTreeMap<String, Vec<Row>>;

// ---------------------------------------------------------------------------------------------
// Building databases at a version

/// Opens `path` with the store and asserts what opening did.
fn open_expecting(path: &Path, expected: Outcome) -> Store {
    let store = Store::open(path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    assert_eq!(
        store.outcome(),
        expected,
        "outcome of opening {}",
        path.display()
    );
    store
}

// ---------------------------------------------------------------------------------------------
// Catalog introspection (independent of the store and of codegen)

#[derive(Debug, Clone)]
struct ColumnInfo {
    name: String,
    decl_type: String,
    not_null: bool,
}

#[derive(Debug, Clone)]
struct ForeignKeyInfo {
    parent: String,
    from: Vec<String>,
    to: Vec<String>,
}

#[derive(Debug, Clone)]
struct TableInfo {
    name: String,
    columns: Vec<ColumnInfo>,
    foreign_keys: Vec<ForeignKeyInfo>,
}

/// Tables we own (SQLite's internals such as `sqlite_stat1` left out), by name.
fn user_tables(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Primary-key columns of `table`, in key order.
fn primary_key(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_xinfo(?1) WHERE pk > 0 ORDER BY pk")
        .unwrap();
    stmt.query_map([table], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn table_info(conn: &Connection, table: &str) -> TableInfo {
    let mut stmt = conn
        .prepare("SELECT name, type, \"notnull\" FROM pragma_table_xinfo(?1) ORDER BY cid")
        .unwrap();
    let columns = stmt
        .query_map([table], |r| {
            Ok(ColumnInfo {
                name: r.get(0)?,
                decl_type: r.get::<_, String>(1)?.to_ascii_uppercase(),
                not_null: r.get(2)?,
            })
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
        )
        .unwrap();
    let mut by_id: BTreeMap<i64, ForeignKeyInfo> = BTreeMap::new();
    let rows = stmt
        .query_map([table], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    for (id, parent, from, to) in rows {
        let fk = by_id.entry(id).or_insert_with(|| ForeignKeyInfo {
            parent,
            from: Vec::new(),
            to: Vec::new(),
        });
        fk.from.push(from);
        if let Some(to) = to {
            fk.to.push(to);
        }
    }
    let foreign_keys = by_id
        .into_values()
        .map(|mut fk| {
            if fk.to.is_empty() {
                fk.to = primary_key(conn, &fk.parent);
            }
            assert_eq!(fk.from.len(), fk.to.len(), "{table}: {fk:?}");
            fk
        })
        .collect();
    TableInfo {
        name: table.to_string(),
        columns,
        foreign_keys,
    }
}

/// Table names ordered so every parent comes before its children (self-references aside).
fn parents_first(tables: &BTreeMap<String, TableInfo>) -> Vec<String> {
    let mut done = BTreeSet::new();
    let mut order = Vec::new();
    while order.len() < tables.len() {
        let next = tables
            .values()
            .find(|t| {
                !done.contains(&t.name)
                    && t.foreign_keys
                        .iter()
                        .all(|fk| fk.parent == t.name || done.contains(&fk.parent))
            })
            .unwrap_or_else(|| panic!("foreign-key cycle among {:?}", tables.keys()));
        done.insert(next.name.clone());
        order.push(next.name.clone());
    }
    order
}

// ---------------------------------------------------------------------------------------------
// Filling every table

/// Bytes of the DAG-CBOR map `{"k": text}`: distinct per column and row, and valid CBOR.
fn cbor_map(text: &str) -> Vec<u8> {
    let len = u8::try_from(text.len()).expect("short text");
    let mut b = vec![0xa1, 0x61, b'k', 0x78, len];
    b.extend_from_slice(text.as_bytes());
    b
}

/// Inserts [`ROWS`] rows into every table of `conn`, parents first, with `foreign_keys` on.
/// TEXT columns get `<table>.<column>.<n>`, INTEGER columns a number distinct across the whole
/// database, BLOB columns distinct bytes; foreign-key columns the key of parent row n (a
/// self-reference: the previous row, NULL for the first). Each nullable column is NULL in one of
/// the rows. Returns how many rows went into each table.
fn fill(conn: &Connection) -> BTreeMap<String, usize> {
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    let infos: BTreeMap<String, TableInfo> = user_tables(conn)
        .into_iter()
        .map(|t| (t.clone(), table_info(conn, &t)))
        .collect();
    let mut inserted: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let mut counter: i64 = 0;
    for table in parents_first(&infos) {
        let info = &infos[&table];
        let position = |c: &str| info.columns.iter().position(|x| x.name == c).unwrap();
        let mut rows: Vec<Row> = Vec::new();
        for n in 0..ROWS {
            let mut row = Row::new();
            for fk in &info.foreign_keys {
                let nullable = fk.from.iter().all(|c| !info.columns[position(c)].not_null);
                let parents: &[Row] = if fk.parent == table {
                    &rows
                } else {
                    &inserted[&fk.parent]
                };
                let pick = if fk.parent == table {
                    n.checked_sub(1)
                } else {
                    assert!(
                        !parents.is_empty(),
                        "{table}: parent {} is empty",
                        fk.parent
                    );
                    Some(n % parents.len())
                };
                let null_here = nullable && (position(&fk.from[0]) + n) % 3 == 0;
                match pick {
                    Some(i) if !null_here => {
                        for (from, to) in fk.from.iter().zip(&fk.to) {
                            let v = parents[i][to].clone();
                            assert_ne!(v, Value::Null, "{table}.{from}: parent key is NULL");
                            row.insert(from.clone(), v);
                        }
                    }
                    _ => {
                        assert!(nullable, "{table}: a NOT NULL self-reference needs a row");
                        for from in &fk.from {
                            row.insert(from.clone(), Value::Null);
                        }
                    }
                }
            }
            for (i, col) in info.columns.iter().enumerate() {
                if row.contains_key(&col.name) {
                    continue;
                }
                let v = if !col.not_null && (i + n) % 3 == 0 {
                    Value::Null
                } else {
                    let text = format!("{table}.{}.{n}", col.name);
                    match col.decl_type.as_str() {
                        "TEXT" => Value::Text(text),
                        "INTEGER" => {
                            counter += 1;
                            Value::Integer(1_764_000_000_000 + counter)
                        }
                        "BLOB" => Value::Blob(cbor_map(&text)),
                        other => panic!("{table}.{}: no generator for type {other:?}", col.name),
                    }
                };
                row.insert(col.name.clone(), v);
            }
            insert(conn, &table, &row);
            rows.push(row);
        }
        inserted.insert(table, rows);
    }
    inserted.into_iter().map(|(t, r)| (t, r.len())).collect()
}

fn insert(conn: &Connection, table: &str, row: &Row) {
    let cols: Vec<String> = row.keys().map(|c| format!("\"{c}\"")).collect();
    let marks: Vec<String> = (1..=row.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO \"{table}\" ({}) VALUES ({})",
        cols.join(", "),
        marks.join(", ")
    );
    conn.execute(&sql, params_from_iter(row.values()))
        .unwrap_or_else(|e| panic!("{sql} {row:?}: {e}"));
}

// ---------------------------------------------------------------------------------------------
// Snapshots and expectations

/// Every row of `table` in primary-key order, as typed values.
fn rows_of(conn: &Connection, table: &str) -> Vec<Row> {
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

fn snapshot(conn: &Connection) -> Snapshot {
    user_tables(conn)
        .into_iter()
        .map(|t| {
            let rows = rows_of(conn, &t);
            (t, rows)
        })
        .collect()
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The name a column of a version-k table has at the latest version.
fn renamed<'a>(k: u32, table: &str, column: &'a str) -> &'a str {
    if k < 24 && table == "account_authorizations" && column == "signer" {
        "signer_id"
    } else {
        column
    }
}

/// Version 5: who wrote a session title.
fn title_source_v5(title: &Value) -> &'static str {
    match title {
        Value::Null => "system",
        Value::Text(t) if t.is_empty() || t == "Untitled session" => "system",
        _ => "user",
    }
}

/// Version 11: a run's title. "Blank" is SQLite's `trim()`, which strips spaces only.
fn run_title_v11(kind: &Value, parent_run_id: &Value, title: &Value) -> Value {
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
fn claims_v26(firings: &[Row]) -> Vec<Row> {
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
fn default_of(conn: &Connection, table: &str, column: &str) -> Value {
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
fn expected_row(
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
fn show(v: Option<&Value>) -> String {
    match v {
        None => "no such column".into(),
        Some(Value::Blob(b)) => format!("BLOB({} bytes {:?})", b.len(), String::from_utf8_lossy(b)),
        Some(v) => format!("{v:?}"),
    }
}

fn compare_rows(table: &str, expected: &[Row], actual: &[Row], problems: &mut Vec<String>) {
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
fn keys_v32(before: &Snapshot, actual: &[Row]) -> Vec<Row> {
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
fn assert_upgraded(k: u32, before: &Snapshot, conn: &Connection) {
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

// ---------------------------------------------------------------------------------------------
// Structure

/// The structure of `conn` as comparable lines, read from SQLite's pragmas (independent of
/// codegen): tables with WITHOUT ROWID/STRICT, columns (name, declared type, NOT NULL, default,
/// key position, hidden), every index (explicit ones by name, automatic ones by origin) with its
/// key columns, order and collation, foreign keys with actions, triggers and views.
fn structure(conn: &Connection) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let tables: Vec<(String, String, bool, bool)> = {
        let mut stmt = conn
            .prepare(
                "SELECT name, type, wr, strict FROM pragma_table_list \
                 WHERE schema = 'main' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    for (t, kind, wr, strict) in tables {
        out.insert(format!("{kind} {t} without_rowid={wr} strict={strict}"));
        let mut stmt = conn
            .prepare(
                "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1)",
            )
            .unwrap();
        let cols = stmt
            .query_map([&t], |r| {
                Ok(format!(
                    "column {t}.{} {} not_null={} default={:?} pk={} hidden={}",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        out.extend(cols);
        let mut stmt = conn
            .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1)")
            .unwrap();
        let indexes = stmt
            .query_map([&t], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, bool>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        for (name, unique, origin, partial) in indexes {
            let mut stmt = conn
                .prepare(
                    "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno",
                )
                .unwrap();
            let cols = stmt
                .query_map([&name], |r| {
                    Ok(format!(
                        "{}{} {}",
                        r.get::<_, Option<String>>(0)?
                            .unwrap_or_else(|| "<expr>".into()),
                        if r.get::<_, bool>(1)? { " DESC" } else { "" },
                        r.get::<_, Option<String>>(2)?.unwrap_or_default()
                    ))
                })
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            // Automatic indexes are named by position; name them by what they are instead.
            let label = if origin == "c" { name } else { origin };
            out.insert(format!(
                "index {t} {label} unique={unique} partial={partial} ({})",
                cols.join(", ")
            ));
        }
        let mut stmt = conn
            .prepare(
                "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete, \"match\" \
                 FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
            )
            .unwrap();
        let mut fks: BTreeMap<i64, (Vec<String>, String)> = BTreeMap::new();
        let rows = stmt
            .query_map([&t], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    format!(
                        "{} {} {} {}",
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?
                    ),
                    format!(
                        "{}->{}",
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?.unwrap_or_default()
                    ),
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        for (id, target, pair) in rows {
            let e = fks.entry(id).or_insert_with(|| (Vec::new(), target));
            e.0.push(pair);
        }
        for (pairs, target) in fks.into_values() {
            out.insert(format!("foreign key {t} ({}) {target}", pairs.join(", ")));
        }
    }
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('trigger', 'view')")
        .unwrap();
    let others = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} {} on {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    out.extend(others);
    out
}

/// Asserts that `migrated` has exactly the structure of `fresh`, two ways: the codegen model's
/// fingerprint (what the store's gate compares) and the pragma-level [`structure`].
fn assert_same_structure(migrated: &Connection, fresh: &Connection, what: &str) {
    let m = seed_agents_codegen::introspect(migrated).unwrap();
    let f = seed_agents_codegen::introspect(fresh).unwrap();
    let diffs = seed_agents_codegen::diff(&f, &m);
    assert!(
        diffs.is_empty(),
        "{what}: structure differs from a fresh install:\n{}",
        seed_agents_codegen::diff::render(&diffs, "fresh", "migrated", |_| None)
    );
    assert_eq!(m.fingerprint(), f.fingerprint(), "{what}: fingerprint");
    let (ms, fs) = (structure(migrated), structure(fresh));
    let only_migrated: Vec<_> = ms.difference(&fs).collect();
    let only_fresh: Vec<_> = fs.difference(&ms).collect();
    assert!(
        only_migrated.is_empty() && only_fresh.is_empty(),
        "{what}: pragma structure differs from a fresh install\n  only migrated: {only_migrated:#?}\n  only fresh: {only_fresh:#?}"
    );
}

fn assert_healthy(conn: &Connection, what: &str) {
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "{what}: integrity_check");
    let mut stmt = conn.prepare("PRAGMA foreign_key_check").unwrap();
    let violations: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} rowid {:?} -> {}",
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(
        violations.is_empty(),
        "{what}: foreign key violations {violations:?}"
    );
}

/// A fresh install of the store in `dir`.
fn fresh_store(dir: &Path) -> Store {
    open_expecting(
        &dir.join("fresh.sqlite"),
        Outcome::Fresh {
            version: SCHEMA_VERSION,
        },
    )
}

fn version_stamp(conn: &Connection) -> Value {
    conn.query_row(
        "SELECT value FROM server_config WHERE key = ?1",
        [VERSION_KEY],
        |r| r.get(0),
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// 1. Every version upgrades

/// Builds a filled database at version `k`, opens it with the store, and checks outcome, data,
/// structure and a second open.
fn upgrade_from(k: u32) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("v{k}.sqlite"));
    let conn = build_at(&path, k);
    let counts = fill(&conn);
    let before = snapshot(&conn);
    // Every table of version k got rows (server_config: the stamp and ROWS more).
    assert_eq!(before.len(), counts.len());
    for (t, rows) in &before {
        let extra = usize::from(t == "server_config");
        assert_eq!(rows.len(), ROWS + extra, "{t} at version {k}");
    }
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: k,
            to: SCHEMA_VERSION,
        },
    );
    assert_eq!(
        version_stamp(&store.conn().unwrap()),
        text(&SCHEMA_VERSION.to_string())
    );
    assert_upgraded(k, &before, &store.conn().unwrap());
    assert_healthy(&store.conn().unwrap(), &format!("from version {k}"));
    if k < 26 {
        // The claims are the only rows a migration adds; every generated firing key is an
        // activity key, so each firing got one.
        let claims = rows_of(&store.conn().unwrap(), "trigger_event_claims").len();
        let firings = before.get("trigger_firings").map_or(0, Vec::len);
        assert_eq!(claims, firings, "claims seeded from version {k}");
    }
    let fresh = fresh_store(dir.path());
    assert_same_structure(
        &store.conn().unwrap(),
        &fresh.conn().unwrap(),
        &format!("from version {k}"),
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

macro_rules! upgrade_tests {
    ($($name:ident: $k:expr,)*) => {
        $(
            #[test]
            fn $name() {
                upgrade_from($k);
            }
        )*
        /// The list above covers every version before the latest.
        #[test]
        fn every_earlier_version_has_an_upgrade_test() {
            let covered: Vec<u32> = vec![$($k),*];
            assert_eq!(SCHEMA_VERSION, LATEST, "add upgrade tests for the new versions");
            assert_eq!(covered, (0..LATEST).collect::<Vec<_>>());
            assert_eq!(MIGRATIONS.len(), LATEST as usize + 1);
            for (i, m) in MIGRATIONS.iter().enumerate() {
                assert_eq!(m.version as usize, i, "{}", m.name);
                assert!(m.name.starts_with(&format!("{i:04}_")), "{}", m.name);
            }
        }
    };
}

upgrade_tests! {
    upgrade_from_v00: 0,
    upgrade_from_v01: 1,
    upgrade_from_v02: 2,
    upgrade_from_v03: 3,
    upgrade_from_v04: 4,
    upgrade_from_v05: 5,
    upgrade_from_v06: 6,
    upgrade_from_v07: 7,
    upgrade_from_v08: 8,
    upgrade_from_v09: 9,
    upgrade_from_v10: 10,
    upgrade_from_v11: 11,
    upgrade_from_v12: 12,
    upgrade_from_v13: 13,
    upgrade_from_v14: 14,
    upgrade_from_v15: 15,
    upgrade_from_v16: 16,
    upgrade_from_v17: 17,
    upgrade_from_v18: 18,
    upgrade_from_v19: 19,
    upgrade_from_v20: 20,
    upgrade_from_v21: 21,
    upgrade_from_v22: 22,
    upgrade_from_v23: 23,
    upgrade_from_v24: 24,
    upgrade_from_v25: 25,
    upgrade_from_v26: 26,
    upgrade_from_v27: 27,
    upgrade_from_v28: 28,
    upgrade_from_v29: 29,
    upgrade_from_v30: 30,
    upgrade_from_v31: 31,
    upgrade_from_v32: 32,
    upgrade_from_v33: 33,
    upgrade_from_v34: 34,
    upgrade_from_v35: 35,
}

/// A fresh store's baseline is the SCHEMA_SQL the generated module exposes, and equals genesis
/// plus every migration.
#[test]
fn the_baseline_equals_genesis_plus_every_migration() {
    let dir = tempfile::tempdir().unwrap();
    let migrated = build_at(&dir.path().join("all.sqlite"), LATEST);
    let baseline = Connection::open_in_memory().unwrap();
    baseline.execute_batch(SCHEMA_SQL).unwrap();
    assert_same_structure(&migrated, &baseline, "SCHEMA_SQL");
    let fresh = fresh_store(dir.path());
    assert_same_structure(&fresh.conn().unwrap(), &baseline, "a fresh store");
}

// ---------------------------------------------------------------------------------------------
// 2. Backfills, row by row

const T: i64 = 1_764_000_000_000;
const CBOR: &[u8] = &[0xa1, 0x61, b'k', 0x61, b'v'];

/// An account and an agent (every version has both tables).
fn seed_owner(conn: &Connection, account: &str, agent: &str) {
    conn.execute(
        "INSERT INTO accounts (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![account, T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at) \
         VALUES (?1, ?2, ?3, '/tmp/agent', 'idle', ?4, ?4)",
        params![agent, account, CBOR, T],
    )
    .unwrap();
}

fn column_by_id(conn: &Connection, table: &str, column: &str) -> Vec<(String, Value)> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, \"{column}\" FROM \"{table}\" ORDER BY id"
        ))
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_migration_gathers_planner_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stats.sqlite");
    let k = SCHEMA_VERSION - 1;
    let conn = build_at(&path, k);
    fill(&conn);
    conn.close().unwrap();
    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: k,
            to: SCHEMA_VERSION,
        },
    );
    let rows: i64 = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'runs'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(rows > 0, "no statistics for runs after the migration");
}

#[test]
fn version_5_sets_title_source_from_the_title() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.sqlite");
    let conn = build_at(&path, 4);
    seed_owner(&conn, "acct-1", "agent-1");
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("s-01-null", None, "system"),
        ("s-02-empty", Some(""), "system"),
        ("s-03-untitled", Some("Untitled session"), "system"),
        ("s-04-real", Some("Quarterly report"), "user"),
        // Only the exact placeholder counts: other spellings were typed by someone.
        ("s-05-lower", Some("untitled session"), "user"),
        ("s-06-trailing", Some("Untitled session "), "user"),
        ("s-07-space", Some(" "), "user"),
    ];
    for (id, title, _) in cases {
        conn.execute(
            "INSERT INTO sessions (id, account_id, agent_id, title, status, created_at, updated_at) \
             VALUES (?1, 'acct-1', 'agent-1', ?2, 'idle', ?3, ?3)",
            params![id, title, T],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 4,
            to: SCHEMA_VERSION,
        },
    );
    let sources = column_by_id(&store.conn().unwrap(), "sessions", "title_source");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, _, source)| (id.to_string(), text(source)))
        .collect();
    assert_eq!(sources, expected);
    let titles = column_by_id(&store.conn().unwrap(), "sessions", "title");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, title, _)| (id.to_string(), title.map_or(Value::Null, text)))
        .collect();
    assert_eq!(titles, expected, "titles are left alone");
    assert_upgraded(4, &before, &store.conn().unwrap());
}

#[test]
fn version_11_titles_untitled_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.sqlite");
    let conn = build_at(&path, 10);
    seed_owner(&conn, "acct-1", "agent-1");
    // (id, kind, parent, title before, title after); parents are inserted first.
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, &'a str);
    let cases: &[Case] = &[
        ("r-01", "agent", None, None, "Agent turn"),
        ("r-02", "agent", None, Some(""), "Agent turn"),
        ("r-03", "agent", Some("r-01"), Some("  "), "Sub-session"),
        ("r-04", "agent", Some("r-01"), None, "Sub-session"),
        ("r-05", "workflow", None, None, "Workflow"),
        ("r-06", "workflow", None, Some(""), "Workflow"),
        // A workflow child is a Workflow: the kind decides before the parent does.
        ("r-07", "workflow", Some("r-01"), Some("   "), "Workflow"),
        (
            "r-08",
            "agent",
            None,
            Some("Summarize the inbox"),
            "Summarize the inbox",
        ),
        ("r-09", "agent", Some("r-01"), Some("Research"), "Research"),
        (
            "r-10",
            "workflow",
            None,
            Some("Nightly sync"),
            "Nightly sync",
        ),
        // A real title is kept byte for byte, padding included.
        ("r-11", "agent", None, Some("  Padded  "), "  Padded  "),
    ];
    for (id, kind, parent, title, _) in cases {
        conn.execute(
            "INSERT INTO runs (id, account_id, root_run_id, parent_run_id, kind, agent_id, origin, \
             title, input_cbor, status, created_at, updated_at) \
             VALUES (?1, 'acct-1', ?2, ?3, ?4, 'agent-1', 'user', ?5, ?6, 'succeeded', ?7, ?7)",
            params![id, parent.unwrap_or(id), parent, kind, title, CBOR, T],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 10,
            to: SCHEMA_VERSION,
        },
    );
    let titles = column_by_id(&store.conn().unwrap(), "runs", "title");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, _, _, _, after)| (id.to_string(), text(after)))
        .collect();
    assert_eq!(titles, expected);
    assert_upgraded(10, &before, &store.conn().unwrap());
}

#[test]
fn version_26_claims_every_activity_firing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v25.sqlite");
    let conn = build_at(&path, 25);
    seed_owner(&conn, "acct-1", "agent-1");
    seed_owner(&conn, "acct-2", "agent-2");
    for (id, account, agent) in [
        ("trig-1", "acct-1", "agent-1"),
        ("trig-2", "acct-2", "agent-2"),
    ] {
        conn.execute(
            "INSERT INTO agent_triggers (id, account_id, agent_id, name, enabled, source_cbor, prompt, \
             created_at, updated_at) VALUES (?1, ?2, ?3, ?1, 1, ?4, 'Reply', ?5, ?5)",
            params![id, account, agent, CBOR, T],
        )
        .unwrap();
    }
    // (firing id, trigger, activity key, claimed)
    let cases: &[(&str, &str, &str, bool)] = &[
        ("f-01", "trig-1", "blob-bafyabc", true),
        ("f-02", "trig-1", "schedule:trig-1:1764000000000", false),
        ("f-03", "trig-1", "webhook:idem-1", false),
        ("f-04", "trig-1", "run:run-1", false),
        // The match is case-sensitive: these are activity keys.
        ("f-05", "trig-1", "Schedule:x", true),
        ("f-06", "trig-1", "WEBHOOK:y", true),
        ("f-07", "trig-1", "Run:z", true),
        // A prefix needs its colon and must come first.
        ("f-08", "trig-1", "schedule", true),
        ("f-09", "trig-1", "runs:x", true),
        ("f-10", "trig-1", "x:schedule:y", true),
        ("f-11", "trig-1", "", true),
        // GLOB metacharacters in a key are data.
        ("f-12", "trig-1", "a*[b]?", true),
        ("f-13", "trig-2", "blob-bafyabc", true),
        ("f-14", "trig-2", "schedule:trig-2:1", false),
        ("f-15", "trig-2", "webhook:", false),
        ("f-16", "trig-2", "run:", false),
    ];
    let account_of = |trigger: &str| {
        if trigger == "trig-1" {
            "acct-1"
        } else {
            "acct-2"
        }
    };
    let agent_of = |trigger: &str| {
        if trigger == "trig-1" {
            "agent-1"
        } else {
            "agent-2"
        }
    };
    for (i, (id, trigger, key, _)) in cases.iter().enumerate() {
        conn.execute(
            "INSERT INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, \
             activity_cbor, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'succeeded', ?7)",
            params![
                id,
                account_of(trigger),
                agent_of(trigger),
                trigger,
                key,
                CBOR,
                T + i as i64
            ],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 25,
            to: SCHEMA_VERSION,
        },
    );
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT firing_id, account_id, trigger_id, activity_key, created_at \
             FROM trigger_event_claims ORDER BY firing_id",
        )
        .unwrap();
    let claims: Vec<(String, String, String, String, i64)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let expected: Vec<(String, String, String, String, i64)> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.3)
        .map(|(i, (id, trigger, key, _))| {
            (
                id.to_string(),
                account_of(trigger).to_string(),
                trigger.to_string(),
                key.to_string(),
                T + i as i64,
            )
        })
        .collect();
    assert_eq!(claims, expected);
    drop(stmt);
    assert_upgraded(25, &before, &store.conn().unwrap());
}

// ---------------------------------------------------------------------------------------------
// 3. The TypeScript server's file

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

// ---------------------------------------------------------------------------------------------
// 4. A current file

#[test]
fn a_migrated_file_at_the_latest_version_reopens_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latest.sqlite");
    let conn = build_at(&path, LATEST);
    fill(&conn);
    let before = snapshot(&conn);
    conn.close().unwrap();
    for _ in 0..2 {
        let store = open_expecting(
            &path,
            Outcome::Current {
                version: SCHEMA_VERSION,
            },
        );
        assert_eq!(snapshot(&store.conn().unwrap()), before);
    }
}

#[test]
fn a_fresh_store_reopens_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let store = fresh_store(dir.path());
        // Rows of every table in every shape, as another writer of the file would put them
        // (the store's own connection is read-only).
        let raw = Connection::open(store.path()).unwrap();
        fill(&raw);
        snapshot(&raw)
    };
    let total: usize = before.values().map(Vec::len).sum();
    assert_eq!(before.len(), 26, "tables at version {LATEST}");
    assert_eq!(total, 26 * ROWS + 1);
    for _ in 0..2 {
        let store = open_expecting(
            &dir.path().join("fresh.sqlite"),
            Outcome::Current {
                version: SCHEMA_VERSION,
            },
        );
        assert_eq!(snapshot(&store.conn().unwrap()), before);
    }
}

/// The hash of an audit row as the log's documented encoding defines it (an oracle beside the
/// store's own): SHA-256 over the domain, `prev_hash`, seq and at as 8 bytes big-endian, each text
/// as its 8-byte length and bytes, and `detail` absent as one 0 byte.
fn audit_hash(prev: &[u8], seq: i64, at: i64, texts: [&str; 6]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"seed-agents-store audit v1\0");
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(at.to_be_bytes());
    for t in texts {
        h.update((t.len() as u64).to_be_bytes());
        h.update(t.as_bytes());
    }
    h.update([0]);
    h.finalize().to_vec()
}

#[test]
fn a_log_written_before_version_36_stays_one_chain_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v35.sqlite");
    let conn = build_at(&path, 35);
    // Three events of two accounts on the one chain version 35 kept, seq 1..=3.
    let mut prev = vec![0u8; 32];
    for (seq, account) in [(1, "acct-a"), (2, "acct-b"), (3, "acct-a")] {
        let texts = [account, account, "secret", "secret.set", "secret s", "ok"];
        let hash = audit_hash(&prev, seq, T + seq, texts);
        conn.execute(
            "INSERT INTO audit_events (seq, at, account_id, actor, kind, action, target, outcome, \
             detail, prev_hash, hash) VALUES (?1, ?2, ?3, ?3, 'secret', 'secret.set', 'secret s', \
             'ok', NULL, ?4, ?5)",
            params![seq, T + seq, account, prev, hash],
        )
        .unwrap();
        prev = hash;
    }
    conn.execute(
        "INSERT INTO audit_chain (id, head_seq, head_hash, anchor_seq, anchor_hash) \
         VALUES (1, 3, ?1, 0, zeroblob(32))",
        [&prev],
    )
    .unwrap();
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 35,
            to: LATEST,
        },
    );
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.rows, report.chains, report.head_seq), (3, 1, 3));
    assert_eq!(report.head_hash, hex::encode(&prev));
    // New events go to their account's chain, from seq 1; the old chain stays as it was.
    store.set_secret("acct-a", "new", b"v", None).unwrap();
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.rows, report.chains, report.head_seq), (4, 2, 4));
    // The old chain is still checked: an edit there is found, in the chain ''.
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE audit_events SET target = 'secret t' WHERE chain = '' AND seq = 2",
            [],
        )
        .unwrap();
    let problems = store.verify_audit_log().unwrap().problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!((problems[0].chain.as_str(), problems[0].seq), ("", 2));
}
