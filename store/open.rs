//! Opening the database file: path resolution, the gate, migration, pragmas and planner
//! statistics.
//!
//! Invariant: the gate and any migration run before a single pragma that writes (WAL changes the
//! file header), so a refused file, or one whose migration failed, is left byte-for-byte as it
//! was.

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::gate::{self, State};
use crate::migrate::{self, Outcome};
use crate::{query, schema};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database path when neither `--db-path` nor `SEED_AGENTS_DB_PATH` is given.
pub const DEFAULT_DB_PATH: &str = "data/agents.sqlite";
/// The environment variable naming the database path.
pub const DB_PATH_ENV: &str = "SEED_AGENTS_DB_PATH";

/// `ANALYZE` looks at about this many rows per index, so open stays fast on large files.
const ANALYSIS_LIMIT: u32 = 400;

/// The database path: `flag` (from `--db-path`), else `$SEED_AGENTS_DB_PATH`, else
/// [`DEFAULT_DB_PATH`].
pub fn resolve_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    match std::env::var_os(DB_PATH_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(DEFAULT_DB_PATH),
    }
}

/// An open, gated, current database.
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir()?;
/// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
/// assert_eq!(
///     store.outcome(),
///     seed_agents_store::Outcome::Fresh { version: seed_agents_store::schema::SCHEMA_VERSION }
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    outcome: Outcome,
    clock: Arc<dyn Clock>,
}

impl Store {
    /// Opens `path`, creating it and its parent directories when missing: a fresh file gets the
    /// baseline, an older one is migrated, a current one is verified.
    ///
    /// # Errors
    /// [`Error::Refused`] when the gate refuses the file (it is left unchanged),
    /// [`Error::Migration`] when a migration fails (the batch is rolled back), [`Error::Io`] when
    /// the directory cannot be created, [`Error::Sqlite`] otherwise.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with_clock(path, Arc::new(SystemClock))
    }

    /// [`Store::open`] with the clock every operation takes "now" from.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with_clock(path: impl AsRef<Path>, clock: Arc<dyn Clock>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(&path)?;
        crate::busy::install(&mut conn)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        let state = gate::inspect(&conn).map_err(|reason| Error::Refused {
            path: path.clone(),
            reason,
        })?;
        let outcome = migrate::upgrade(&mut conn, &path, state)?;
        configure(&conn)?;
        Ok(Store {
            conn,
            path,
            outcome,
            clock,
        })
    }

    /// The clock operations take "now" from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The current time by the store's clock, in epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What opening did.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The connection, for generated helpers and domain operations.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, mutably (to start transactions).
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Row counts of every table, in schema order.
    ///
    /// # Errors
    /// [`Error::Sqlite`] when a count fails.
    pub fn table_counts(&self) -> Result<Vec<(&'static str, i64)>> {
        schema::TABLE_COUNTS
            .iter()
            .map(|(t, count)| Ok((*t, count(&self.conn)?)))
            .collect()
    }
}

/// Pragmas and bounded planner statistics, applied after the gate.
fn configure(conn: &Connection) -> Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "cache_size", -65_536)?; // 64 MiB
    conn.pragma_update(None, "mmap_size", 536_870_912)?; // 512 MiB
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "analysis_limit", ANALYSIS_LIMIT)?;
    // Planner statistics for the tables the hot queries plan over. The append-only logs
    // (session_events, run_journal) are left out: they are large and their queries go by key.
    for analyze in [
        query!("ANALYZE accounts"),
        query!("ANALYZE account_authorizations"),
        query!("ANALYZE agents"),
        query!("ANALYZE agent_collaborators"),
        query!("ANALYZE agent_drafts"),
        query!("ANALYZE agent_triggers"),
        query!("ANALYZE mcp_servers"),
        query!("ANALYZE model_providers"),
        query!("ANALYZE run_event_waits"),
        query!("ANALYZE runs"),
        query!("ANALYZE secrets"),
        query!("ANALYZE session_continuations"),
        query!("ANALYZE sessions"),
        query!("ANALYZE tool_documents"),
        query!("ANALYZE trigger_event_claims"),
        query!("ANALYZE trigger_firings"),
    ] {
        analyze.execute(conn)?;
    }
    Ok(())
}

/// What `status` found, read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The database file.
    pub path: PathBuf,
    /// What the gate says.
    pub verdict: Verdict,
    /// This binary's version.
    pub supported: u32,
}

/// The gate's verdict on a file, without changing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No file: `open` would create one.
    Missing,
    /// An empty file: `open` would install the baseline.
    Fresh,
    /// A verified file at `version`; `pending` lists the migrations `open` would apply.
    Verified {
        /// The version it claims and has.
        version: u32,
        /// Migrations `open` would apply, oldest first.
        pending: Vec<&'static str>,
    },
    /// The gate refuses the file.
    Refused(crate::error::Refusal),
}

/// Inspects `path` read-only: the file is opened with `SQLITE_OPEN_READ_ONLY` and never written,
/// and no `-wal` or `-shm` file is left behind.
///
/// # Errors
/// [`Error::Sqlite`] when the file cannot be opened at all.
pub fn status(path: impl AsRef<Path>) -> Result<Status> {
    let path = path.as_ref().to_path_buf();
    let supported = schema::SCHEMA_VERSION;
    if !path.exists() {
        return Ok(Status {
            path,
            verdict: Verdict::Missing,
            supported,
        });
    }
    let conn = open_read_only(&path)?;
    let verdict = match gate::inspect(&conn) {
        Ok(State::Fresh) => Verdict::Fresh,
        Ok(State::At(version)) => Verdict::Verified {
            version,
            pending: schema::MIGRATIONS[version as usize + 1..]
                .iter()
                .map(|m| m.name)
                .collect(),
        },
        Err(r) => Verdict::Refused(r),
    };
    Ok(Status {
        path,
        verdict,
        supported,
    })
}

/// Opens `path` read-only. A WAL-mode file without a `-wal` file has nothing outside the main file,
/// so it is opened `immutable`: otherwise SQLite would create `-wal` and `-shm` files that a
/// read-only connection cannot remove.
fn open_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if Path::new(&wal).exists() {
        return Ok(Connection::open_with_flags(path, flags)?);
    }
    let mut uri = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'?' | b'#' | b'%' => uri.push_str(&format!("%{b:02X}")),
            _ => uri.push(b as char),
        }
    }
    uri.push_str("?immutable=1");
    Ok(Connection::open_with_flags(
        uri,
        flags | OpenFlags::SQLITE_OPEN_URI,
    )?)
}
