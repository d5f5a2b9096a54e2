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

mod backfills;
mod current;
mod every_version;
mod expect;
mod structure;
mod ts_file;
use backfills::*;
use expect::*;
use structure::*;
