//! Doc coverage of schema.sql: which tables, columns and indexes carry no description.
//!
//! The README promises that `schema.sql` documents every column; [`gaps`] is how the build keeps
//! that promise. An annotation alone (`@timestamp`) types a column but does not describe it, so it
//! does not count. The [`Builder`](crate::Builder) reports each gap as a warning, or refuses the
//! build when [`strict_from_env`] says so (CI).

use crate::annotations::Annotations;
use crate::error::{Error, Result};
use crate::model::Schema;
use std::fmt;

/// Set to `1` to make undocumented objects a build error, `0` to keep them warnings even in CI.
pub const STRICT_DOCS_ENV: &str = "SEED_AGENTS_STRICT_DOCS";

/// The variable CI services set to `true`; when [`STRICT_DOCS_ENV`] is unset it decides.
pub const CI_ENV: &str = "CI";

/// What kind of object lacks a description.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Object {
    /// The table itself.
    Table,
    /// A column, by name.
    Column(String),
    /// An explicitly created index, by name.
    Index(String),
}

/// One undocumented object of schema.sql.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gap {
    /// 1-based line of its declaration in schema.sql (0 when unknown).
    pub line: usize,
    /// The table it belongs to.
    pub table: String,
    /// The table, column or index.
    pub object: Object,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Object::Table => write!(f, "table {} has no doc comment", self.table),
            Object::Column(c) => write!(f, "column {}.{c} has no doc comment", self.table),
            Object::Index(i) => write!(
                f,
                "index {i} on {} has no doc comment (say which query it serves)",
                self.table
            ),
        }
    }
}

/// Every table, column and index of `schema` whose doc comment in `annotations` is empty, in
/// schema.sql line order.
pub fn gaps(schema: &Schema, annotations: &Annotations) -> Vec<Gap> {
    let mut out = Vec::new();
    for (tname, table) in &schema.tables {
        let tdoc = annotations.tables.get(tname);
        let tline = tdoc.map_or(0, |t| t.line);
        if tdoc.is_none_or(|t| t.doc.trim().is_empty()) {
            out.push(Gap {
                line: tline,
                table: tname.clone(),
                object: Object::Table,
            });
        }
        for cname in table.columns.keys() {
            let doc = annotations.column(tname, cname);
            if doc.is_none_or(|d| d.doc.trim().is_empty()) {
                out.push(Gap {
                    line: doc.map_or(tline, |d| d.line),
                    table: tname.clone(),
                    object: Object::Column(cname.clone()),
                });
            }
        }
        for iname in table.indexes.keys() {
            let doc = tdoc.and_then(|t| t.indexes.get(iname));
            if doc.is_none_or(|d| d.doc.trim().is_empty()) {
                out.push(Gap {
                    line: doc.map_or(tline, |d| d.line),
                    table: tname.clone(),
                    object: Object::Index(iname.clone()),
                });
            }
        }
    }
    out.sort();
    out
}

/// Whether undocumented objects fail the build, from the environment as read by `var`: the
/// reason (`SEED_AGENTS_STRICT_DOCS=1`, `CI=true`) when they do, `None` when they are warnings.
/// [`STRICT_DOCS_ENV`] `1`/`true` or `0`/`false` decides; unset or empty, [`CI_ENV`] `true` (any
/// case) means strict.
///
/// # Errors
/// [`Error::Env`] when [`STRICT_DOCS_ENV`] holds anything else.
pub fn strict_from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<String>> {
    let strict = var(STRICT_DOCS_ENV).map(|v| v.trim().to_string());
    match strict.as_deref() {
        None | Some("") => Ok(var(CI_ENV)
            .filter(|v| v.trim().eq_ignore_ascii_case("true"))
            .map(|v| format!("{CI_ENV}={v}"))),
        Some(v) if v == "1" || v.eq_ignore_ascii_case("true") => {
            Ok(Some(format!("{STRICT_DOCS_ENV}={v}")))
        }
        Some(v) if v == "0" || v.eq_ignore_ascii_case("false") => Ok(None),
        Some(v) => Err(Error::Env {
            name: STRICT_DOCS_ENV,
            value: v.to_string(),
            expected: "1 or 0 (true or false)",
        }),
    }
}
