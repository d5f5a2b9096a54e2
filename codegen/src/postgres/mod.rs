//! The PostgreSQL side of the schema, derived from the one model SQLite replays: the DDL of any
//! version ([`render`]), the migration plan from [`BASELINE`] on ([`plan()`]), the portable
//! structure both backends share ([`portable`]) and, with the `postgres` feature, the structure
//! read back from a live server's catalogs ([`introspect`]).
//!
//! There is no second hand-written baseline: a PostgreSQL database's structure at version N is
//! `portable` of the model at N, whichever way it was reached.

mod ddl;
mod plan;

pub use ddl::render;
pub use plan::{dialect_path, plan, split_statements, Plan, Source, Step, BASELINE, DIALECT_DIR};
#[cfg(feature = "postgres")]
pub use seed_agents_model::postgres::introspect;
pub use seed_agents_model::postgres::portable;
mod syntax;
mod translate;
pub use syntax::check_syntax;
pub(crate) use translate::translate_parsed;
pub use translate::{non_null_columns, translate};
