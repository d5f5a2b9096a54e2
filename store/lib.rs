//! seed-agents-store: the complete state store of a Seed Agents server in one SQLite file.
//!
//! `schema.sql` is the fresh-install baseline and `migrations/` the history from genesis; the
//! build replays both in SQLite, fails on any drift, and generates [`schema`]: typed rows,
//! sea-query column identifiers and read helpers for every table. [`Store::open`] gates the file
//! (refusing unknown, newer or structurally different databases), migrates it and configures it.
//! Every write is a domain operation on [`Store`] (one transaction that keeps the invariants);
//! [`Store::conn`] is a read-only connection for the generated helpers and your own queries.
//!
//! ```
//! use seed_agents_store::{schema::accounts, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("agents.sqlite"))?;
//! store.touch_account("acct-1")?;
//! let row = accounts::get(&store.conn()?, "acct-1")?.expect("just created");
//! assert_eq!(row.created_at, row.updated_at);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Threads, tasks and what runs where
//!
//! [`Store`] is a cheap `Clone`, `Send + Sync`, every operation `&self`: open it once and clone
//! it into every thread and task. Reads run on a pool of `query_only` connections (WAL: each
//! sees its own snapshot, so a long read blocks nothing); writes go through one writer that
//! commits concurrent operations together, one transaction and one fsync per batch, each
//! operation in its own savepoint so that one failing neither fails nor delays the others, and
//! each caller returning once its batch is durable. [`OpenOptions`] sets the pool size, the
//! busy timeout and the batch bounds; [`Store::commit_stats`] shows the batching. With the
//! `tokio` feature, `AsyncStore` offers the same operations as futures on tokio's blocking pool.
//!
//! # Cargo features
//!
//! Every feature is off by default.
//!
//! - `cli`: the `seed-agents-db` binary (open, status, check, docs, retention, prune, rotate-key,
//!   move-key; `--json` for scripts). The library never needs it, so a dependency without it
//!   compiles no CLI parser.
//! - `serde`: `Serialize` and `Deserialize` for every generated `Row` (each field named by its SQL
//!   column, e.g. `account_id`; a [`cbor::Cbor`] payload as its stored bytes, so a row round trips
//!   exactly), every generated enum (as the text stored in its column; any other text is
//!   refused, listing the allowed values), [`paging::Cursor`] (as its opaque
//!   [`to_token`](paging::Cursor::to_token) string; a malformed token is refused) and
//!   [`paging::Page`].
//! - `tokio`: `AsyncStore`, every operation of [`Store`] as an `async fn` with the same name
//!   and parameters, run on tokio's blocking pool (`spawn_blocking`) so awaiting one never
//!   blocks the runtime. It needs tokio's `rt` and nothing else; a dependency without the
//!   feature compiles no tokio. `examples/server` is an axum server built on it.

pub mod audit;
mod conversation;
mod error;
mod execution;
mod extension;
pub mod feed;
mod handle;
pub mod keys;
mod maintenance;
pub mod payload;
#[cfg(feature = "postgres")]
pub mod postgres;
#[path = "generated/mod.rs"]
pub mod schema;
mod sql;
mod sqlite;
pub mod tools;
mod values;

pub use sqlite::{busy, gate, integrity, migrate};
pub use values::{cbor, clock, ids, paging};

pub use conversation::{
    accounts, agents, deletion, events, idempotency, providers, secrets, sessions,
};
pub use error::{Error, ErrorKind, Refusal, Result};
pub use execution::{journal, lease, runs, triggers, waits, watermarks};
pub use extension::{version_key as extension_version_key, Extension};
pub use maintenance::{prune, retention};
pub use sql::db::{Columns, Db, Executor};
pub use sql::dynamic::FromRow;
// The query-plan registry, for the plan tests and benchmarks only.
#[doc(hidden)]
pub use execution::plans;
pub use seed_agents_macros::{query, query_as, Row};
pub use sql::query::Query;
pub use tools::{continuations, drafts, mcp};

// The macros name `::seed_agents_store`, which this lets the crate use on itself.
extern crate self as seed_agents_store;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
#[cfg(feature = "tokio")]
pub use handle::asynchronous::{AsyncRunWaiter, AsyncStore, EventStream, JournalStream};
pub use handle::{Durability, Reading, Store};
pub use sqlite::commit::CommitStats;
pub use sqlite::migrate::{EmbeddedMigration, Outcome, Progress};
pub use sqlite::open::{
    is_postgres_url, resolve_path, OpenOptions, DB_PATH_ENV, DEFAULT_BATCH_AGE,
    DEFAULT_BATCH_OPERATIONS, DEFAULT_CONNECTION_LIFETIME, DEFAULT_DB_PATH,
    DEFAULT_IDLE_IN_TRANSACTION, DEFAULT_KEEPALIVE, DEFAULT_READ_CONNECTIONS,
};
pub use sqlite::pool::Reader;
pub use sqlite::status::{status, StatusReport, Verdict};

/// The one home of what generated code and the query macros reach the runtime through.
///
/// **Not public API**: the macros' expansions name these items, and they change without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::error::{Error, Result};
    pub use crate::extension::Extension;
    pub use crate::payload;
    pub use crate::sql::arguments::Arguments;
    pub use crate::sql::db::{Columns, Db, Executor};
    pub use crate::sql::dynamic::FromRow;
    pub use crate::sql::query::{
        bind_check, cast_check, enum_from_column, field_check, field_check_by, BindsTo, CastsTo,
        FromColumn, FromColumns, Holds, Query,
    };
    pub use crate::sqlite::migrate::EmbeddedMigration;
    pub use crate::values::cbor::Cbor;
    pub use rusqlite;
    pub use sea_query;
    pub use seed_agents_macros::{query_as_in, query_in};
    // Generated rows and enums name serde only under the `serde` feature.
    #[cfg(feature = "serde")]
    pub use serde;
}
