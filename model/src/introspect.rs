//! Reads the normalized [`Schema`] of a live database from SQLite's own catalog and pragmas.
//!
//! Objects whose names start with `sqlite_` (SQLite's internals, `sqlite_stat1`, ...) and
//! Litestream's two bookkeeping tables (`_litestream_seq`, `_litestream_lock`: the replication
//! tool writes them into the file it replicates) are not ours and are left out. Any other name
//! is some schema's object, so an unexpected one is seen and judged.

use crate::model::{Column, ForeignKey, Index, IndexColumn, Schema, SqlObject, Table};
use crate::sql;
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Litestream's bookkeeping tables, the only objects of another tool a file may hold.
pub const LITESTREAM_TABLES: [&str; 2] = ["_litestream_seq", "_litestream_lock"];

/// True for names of objects no schema owns: SQLite's own and [`LITESTREAM_TABLES`].
pub fn is_foreign_object(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("sqlite_") || LITESTREAM_TABLES.contains(&lower.as_str())
}

/// The catalog as the text the structure is derived from: type, name, table and SQL of each row
/// of `main.sqlite_schema` that is ours (not [`is_foreign_object`]), in a fixed order, each field
/// length-prefixed so that no two catalogs share a text. [`introspect()`] reads nothing that this
/// text does not determine, so two files with one text have one structure. `None` when a field
/// is neither text nor NULL (a catalog written around SQLite).
///
/// # Errors
/// SQLite's, reading the catalog.
pub fn catalog_text(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name",
    )?;
    let mut rows = stmt.query([])?;
    let mut text = String::new();
    while let Some(row) = rows.next()? {
        let mut fields = [None; 4];
        for (i, field) in fields.iter_mut().enumerate() {
            *field = match row.get_ref(i)? {
                rusqlite::types::ValueRef::Null => None,
                rusqlite::types::ValueRef::Text(t) => match std::str::from_utf8(t) {
                    Ok(t) => Some(t),
                    Err(_) => return Ok(None),
                },
                _ => return Ok(None),
            };
        }
        let ours = |f: Option<&str>| !f.is_some_and(is_foreign_object);
        if !ours(fields[1]) || !ours(fields[2]) {
            continue;
        }
        for field in fields {
            match field {
                // A length prefix starts with a digit: `-` cannot be mistaken for one.
                None => text.push('-'),
                Some(f) => {
                    text.push_str(&f.len().to_string());
                    text.push(':');
                    text.push_str(f);
                }
            }
        }
        text.push('\n');
    }
    Ok(Some(text))
}

/// Reads every table, index, foreign key, trigger and view of the `main` schema.
pub fn introspect(conn: &Connection) -> rusqlite::Result<Schema> {
    let mut schema = Schema::default();
    let mut objects = Vec::new();
    {
        let mut stmt = conn.prepare(
            "SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        for row in rows {
            objects.push(row?);
        }
    }
    let mut options = BTreeMap::new();
    {
        let mut stmt =
            conn.prepare("SELECT name, wr, strict FROM pragma_table_list WHERE schema = 'main'")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, bool>(2)?,
            ))
        })?;
        for row in rows {
            let (name, wr, strict) = row?;
            options.insert(name, (wr, strict));
        }
    }
    for (kind, name, table, sql_text) in &objects {
        if is_foreign_object(name) || is_foreign_object(table) {
            continue;
        }
        match kind.as_str() {
            "table" => {
                let (without_rowid, strict) = options.get(name).copied().unwrap_or_default();
                let t = read_table(conn, name, without_rowid, strict)?;
                schema.tables.insert(name.clone(), t);
            }
            "trigger" | "view" => {
                let object = SqlObject {
                    table: table.clone(),
                    sql: sql_text
                        .as_deref()
                        .map(|s| sql::normalize(s).unwrap_or_else(|_| s.to_string()))
                        .unwrap_or_default(),
                };
                let map = if kind == "trigger" {
                    &mut schema.triggers
                } else {
                    &mut schema.views
                };
                map.insert(name.clone(), object);
            }
            _ => {}
        }
    }
    // Indexes after tables, and foreign keys resolved against the parents' keys.
    for (kind, name, table, sql_text) in &objects {
        if kind == "index" && !is_foreign_object(table) {
            if let Some(sql_text) = sql_text {
                let index = read_index(conn, name, table, sql_text)?;
                if let Some(t) = schema.tables.get_mut(table) {
                    t.indexes.insert(name.clone(), index);
                }
            }
        }
    }
    let names: Vec<String> = schema.tables.keys().cloned().collect();
    for name in names {
        let fks = read_foreign_keys(conn, &name, &schema)?;
        if let Some(t) = schema.tables.get_mut(&name) {
            t.foreign_keys = fks;
        }
    }
    Ok(schema)
}

fn read_table(
    conn: &Connection,
    name: &str,
    without_rowid: bool,
    strict: bool,
) -> rusqlite::Result<Table> {
    let mut table = Table {
        name: name.to_string(),
        without_rowid,
        strict,
        ..Table::default()
    };
    let mut pk = Vec::new();
    let mut stmt = conn.prepare(
        "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid",
    )?;
    let rows = stmt.query_map([name], |r| {
        Ok(Column {
            name: r.get(0)?,
            decl_type: normalize_type(&r.get::<_, String>(1)?),
            not_null: r.get(2)?,
            default: r.get::<_, Option<String>>(3)?.map(|d| d.trim().to_string()),
            pk: r.get(4)?,
            hidden: r.get(5)?,
        })
    })?;
    for col in rows {
        let mut col = col?;
        if without_rowid && col.pk > 0 {
            // SQLite enforces NOT NULL on these whether or not it was written.
            col.not_null = true;
        }
        if col.pk > 0 {
            pk.push((col.pk, col.name.clone()));
        }
        table.column_order.push(col.name.clone());
        table.columns.insert(col.name.clone(), col);
    }
    pk.sort();
    table.primary_key = pk.into_iter().map(|(_, n)| n).collect();

    let mut stmt = conn.prepare("SELECT name, origin FROM pragma_index_list(?1)")?;
    let lists = stmt
        .query_map([name], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (index, origin) in lists {
        if origin == "u" {
            let cols = index_columns(conn, &index)?
                .into_iter()
                .map(|c| c.name.unwrap_or_default())
                .collect();
            table.uniques.insert(cols);
        }
    }
    Ok(table)
}

fn read_index(
    conn: &Connection,
    name: &str,
    table: &str,
    sql_text: &str,
) -> rusqlite::Result<Index> {
    let unique: bool = conn.query_row(
        "SELECT \"unique\" FROM pragma_index_list(?1) WHERE name = ?2",
        [table, name],
        |r| r.get(0),
    )?;
    Ok(Index {
        name: name.to_string(),
        table: table.to_string(),
        unique,
        columns: index_columns(conn, name)?,
        partial: partial_predicate(sql_text),
    })
}

fn index_columns(conn: &Connection, index: &str) -> rusqlite::Result<Vec<IndexColumn>> {
    let mut stmt = conn.prepare(
        "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno",
    )?;
    let rows = stmt.query_map([index], |r| {
        Ok(IndexColumn {
            name: r.get(0)?,
            desc: r.get(1)?,
            collation: r
                .get::<_, Option<String>>(2)?
                .unwrap_or_else(|| "BINARY".into()),
        })
    })?;
    rows.collect()
}

/// The text after the top-level `WHERE` of a `CREATE INDEX`, normalized.
fn partial_predicate(sql_text: &str) -> Option<String> {
    let tokens = sql::tokenize(sql_text).ok()?;
    let mut depth = 0i32;
    let code: Vec<_> = tokens
        .into_iter()
        .filter(|t| t.kind != sql::TokenKind::Comment)
        .collect();
    for (i, t) in code.iter().enumerate() {
        match t.text {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ if depth == 0 && t.is_word("WHERE") => {
                return Some(sql::join_tokens(code[i + 1..].iter()));
            }
            _ => {}
        }
    }
    None
}

fn read_foreign_keys(
    conn: &Connection,
    table: &str,
    schema: &Schema,
) -> rusqlite::Result<std::collections::BTreeSet<ForeignKey>> {
    let mut stmt = conn.prepare(
        "SELECT id, seq, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
    )?;
    let rows = stmt
        .query_map([table], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut by_id: BTreeMap<i64, ForeignKey> = BTreeMap::new();
    for (id, parent, from, to, on_update, on_delete) in rows {
        let fk = by_id.entry(id).or_insert_with(|| ForeignKey {
            table: parent.clone(),
            on_update,
            on_delete,
            ..ForeignKey::default()
        });
        fk.columns.push(from);
        if let Some(to) = to {
            fk.to.push(to);
        }
    }
    Ok(by_id
        .into_values()
        .map(|mut fk| {
            if fk.to.is_empty() {
                if let Some(parent) = schema.tables.get(&fk.table) {
                    fk.to = parent.primary_key.clone();
                }
            }
            fk
        })
        .collect())
}

fn normalize_type(t: &str) -> String {
    t.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase()
}
