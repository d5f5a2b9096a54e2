//! Renders a [`Schema`] as PostgreSQL DDL.
//!
//! Invariant: [`render`] of a model creates a database whose catalogs read back (see
//! `seed_agents_model::postgres::introspect`) as [`portable`] of that same model, so one fingerprint judges both backends'
//! structure. Types map by SQLite affinity (INTEGER is `bigint`, TEXT `text`, BLOB `bytea`,
//! REAL `double precision`; text in the byte-order "C" collation), so every stored value keeps
//! its SQLite meaning and order; constraints keep
//! PostgreSQL's default names, so a later step can name what it drops. Foreign keys are checked
//! per statement, as SQLite checks them, and are deferrable for a bulk copy.

use crate::error::{Error, Result};
use crate::model::{Affinity, Column, ForeignKey, Index, Schema, Table};
use seed_agents_model::postgres::portable;

/// PostgreSQL's limit on identifier length (NAMEDATALEN - 1).
const MAX_IDENTIFIER: usize = 63;

/// The PostgreSQL type of a column.
fn pg_type(column: &Column) -> &'static str {
    match column.affinity() {
        Affinity::Integer => "bigint",
        // Compared and ordered byte by byte, as SQLite's BINARY collation does, whatever the
        // database's locale: keys, keyset pages and sorts agree on both backends.
        Affinity::Text => "text COLLATE \"C\"",
        Affinity::Blob => "bytea",
        Affinity::Real => "double precision",
        Affinity::Numeric => "numeric",
    }
}

/// Every statement that creates `schema` in an empty PostgreSQL schema: the tables with their
/// keys and unique constraints, then the foreign keys (so tables may reference each other in
/// any order), then the indexes.
///
/// # Errors
/// [`Error::Postgres`] when the model holds what PostgreSQL cannot express the same way (a
/// trigger, a view, an expression index, a collation other than the binary one, a name too long).
pub fn render(schema: &Schema) -> Result<Vec<String>> {
    let schema = &portable(schema);
    if let Some(name) = schema.triggers.keys().chain(schema.views.keys()).next() {
        return Err(unsupported(format!(
            "{name}: triggers and views have no PostgreSQL rendering"
        )));
    }
    let mut out = Vec::new();
    for table in schema.tables.values() {
        out.push(create_table(table)?);
    }
    for table in schema.tables.values() {
        for fk in &table.foreign_keys {
            out.push(add_foreign_key(&table.name, fk)?);
        }
    }
    for table in schema.tables.values() {
        for index in table.indexes.values() {
            out.push(create_index(table, index)?);
        }
    }
    Ok(out)
}

/// `CREATE TABLE` with columns, primary key and unique constraints.
pub(crate) fn create_table(table: &Table) -> Result<String> {
    check_name(&table.name)?;
    let mut lines: Vec<String> = Vec::new();
    let ordered: Vec<&Column> = if table.column_order.is_empty() {
        table.columns.values().collect()
    } else {
        table.ordered_columns().collect()
    };
    for column in ordered {
        lines.push(format!("    {}", column_definition(column)?));
    }
    if !table.primary_key.is_empty() {
        lines.push(format!(
            "    CONSTRAINT {} PRIMARY KEY ({})",
            primary_key_name(&table.name),
            table.primary_key.join(", ")
        ));
    }
    for columns in &table.uniques {
        lines.push(format!(
            "    CONSTRAINT {} UNIQUE ({})",
            unique_name(&table.name, columns)?,
            columns.join(", ")
        ));
    }
    Ok(format!(
        "CREATE TABLE {} (\n{}\n)",
        table.name,
        lines.join(",\n")
    ))
}

/// `name type [NOT NULL] [DEFAULT expr]`.
pub(crate) fn column_definition(column: &Column) -> Result<String> {
    check_name(&column.name)?;
    let mut s = format!("{} {}", column.name, pg_type(column));
    if column.not_null || column.pk > 0 {
        s.push_str(" NOT NULL");
    }
    if let Some(default) = &column.default {
        s.push_str(" DEFAULT ");
        s.push_str(default);
    }
    Ok(s)
}

/// `ALTER TABLE .. ADD CONSTRAINT .. FOREIGN KEY ..`.
pub(crate) fn add_foreign_key(table: &str, fk: &ForeignKey) -> Result<String> {
    let mut s = format!(
        "ALTER TABLE {table} ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
        foreign_key_name(table, fk)?,
        fk.columns.join(", "),
        fk.table,
        fk.to.join(", ")
    );
    if fk.on_update != "NO ACTION" {
        s.push_str(&format!(" ON UPDATE {}", fk.on_update));
    }
    if fk.on_delete != "NO ACTION" {
        s.push_str(&format!(" ON DELETE {}", fk.on_delete));
    }
    // Checked at each statement as SQLite checks them, and deferrable so that a bulk copy can
    // load tables that reference each other in any order and be checked at its commit.
    s.push_str(" DEFERRABLE INITIALLY IMMEDIATE");
    Ok(s)
}

/// `CREATE [UNIQUE] INDEX` on `table`. A column that may be NULL keeps SQLite's NULL order
/// (first when ascending, last when descending), the order the translated `ORDER BY` asks for.
pub(crate) fn create_index(table: &Table, index: &Index) -> Result<String> {
    check_name(&index.name)?;
    let mut columns = Vec::new();
    for c in &index.columns {
        let Some(name) = &c.name else {
            return Err(unsupported(format!(
                "index {}: expression keys have no PostgreSQL rendering",
                index.name
            )));
        };
        if !c.collation.eq_ignore_ascii_case("BINARY") {
            return Err(unsupported(format!(
                "index {}: collation {} has no PostgreSQL rendering",
                index.name, c.collation
            )));
        }
        let nullable = table
            .columns
            .get(name)
            .is_some_and(|col| !col.not_null && col.pk == 0);
        columns.push(match (c.desc, nullable) {
            (false, false) => name.clone(),
            (false, true) => format!("{name} NULLS FIRST"),
            (true, false) => format!("{name} DESC"),
            (true, true) => format!("{name} DESC NULLS LAST"),
        });
    }
    let mut s = format!(
        "CREATE {}INDEX {} ON {} ({})",
        if index.unique { "UNIQUE " } else { "" },
        index.name,
        index.table,
        columns.join(", ")
    );
    if let Some(p) = &index.partial {
        s.push_str(" WHERE ");
        s.push_str(p);
    }
    Ok(s)
}

/// PostgreSQL's default name of a table's primary key.
pub(crate) fn primary_key_name(table: &str) -> String {
    format!("{table}_pkey")
}

/// PostgreSQL's default name of a unique constraint.
pub(crate) fn unique_name(table: &str, columns: &[String]) -> Result<String> {
    checked(format!("{table}_{}_key", columns.join("_")))
}

/// PostgreSQL's default name of a foreign key.
pub(crate) fn foreign_key_name(table: &str, fk: &ForeignKey) -> Result<String> {
    checked(format!("{table}_{}_fkey", fk.columns.join("_")))
}

fn checked(name: String) -> Result<String> {
    check_name(&name)?;
    Ok(name)
}

fn check_name(name: &str) -> Result<()> {
    if name.len() > MAX_IDENTIFIER {
        return Err(unsupported(format!(
            "{name}: longer than PostgreSQL's {MAX_IDENTIFIER}-byte identifiers"
        )));
    }
    Ok(())
}

pub(crate) fn unsupported(message: String) -> Error {
    Error::Postgres { message }
}
