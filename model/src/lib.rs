//! seed-agents-model: the normalized structure of a Seed Agents store's database, the one thing
//! both the code generator (at build time) and the store's runtime (at its gate) need.
//!
//! - [`model`]: the [`Schema`] of tables, columns, indexes and foreign keys, its canonical JSON
//!   and its fingerprint;
//! - [`introspect()`]: a SQLite database read back into that model;
//! - [`diff()`]: what differs between two models, rendered for a person;
//! - [`postgres`]: the portable projection both backends share and, with the `postgres`
//!   feature, a PostgreSQL database read back into the model;
//! - [`sql`]: the SQL lexing the normal forms are built on.
//!
//! Invariant: nothing here knows the code generator or the runtime; both depend on this crate,
//! never the reverse.
//!
//! ```
//! use seed_agents_model::{diff, introspect};
//!
//! let conn = rusqlite::Connection::open_in_memory()?;
//! conn.execute_batch("CREATE TABLE accounts (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL)")?;
//! let before = introspect(&conn)?;
//! conn.execute_batch("CREATE INDEX accounts_created ON accounts (created_at)")?;
//! let after = introspect(&conn)?;
//! assert_eq!(diff(&before, &after).len(), 1);
//! assert_ne!(before.fingerprint(), after.fingerprint());
//! # Ok::<(), rusqlite::Error>(())
//! ```

pub mod diff;
pub mod introspect;
pub mod model;
pub mod postgres;
pub mod sql;

pub use diff::{diff, Difference};
pub use introspect::introspect;
pub use model::Schema;
