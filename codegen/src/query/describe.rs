//! Describing a statement: SQLite prepares it against the schema and reports its parameters and
//! result columns (with the table column each comes from); the statement's one parse shows what
//! SQLite does not (read by `reading`): what the parameters bind to, whether there is an outer
//! join, and the type of a top-level `CAST`.

use super::reading::{self, Unknowable};
use super::Checker;
use crate::model::Affinity;
use crate::statement::Parsed;
use std::collections::{BTreeMap, BTreeSet};

/// One result column of a described statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultColumn {
    /// The column's name in the result (its alias, or SQLite's name for it).
    pub name: String,
    /// The table column it comes straight from, if any.
    pub origin: Option<(String, String)>,
    /// The affinity of a top-level `CAST(.. AS type)`, for an expression column.
    pub cast: Option<Affinity>,
}

/// What SQLite says about a statement, plus what its syntax tree shows about its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Number of parameters (the largest `?N`).
    pub params: usize,
    /// The result columns, in order.
    pub columns: Vec<ResultColumn>,
    /// 1-based parameter index -> the (table, column)s it binds to, where the text shows them.
    pub bindings: BTreeMap<usize, Vec<(String, String)>>,
    /// 1-based parameter index -> the type a `CAST(? AS type)` gives it.
    pub casts: BTreeMap<usize, Affinity>,
    /// The statement has an outer join, so any table column may come back NULL.
    pub outer_join: bool,
    /// Parameters the statement tests for NULL (`?2 IS NULL OR col = ?2`): they may be `None`.
    pub nullable: BTreeSet<usize>,
    /// Parameters compared with a column whose type is unknown, and bound or cast nowhere.
    pub unknowable: BTreeMap<usize, Unknowable>,
    /// The one parse, which the PostgreSQL translation rewrites.
    pub(super) parsed: Parsed,
}

impl Checker {
    /// Prepares `sql` against the schema, parses it and describes it.
    ///
    /// # Errors
    /// What is wrong, as a sentence: SQLite's own message when it rejects the statement, or
    /// the parser's (with line and column) for a statement SQLite accepts and the parser does
    /// not read.
    pub fn describe(&self, sql_text: &str) -> Result<Described, String> {
        let stmt = self.conn.prepare(sql_text).map_err(|e| {
            let m = match e {
                rusqlite::Error::SqliteFailure(_, Some(m)) => m,
                other => other.to_string(),
            };
            format!("SQLite rejects this statement: {m}")
        })?;
        let parsed = Parsed::new(sql_text).map_err(|m| {
            format!(
                "SQLite accepts this statement, but the checker cannot read it to check its \
                 arguments and its PostgreSQL rendering: {m}"
            )
        })?;
        let r = reading::read(&self.baseline, &parsed);
        let casts = r
            .result_casts
            .filter(|c| c.len() == stmt.column_count())
            .unwrap_or_default();
        let columns: Vec<ResultColumn> = stmt
            .columns_with_metadata()
            .enumerate()
            .map(|(i, m)| ResultColumn {
                name: m.name().to_string(),
                origin: match (m.table_name(), m.origin_name()) {
                    (Some(t), Some(c)) => Some((t.to_string(), c.to_string())),
                    _ => None,
                },
                cast: casts.get(i).copied().flatten(),
            })
            .collect();
        Ok(Described {
            params: stmt.parameter_count(),
            columns,
            bindings: r.bindings,
            casts: r.casts,
            outer_join: r.outer_join,
            nullable: r.nullable,
            unknowable: r.unknowable,
            parsed,
        })
    }
}
