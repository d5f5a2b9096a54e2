//! `copy`: moves a whole SQLite store into an empty PostgreSQL database.
//!
//! Invariants: the source is read in one SQLite read snapshot and never written; the target is
//! written in one PostgreSQL transaction, under the schema lock, that installs (or migrates) the
//! structure, refuses any row already there, streams every table in with `COPY`, reads every
//! table back and compares its count and checksum with what was read, and commits only when all
//! agree. So either every row arrives, verified, or nothing does. A source behind this binary's
//! version is copied from a private, migrated snapshot of it, so it too is never written.
//!
//! Values keep their SQLite meaning: a column's type is its affinity's PostgreSQL type, a TEXT
//! value in a BLOB column (the version key in `server_config`) arrives as its UTF-8 bytes, and a
//! value its column cannot hold (text with a NUL byte, a real in an INTEGER column) stops the
//! copy with the table, column and row named.

use super::gate::{fail, judge, State};
use super::migrate::{install, upgrade};
use super::{Database, SCHEMA_LOCK};
use crate::error::{Error, Result};
use crate::extension::Extensions;
use crate::{schema, Store};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{IsNull, ToSql, Type};
use rusqlite::types::ValueRef;
use seed_agents_model::model::{Affinity, Column, Table};
use seed_agents_model::Schema;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What one table's copy moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    /// The table.
    pub table: String,
    /// Its rows, counted on both sides.
    pub rows: u64,
    /// Its checksum on both sides: hex of an order-independent sum of each row's SHA-256.
    pub checksum: String,
}

/// What a whole copy moved, table by table in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// The target, as its URL without the password.
    pub database: String,
    /// The version the source file was at: below this binary's, the copy is of a migrated
    /// private snapshot (see [`copy`]).
    pub source_version: u32,
    /// Every table of the store.
    pub tables: Vec<TableCopy>,
}

/// Copies the SQLite store at `from` into the PostgreSQL database at `to`, which must be empty
/// (no table at all, or this store's tables without rows).
///
/// A source behind this binary's version (a file the TypeScript server wrote at version 11, say)
/// is copied as it would be after migrating: a private snapshot of it is taken into the system's
/// temporary directory (`VACUUM INTO`), migrated there by [`Store::open`] with all its checks,
/// copied, and removed. The source itself is never written.
///
/// # Errors
/// As [`Store::open_read_only`] for the source, and as [`Store::open`] for its migration
/// ([`Error::Refused`] for a file the gate refuses, say); [`Error::Io`] and its kin naming the
/// snapshot when the temporary directory cannot hold it; [`Error::PostgresRefused`] when the
/// target is not this store's; [`Error::CopyTargetNotEmpty`] when it holds rows;
/// [`Error::CopyValue`] for a value the target cannot hold; [`Error::CopyMismatch`] when what
/// arrived is not what was read; [`Error::Postgres`] when the server fails. Nothing is written to
/// the target in any of these cases.
pub fn copy(from: &Path, to: &str) -> Result<CopyReport> {
    let latest = schema::SCHEMA_VERSION;
    let staged = Staged::new()?;
    // One look that leaves nothing beside the source, repeated if a writer changed it meanwhile.
    // A source that claims this version (or nothing parseable) is judged by the read-only open
    // below; only one behind is judged here, before its snapshot is taken.
    let version = crate::sqlite::status::snapshot(from, |conn| {
        let claimed =
            crate::sqlite::gate::claimed_version(conn).and_then(|v| v.parse::<u32>().ok());
        if claimed.is_none_or(|v| v >= latest) {
            return Ok(latest);
        }
        let crate::sqlite::gate::State::At(version) = crate::sqlite::gate::inspect(conn, from)?
        else {
            return Ok(latest);
        };
        staged.remove();
        conn.execute("VACUUM INTO ?1", [staged.path.to_string_lossy()])
            .map_err(|e| Error::from_sqlite(e, &staged.path))?;
        Ok(version)
    })?;
    if version >= latest {
        return copy_current(from, to, version);
    }
    drop(Store::open(&staged.path)?);
    copy_current(&staged.path, to, version)
}

/// A private snapshot of an older source, removed (with its WAL and shared-memory files) when
/// dropped.
struct Staged {
    path: PathBuf,
}

impl Staged {
    fn new() -> Result<Staged> {
        let dir = std::env::temp_dir();
        std::fs::metadata(&dir).map_err(|e| Error::from_io(e, &dir))?;
        let path = dir.join(format!("seed-agents-copy-{}.sqlite", uuid::Uuid::new_v4()));
        Ok(Staged { path })
    }

    /// Removes the snapshot and its companion files, where they exist.
    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.path.clone().into_os_string();
            name.push(suffix);
            let _ = std::fs::remove_file(name);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.remove();
    }
}

/// [`copy`] from a source at this binary's version (`source_version` is what it was at before
/// any staging).
fn copy_current(from: &Path, to: &str, source_version: u32) -> Result<CopyReport> {
    let source = Store::open_read_only(from)?;
    let snapshot = source.snapshot()?;
    let reader = snapshot.db().as_sqlite().ok_or_else(|| {
        crate::values::check::invalid("from", "copy reads a SQLite store".to_string())
    })?;
    let mut target = Database::connect(to)?;
    let name = target.name.clone();
    let model = crate::values::version::model(schema::SCHEMA_VERSION);
    let mut tx = target.client.transaction().map_err(|e| fail(&name, e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(|e| fail(&name, e))?;
    match judge(&mut tx, &name, &Extensions::default())?.0 {
        State::Fresh => install(&mut tx, &name)?,
        State::At(v) if v < schema::SCHEMA_VERSION => upgrade(&mut tx, &name, v)?,
        State::At(_) => {}
    }
    refuse_rows(&mut tx, &name, &model)?;
    // Tables that reference each other arrive in name order: their keys are checked at commit.
    tx.batch_execute("SET CONSTRAINTS ALL DEFERRED")
        .map_err(|e| fail(&name, e))?;
    // The install's own version key goes: the source's arrives with its table.
    tx.execute("DELETE FROM server_config", &[])
        .map_err(|e| fail(&name, e))?;
    let mut tables = Vec::new();
    for table in model.tables.values() {
        let columns: Vec<&Column> = table.columns.values().collect();
        let sent = send(reader, &mut tx, &name, table, &columns)?;
        let arrived = read_back(&mut tx, &name, table, &columns)?;
        if sent != arrived {
            return Err(Error::CopyMismatch {
                table: table.name.clone(),
                detail: format!(
                    "read {} rows with checksum {}, and {} rows with checksum {} arrived",
                    sent.rows,
                    sent.hex(),
                    arrived.rows,
                    arrived.hex()
                ),
            });
        }
        tables.push(TableCopy {
            table: table.name.clone(),
            rows: sent.rows,
            checksum: sent.hex(),
        });
    }
    // What arrived is a store at this version: its own version key says so.
    if judge(&mut tx, &name, &Extensions::default())?.0 != State::At(schema::SCHEMA_VERSION) {
        return Err(Error::CopyMismatch {
            table: "server_config".into(),
            detail: "the copied version key does not name this binary's version".into(),
        });
    }
    tx.commit().map_err(|e| fail(&name, e))?;
    Ok(CopyReport {
        database: name,
        source_version,
        tables,
    })
}

/// Refuses a target with any row other than the version key an install writes.
fn refuse_rows(tx: &mut postgres::Transaction<'_>, name: &str, model: &Schema) -> Result<()> {
    let mut holding = Vec::new();
    for table in model.tables.keys() {
        let sql = if table == "server_config" {
            format!(
                "SELECT count(*) FROM {table} WHERE key <> '{}'",
                crate::sqlite::gate::VERSION_KEY
            )
        } else {
            format!("SELECT count(*) FROM {table}")
        };
        let n: i64 = tx.query_one(&sql, &[]).map_err(|e| fail(name, e))?.get(0);
        if n > 0 {
            holding.push(format!("{table}: {n} rows"));
        }
    }
    if holding.is_empty() {
        Ok(())
    } else {
        Err(Error::CopyTargetNotEmpty {
            database: name.to_string(),
            tables: holding,
        })
    }
}

/// One value as the target column holds it.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Cell {
    /// The value SQLite holds, as `column` holds it on PostgreSQL, or why it cannot be.
    fn from_sqlite(value: ValueRef<'_>, column: &Column) -> std::result::Result<Cell, String> {
        let affinity = column.affinity();
        Ok(match (value, affinity) {
            (ValueRef::Null, _) => Cell::Null,
            (ValueRef::Integer(i), Affinity::Integer) => Cell::Integer(i),
            (ValueRef::Real(r), Affinity::Real) => Cell::Real(r),
            (ValueRef::Integer(i), Affinity::Real) => Cell::Real(i as f64),
            (ValueRef::Text(t), Affinity::Text) => {
                let text =
                    std::str::from_utf8(t).map_err(|_| "text that is not UTF-8".to_string())?;
                if text.contains('\0') {
                    return Err("text with a NUL character".into());
                }
                Cell::Text(text.to_string())
            }
            (ValueRef::Blob(b) | ValueRef::Text(b), Affinity::Blob) => Cell::Blob(b.to_vec()),
            (other, _) => {
                return Err(format!(
                    "a {} value in a {} column",
                    type_name(other),
                    column.decl_type
                ))
            }
        })
    }

    /// Feeds the row checksum: a type tag, then the value, length-prefixed where it varies.
    fn hash_into(&self, h: &mut Sha256) {
        match self {
            Cell::Null => h.update(b"n"),
            Cell::Integer(i) => {
                h.update(b"i");
                h.update(i.to_be_bytes());
            }
            Cell::Real(r) => {
                h.update(b"r");
                h.update(r.to_bits().to_be_bytes());
            }
            Cell::Text(t) => {
                h.update(b"t");
                h.update((t.len() as u64).to_be_bytes());
                h.update(t.as_bytes());
            }
            Cell::Blob(b) => {
                h.update(b"b");
                h.update((b.len() as u64).to_be_bytes());
                h.update(b);
            }
        }
    }
}

fn type_name(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "INTEGER",
        ValueRef::Real(_) => "REAL",
        ValueRef::Text(_) => "TEXT",
        ValueRef::Blob(_) => "BLOB",
    }
}

impl ToSql for Cell {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Cell::Null => Ok(IsNull::Yes),
            Cell::Integer(i) => i.to_sql(ty, out),
            Cell::Real(r) => r.to_sql(ty, out),
            Cell::Text(t) => t.to_sql(ty, out),
            Cell::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [
            Type::INT8,
            Type::FLOAT8,
            Type::TEXT,
            Type::BYTEA,
            Type::NUMERIC,
        ]
        .contains(ty)
    }

    postgres::types::to_sql_checked!();
}

/// A table's row count and order-independent checksum: the wrapping sum of every row's
/// SHA-256, so both sides agree whatever order rows come back in.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    rows: u64,
    sum: [u128; 2],
}

impl Tally {
    fn add(&mut self, row: &[Cell]) {
        let mut h = Sha256::new();
        for cell in row {
            cell.hash_into(&mut h);
        }
        let digest = h.finalize();
        let (hi, lo) = digest.split_at(16);
        self.sum[0] = self.sum[0].wrapping_add(u128::from_be_bytes(hi.try_into().expect("16")));
        self.sum[1] = self.sum[1].wrapping_add(u128::from_be_bytes(lo.try_into().expect("16")));
        self.rows += 1;
    }

    fn hex(&self) -> String {
        format!("{:032x}{:032x}", self.sum[0], self.sum[1])
    }
}

fn pg_type(column: &Column) -> Type {
    match column.affinity() {
        Affinity::Integer => Type::INT8,
        Affinity::Text => Type::TEXT,
        Affinity::Blob => Type::BYTEA,
        Affinity::Real => Type::FLOAT8,
        Affinity::Numeric => Type::NUMERIC,
    }
}

/// The columns' names, comma-separated, in the order both sides read them.
fn column_list(columns: &[&Column]) -> String {
    columns
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Streams `table` from SQLite into the target with `COPY ... FROM STDIN (FORMAT binary)`.
fn send(
    source: &rusqlite::Connection,
    tx: &mut postgres::Transaction<'_>,
    name: &str,
    table: &Table,
    columns: &[&Column],
) -> Result<Tally> {
    let list = column_list(columns);
    let types: Vec<Type> = columns.iter().map(|c| pg_type(c)).collect();
    let sink = tx
        .copy_in(&format!(
            "COPY {} ({list}) FROM STDIN (FORMAT binary)",
            table.name
        ))
        .map_err(|e| fail(name, e))?;
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    let mut stmt = source.prepare(&format!("SELECT {list} FROM {}", table.name))?;
    let mut rows = stmt.query([])?;
    let mut tally = Tally::default();
    while let Some(row) = rows.next()? {
        let mut cells = Vec::with_capacity(columns.len());
        for (i, column) in columns.iter().enumerate() {
            let cell =
                Cell::from_sqlite(row.get_ref(i)?, column).map_err(|detail| Error::CopyValue {
                    table: table.name.clone(),
                    column: column.name.clone(),
                    key: row_key(row, table, columns),
                    detail,
                })?;
            cells.push(cell);
        }
        let refs: Vec<&(dyn ToSql + Sync)> = cells.iter().map(|c| c as _).collect();
        writer.write(&refs).map_err(|e| fail(name, e))?;
        tally.add(&cells);
    }
    writer.finish().map_err(|e| fail(name, e))?;
    Ok(tally)
}

/// The primary key of a source row, for a message: `id=abc` or `session_id=s, seq=3`.
fn row_key(row: &rusqlite::Row<'_>, table: &Table, columns: &[&Column]) -> String {
    table
        .primary_key
        .iter()
        .filter_map(|k| {
            let i = columns.iter().position(|c| &c.name == k)?;
            let value = match row.get_ref(i).ok()? {
                ValueRef::Integer(v) => v.to_string(),
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                other => type_name(other).to_string(),
            };
            Some(format!("{k}={value}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads `table` back from the target and tallies it as [`send`] did.
fn read_back(
    tx: &mut postgres::Transaction<'_>,
    name: &str,
    table: &Table,
    columns: &[&Column],
) -> Result<Tally> {
    let list = column_list(columns);
    let sql = format!("SELECT {list} FROM {}", table.name);
    let rows = tx
        .query_raw(&sql, std::iter::empty::<i64>())
        .map_err(|e| fail(name, e))?;
    let mut tally = Tally::default();
    let mut rows = rows;
    while let Some(row) =
        postgres::fallible_iterator::FallibleIterator::next(&mut rows).map_err(|e| fail(name, e))?
    {
        let mut cells = Vec::with_capacity(columns.len());
        for (i, column) in columns.iter().enumerate() {
            let cell = match column.affinity() {
                Affinity::Integer => row.get::<_, Option<i64>>(i).map(Cell::Integer),
                Affinity::Real => row.get::<_, Option<f64>>(i).map(Cell::Real),
                Affinity::Text => row.get::<_, Option<String>>(i).map(Cell::Text),
                _ => row.get::<_, Option<Vec<u8>>>(i).map(Cell::Blob),
            };
            cells.push(cell.unwrap_or(Cell::Null));
        }
        tally.add(&cells);
    }
    Ok(tally)
}
