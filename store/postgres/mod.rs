//! The PostgreSQL backend's schema side: a database reached by URL ([`Database`]), the gate
//! that judges it ([`Database::inspect`]), the install and the migrations that bring it to this
//! binary's version ([`Database::prepare`]), and [`copy`], which moves a whole SQLite store in.
//!
//! Invariants: the structure a PostgreSQL database must have at version N is derived from the
//! same model as the SQLite schema (the build renders it; see [`crate::schema::POSTGRES_SCHEMA`]),
//! and the gate compares the structure read back from the catalogs with that version's
//! fingerprint. Nothing is written to a database the gate refuses. Installing and migrating run
//! in one transaction under one advisory lock, so nodes opening one database at once install or
//! migrate it exactly once, and a failure leaves it as it was.
//!
//! ```no_run
//! use seed_agents_store::postgres::{Database, State};
//!
//! let mut db = Database::connect("postgres://agents@127.0.0.1/agents")?;
//! db.prepare()?; // installs an empty database, or migrates one to this binary's version
//! assert_eq!(db.inspect()?, State::At(seed_agents_store::schema::SCHEMA_VERSION));
//! # Ok::<(), seed_agents_store::Error>(())
//! ```

mod client;
mod connections;
mod copy;
mod gate;
mod migrate;
mod pool;
mod runs;
mod session;
mod values;

pub(crate) use client::off_runtime;
pub(crate) use connections::{may_block, Bounds};
pub use copy::{copy, CopyReport, TableCopy};
pub use gate::State;
pub use pool::Lease;
pub(crate) use pool::Pool;
pub(crate) use runs::{claim_next, end_root_run, lock_run};
pub(crate) use session::Session;

use crate::error::{Error, Result};
use client::Client;
use postgres::Config;
use std::str::FromStr;

/// The advisory lock key every install, migration and copy holds for its transaction, so that
/// two nodes never change one database's structure at once ("seed-agents" in ASCII, truncated).
const SCHEMA_LOCK: i64 = 0x7365_6564_6167_656e;

/// A PostgreSQL database that holds, or is about to hold, a store.
pub struct Database {
    client: Client,
    name: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("name", &self.name)
            .finish()
    }
}

/// `url` without its password, for messages: `postgres://user@host:port/dbname`.
pub fn redact(url: &str) -> String {
    let Ok(config) = Config::from_str(url) else {
        return "<an unparseable PostgreSQL URL>".into();
    };
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config
        .get_ports()
        .first()
        .map(|p| format!(":{p}"))
        .unwrap_or_default();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}{port}/{db}")
}

impl Database {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname`, or any
    /// form `tokio-postgres` accepts). Nothing is read or written yet.
    ///
    /// # Errors
    /// [`Error::Postgres`] when the URL does not parse or the server cannot be reached.
    pub fn connect(url: &str) -> Result<Database> {
        let name = redact(url);
        let client = Client::connect(url).map_err(|source| Error::Postgres {
            database: name.clone(),
            source,
        })?;
        Ok(Database { client, name })
    }

    /// The database's URL without its password.
    pub fn name(&self) -> &str {
        &self.name
    }
}
