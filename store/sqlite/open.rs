//! Opening the database file: path resolution, the gate, migration and pragmas (planner
//! statistics are [`crate::sqlite::statistics`]'s) and read-only opens; looking without opening
//! is [`crate::sqlite::status`]'s.
//!
//! Invariants: the gate and any migration run before a single pragma that writes (WAL changes the
//! file header), so a refused file, or one whose migration failed, is left byte-for-byte as it
//! was. A read-only open never writes. A read-write open of a current file writes
//! only when planner statistics are missing or stale, and never waits to find out.

use crate::error::{Error, Location, Result};
use crate::extension::{self, Extension, Extensions};
use crate::handle::{Parts, Sharing, Store};
use crate::keys::{DatabaseKeyProvider, KeyProvider};
use crate::schema;
use crate::sqlite::commit::Bounds;
use crate::sqlite::gate::{self, State};
use crate::sqlite::migrate::{self, Outcome, Progress};
use crate::sqlite::pool::Opener;
use crate::sqlite::statistics;
use crate::sqlite::storage::{self, Look};
use crate::values::clock::{Clock, SystemClock};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Prepared statements each connection keeps: the store has about 140 query sites and the
/// generated helpers about 150 more, against rusqlite's default of 16, with which a server's
/// mix of operations keeps preparing statements again (the claim: 280 µs to prepare, 45 µs to
/// run). Only statements a connection runs take memory.
const STATEMENT_CACHE: usize = 320;

/// The database path when neither `--db-path` nor `SEED_AGENTS_DB_PATH` is given.
pub const DEFAULT_DB_PATH: &str = "data/agents.sqlite";
/// The environment variable naming the database path.
pub const DB_PATH_ENV: &str = "SEED_AGENTS_DB_PATH";

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

impl Store {
    /// Opens `path`, creating it and its parent directories when missing: a fresh file gets the
    /// baseline, an older one is checked whole (`integrity_check`, `foreign_key_check`) and
    /// migrated, a current one is verified (header, size, structure).
    ///
    /// # Errors
    /// [`Error::Refused`] when the gate refuses the file (it is left unchanged),
    /// [`Error::Migration`] when a migration fails (the batch is rolled back),
    /// [`Error::AfterCommit`] when configuring fails after an install or migration committed;
    /// [`Error::Busy`], [`Error::ReadOnly`], [`Error::PermissionDenied`], [`Error::DiskFull`],
    /// [`Error::DiskIo`], [`Error::NotAFilePath`] or [`Error::Io`] for trouble with the path or
    /// the medium (each naming the path, none a refusal); [`Error::Sqlite`] otherwise.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with_clock(path, Arc::new(SystemClock))
    }

    /// [`Store::open`] with the clock every operation takes "now" from.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with_clock(path: impl AsRef<Path>, clock: Arc<dyn Clock>) -> Result<Store> {
        OpenOptions::new().clock(clock).open(path)
    }

    /// Options for opening: the clock and a progress observer, with [`OpenOptions::open`].
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Opens a current database at `path` for reading only, on a read-only file, directory or
    /// medium too. Nothing is written; every write through the store fails with
    /// [`Error::ReadOnly`]. Where this process may write the file, its connections are
    /// read-write ones that never write (`query_only`), so that the last to close removes the
    /// `-wal` and `-shm` that reading a WAL file makes: a read-only store leaves nothing
    /// beside an idle file.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] when the file is empty or behind this binary (installing or migrating
    /// needs a read-write open); otherwise as [`Store::open`], and [`Error::Io`] when the file
    /// does not exist.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        OpenOptions::new().open_read_only(path)
    }
}

/// After an install or a migration committed, a failure says the file is already at the new
/// version.
fn after_commit(e: Error, path: &Path, outcome: Outcome) -> Error {
    let (what, version) = match outcome {
        Outcome::Fresh { version } => ("fresh install".to_string(), version),
        Outcome::Migrated { from, to } => (format!("migration from version {from}"), to),
        Outcome::Current { .. } => return e,
    };
    Error::AfterCommit {
        path: path.to_path_buf(),
        what,
        version,
        source: Box::new(e),
    }
}

/// The second connection of a read-write store: the same file, `query_only`, with the same
/// busy handler, foreign keys and cache as the writer.
fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    crate::sqlite::busy::install(&mut conn)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "query_only", true)?;
    configure_cache(&conn)?;
    Ok(conn)
}

/// Memory pragmas, which write nothing, and the statement cache.
fn configure_cache(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "cache_size", -65_536)?; // 64 MiB
    conn.pragma_update(None, "mmap_size", 536_870_912)?; // 512 MiB
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

/// Switches to WAL. The switch needs every other connection out of the file for a moment, and
/// SQLite answers it with `SQLITE_BUSY` at once instead of calling the busy handler, so it is
/// retried with a short backoff for as long as the busy timeout.
fn switch_to_wal(conn: &Connection) -> Result<()> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < crate::sqlite::busy::DEADLINE =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return Ok(other?),
        }
    }
}

/// Pragmas, applied after the gate, then the planner statistics ([`statistics::keep`]).
fn configure(conn: &mut Connection, outcome: Outcome) -> Result<()> {
    switch_to_wal(conn)?;
    configure_cache(conn)?;
    statistics::keep(conn, outcome)
}

/// How to open a store read-write; [`Store::open`] is `Store::options().open(path)`.
///
/// ```
/// use seed_agents_store::{Progress, Store};
///
/// # fn main() -> seed_agents_store::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let store = Store::options()
///     .on_progress(|p| {
///         if let Progress::Migrated { step, steps, name, rows } = p {
///             eprintln!("[{step}/{steps}] {name}: {rows} rows");
///         }
///     })
///     .open(dir.path().join("agents.sqlite"))?;
/// # drop(store);
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct OpenOptions {
    clock: Arc<dyn Clock>,
    progress: Box<dyn FnMut(Progress<'_>)>,
    sharing: Sharing,
    keys: Arc<dyn KeyProvider>,
    idle_in_transaction: Duration,
    keepalive: Duration,
    connection_lifetime: Duration,
    extensions: Vec<Extension>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions").finish_non_exhaustive()
    }
}

impl OpenOptions {
    /// The defaults: the system clock, no progress observer, [`DEFAULT_READ_CONNECTIONS`]
    /// read connections, a busy timeout of [`busy::DEADLINE`](crate::sqlite::busy::DEADLINE), batches
    /// of at most [`DEFAULT_BATCH_OPERATIONS`] operations open at most [`DEFAULT_BATCH_AGE`].
    pub fn new() -> Self {
        OpenOptions {
            clock: Arc::new(SystemClock),
            progress: Box::new(|_| {}),
            sharing: Sharing {
                read_connections: DEFAULT_READ_CONNECTIONS,
                busy_timeout: crate::sqlite::busy::DEADLINE,
                batch: Bounds {
                    operations: DEFAULT_BATCH_OPERATIONS,
                    age: DEFAULT_BATCH_AGE,
                },
            },
            keys: Arc::new(DatabaseKeyProvider),
            idle_in_transaction: DEFAULT_IDLE_IN_TRANSACTION,
            keepalive: DEFAULT_KEEPALIVE,
            connection_lifetime: DEFAULT_CONNECTION_LIFETIME,
            extensions: Vec::new(),
        }
    }

    /// Registers a server crate's own schema (its generated `EXTENSION`; see the README's "Your
    /// own tables"). Opening installs or migrates the store's chain, then each extension's,
    /// each under its own version key, in one transaction; the gate verifies every
    /// registered extension's structure as the store's, and refuses a file holding an
    /// extension that is not registered. Its rows are written with
    /// [`Store::write_extension`](crate::Store::write_extension).
    ///
    /// ```ignore
    /// let store = Store::options().extension(db::EXTENSION).open("data/agents.sqlite")?;
    /// ```
    pub fn extension(mut self, extension: impl std::borrow::Borrow<Extension>) -> Self {
        self.extensions.push(*extension.borrow());
        self
    }

    /// Where the secret encryption keys live: the database ([`DatabaseKeyProvider`], the
    /// default), an environment variable, a file, a command, or your own [`KeyProvider`] (a KMS,
    /// the OS keychain). Keys already registered in the database are still read from it; the
    /// provider serves the keys registered with its kind, and the first key or a rotation's new
    /// key when it is not the database. See [`crate::keys`].
    ///
    /// ```no_run
    /// use seed_agents_store::{keys::FileKeyProvider, Store};
    /// let store = Store::options()
    ///     .key_provider(FileKeyProvider::new("/etc/seed-agents/secret.key"))
    ///     .open("data/agents.sqlite")?;
    /// # Ok::<(), seed_agents_store::Error>(())
    /// ```
    pub fn key_provider(mut self, provider: impl KeyProvider + 'static) -> Self {
        self.keys = Arc::new(provider);
        self
    }

    /// [`OpenOptions::key_provider`] with a provider already boxed, e.g. from
    /// [`provider_from_spec`](crate::keys::provider_from_spec).
    pub fn boxed_key_provider(mut self, provider: Box<dyn KeyProvider>) -> Self {
        self.keys = Arc::from(provider);
        self
    }

    /// How many read connections the pool may open (at least 1): as many reads run at once.
    pub fn read_connections(mut self, n: usize) -> Self {
        self.sharing.read_connections = n.max(1);
        self
    }

    /// How long an operation waits for a lock another process holds, or a read for a free
    /// pooled connection, before failing with [`Error::Busy`]. Opening itself keeps the
    /// default. On PostgreSQL it is each session's `lock_timeout` (advisory locks included):
    /// a node that stalls holding a lock holds the others up no longer than this, each.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.sharing.busy_timeout = timeout;
        self
    }

    /// PostgreSQL only: how long one of the store's sessions may sit in a transaction without
    /// running a statement before the server ends it (`idle_in_transaction_session_timeout`,
    /// default [`DEFAULT_IDLE_IN_TRANSACTION`]). The store never waits on anything but the
    /// server inside a transaction, so only a node stopped or cut off mid-write gets there;
    /// ending its session rolls its write back and releases its locks for the other nodes.
    pub fn idle_in_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_in_transaction = timeout;
        self
    }

    /// PostgreSQL only: TCP keepalives on the store's connections, the first probe after
    /// `idle` without traffic (default [`DEFAULT_KEEPALIVE`]), then every third of it; three
    /// unanswered probes close the connection. A server that went away is found out in about
    /// twice `idle`, not the system's default two hours.
    pub fn keepalive(mut self, idle: Duration) -> Self {
        self.keepalive = idle;
        self
    }

    /// PostgreSQL only: how long the store keeps one connection (default
    /// [`DEFAULT_CONNECTION_LIFETIME`]). One older than this is closed when it comes back to
    /// the pool, and a new one opened when needed, so a server's per-connection caches stay
    /// bounded and a balancer in front of it sees new connections.
    pub fn connection_lifetime(mut self, lifetime: Duration) -> Self {
        self.connection_lifetime = lifetime;
        self
    }

    /// Group commit's bounds: a batch is committed once it holds `operations` operations or
    /// has been open for `age`, even while more wait to join (under light load it is committed
    /// at once: nobody waits). `operations` 1 commits every operation alone.
    pub fn group_commit(mut self, operations: usize, age: Duration) -> Self {
        self.sharing.batch = Bounds {
            operations: operations.max(1),
            age,
        };
        self
    }

    /// The clock every operation takes "now" from.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Called as opening installs the baseline or migrates: each step as it starts and as it
    /// ends, with the rows it changed. Opening a current file calls it never.
    pub fn on_progress(mut self, observer: impl FnMut(Progress<'_>) + 'static) -> Self {
        self.progress = Box::new(observer);
        self
    }

    /// Opens `path` as [`Store::open`] does, with these options.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open(self, path: impl AsRef<Path>) -> Result<Store> {
        if let Some(url) = postgres_url(path.as_ref()) {
            return self.open_postgres(url, false);
        }
        let location = Location {
            path: Arc::from(path.as_ref()),
            read_only: false,
        };
        self.open_file(location.path.clone())
            .map_err(|e| e.located(&location))
    }

    /// [`OpenOptions::open`] of a SQLite file; what fails unclassified is classified at the
    /// file by the caller.
    fn open_file(mut self, shared: Arc<Path>) -> Result<Store> {
        let path = shared.to_path_buf();
        let extensions = Extensions::new(std::mem::take(&mut self.extensions))?;
        storage::prepare(&path)?;
        let at = |e: rusqlite::Error| Error::from_sqlite(e, &path);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags)
            .map_err(|e| storage::open_failed(e, &path))?;
        storage::writable(&conn, &path)?;
        crate::sqlite::busy::install(&mut conn).map_err(at)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(at)?;
        let found = gate::inspect_with(&conn, &path, &extensions)?;
        let outcome = migrate::upgrade(&mut conn, &path, found, &extensions, &mut *self.progress)
            .map_err(|e| e.at(&path))?;
        configure(&mut conn, outcome).map_err(|e| after_commit(e.at(&path), &path, outcome))?;
        let opener: Opener = Box::new(move || open_reader(&path).map_err(|e| e.at(&path)));
        let first_reader = opener().map_err(|e| after_commit(e, shared.as_ref(), outcome))?;
        let parts = Parts {
            writer: conn,
            first_reader,
            opener,
            path: shared.clone(),
            read_only: false,
            outcome,
            clock: self.clock,
            keys: self.keys,
            extensions,
        };
        Store::assemble(parts, self.sharing)
            .map_err(|e| after_commit(e.at(&shared), &shared, outcome))
    }

    /// Opens `path` as [`Store::open_read_only`] does, with these options (the progress
    /// observer is never called: nothing is installed or migrated).
    ///
    /// # Errors
    /// As [`Store::open_read_only`].
    pub fn open_read_only(self, path: impl AsRef<Path>) -> Result<Store> {
        if let Some(url) = postgres_url(path.as_ref()) {
            return self.open_postgres(url, true);
        }
        let location = Location {
            path: Arc::from(path.as_ref()),
            read_only: true,
        };
        self.open_file_read_only(location.path.clone())
            .map_err(|e| e.located(&location))
    }

    /// [`OpenOptions::open_read_only`] of a SQLite file; what fails unclassified is classified
    /// at the file by the caller.
    fn open_file_read_only(self, shared: Arc<Path>) -> Result<Store> {
        let path = shared.to_path_buf();
        let extensions = Extensions::new(self.extensions.clone())?;
        storage::check_path(&path)?;
        std::fs::metadata(&path).map_err(|e| Error::from_io(e, &path))?;
        let (conn, _) = storage::open_read_only(&path, Look::Live)?;
        let at = |e: rusqlite::Error| Error::from_sqlite(e, &path);
        conn.pragma_update(None, "foreign_keys", true).map_err(at)?;
        conn.pragma_update(None, "query_only", true).map_err(at)?;
        let latest = schema::SCHEMA_VERSION;
        let needs = |what: String| Error::ReadOnly {
            path: path.clone(),
            detail: format!("{what}, which a read-only open cannot do; open it read-write first"),
        };
        let found = gate::inspect_with(&conn, &path, &extensions)?;
        match found.store {
            State::Fresh => {
                return Err(needs(format!(
                    "it is empty and needs version {latest} installed"
                )))
            }
            State::At(v) if v < latest => {
                return Err(needs(format!(
                    "it is at version {v} and needs migrating to {latest}"
                )))
            }
            State::At(_) => {}
        }
        if let Some(pending) = extension::pending(&extensions, &found.extensions) {
            return Err(needs(pending));
        }
        configure_cache(&conn).map_err(|e| e.at(&path))?;
        let opener: Opener = Box::new(move || {
            let (conn, _) = storage::open_read_only(&path, Look::Live)?;
            conn.pragma_update(None, "foreign_keys", true)?;
            conn.pragma_update(None, "query_only", true)?;
            configure_cache(&conn)?;
            Ok(conn)
        });
        let first_reader = opener()?;
        let parts = Parts {
            writer: conn,
            first_reader,
            opener,
            path: shared,
            read_only: true,
            outcome: Outcome::Current { version: latest },
            clock: self.clock,
            keys: self.keys,
            extensions,
        };
        Store::assemble(parts, self.sharing)
    }
}

/// Whether `location` names a PostgreSQL database (a `postgres://` or `postgresql://` URL)
/// rather than a SQLite file: what [`Store::open`] decides the backend by.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// The PostgreSQL URL `location` is, if it is one.
fn postgres_url(location: &Path) -> Option<&str> {
    location.to_str().filter(|s| is_postgres_url(s))
}

impl OpenOptions {
    /// Opens the PostgreSQL database at `url`: the gate, then (read-write) the install or the
    /// migrations, then a pool of connections for the handle.
    #[cfg(feature = "postgres")]
    fn open_postgres(self, url: &str, read_only: bool) -> Result<Store> {
        let extensions = Extensions::new(self.extensions.clone())?;
        let (name, outcome) = crate::postgres::off_runtime(|| {
            OpenOptions::gate_postgres(url, read_only, &extensions)
        })?;
        // Every operation holds one connection while it runs: room for the readers and as
        // many writers waiting on the write lock.
        let max = self.sharing.read_connections.max(DEFAULT_READ_CONNECTIONS) * 4;
        let bounds = crate::postgres::Bounds {
            lock: self.sharing.busy_timeout,
            idle_in_transaction: self.idle_in_transaction,
            keepalive: self.keepalive,
            lifetime: self.connection_lifetime,
        };
        let pool = crate::postgres::Pool::new(url, &name, max, bounds)?;
        Ok(Store::assemble_postgres(
            pool,
            Arc::from(Path::new(&name)),
            read_only,
            outcome,
            self.clock,
            self.keys,
            extensions,
        ))
    }

    /// The gate, and (read-write) the install or the migrations, on the blocking client: the
    /// database's name and what opening did.
    #[cfg(feature = "postgres")]
    fn gate_postgres(
        url: &str,
        read_only: bool,
        extensions: &Extensions,
    ) -> Result<(String, Outcome)> {
        let mut database = crate::postgres::Database::connect(url)?;
        let name = database.name().to_string();
        let latest = schema::SCHEMA_VERSION;
        let outcome = if read_only {
            let needs = |what: String| Error::ReadOnly {
                path: PathBuf::from(&name),
                detail: format!(
                    "{what}, which a read-only open cannot do; open it read-write first"
                ),
            };
            let (state, versions) = database.inspect_with(extensions)?;
            let pending = extension::pending(extensions, &versions);
            match state {
                crate::postgres::State::Fresh => {
                    return Err(needs(format!(
                        "it is empty and needs version {latest} installed"
                    )))
                }
                crate::postgres::State::At(v) if v < latest => {
                    return Err(needs(format!(
                        "it is at version {v} and needs migrating to {latest}"
                    )))
                }
                crate::postgres::State::At(_) if pending.is_some() => {
                    return Err(needs(pending.unwrap_or_default()))
                }
                crate::postgres::State::At(version) => Outcome::Current { version },
            }
        } else {
            database.prepare_with(extensions)?
        };
        Ok((name, outcome))
    }

    /// Without the `postgres` feature a PostgreSQL URL names nothing this build can open.
    #[cfg(not(feature = "postgres"))]
    fn open_postgres(self, _url: &str, _read_only: bool) -> Result<Store> {
        Err(Error::Unsupported {
            what: "a PostgreSQL URL (build with the `postgres` feature)",
            backend: "this build",
        })
    }
}

/// Read connections a store opens at most, by default.
pub const DEFAULT_READ_CONNECTIONS: usize = 4;
/// Operations one group-commit batch holds at most, by default.
pub const DEFAULT_BATCH_OPERATIONS: usize = 128;
/// How long a group-commit batch stays open for more operations at most, by default.
pub const DEFAULT_BATCH_AGE: Duration = Duration::from_millis(4);
/// How long a PostgreSQL session of the store may sit idle in a transaction, by default: three
/// times the busy timeout, so a stalled node's locks go soon after the others' waits give up.
pub const DEFAULT_IDLE_IN_TRANSACTION: Duration = Duration::from_secs(30);
/// After how long without traffic a PostgreSQL connection of the store sends its first
/// keepalive probe, by default.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(30);
/// How long the store keeps one PostgreSQL connection, by default.
pub const DEFAULT_CONNECTION_LIFETIME: Duration = Duration::from_secs(30 * 60);
