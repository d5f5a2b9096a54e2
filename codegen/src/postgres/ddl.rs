//! Renders a [`Schema`] as PostgreSQL DDL, and the portable projection both backends share.
//!
//! Invariant: [`render`] of a model creates a database whose catalogs read back (see
//! `catalog`) as [`portable`] of that same model, so one fingerprint judges both backends'
//! structure. Types map by SQLite affinity (INTEGER is `bigint`, TEXT `text`, BLOB `bytea`,
//! REAL `double precision`; text in the byte-order "C" collation), so every stored value keeps
//! its SQLite meaning and order; constraints keep
//! PostgreSQL's default names, so a later step can name what it drops. Foreign keys are checked
//! per statement, as SQLite checks them, and are deferrable for a bulk copy.

use crate::error::{Error, Result};
use crate::model::{Affinity, Column, ForeignKey, Index, Schema, Table};
use crate::sql;

/// PostgreSQL's limit on identifier length (NAMEDATALEN - 1).
const MAX_IDENTIFIER: usize = 63;

/// The structure both backends can express: what SQLite-only flags say is dropped
/// (`WITHOUT ROWID`, `STRICT`, hidden columns), primary-key columns are `NOT NULL` (PostgreSQL
/// always makes them so), types are reduced to their affinity's name, defaults and partial
/// predicates are in the normal form of [`sql::normalize`], and a non-unique index ends with
/// the primary key's columns, as SQLite's indexes of a keyed table physically do (so an order
/// SQLite reads off an index, ties broken by the key, PostgreSQL reads off it too).
pub fn portable(schema: &Schema) -> Schema {
    let mut out = schema.clone();
    for table in out.tables.values_mut() {
        let key = table.primary_key.clone();
        for index in table.indexes.values_mut().filter(|i| !i.unique) {
            for column in &key {
                if !index
                    .columns
                    .iter()
                    .any(|c| c.name.as_ref() == Some(column))
                {
                    index.columns.push(crate::model::IndexColumn {
                        name: Some(column.clone()),
                        desc: false,
                        collation: "BINARY".into(),
                    });
                }
            }
        }
        table.without_rowid = false;
        table.strict = false;
        for column in table.columns.values_mut() {
            column.hidden = 0;
            column.not_null |= column.pk > 0;
            column.decl_type = affinity_name(column.affinity()).into();
            column.default = column.default.as_deref().map(normal);
        }
        for index in table.indexes.values_mut() {
            index.partial = index.partial.as_deref().map(predicate);
        }
    }
    out
}

/// The type name [`portable`] keeps for an affinity.
pub fn affinity_name(affinity: Affinity) -> &'static str {
    match affinity {
        Affinity::Integer => "INTEGER",
        Affinity::Text => "TEXT",
        Affinity::Blob => "BLOB",
        Affinity::Real => "REAL",
        Affinity::Numeric => "NUMERIC",
    }
}

/// An expression in the normal form (`sql::normalize`), or as written when it does not lex.
pub(crate) fn normal(expr: &str) -> String {
    sql::normalize(expr).unwrap_or_else(|_| expr.to_string())
}

/// A partial index's predicate in one form, whichever backend wrote it: [`normal`], with what
/// PostgreSQL adds when it prints a predicate back undone. The casts on literals go
/// (`'agent'::text`), `x = ANY (ARRAY[a, b])` reads `x IN (a, b)`, and grouping parentheses
/// go. Parentheses of a call or an `IN` list stay. So `kind = 'agent' AND status IN ('a', 'b')`
/// as `schema.sql` writes it and as the catalog returns it compare equal. (Grouping is not
/// compared: two predicates that differ only in it read the same.)
pub(crate) fn predicate(expr: &str) -> String {
    let Ok(tokens) = sql::tokenize(expr) else {
        return expr.to_string();
    };
    let tokens: Vec<_> = tokens
        .into_iter()
        .filter(|t| t.kind != sql::TokenKind::Comment)
        .collect();
    let word = |i: usize, w: &str| {
        tokens.get(i).is_some_and(|t: &sql::Token<'_>| {
            t.kind == sql::TokenKind::Word && t.text.eq_ignore_ascii_case(w)
        })
    };
    let punct = |i: usize, p: &str| {
        tokens
            .get(i)
            .is_some_and(|t| t.kind == sql::TokenKind::Punct && t.text == p)
    };
    let mut out: Vec<String> = Vec::new();
    // Whether each open parenthesis was kept.
    let mut kept = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if punct(i, ":") && punct(i + 1, ":") {
            // A cast: `::` and its type's name (`double precision` is two words).
            i += 3;
            if word(i - 1, "double") && word(i, "precision") {
                i += 1;
            }
            continue;
        }
        let array = tokens.get(i + 3);
        if word(i, "any")
            && out.last().is_some_and(|o| o == "=")
            && punct(i + 1, "(")
            && word(i + 2, "array")
            && array
                .is_some_and(|a| a.kind == sql::TokenKind::QuotedIdent && a.text.starts_with('['))
            && punct(i + 4, ")")
        {
            let list = &array.expect("checked").text;
            out.pop();
            out.push("in".into());
            out.push("(".into());
            out.push(predicate(&list[1..list.len() - 1]));
            out.push(")".into());
            i += 5;
            continue;
        }
        match (t.kind, t.text) {
            (sql::TokenKind::Punct, "(") => {
                // A call's or a list's parentheses follow a name or `IN`; grouping ones do not.
                let keep = out.last().is_some_and(|o| {
                    o.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                        && !matches!(o.as_str(), "and" | "or" | "not")
                });
                kept.push(keep);
                if keep {
                    out.push("(".into());
                }
            }
            (sql::TokenKind::Punct, ")") => {
                if kept.pop().unwrap_or(true) {
                    out.push(")".into());
                }
            }
            (sql::TokenKind::Word, w) => out.push(w.to_ascii_lowercase()),
            (_, text) => out.push(text.to_string()),
        }
        i += 1;
    }
    out.join(" ")
}

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
