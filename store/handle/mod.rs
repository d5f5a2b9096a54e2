//! The handle a server shares: [`Store`], cheap to clone, `Send + Sync`, every operation `&self`.
//!
//! What runs where: reads take a connection from a small pool ([`crate::sqlite::pool`]) and run
//! alongside each other and alongside a write, each on its own WAL snapshot; writes run on the
//! one writer connection, batched by group commit ([`crate::sqlite::commit`]). A long read blocks no
//! write and no other read; it only keeps one pooled connection busy.
//!
//! Invariant: the writer connection is reached only through the transaction frame
//! ([`Store::write`]), and every connection handed out for reading is `query_only`.
//!
//! Here too: the transaction frame itself ([`write`]) and, with the `tokio` feature, the async
//! handle ([`asynchronous`]).

#[cfg(feature = "tokio")]
pub(crate) mod asynchronous;
pub(crate) mod write;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Location, Result};
use crate::extension::write::Guard;
use crate::extension::Extensions;
use crate::feed::hub::Hub;
use crate::keys::KeyProvider;
use crate::schema;
use crate::sql::db::{Db, Executor};
use crate::sqlite::commit::{Bounds, CommitStats, Writer};
use crate::sqlite::migrate::Outcome;
use crate::sqlite::pool::{Opener, Pool, Reader};
use crate::values::clock::Clock;

/// An open, gated, current database: a handle to clone into every thread and task that uses it.
///
/// # Examples
/// ```
/// use seed_agents_store::Store;
///
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("agents.sqlite"))?;
/// assert_eq!(
///     store.outcome(),
///     seed_agents_store::Outcome::Fresh { version: seed_agents_store::schema::SCHEMA_VERSION }
/// );
/// // Clones share the connections; writes from several threads are committed together.
/// let threads: Vec<_> = (0..4)
///     .map(|n| {
///         let store = store.clone();
///         std::thread::spawn(move || store.touch_account(&format!("acct-{n}")))
///     })
///     .collect();
/// for thread in threads {
///     thread.join().expect("no panic")?;
/// }
/// let counts = store.table_counts()?;
/// assert!(counts.contains(&("accounts", 4)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    engine: Engine,
    /// The database file (or a PostgreSQL database's URL without its password) and whether it
    /// was opened read-only.
    location: Location,
    outcome: Outcome,
    clock: Arc<dyn Clock>,
    keys: Arc<dyn KeyProvider>,
    /// Who waits for which commits ([`crate::feed`]).
    feed: Hub,
    /// The extensions registered when it was opened.
    extensions: Extensions,
}

/// A [`Store`] that does not keep it open: its background threads end with the last handle.
#[derive(Debug, Clone)]
pub(crate) struct WeakStore(std::sync::Weak<Shared>);

impl WeakStore {
    /// The store, while some handle still holds it.
    pub(crate) fn upgrade(&self) -> Option<Store> {
        self.0.upgrade().map(|shared| Store { shared })
    }
}

/// The connections of the backend that holds the store.
// One per store, behind its `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Engine {
    /// One SQLite file: the group-committing writer and the read pool.
    Sqlite {
        writer: Writer,
        /// Checkpoints the writer ran ([`crate::sqlite::checkpoint`]).
        checkpoints: Arc<AtomicU64>,
        readers: Pool,
        /// The writer's authorizer, active inside [`Store::write_extension`].
        guard: Arc<Guard>,
    },
    /// A PostgreSQL database shared by every node.
    #[cfg(feature = "postgres")]
    Postgres(crate::postgres::Pool),
}

/// How a handle shares its connections ([`crate::OpenOptions`] sets them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sharing {
    pub(crate) read_connections: usize,
    pub(crate) busy_timeout: Duration,
    pub(crate) batch: Bounds,
}

/// What a new handle is made of.
pub(crate) struct Parts {
    pub(crate) writer: Connection,
    pub(crate) first_reader: Connection,
    pub(crate) opener: Opener,
    pub(crate) path: Arc<Path>,
    pub(crate) read_only: bool,
    pub(crate) outcome: Outcome,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) keys: Arc<dyn KeyProvider>,
    pub(crate) extensions: Extensions,
}

impl Store {
    pub(crate) fn assemble(parts: Parts, sharing: Sharing) -> Result<Store> {
        let Parts {
            mut writer,
            mut first_reader,
            opener,
            path,
            read_only,
            outcome,
            clock,
            keys,
            extensions,
        } = parts;
        crate::sqlite::busy::install_with(&mut writer, sharing.busy_timeout)?;
        let guard = Arc::new(Guard::default());
        Guard::install(&guard, &mut writer)?;
        let checkpoints = crate::sqlite::checkpoint::watch(&mut writer)?;
        crate::sqlite::busy::install_with(&mut first_reader, sharing.busy_timeout)?;
        let timeout = sharing.busy_timeout;
        let opener: Opener = Box::new(move || {
            let mut conn = opener()?;
            crate::sqlite::busy::install_with(&mut conn, timeout)?;
            Ok(conn)
        });
        Ok(Store {
            shared: Arc::new(Shared {
                engine: Engine::Sqlite {
                    writer: Writer::new(writer, sharing.batch),
                    checkpoints,
                    readers: Pool::new(
                        first_reader,
                        sharing.read_connections,
                        sharing.busy_timeout,
                        opener,
                    ),
                    guard,
                },
                location: Location { path, read_only },
                outcome,
                clock,
                keys,
                feed: Hub::default(),
                extensions,
            }),
        })
    }

    /// A handle on a PostgreSQL database the caller has gated (and migrated, unless read-only).
    #[cfg(feature = "postgres")]
    pub(crate) fn assemble_postgres(
        pool: crate::postgres::Pool,
        path: Arc<Path>,
        read_only: bool,
        outcome: Outcome,
        clock: Arc<dyn Clock>,
        keys: Arc<dyn KeyProvider>,
        extensions: Extensions,
    ) -> Store {
        Store {
            shared: Arc::new(Shared {
                engine: Engine::Postgres(pool),
                location: Location { path, read_only },
                outcome,
                clock,
                keys,
                feed: Hub::default(),
                extensions,
            }),
        }
    }

    /// Where the store lives, for classifying SQLite's errors where a frame or a read on it
    /// starts ([`crate::error::Location`]).
    pub(crate) fn location(&self) -> &Location {
        &self.shared.location
    }

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.shared.location.read_only
    }

    /// The clock operations take "now" from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// Where the secret encryption keys live ([`OpenOptions::key_provider`]; the database by
    /// default).
    ///
    /// [`OpenOptions::key_provider`]: crate::OpenOptions::key_provider
    pub fn key_provider(&self) -> &dyn KeyProvider {
        &*self.shared.keys
    }

    /// The current time by the store's clock, in epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.location.path
    }

    /// What opening did.
    pub fn outcome(&self) -> Outcome {
        self.shared.outcome
    }

    /// A SQLite store's read-only connection (`PRAGMA query_only`) from its pool, for SQL of
    /// your own written for SQLite (rusqlite's API); dropping the [`Reader`] gives it back. A
    /// statement that would write fails with [`Error::ReadOnly`]: writes go through the domain
    /// operations, which keep the invariants. For the generated read helpers and the query
    /// macros, [`Store::reading`] is the one way that works on both backends.
    ///
    /// # Errors
    /// [`Error::Busy`] when every pooled connection stays in use for the busy timeout (a
    /// thread holding one while asking for another can cause that), or the error opening one
    /// more connection. On a PostgreSQL store, always [`Error::Unsupported`], of kind
    /// [`ErrorKind::Internal`](crate::ErrorKind::Internal): a rusqlite connection does not
    /// exist there, and asking for one is the calling code's mistake, not its client's.
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::{schema::accounts, Store};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("agents.sqlite"))?;
    /// store.touch_account("acct-1")?;
    /// assert!(accounts::get(&store.conn()?, "acct-1")?.is_some());
    /// let write = store.conn()?.execute("DELETE FROM accounts", []);
    /// assert!(write.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Error::ReadOnly`]: crate::Error::ReadOnly
    /// [`Error::Busy`]: crate::Error::Busy
    /// [`Error::Unsupported`]: crate::Error::Unsupported
    pub fn conn(&self) -> Result<Reader<'_>> {
        match &self.shared.engine {
            Engine::Sqlite { readers, .. } => readers.get(&self.shared.location),
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => Err(crate::Error::Unsupported {
                what: "a SQLite reader (Store::conn; use Store::reading)",
                backend: "PostgreSQL",
            }),
        }
    }

    /// A read connection on whichever backend holds the store, for the generated read helpers
    /// and the query macros (through [`Executor`]); dropping it gives it back.
    ///
    /// ```
    /// use seed_agents_store::{schema::accounts, Store};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("agents.sqlite"))?;
    /// store.touch_account("acct-1")?;
    /// assert!(accounts::get(&store.reading()?, "acct-1")?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Store::conn`] on SQLite; `Error::Postgres` when no PostgreSQL connection can
    /// be had.
    pub fn reading(&self) -> Result<Reading<'_>> {
        match &self.shared.engine {
            Engine::Sqlite { .. } => Ok(Reading::Sqlite(self.conn()?)),
            #[cfg(feature = "postgres")]
            Engine::Postgres(pool) => Ok(Reading::Postgres(Box::new(pool.get()?))),
        }
    }

    /// A read connection inside a read transaction: every read through it sees one snapshot,
    /// whatever commits meanwhile (a row and the key it names, a log and its head). Dropping it
    /// ends the transaction.
    pub(crate) fn snapshot(&self) -> Result<Reading<'_>> {
        match &self.shared.engine {
            Engine::Sqlite { .. } => {
                let conn = self.conn()?;
                conn.execute_batch("BEGIN DEFERRED")
                    .map_err(|e| conn.location().classify(e))?;
                Ok(Reading::Sqlite(conn))
            }
            #[cfg(feature = "postgres")]
            Engine::Postgres(pool) => {
                let mut lease = pool.get()?;
                lease.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
                Ok(Reading::Postgres(Box::new(lease)))
            }
        }
    }

    /// Who waits for which commits.
    pub(crate) fn feed(&self) -> &Hub {
        &self.shared.feed
    }

    /// A handle that does not keep the store open (for its own background threads).
    pub(crate) fn downgrade(&self) -> WeakStore {
        WeakStore(Arc::downgrade(&self.shared))
    }

    /// The PostgreSQL pool, when the store is on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(&self) -> Option<&crate::postgres::Pool> {
        match &self.shared.engine {
            Engine::Postgres(pool) => Some(pool),
            Engine::Sqlite { .. } => None,
        }
    }

    /// The extensions registered when the store was opened.
    pub(crate) fn extensions(&self) -> &Extensions {
        &self.shared.extensions
    }

    /// The SQLite writer's authorizer ([`crate::extension::write`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] on another backend.
    pub(crate) fn write_guard(&self) -> Result<&Arc<Guard>> {
        self.sqlite_engine().map(|(_, guard)| guard)
    }

    /// The group-commit writer of a SQLite store, for the transaction frame and what only
    /// SQLite has (checkpoints, its pragmas).
    ///
    /// # Errors
    /// [`Error::Unsupported`] on another backend.
    pub(crate) fn sqlite_writer(&self) -> Result<&Writer> {
        self.sqlite_engine().map(|(writer, _)| writer)
    }

    /// The SQLite writer and its authorizer, or the error for asking on another backend.
    fn sqlite_engine(&self) -> Result<(&Writer, &Arc<Guard>)> {
        match &self.shared.engine {
            Engine::Sqlite { writer, guard, .. } => Ok((writer, guard)),
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => Err(crate::Error::Unsupported {
                what: "SQLite's writer",
                backend: "PostgreSQL",
            }),
        }
    }

    /// Sets how long a commit waits for the disk. [`Durability::Full`] (the default) makes every
    /// committed write survive a power cut; [`Durability::Normal`] can lose the last commits to
    /// one (never the file's integrity, in WAL mode) for faster writes. For this store and its
    /// clones, until the last is dropped. On PostgreSQL the same choice is the session's
    /// `synchronous_commit` (`on` or `off`) for every connection of the store.
    ///
    /// # Errors
    /// [`Error::Sqlite`](crate::Error::Sqlite) when the pragma fails.
    pub fn set_durability(&self, durability: Durability) -> Result<()> {
        let mode = match durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        #[cfg(feature = "postgres")]
        if let Some(pool) = self.postgres() {
            pool.set_synchronous_commit(durability == Durability::Full);
            return Ok(());
        }
        self.sqlite_writer()?
            .between_batches(|conn| conn.pragma_update(None, "synchronous", mode))
            .map_err(|e| self.location().classify(e))
    }

    /// How many batches the writer has committed, and how many operations they held, since
    /// this store (and its clones) was opened.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
    /// store.touch_account("acct-1")?;
    /// let stats = store.commit_stats();
    /// assert_eq!((stats.batches, stats.operations), (1, 1)); // alone: its own batch
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit_stats(&self) -> CommitStats {
        match &self.shared.engine {
            Engine::Sqlite { writer, .. } => writer.stats(),
            #[cfg(feature = "postgres")]
            Engine::Postgres(pool) => pool.stats(),
        }
    }

    /// How many WAL checkpoints the writer has run since this store (and its clones) was
    /// opened: about one per 1,000 pages written to the log (SQLite's threshold), never one per
    /// commit. Always 0 on PostgreSQL, which has no such log.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
    /// store.touch_account("acct-1")?;
    /// assert_eq!(store.checkpoints(), 0); // a few pages of log: none due yet
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoints(&self) -> u64 {
        match &self.shared.engine {
            Engine::Sqlite { checkpoints, .. } => checkpoints.load(Ordering::Relaxed),
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => 0,
        }
    }

    /// How many times this store (and its clones) has waited for its PostgreSQL server since
    /// it was opened: its round trips. Statements whose replies nothing reads travel with the
    /// next one that is waited for, and a `BEGIN` with the first statement of its transaction,
    /// so a write costs fewer round trips than statements. Always 0 on SQLite, which has no
    /// server. A number to watch: an uncapped claim and the finalize of a root run take 2
    /// between them, as a plain queue's two statements do.
    pub fn round_trips(&self) -> u64 {
        match &self.shared.engine {
            Engine::Sqlite { .. } => 0,
            #[cfg(feature = "postgres")]
            Engine::Postgres(pool) => pool.flights(),
        }
    }

    /// Row counts of every table, in schema order.
    ///
    /// # Errors
    /// [`Error::Sqlite`](crate::Error::Sqlite) when a count fails.
    pub fn table_counts(&self) -> Result<Vec<(&'static str, i64)>> {
        let conn = self.reading()?;
        schema::TABLE_COUNTS
            .iter()
            .map(|(t, count)| Ok((*t, count(&conn.db())?)))
            .collect()
    }
}

/// A read connection ([`Store::reading`]): what statements run on, through [`Executor`], on
/// whichever backend holds the store; dropping it gives it back.
pub enum Reading<'a> {
    /// A pooled SQLite reader.
    Sqlite(Reader<'a>),
    /// A pooled PostgreSQL connection.
    #[cfg(feature = "postgres")]
    Postgres(Box<crate::postgres::Lease<'a>>),
}

impl std::fmt::Debug for Reading<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reading::Sqlite(_) => "Reading::Sqlite",
            #[cfg(feature = "postgres")]
            Reading::Postgres(_) => "Reading::Postgres",
        })
    }
}

impl Reading<'_> {
    /// The connection, for an operation's statements.
    pub fn db(&self) -> Db<'_> {
        match self {
            Reading::Sqlite(reader) => Executor::db(reader),
            #[cfg(feature = "postgres")]
            Reading::Postgres(lease) => Db::postgres(lease.session()),
        }
    }
}

impl Executor for Reading<'_> {
    fn db(&self) -> Db<'_> {
        Reading::db(self)
    }
}

/// How long a commit waits for the disk (SQLite's `synchronous`); see
/// [`Store::set_durability`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Every commit is on the disk before it returns (`synchronous = FULL`).
    Full,
    /// Commits reach the disk at checkpoints; a power cut can lose the last ones
    /// (`synchronous = NORMAL`).
    Normal,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}

    #[test]
    fn the_handle_is_cloneable_send_and_sync() {
        assert_shareable::<Store>();
    }

    #[test]
    fn durability_sets_the_writers_synchronous_mode() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("d.sqlite")).unwrap();
        let mode = |store: &Store| -> i64 {
            store
                .sqlite_writer()
                .unwrap()
                .raw()
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(mode(&store), 2, "FULL by default");
        store.set_durability(Durability::Normal).unwrap();
        assert_eq!(mode(&store), 1);
        store.set_durability(Durability::Full).unwrap();
        assert_eq!(mode(&store), 2);
    }
}
