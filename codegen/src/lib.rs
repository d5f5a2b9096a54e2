//! seed-agents-codegen: SQLite is the parser of record.
//!
//! [`Project::load`] reads `schema.sql` and `migrations/`, replays both in bundled SQLite,
//! introspects the results into one normalized [`Schema`] model, and refuses any difference
//! between a fresh install and a migrated database. From the same model it
//! renders typed Rust ([`emit::rust`]) and per-table Markdown ([`emit::docs`]); [`Builder`] is the
//! entry point of the store's `build.rs`, and reports every table, column or index that
//! [`coverage`] finds undocumented (a warning, or an error in CI).
//!
//! The model itself ([`Schema`], [`introspect()`], [`diff()`]) lives in `seed-agents-model`, which
//! the runtime depends on instead of this crate: the store verifies a database file against the
//! version it claims without compiling the code generator.

pub mod annotations;
mod builder;
pub mod coverage;
pub mod emit;
mod error;
pub mod extension;
mod ident;
pub mod lock;
pub mod migration;
pub mod postgres;
pub mod project;
pub mod query;
mod statement;
mod typing;

pub use builder::{Builder, Output, GENERATED_FILE};
pub use error::{Error, Result};
pub use project::{Baseline, Project};
// The model, introspection, diff and lexing live in seed-agents-model, which the runtime
// shares; they are re-exported so `seed_agents_codegen::model` and the rest read as before.
pub use seed_agents_model::{diff, introspect, model, sql, Difference, Schema};
