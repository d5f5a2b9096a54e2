//! One PostgreSQL connection serving one operation at a time: its statements (prepared once per
//! connection, their values bound as `super::values` says) and which of them travel together.
//!
//! Invariant: a statement that failed because of another transaction says so ([`Conflict`]),
//! whatever error the operation makes of it, so its write can run again.
//!
//! Statements are sent in the order the operation runs them, but a `BEGIN` and a statement
//! whose reply nobody reads ([`Session::execute_later`]) wait to travel with the next statement
//! that is waited for (or the `COMMIT`): one round trip carries them all, and the first error
//! among them is the one reported.

use super::connections::{Object, Runtime};
use super::values::{values, Param, Row};
use crate::error::{Error, Result};
use crate::sql::db::Columns;
use futures_util::future::{join, join_all, LocalBoxFuture};
use futures_util::StreamExt;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Statement;

/// Why a write failed because of another transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conflict {
    /// PostgreSQL could not serialize it (40001), or it deadlocked (40P01): run it again.
    Serialization,
    /// A unique key was taken (23505). PostgreSQL reports a key a concurrent transaction
    /// inserted this way unless the write had read that very key (a `MAX(seq) + 1` read the
    /// index's end, say), so the write runs again, up to `UNIQUE_RETRIES` times: it then sees
    /// the row, as it would have run after the other. A key taken before fails the same way
    /// each time, and that error is the answer.
    Unique,
}

/// What the sessions of one store share: the runtime their connections run on and the
/// database's name for messages.
pub(crate) struct Shared {
    pub(super) runtime: Runtime,
    pub(super) name: Arc<str>,
    /// Round trips: each time a session waited for the server.
    pub(super) flights: AtomicU64,
}

impl Shared {
    pub(super) fn new(runtime: Runtime, name: Arc<str>) -> Shared {
        Shared {
            runtime,
            name,
            flights: AtomicU64::new(0),
        }
    }
}

/// Sent with the next statement that is waited for.
enum Pending {
    /// Statements without parameters (`BEGIN ...`), in one simple query.
    Batch(String),
    /// A setting of the connection changed (see [`Setting`]).
    Set(Setting, bool),
    /// A prepared statement whose changed-row count nobody reads.
    Execute(Statement, Vec<Param<'static>>),
}

/// A setting the store changes on a connection, kept for the connection's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Setting {
    /// `synchronous_commit`: on, or off (`Store::set_durability`).
    SynchronousCommit,
    /// `plan_cache_mode`: `force_generic_plan`, or `auto`. The hot writes' statements are
    /// lookups by key: one generic plan each, kept by the connection, instead of a plan per
    /// call (the claim's took longer to plan than to run).
    GenericPlans,
}

impl Setting {
    fn sql(self, on: bool) -> &'static str {
        match (self, on) {
            (Setting::SynchronousCommit, true) => "SET synchronous_commit = on",
            (Setting::SynchronousCommit, false) => "SET synchronous_commit = off",
            (Setting::GenericPlans, true) => "SET plan_cache_mode = force_generic_plan",
            (Setting::GenericPlans, false) => "SET plan_cache_mode = auto",
        }
    }

    fn flag(self, connection: &super::connections::Connection) -> &std::sync::atomic::AtomicBool {
        match self {
            Setting::SynchronousCommit => &connection.synchronous,
            Setting::GenericPlans => &connection.generic_plans,
        }
    }
}

/// One pooled connection, leased to one operation.
pub(crate) struct Session {
    pub(super) client: Object,
    pub(super) shared: Arc<Shared>,
    /// Sent, in order, ahead of the next statement waited for.
    pending: RefCell<Vec<Pending>>,
    /// Whether the `BEGIN` of the open transaction is still in `pending`, unsent.
    begin_pending: Cell<bool>,
    /// Whether a statement's rows are being read (the connection is busy with them).
    streaming: Cell<bool>,
    /// Whether a transaction is open on it (a failed statement then aborts it, so a retry
    /// needs a savepoint).
    pub(super) in_transaction: Cell<bool>,
    /// Why a statement failed, when another transaction caused it: the write is run again,
    /// whatever error the operation made of it.
    pub(super) conflicted: Cell<Option<Conflict>>,
}

impl Session {
    pub(super) fn new(client: Object, shared: Arc<Shared>) -> Session {
        Session {
            client,
            shared,
            pending: RefCell::new(Vec::new()),
            begin_pending: Cell::new(false),
            streaming: Cell::new(false),
            in_transaction: Cell::new(false),
            conflicted: Cell::new(None),
        }
    }

    fn fail(&self, source: tokio_postgres::Error) -> Error {
        use tokio_postgres::error::SqlState;
        match source.code() {
            Some(c)
                if *c == SqlState::T_R_SERIALIZATION_FAILURE
                    || *c == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                self.conflicted.set(Some(Conflict::Serialization));
            }
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => {
                self.conflicted.set(Some(Conflict::Unique));
            }
            _ => {}
        }
        Error::Postgres {
            database: self.shared.name.to_string(),
            source,
        }
    }

    /// Waits for `work`, the statements pending ahead of it sent in the same flight. The
    /// first error in sending order is returned.
    fn send<T>(
        &self,
        work: impl std::future::Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        if self.streaming.get() {
            return Err(Error::Unsupported {
                what: "a statement while another one's rows are being read on the same connection",
                backend: "PostgreSQL",
            });
        }
        let pending = self.pending.take();
        self.begin_pending.set(false);
        self.shared.flights.fetch_add(1, Ordering::Relaxed);
        let client = &*self.client.client;
        // `join_all` and `join` poll in order, and each statement is sent when first polled:
        // the pending ones go out first, in order, then `work`'s.
        let ahead = join_all(pending.iter().map(|p| -> LocalBoxFuture<'_, _> {
            match p {
                Pending::Batch(sql) => Box::pin(client.batch_execute(sql)),
                Pending::Set(setting, on) => Box::pin(client.batch_execute(setting.sql(*on))),
                Pending::Execute(statement, values) => Box::pin(async move {
                    client
                        .execute_raw(statement, values.iter().map(|v| v as &dyn ToSql))
                        .await
                        .map(|_| ())
                }),
            }
        }));
        let (ahead, outcome) = self.shared.runtime.block(join(ahead, work));
        if let Some(first) = ahead.into_iter().find_map(|r| r.err()) {
            return Err(self.fail(first));
        }
        outcome.map_err(|e| self.fail(e))
    }

    /// Runs `sql` (a statement the store's macros or build produced, so `'static` and cached)
    /// and hands each row to `f` until it returns `false`.
    pub(crate) fn each_row(
        &self,
        sql: &'static str,
        params: &[&dyn rusqlite::ToSql],
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        let values = values(params)?;
        let statement = self.prepare(sql, &values, true)?;
        self.rows(&statement, &values, f)
    }

    /// [`Session::each_row`] for a statement built at run time, prepared unnamed and not kept.
    pub(crate) fn each_row_once(
        &self,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        let values = values(params)?;
        let statement = self.prepare(sql, &values, false)?;
        self.rows(&statement, &values, f)
    }

    /// Runs `sql` and returns the number of rows it changed.
    pub(crate) fn execute(
        &self,
        sql: &'static str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<usize> {
        let values = values(params)?;
        let statement = self.prepare(sql, &values, true)?;
        let client = &*self.client.client;
        let n =
            self.send(client.execute_raw(&statement, values.iter().map(|v| v as &dyn ToSql)))?;
        Ok(n as usize)
    }

    /// Runs `sql` inside the open transaction without waiting for its reply: it travels with
    /// the next statement waited for, or the `COMMIT`, whose wait reports its error. Outside a
    /// transaction it runs at once.
    pub(crate) fn execute_later(
        &self,
        sql: &'static str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<()> {
        if !self.in_transaction.get() {
            return self.execute(sql, params).map(drop);
        }
        let values = values(params)?
            .into_iter()
            .map(Param::owned)
            .collect::<Vec<_>>();
        let statement = self.prepare(sql, &values, true)?;
        self.pending
            .borrow_mut()
            .push(Pending::Execute(statement, values));
        Ok(())
    }

    /// Locks a row until the transaction ends (see [`crate::Db::lock_row`]). Nothing waits for
    /// its reply: the lock is held once the statements after it run.
    pub(crate) fn lock_row(&self, row: crate::sql::db::LockedRow, id: &str) -> Result<()> {
        use crate::sql::db::LockedRow;
        let sql = match row {
            LockedRow::Session => r#"SELECT 1 FROM "sessions" WHERE "id" = $1 FOR UPDATE"#,
            LockedRow::Run => r#"SELECT 1 FROM "runs" WHERE "id" = $1 FOR UPDATE"#,
            LockedRow::AuditChain => r#"SELECT 1 FROM "audit_chain" WHERE "chain" = $1 FOR UPDATE"#,
        };
        self.execute_later(sql, &[&id])
    }

    /// Runs statements without parameters (transaction control).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        self.send(self.client.client.batch_execute(sql))
    }

    /// Turns `setting` of the connection on or off, the change (when there is one) sent with
    /// the next statement.
    pub(super) fn set(&self, setting: Setting, on: bool) {
        if setting.flag(&self.client).swap(on, Ordering::Relaxed) != on {
            self.pending.borrow_mut().push(Pending::Set(setting, on));
        }
    }

    /// Opens a transaction with `sql` (`BEGIN ...`), sent with the first statement in it.
    pub(super) fn begin(&self, sql: &str) {
        self.in_transaction.set(true);
        self.begin_pending.set(true);
        self.pending
            .borrow_mut()
            .push(Pending::Batch(sql.to_string()));
    }

    /// Commits the transaction [`Session::begin`] opened: nothing to send when nothing ran in it.
    pub(super) fn commit(&self) -> Result<()> {
        self.in_transaction.set(false);
        if self.begin_pending.get() && self.pending.borrow().len() == 1 {
            self.begin_pending.set(false);
            self.drop_pending();
            return Ok(());
        }
        self.batch("COMMIT")
    }

    /// Rolls the open transaction back: what was never sent is dropped, and a transaction whose
    /// `BEGIN` was never sent has nothing to roll back.
    pub(super) fn rollback(&self) -> Result<()> {
        self.in_transaction.set(false);
        self.drop_pending();
        if self.begin_pending.replace(false) {
            return Ok(());
        }
        self.batch("ROLLBACK")
    }

    /// Drops what was never sent; a setting that was not sent is not the connection's.
    pub(super) fn drop_pending(&self) {
        for unsent in self.pending.take() {
            if let Pending::Set(setting, on) = unsent {
                setting.flag(&self.client).store(!on, Ordering::Relaxed);
            }
        }
    }

    /// Whether the connection has been closed (by the server, the network, or an error).
    pub(super) fn is_closed(&self) -> bool {
        self.client.client.is_closed()
    }

    /// `sql` prepared for `values`: kept ones from the connection's statements at no cost,
    /// others prepared at the server (a round trip).
    fn prepare(&self, sql: &str, values: &[Param<'_>], keep: bool) -> Result<Statement> {
        let declared: Vec<Type> = values.iter().map(Param::declared).collect();
        let key = (
            sql.as_ptr() as usize,
            sql.len(),
            declared.iter().map(Type::oid).collect::<Vec<_>>(),
        );
        if keep {
            let statements = self
                .client
                .statements
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(statement) = statements.get(&key) {
                return Ok(statement.clone());
            }
        }
        let client = &*self.client.client;
        // A NULL whose place gives it no type (`$2 IS NULL OR id = $2` when the server meets
        // the test first) takes one that fits: its value is NULL whatever the type. Inside a
        // transaction the attempts run in a savepoint, since a failed one aborts it; the
        // savepoint's statements travel with the attempts.
        let untyped = declared.iter().any(|t| t.oid() == 0);
        let savepoint = untyped && self.in_transaction.get();
        let later = |sql: &str| {
            self.pending
                .borrow_mut()
                .push(Pending::Batch(sql.to_string()))
        };
        if savepoint {
            later("SAVEPOINT seed_agents_prepare");
        }
        let mut prepared = self.send(client.prepare_typed(sql, &declared));
        for fallback in [Type::TEXT, Type::INT8, Type::BYTEA] {
            use tokio_postgres::error::SqlState;
            let indeterminate = matches!(&prepared, Err(Error::Postgres { source, .. })
                if source.code() == Some(&SqlState::INDETERMINATE_DATATYPE)
                    || source.code() == Some(&SqlState::AMBIGUOUS_PARAMETER));
            if !untyped || !indeterminate {
                break;
            }
            if savepoint {
                later("ROLLBACK TO SAVEPOINT seed_agents_prepare");
            }
            let typed: Vec<Type> = declared
                .iter()
                .map(|t| {
                    if t.oid() == 0 {
                        fallback.clone()
                    } else {
                        t.clone()
                    }
                })
                .collect();
            prepared = self.send(client.prepare_typed(sql, &typed));
        }
        if savepoint {
            if prepared.is_err() {
                later("ROLLBACK TO SAVEPOINT seed_agents_prepare");
            }
            later("RELEASE SAVEPOINT seed_agents_prepare");
        }
        let statement = prepared?;
        if keep {
            let mut statements = self
                .client
                .statements
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            statements.insert(key, statement.clone());
        }
        Ok(statement)
    }

    /// Hands each row of `statement` to `f` as it arrives: the rows stream from the server
    /// (the client reads on only as they are taken), so a walk over a whole table (`for_each`,
    /// `audit verify`, `copy`'s checks) holds one row at a time, not the table. `f` must not
    /// run a statement on this session meanwhile (the connection is busy with this one); it
    /// gets [`Error::Unsupported`] if it tries, never a mixed-up answer.
    fn rows(
        &self,
        statement: &Statement,
        values: &[Param<'_>],
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        // The names once per result, not once per row.
        let names: Vec<String> = statement
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let client = &*self.client.client;
        let stream =
            self.send(client.query_raw(statement, values.iter().map(|v| v as &dyn ToSql)))?;
        self.streaming.set(true);
        let mut stream = std::pin::pin!(stream);
        let outcome = (|| {
            while let Some(row) = self.shared.runtime.block(stream.next()) {
                let row = row.map_err(|e| self.fail(e))?;
                let row = Row::read(&row, &names).map_err(|e| self.fail(e))?;
                if !f(&row)? {
                    break;
                }
            }
            Ok(())
        })();
        self.streaming.set(false);
        outcome
    }
}
