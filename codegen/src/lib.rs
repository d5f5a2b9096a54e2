//! seed-agents-codegen: SQLite is the parser of record.
//!
//! [`Project::load`] reads `schema.sql` and `migrations/`, replays both in bundled SQLite,
//! introspects the results into one normalized [`Schema`] model, and refuses any difference
//! between a fresh install and a migrated database. From the same model the `emit` feature
//! renders typed Rust ([`emit::rust`]) and per-table Markdown ([`emit::docs`]); [`Builder`] is the
//! entry point of the store's `build.rs`, and reports every table, column or index that
//! [`coverage`] finds undocumented (a warning, or an error in CI).
//!
//! The runtime uses the model side only ([`introspect()`], [`diff()`], [`Schema::fingerprint`]) to
//! verify a database file against the version it claims.

pub mod annotations;
#[cfg(feature = "emit")]
mod builder;
pub mod coverage;
pub mod diff;
#[cfg(feature = "emit")]
pub mod emit;
mod error;
#[cfg(feature = "emit")]
mod ident;
pub mod introspect;
pub mod lock;
pub mod migration;
pub mod model;
pub mod postgres;
pub mod project;
#[cfg(feature = "emit")]
pub mod query;
pub mod sql;
#[cfg(feature = "emit")]
mod typing;

#[cfg(feature = "emit")]
pub use builder::{Builder, Output, GENERATED_FILE};
pub use diff::{diff, Difference};
pub use error::{Error, Result};
pub use introspect::introspect;
pub use model::Schema;
pub use project::{Baseline, Project};
