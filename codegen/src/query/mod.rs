//! Compile-time checking of SQL against schema.sql: the expansions of `query!`, `query_as!` and
//! `derive(Row)`. The proc-macro crate only parses its input and calls in here.
//!
//! Each statement is prepared on an in-memory database built from schema.sql, so SQLite itself
//! reports unknown tables, unknown columns and syntax errors. Result columns that come straight
//! from a table column take that column's generated type, and an alias may override whether it is
//! an `Option` (`AS "n!"`, `AS "n?"`). Arguments are checked against the column they bind to
//! where the statement shows it (compared with, assigned to or inserted into a column), or the
//! type a `CAST(? AS type)` gives them.
//!
//! The work is split as sqlx-macros-core splits it: `input` parses the macro arguments,
//! `describe` asks SQLite about a statement and parses it once (`crate::statement`), `reading`
//! reads from that syntax tree what SQLite does not say about parameters and results, and
//! `expand` turns both into checked Rust.

mod describe;
mod expand;
mod input;
mod reading;

pub use describe::{Described, ResultColumn};
pub use reading::Unknowable;

use crate::project::execute_file;
use crate::typing::column_types;
use crate::{Baseline, Result};
use proc_macro2::{Span, TokenStream};
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Checks statements against schema.sql and expands the query macros.
pub struct Checker {
    conn: Connection,
    baseline: Baseline,
    /// (table, column) -> (the column's Rust type without `Option`, as source text; NOT NULL),
    /// computed once.
    types: BTreeMap<(String, String), (String, bool)>,
    /// Columns no row of any table holds NULL in, for the PostgreSQL translation's `ORDER BY`.
    non_null: std::collections::BTreeSet<String>,
    // Kept as text and parsed per expansion: tokens must not outlive the macro call that made
    // them, and the checker outlives every call.
    runtime: String,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("schema_path", &self.baseline.schema_path)
            .finish()
    }
}

impl Checker {
    /// A checker over `baseline`, whose expansions name runtime items through `runtime` (e.g.
    /// `::seed_agents_store::__private`) and generated items through `schema` (e.g.
    /// `::seed_agents_store::schema`).
    ///
    /// # Errors
    /// SQL of the baseline that SQLite rejects, or a path that does not parse.
    pub fn new(baseline: Baseline, runtime: &str, schema: &str) -> Result<Checker> {
        for p in [runtime, schema] {
            syn::parse_str::<syn::Path>(p).map_err(|e| crate::Error::Emit {
                message: format!("`{p}` is not a Rust path: {e}"),
            })?;
        }
        let conn = Connection::open_in_memory().map_err(|source| crate::Error::Introspect {
            what: "an in-memory database".into(),
            source,
        })?;
        execute_file(&conn, &baseline.schema_path, &baseline.schema_sql)?;
        let rt: syn::Path = syn::parse_str(runtime).expect("checked above");
        let schema_path: syn::Path = syn::parse_str(schema).expect("checked above");
        let types = column_types(&baseline, &rt, &schema_path)?
            .into_iter()
            .map(|(key, (ty, not_null))| (key, (ty.to_string(), not_null)))
            .collect();
        let non_null = crate::postgres::non_null_columns(baseline.fresh.tables.values());
        Ok(Checker {
            non_null,
            conn,
            types,
            runtime: runtime.to_string(),
            baseline,
        })
    }

    /// This checker with the extension `name`'s `schema.sql` (`schema_sql`) on top of the
    /// store's schema: statements may then use both, and the extension's generated types are
    /// named through `module` (the path its crate includes the generated module at).
    ///
    /// # Errors
    /// What [`extension::load`](crate::extension::load) refuses in a `schema.sql`, or a
    /// `module` that is not a Rust path.
    pub fn with_extension(mut self, name: &str, schema_sql: &str, module: &str) -> Result<Checker> {
        let module_path: syn::Path = syn::parse_str(module).map_err(|e| crate::Error::Emit {
            message: format!("`{module}` is not a Rust path: {e}"),
        })?;
        crate::extension::check_name(name)?;
        let path = std::path::PathBuf::from(format!("{name}/schema.sql"));
        let (conn, fresh) = crate::extension::on_store(name, &self.baseline, &path, schema_sql)?;
        let annotations = crate::annotations::parse(&path, schema_sql, &fresh)?;
        let extension = Baseline {
            schema_path: path,
            schema_sql: schema_sql.to_string(),
            fresh,
            catalog: String::new(),
            annotations,
        };
        let types = column_types(&extension, &self.rt(), &module_path)?;
        self.types.extend(
            types
                .into_iter()
                .map(|(key, (ty, not_null))| (key, (ty.to_string(), not_null))),
        );
        self.baseline.fresh.tables.extend(extension.fresh.tables);
        self.non_null = crate::postgres::non_null_columns(self.baseline.fresh.tables.values());
        self.conn = conn;
        Ok(self)
    }

    /// The runtime path, as tokens of the current expansion.
    fn rt(&self) -> syn::Path {
        syn::parse_str(&self.runtime).expect("checked in Checker::new")
    }

    /// A table column's Rust type (`Option` when it is nullable) and whether it is NOT NULL.
    fn column_type(&self, table: &str, column: &str) -> syn::Result<Option<(TokenStream, bool)>> {
        Ok(self.column_base(table, column)?.map(|(ty, not_null)| {
            if not_null {
                (ty, true)
            } else {
                (quote::quote!(Option<#ty>), false)
            }
        }))
    }

    /// A table column's Rust type without the `Option` of a nullable one, and whether it is NOT
    /// NULL.
    fn column_base(&self, table: &str, column: &str) -> syn::Result<Option<(TokenStream, bool)>> {
        let Some((ty, not_null)) = self.types.get(&(table.to_string(), column.to_string())) else {
            return Ok(None);
        };
        let ty: TokenStream = ty
            .parse()
            .map_err(|e| syn::Error::new(Span::call_site(), format!("{e}")))?;
        Ok(Some((ty, *not_null)))
    }
}
