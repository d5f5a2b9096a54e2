//! Reads the structure of a live PostgreSQL schema from its catalogs into the same [`Schema`]
//! model SQLite's introspection builds, in the portable form [`super::portable`] describes.
//!
//! Invariant: a schema created by [`super::render`] of a model reads back as `portable` of that
//! model, so the gate compares one fingerprint on both backends. Everything in the connection's
//! `current_schema()` counts; nothing here writes.

use super::{affinity_name, normal, predicate};
use crate::model::{Affinity, Column, ForeignKey, Index, IndexColumn, Schema, Table};
use postgres::GenericClient;

/// Reads every table, key, foreign key and index of the connection's current schema.
///
/// # Errors
/// The server's error when a catalog query fails.
pub fn introspect(client: &mut impl GenericClient) -> Result<Schema, postgres::Error> {
    let mut schema = Schema::default();
    let tables = client.query(
        "SELECT c.oid, c.relname::text FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname",
        &[],
    )?;
    for row in tables {
        let oid: u32 = row.get(0);
        let name: String = row.get(1);
        let table = read_table(client, oid, &name)?;
        schema.tables.insert(name, table);
    }
    Ok(schema)
}

fn read_table(
    client: &mut impl GenericClient,
    oid: u32,
    name: &str,
) -> Result<Table, postgres::Error> {
    let mut table = Table {
        name: name.to_string(),
        ..Table::default()
    };
    for row in client.query(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
         pg_get_expr(d.adbin, d.adrelid), co.collname::text \
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         LEFT JOIN pg_collation co ON co.oid = a.attcollation \
         WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        &[&oid],
    )? {
        let column = Column {
            name: row.get(0),
            decl_type: type_name(row.get(1), row.get(4)),
            not_null: row.get(2),
            default: row.get::<_, Option<String>>(3).map(|d| normal(strip_cast(&d))),
            pk: 0,
            hidden: 0,
        };
        table.column_order.push(column.name.clone());
        table.columns.insert(column.name.clone(), column);
    }
    // Constraints: each one's kind, its columns in key order, and for a foreign key the parent
    // with its columns and actions.
    for row in client.query(
        "SELECT c.contype::text, \
         ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) \
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i), \
         p.relname::text, \
         ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) \
               JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i), \
         c.confupdtype::text, c.confdeltype::text \
         FROM pg_constraint c LEFT JOIN pg_class p ON p.oid = c.confrelid \
         WHERE c.conrelid = $1 AND c.contype IN ('p', 'u', 'f') ORDER BY c.conname",
        &[&oid],
    )? {
        let kind: String = row.get(0);
        let columns: Vec<String> = row.get(1);
        match kind.as_str() {
            "p" => {
                for (i, c) in columns.iter().enumerate() {
                    if let Some(column) = table.columns.get_mut(c) {
                        column.pk = i as u32 + 1;
                    }
                }
                table.primary_key = columns;
            }
            "u" => {
                table.uniques.insert(columns);
            }
            _ => {
                table.foreign_keys.insert(ForeignKey {
                    columns,
                    table: row.get::<_, Option<String>>(2).unwrap_or_default(),
                    to: row.get(3),
                    on_update: action(&row.get::<_, String>(4)).into(),
                    on_delete: action(&row.get::<_, String>(5)).into(),
                });
            }
        }
    }
    // Indexes that back no constraint: key columns (None for an expression), direction,
    // whether a collation other than the column's own is set, and the predicate.
    for row in client.query(
        "SELECT i.relname::text, x.indisunique, pg_get_expr(x.indpred, x.indrelid), \
         ARRAY(SELECT CASE WHEN x.indkey[k - 1] = 0 THEN NULL \
                      ELSE pg_get_indexdef(x.indexrelid, k, true) END \
               FROM generate_series(1, x.indnkeyatts) k ORDER BY k), \
         ARRAY(SELECT (x.indoption[k - 1] & 1) = 1 FROM generate_series(1, x.indnkeyatts) k ORDER BY k), \
         ARRAY(SELECT x.indcollation[k - 1] <> 0 AND x.indcollation[k - 1] <> 100 \
                      AND x.indcollation[k - 1] <> 950 \
               FROM generate_series(1, x.indnkeyatts) k ORDER BY k) \
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
         WHERE x.indrelid = $1 \
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid) \
         ORDER BY i.relname",
        &[&oid],
    )? {
        let index_name: String = row.get(0);
        let names: Vec<Option<String>> = row.get(3);
        let desc: Vec<bool> = row.get(4);
        let collated: Vec<bool> = row.get(5);
        let columns = names
            .into_iter()
            .zip(desc)
            .zip(collated)
            .map(|((name, desc), collated)| IndexColumn {
                name,
                desc,
                collation: if collated { "OTHER" } else { "BINARY" }.into(),
            })
            .collect();
        let index = Index {
            name: index_name.clone(),
            table: name.to_string(),
            unique: row.get(1),
            columns,
            partial: row
                .get::<_, Option<String>>(2)
                .map(|p| predicate(&p)),
        };
        table.indexes.insert(index_name, index);
    }
    Ok(table)
}

/// The model's type name for a PostgreSQL type: the affinity the DDL renderer mapped from, or
/// the type's own name (which then differs from every model) for anything else, text in a
/// collation other than "C" included.
fn type_name(pg: String, collation: Option<String>) -> String {
    let affinity = match pg.as_str() {
        "bigint" => Affinity::Integer,
        "text" if collation.as_deref() == Some("C") => Affinity::Text,
        "text" => return format!("TEXT COLLATE {}", collation.as_deref().unwrap_or("<none>")),
        "bytea" => Affinity::Blob,
        "double precision" => Affinity::Real,
        "numeric" => Affinity::Numeric,
        _ => return pg.to_ascii_uppercase(),
    };
    affinity_name(affinity).into()
}

/// A foreign-key action from its catalog letter.
fn action(letter: &str) -> &'static str {
    match letter {
        "r" => "RESTRICT",
        "c" => "CASCADE",
        "n" => "SET NULL",
        "d" => "SET DEFAULT",
        _ => "NO ACTION",
    }
}

/// A default as written, without the cast PostgreSQL adds to a literal (`'system'::text`).
fn strip_cast(expr: &str) -> &str {
    for cast in [
        "::text",
        "::bigint",
        "::bytea",
        "::double precision",
        "::numeric",
    ] {
        if let Some(bare) = expr.strip_suffix(cast) {
            return bare;
        }
    }
    expr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_loses_the_cast_postgresql_adds() {
        assert_eq!(strip_cast("'system'::text"), "'system'");
        assert_eq!(strip_cast("0"), "0");
    }

    #[test]
    fn a_predicate_reads_the_same_as_written_and_as_postgresql_prints_it() {
        let cases = [
            ("trigger_firing_id IS NOT NULL", "(trigger_firing_id IS NOT NULL)"),
            (
                "kind = 'agent' AND status IN ('claimed', 'running')",
                "((kind = 'agent'::text) AND (status = ANY (ARRAY['claimed'::text, 'running'::text])))",
            ),
            ("lower(name) = 'x'", "(lower(name) = 'x'::text)"),
            ("score > 1.5", "(score > (1.5)::double precision)"),
        ];
        for (written, printed) in cases {
            assert_eq!(predicate(written), predicate(printed), "{printed}");
        }
        assert_eq!(
            predicate("kind = 'agent' AND status IN ('claimed', 'running')"),
            "kind = 'agent' and status in ( 'claimed' , 'running' )"
        );
        // What differs still differs.
        assert_ne!(
            predicate("status IN ('claimed')"),
            predicate("status IN ('running')")
        );
        assert_ne!(predicate("a IS NULL"), predicate("a IS NOT NULL"));
    }
}
