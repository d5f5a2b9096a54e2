//! The connection an operation's statements run on, whichever backend holds the store.
//!
//! Invariant: operations, the checked-query runtime and the generated helpers see only [`Db`]
//! (and rows only as [`Columns`]), never a backend's own connection or row type, so each
//! operation is written once and runs with the same semantics on every backend.

use crate::error::{Error, Location, Result};
use crate::sql::arguments::Params;
use rusqlite::types::{FromSqlError, ToSql, ValueRef};
use rusqlite::Connection;

use crate::feed::topic::{Notes, Topic};

/// A connection inside the frame the caller set up (a write transaction, a read snapshot, or a
/// plain read): what [`crate::Query`] and every operation run their statements on.
#[derive(Clone, Copy)]
pub struct Db<'a> {
    inner: Inner<'a>,
    /// Where a write frame collects the topics to wake after its commit (none on reads).
    notes: Option<&'a Notes>,
    /// The store's file, when the caller set one: SQLite's trouble in the medium is then
    /// reported naming it.
    location: Option<&'a Location>,
}

#[derive(Clone, Copy)]
enum Inner<'a> {
    Sqlite(&'a Connection),
    #[cfg(feature = "postgres")]
    Postgres(&'a crate::postgres::Session),
}

impl std::fmt::Debug for Db<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.inner {
            Inner::Sqlite(_) => f.write_str("Db::Sqlite"),
            #[cfg(feature = "postgres")]
            Inner::Postgres(_) => f.write_str("Db::Postgres"),
        }
    }
}

impl<'a> Db<'a> {
    /// A SQLite connection.
    pub fn sqlite(conn: &'a Connection) -> Db<'a> {
        Db {
            inner: Inner::Sqlite(conn),
            notes: None,
            location: None,
        }
    }

    /// A PostgreSQL connection.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(session: &'a crate::postgres::Session) -> Db<'a> {
        Db {
            inner: Inner::Postgres(session),
            notes: None,
            location: None,
        }
    }

    /// This connection on the store at `location`, whose errors name it.
    pub(crate) fn located(self, location: &'a Location) -> Db<'a> {
        Db {
            location: Some(location),
            ..self
        }
    }

    /// `e`, classified at this connection's store when it has one.
    fn locate(&self, e: Error) -> Error {
        match self.location {
            Some(location) => e.located(location),
            None => e,
        }
    }

    /// This connection inside a write frame that publishes `notes` once it commits.
    pub(crate) fn noting(self, notes: &'a Notes) -> Db<'a> {
        Db {
            notes: Some(notes),
            ..self
        }
    }

    /// Wakes the subscribers of `topic` once this write commits: in this process through the
    /// frame (which publishes after the commit), on PostgreSQL also every other node, through a
    /// `NOTIFY` in this transaction (PostgreSQL delivers it at the commit, never before the row
    /// is visible). Outside a write frame it does nothing.
    pub(crate) fn notify(&self, topic: Topic) -> Result<()> {
        let Some(notes) = self.notes else {
            return Ok(());
        };
        if notes.borrow().contains(&topic) {
            return Ok(());
        }
        #[cfg(feature = "postgres")]
        if let Inner::Postgres(session) = self.inner {
            session.execute_later(crate::feed::topic::NOTIFY, &[&topic.payload()])?;
        }
        notes.borrow_mut().push(topic);
        Ok(())
    }

    /// Wakes this process's subscribers of `topic` once this write commits, for a statement
    /// that notified the other nodes itself.
    #[cfg(feature = "postgres")]
    pub(crate) fn notified(&self, topic: Topic) {
        if let Some(notes) = self.notes {
            notes.borrow_mut().push(topic);
        }
    }

    /// Runs `sql` with `params` and hands each row to `f` until it returns `false`. Not generic,
    /// so the hundreds of record types the macros create share one copy of the statement loop.
    pub(crate) fn each_row(
        &self,
        sql: &'static str,
        params: Params<'_>,
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        match self.inner {
            Inner::Sqlite(conn) => (|| {
                let mut stmt = conn.prepare_cached(sql)?;
                let rows = match params {
                    Params::Slice(params) => stmt.query(params)?,
                    Params::Typed(args) => {
                        args.bind(&mut stmt)?;
                        stmt.raw_query()
                    }
                };
                sqlite_rows(rows, f)
            })()
            .map_err(|e| self.locate(e)),
            #[cfg(feature = "postgres")]
            Inner::Postgres(session) => match params {
                Params::Slice(params) => session.each_row(sql, params, f),
                Params::Typed(args) => session.each_row(sql, &args.values(), f),
            },
        }
    }

    /// [`Db::each_row`] for a statement built at run time, kept out of the statement cache:
    /// such statements vary and would evict the hot ones.
    pub(crate) fn each_row_once(
        &self,
        sql: &str,
        params: &[&dyn ToSql],
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        match self.inner {
            Inner::Sqlite(conn) => {
                (|| sqlite_rows(conn.prepare(sql)?.query(params)?, f))().map_err(|e| self.locate(e))
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(session) => session.each_row_once(sql, params, f),
        }
    }

    /// Runs `sql` with `params` and returns the number of rows it changed.
    pub(crate) fn execute(&self, sql: &'static str, params: Params<'_>) -> Result<usize> {
        match self.inner {
            Inner::Sqlite(conn) => (|| -> Result<usize> {
                let mut stmt = conn.prepare_cached(sql)?;
                Ok(match params {
                    Params::Slice(params) => stmt.execute(params)?,
                    Params::Typed(args) => {
                        args.bind(&mut stmt)?;
                        stmt.raw_execute()?
                    }
                })
            })()
            .map_err(|e| self.locate(e)),
            #[cfg(feature = "postgres")]
            Inner::Postgres(session) => match params {
                Params::Slice(params) => session.execute(sql, params),
                Params::Typed(args) => session.execute(sql, &args.values()),
            },
        }
    }

    /// [`Db::execute`] for a statement whose changed-row count nobody reads: on PostgreSQL,
    /// inside a transaction, it travels with the next statement that is waited for (or the
    /// `COMMIT`), whose wait reports its error, so it costs no round trip of its own. Statements
    /// still run in the order they were given.
    pub(crate) fn execute_later(&self, sql: &'static str, params: Params<'_>) -> Result<()> {
        match self.inner {
            #[cfg(feature = "postgres")]
            Inner::Postgres(session) => match params {
                Params::Slice(params) => session.execute_later(sql, params),
                Params::Typed(args) => session.execute_later(sql, &args.values()),
            },
            _ => self.execute(sql, params).map(drop),
        }
    }

    /// Locks the row `id` of `row`'s table until the write transaction ends, so that writes
    /// whose invariants depend on that row (a session's seqs, a run's journal) run one at a
    /// time. A no-op on SQLite, whose writes all run one at a time. Call it before reading what
    /// the lock guards: on PostgreSQL each later statement then sees what the previous holder
    /// committed. Whether the row exists is not checked here.
    pub(crate) fn lock_row(&self, row: LockedRow, id: &str) -> Result<()> {
        match self.inner {
            Inner::Sqlite(_) => {
                let _ = (row, id);
                Ok(())
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(session) => session.lock_row(row, id),
        }
    }

    /// Whether statements run on PostgreSQL (in its dialect).
    pub(crate) fn is_postgres(&self) -> bool {
        !matches!(self.inner, Inner::Sqlite(_))
    }

    /// The PostgreSQL session, when the store is on PostgreSQL: for the statements only
    /// PostgreSQL has (the claim's `FOR UPDATE SKIP LOCKED`).
    #[cfg(feature = "postgres")]
    pub(crate) fn as_postgres(&self) -> Option<&'a crate::postgres::Session> {
        match self.inner {
            Inner::Sqlite(_) => None,
            Inner::Postgres(session) => Some(session),
        }
    }

    /// The SQLite connection, when the store is on SQLite: for the few things only SQLite has
    /// (its planner's statistics, `EXPLAIN QUERY PLAN`, checkpoints).
    pub fn as_sqlite(&self) -> Option<&'a Connection> {
        match self.inner {
            Inner::Sqlite(conn) => Some(conn),
            #[cfg(feature = "postgres")]
            Inner::Postgres(_) => None,
        }
    }
}

/// How a write transaction keeps the store's invariants on PostgreSQL (SQLite runs every
/// write alone, so it has no use for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// `SERIALIZABLE`: PostgreSQL's serializable snapshot isolation keeps every invariant that
    /// running the writes one at a time keeps (as SQLite runs them). A write it cannot fit into
    /// a serial order fails (40001, or a deadlock's 40P01) and is run again.
    Serializable,
    /// `READ COMMITTED`: the operation locks the rows its invariants depend on itself
    /// (`Db::lock_row`, a claim's `FOR UPDATE SKIP LOCKED`), so hot writes to different rows
    /// neither wait for nor abort each other.
    RowLocks,
    /// No transaction: the operation's one writing statement commits alone (its reads after
    /// it, to explain a refusal, see what that statement left). For a write that is one
    /// statement whatever happens, so it sends no `BEGIN` and no `COMMIT`.
    #[cfg(feature = "postgres")]
    Statement,
}

/// A row [`Db::lock_row`] can lock: one whose invariants hot writes share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockedRow {
    /// A session (`sessions.id`): its Log's seqs, its one live agent run.
    Session,
    /// A run (`runs.id`): its journal's seqs.
    Run,
    /// An audit chain's head (`audit_chain.chain`): its seqs.
    AuditChain,
}

/// Hands each row of a SQLite statement to `f` until it returns `false`.
fn sqlite_rows(
    mut rows: rusqlite::Rows<'_>,
    f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
) -> Result<()> {
    while let Some(row) = rows.next()? {
        if !f(row)? {
            break;
        }
    }
    Ok(())
}

/// What a checked statement can run on: a [`Db`], or a SQLite [`Connection`] (and anything that
/// dereferences to one, like the store's [`crate::Reader`]).
pub trait Executor {
    /// The connection to run on.
    fn db(&self) -> Db<'_>;
}

impl Executor for Db<'_> {
    fn db(&self) -> Db<'_> {
        *self
    }
}

impl Executor for Connection {
    fn db(&self) -> Db<'_> {
        Db::sqlite(self)
    }
}

impl Executor for rusqlite::Transaction<'_> {
    fn db(&self) -> Db<'_> {
        Db::sqlite(self)
    }
}

impl Executor for rusqlite::Savepoint<'_> {
    fn db(&self) -> Db<'_> {
        Db::sqlite(self)
    }
}

impl Executor for crate::Reader<'_> {
    fn db(&self) -> Db<'_> {
        Db::sqlite(self).located(self.location())
    }
}

/// One result row, read column by column as SQLite's value types whatever the backend: what
/// decoders ([`crate::FromRow`], the macros' records, `FromColumn`) read.
pub trait Columns {
    /// The value of column `idx` (0-based).
    ///
    /// # Errors
    /// The backend's own error when there is no such column: [`Error::Sqlite`] on SQLite,
    /// [`Error::Decode`] on PostgreSQL.
    fn value(&self, idx: usize) -> Result<ValueRef<'_>>;

    /// The name of column `idx` as the statement gives it (its alias), for messages.
    fn name(&self, idx: usize) -> Option<&str>;

    /// The error for column `idx` (`column` when the statement gives it no name), whose value
    /// `found` cannot be read as the type asked for: rusqlite's own, as `rusqlite::Row::get`
    /// fails (a value of the wrong storage class is `InvalidColumnType`, an integer out of range
    /// `IntegralValueOutOfRange`, anything else a conversion failure). A backend other than
    /// SQLite says it in its own words.
    fn decode_error(
        &self,
        idx: usize,
        column: &str,
        error: FromSqlError,
        found: rusqlite::types::Type,
    ) -> Error {
        Error::Sqlite(match error {
            FromSqlError::InvalidType => {
                let name = self.name(idx).unwrap_or(column).to_string();
                rusqlite::Error::InvalidColumnType(idx, name, found)
            }
            FromSqlError::OutOfRange(i) => rusqlite::Error::IntegralValueOutOfRange(idx, i),
            other => rusqlite::Error::FromSqlConversionFailure(idx, found, Box::new(other)),
        })
    }
}

impl Columns for rusqlite::Row<'_> {
    fn value(&self, idx: usize) -> Result<ValueRef<'_>> {
        self.get_ref(idx).map_err(Error::Sqlite)
    }

    fn name(&self, idx: usize) -> Option<&str> {
        self.as_ref().column_name(idx).ok()
    }
}
