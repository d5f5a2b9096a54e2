//! One PostgreSQL connection serving one operation at a time, and the pool the store keeps of
//! them: how a statement's SQLite values are bound and how its rows come back as SQLite values.
//!
//! Invariants: parameters are typed by the value bound (an integer is `bigint`, a text `text`,
//! a blob `bytea`, a real `double precision`; a NULL takes the type its place in the statement
//! gives it), so a statement means on PostgreSQL what it means on SQLite; a result column comes
//! back as the SQLite value of the same meaning (a `boolean` as 0 or 1, a `numeric` sum as an
//! integer when whole). A write runs in one transaction at the [`Isolation`] its operation
//! asks for: `SERIALIZABLE`, where PostgreSQL itself keeps every invariant that running writes
//! one at a time keeps (a write it cannot serialize is run again), or `READ COMMITTED` for the
//! hot writes that lock the rows their invariants depend on. No write takes a store-wide lock.
//! A connection that failed is closed, never returned to the pool.

use super::client::{Bounds, Client};
use crate::db::Columns;
use crate::error::{Error, Result};
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type};
use postgres::Statement;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Why a write failed because of another transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conflict {
    /// PostgreSQL could not serialize it (40001), or it deadlocked (40P01): run it again.
    Serialization,
    /// A unique key was taken (23505). PostgreSQL reports a key a concurrent transaction
    /// inserted this way unless the write had read that very key (a `MAX(seq) + 1` read the
    /// index's end, say), so the write runs again, up to [`UNIQUE_RETRIES`] times: it then sees
    /// the row, as it would have run after the other. A key taken before fails the same way
    /// each time, and that error is the answer.
    Unique,
}

/// How many times a write that met a unique key runs again (see [`Conflict::Unique`]): enough
/// for every node of a cluster to have inserted before it once, few enough that a key that was
/// simply taken fails within about half a second.
const UNIQUE_RETRIES: u32 = 16;

/// How a write transaction keeps the store's invariants on PostgreSQL.
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
}

/// A prepared statement's key: its static text's address and length, and its parameter types.
type StatementKey = (usize, usize, Vec<u32>);

/// One connection and its prepared statements.
pub(crate) struct Session {
    client: RefCell<Client>,
    /// Whether a transaction is open on it (a failed statement then aborts it, so a retry
    /// needs a savepoint).
    in_transaction: std::cell::Cell<bool>,
    /// The `synchronous_commit` this connection has (`on` when opened).
    synchronous: std::cell::Cell<bool>,
    /// Prepared statements by (the static text's address and length, the parameter types).
    statements: RefCell<HashMap<StatementKey, Statement>>,
    /// Why a statement failed, when another transaction caused it: the write is run again,
    /// whatever error the operation made of it.
    conflicted: std::cell::Cell<Option<Conflict>>,
    name: Arc<str>,
}

impl Session {
    fn fail(&self, source: postgres::Error) -> Error {
        use postgres::error::SqlState;
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
            database: self.name.to_string(),
            source,
        }
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
        let n = self
            .client
            .borrow_mut()
            .execute(&statement, &refs(&values))
            .map_err(|e| self.fail(e))?;
        Ok(n as usize)
    }

    /// The error an operation returns when another transaction got in its way in a manner
    /// PostgreSQL does not report itself: the write is rolled back and runs again, as after a
    /// serialization failure (`Busy` once the lock bound has passed).
    pub(crate) fn conflict(&self, detail: String) -> Error {
        self.conflicted.set(Some(Conflict::Serialization));
        Error::Busy {
            path: std::path::PathBuf::from(self.name.to_string()),
            detail,
        }
    }

    /// Locks a row until the transaction ends (see [`crate::Db::lock_row`]).
    pub(crate) fn lock_row(&self, row: crate::db::LockedRow, id: &str) -> Result<()> {
        use crate::db::LockedRow;
        let sql = match row {
            LockedRow::Session => r#"SELECT 1 FROM "sessions" WHERE "id" = $1 FOR UPDATE"#,
            LockedRow::Run => r#"SELECT 1 FROM "runs" WHERE "id" = $1 FOR UPDATE"#,
        };
        self.each_row(sql, &[&id], &mut |_| Ok(true))
    }

    /// Runs statements without parameters (transaction control).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        self.client
            .borrow_mut()
            .batch_execute(sql)
            .map_err(|e| self.fail(e))
    }

    fn prepare(&self, sql: &str, values: &[Param<'_>], keep: bool) -> Result<Statement> {
        let types: Vec<Type> = values.iter().map(Param::declared).collect();
        let key = (
            sql.as_ptr() as usize,
            sql.len(),
            types.iter().map(Type::oid).collect(),
        );
        if keep {
            if let Some(s) = self.statements.borrow().get(&key) {
                return Ok(s.clone());
            }
        }
        // A NULL whose place gives it no type (`$2 IS NULL OR id = $2` when the server meets
        // the test first) takes one that fits: its value is NULL whatever the type. Inside a
        // transaction the attempts run in a savepoint, since a failed one aborts it.
        let retry = self.in_transaction.get() && types.iter().any(|t| t.oid() == 0);
        if retry {
            self.batch("SAVEPOINT seed_agents_prepare")?;
        }
        let mut prepared = self.client.borrow_mut().prepare_typed(sql, &types);
        for fallback in [Type::TEXT, Type::INT8, Type::BYTEA] {
            use postgres::error::SqlState;
            let indeterminate = matches!(&prepared, Err(e)
                if e.code() == Some(&SqlState::INDETERMINATE_DATATYPE)
                    || e.code() == Some(&SqlState::AMBIGUOUS_PARAMETER));
            if !indeterminate {
                break;
            }
            let typed: Vec<Type> = types
                .iter()
                .map(|t| {
                    if t.oid() == 0 {
                        fallback.clone()
                    } else {
                        t.clone()
                    }
                })
                .collect();
            if retry {
                self.batch("ROLLBACK TO SAVEPOINT seed_agents_prepare")?;
            }
            prepared = self.client.borrow_mut().prepare_typed(sql, &typed);
        }
        if retry {
            if prepared.is_err() {
                self.batch("ROLLBACK TO SAVEPOINT seed_agents_prepare")?;
            }
            self.batch("RELEASE SAVEPOINT seed_agents_prepare")?;
        }
        let statement = prepared.map_err(|e| self.fail(e))?;
        if keep {
            self.statements.borrow_mut().insert(key, statement.clone());
        }
        Ok(statement)
    }

    fn rows(
        &self,
        statement: &Statement,
        values: &[Param<'_>],
        f: &mut dyn FnMut(&dyn Columns) -> Result<bool>,
    ) -> Result<()> {
        let mut client = self.client.borrow_mut();
        let rows = client
            .query(statement, &refs(values))
            .map_err(|e| self.fail(e))?;
        drop(client);
        // The names once per result, not once per row.
        let names: Vec<String> = statement
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        for row in &rows {
            let row = Row::read(row, &names).map_err(|e| self.fail(e))?;
            if !f(&row)? {
                break;
            }
        }
        Ok(())
    }
}

/// A bound value: the SQLite value, bound as the PostgreSQL type of the same meaning.
enum Param<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(std::borrow::Cow<'a, str>),
    Blob(std::borrow::Cow<'a, [u8]>),
}

/// Left for the server to infer from the parameter's place: the type of a NULL.
fn unspecified() -> Type {
    Type::new("unknown".into(), 0, Kind::Pseudo, "pg_catalog".into())
}

impl Param<'_> {
    fn declared(&self) -> Type {
        match self {
            Param::Null => unspecified(),
            Param::Integer(_) => Type::INT8,
            Param::Real(_) => Type::FLOAT8,
            Param::Text(_) => Type::TEXT,
            Param::Blob(_) => Type::BYTEA,
        }
    }
}

fn values<'a>(params: &'a [&'a dyn rusqlite::ToSql]) -> Result<Vec<Param<'a>>> {
    params
        .iter()
        .map(|p| {
            let out = p.to_sql()?;
            let value = match &out {
                ToSqlOutput::Borrowed(v) => *v,
                ToSqlOutput::Owned(v) => ValueRef::from(v),
                _ => {
                    return Err(crate::check::invalid(
                        "params",
                        "a value PostgreSQL has no type for (a zero blob)".to_string(),
                    ))
                }
            };
            Ok(match value {
                ValueRef::Null => Param::Null,
                ValueRef::Integer(i) => Param::Integer(i),
                ValueRef::Real(r) => Param::Real(r),
                ValueRef::Text(t) => Param::Text(
                    String::from_utf8(t.to_vec())
                        .map_err(|_| {
                            crate::check::invalid("params", "text that is not UTF-8".to_string())
                        })?
                        .into(),
                ),
                ValueRef::Blob(b) => Param::Blob(b.to_vec().into()),
            })
        })
        .collect()
}

fn refs<'a>(values: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl std::fmt::Debug for Param<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Param::Null => "NULL",
            Param::Integer(_) => "integer",
            Param::Real(_) => "real",
            Param::Text(_) => "text",
            Param::Blob(_) => "blob",
        })
    }
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Null => Ok(IsNull::Yes),
            Param::Integer(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            Param::Integer(i) if *ty == Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
            Param::Integer(i) if *ty == Type::BOOL => (*i != 0).to_sql(ty, out),
            Param::Integer(i) => i.to_sql(ty, out),
            Param::Real(r) => r.to_sql(ty, out),
            Param::Text(t) => t.as_ref().to_sql(ty, out),
            Param::Blob(b) => b.as_ref().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A result row as SQLite values, with its statement's column names.
struct Row<'a> {
    values: Vec<Value>,
    names: &'a [String],
}

impl<'a> Row<'a> {
    fn read(
        row: &postgres::Row,
        names: &'a [String],
    ) -> std::result::Result<Row<'a>, postgres::Error> {
        let mut values = Vec::with_capacity(row.len());
        for (i, column) in row.columns().iter().enumerate() {
            let ty = column.type_();
            let value = if *ty == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)?.map(Value::Integer)
            } else if *ty == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)?
                    .map(|v| Value::Integer(v.into()))
            } else if *ty == Type::INT2 {
                row.try_get::<_, Option<i16>>(i)?
                    .map(|v| Value::Integer(v.into()))
            } else if *ty == Type::BOOL {
                row.try_get::<_, Option<bool>>(i)?
                    .map(|v| Value::Integer(v.into()))
            } else if *ty == Type::FLOAT8 {
                row.try_get::<_, Option<f64>>(i)?.map(Value::Real)
            } else if *ty == Type::FLOAT4 {
                row.try_get::<_, Option<f32>>(i)?
                    .map(|v| Value::Real(v.into()))
            } else if *ty == Type::BYTEA {
                row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob)
            } else if *ty == Type::NUMERIC {
                row.try_get::<_, Option<Numeric>>(i)?.map(|n| n.0)
            } else {
                row.try_get::<_, Option<String>>(i)?.map(Value::Text)
            };
            values.push(value.unwrap_or(Value::Null));
        }
        Ok(Row { values, names })
    }
}

impl Columns for Row<'_> {
    fn value(&self, idx: usize) -> Result<ValueRef<'_>> {
        self.values
            .get(idx)
            .map(ValueRef::from)
            .ok_or(Error::Sqlite(rusqlite::Error::InvalidColumnIndex(idx)))
    }

    fn name(&self, idx: usize) -> Option<&str> {
        self.names.get(idx).map(String::as_str)
    }
}

/// A `numeric` (what `sum` of `bigint` gives) as SQLite's value: an integer when whole and in
/// range, else a real.
struct Numeric(Value);

impl<'a> FromSql<'a> for Numeric {
    fn from_sql(
        _: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        // The binary form: digit count, weight (of the first base-10000 digit), sign, scale,
        // then the digits.
        let word =
            |i: usize| -> std::result::Result<i16, Box<dyn std::error::Error + Sync + Send>> {
                raw.get(i * 2..i * 2 + 2)
                    .map(|b| i16::from_be_bytes([b[0], b[1]]))
                    .ok_or_else(|| "a numeric cut short".into())
            };
        let (ndigits, weight, sign) = (word(0)?, word(1)?, word(2)? as u16);
        if sign == 0xC000 {
            return Ok(Numeric(Value::Real(f64::NAN)));
        }
        let mut whole: i128 = 0;
        let mut fraction = 0f64;
        for d in 0..ndigits as i32 {
            let digit = word(4 + d as usize)? as i128;
            let power = weight as i32 - d;
            if power >= 0 {
                whole = whole
                    .checked_mul(10_000)
                    .and_then(|w| w.checked_add(digit))
                    .ok_or("a numeric too large")?;
            } else {
                fraction += digit as f64 * 10_000f64.powi(power);
            }
        }
        // Digits left out after the last one stored are zeros of the integer part.
        let trailing = weight as i32 - (ndigits as i32 - 1);
        for _ in 0..trailing.max(0) {
            whole = whole.checked_mul(10_000).ok_or("a numeric too large")?;
        }
        let negative = sign == 0x4000;
        let value = match (fraction == 0.0, i64::try_from(whole)) {
            (true, Ok(w)) => Value::Integer(if negative { -w } else { w }),
            _ => {
                let v = whole as f64 + fraction;
                Value::Real(if negative { -v } else { v })
            }
        };
        Ok(Numeric(value))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// The store's PostgreSQL connections: up to a bound, opened as needed, reused.
pub(crate) struct Pool {
    writes: AtomicU64,
    /// Whether commits wait for the server's disk (`synchronous_commit`), as
    /// `Store::set_durability` chose.
    synchronous: std::sync::atomic::AtomicBool,
    url: String,
    name: Arc<str>,
    bounds: Bounds,
    idle: Mutex<(Vec<Session>, usize)>,
    freed: Condvar,
    max: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("database", &self.name)
            .field("max", &self.max)
            .finish()
    }
}

impl Pool {
    /// A pool of at most `max` connections to `url` (whose redacted form is `name`), each
    /// session bounded by `bounds`.
    pub(crate) fn new(url: &str, name: &str, max: usize, bounds: Bounds) -> Pool {
        Pool {
            writes: AtomicU64::new(0),
            synchronous: std::sync::atomic::AtomicBool::new(true),
            url: url.to_string(),
            name: Arc::from(name),
            bounds,
            idle: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
            max: max.max(1),
        }
    }

    /// Makes every connection's commits wait for the disk (`true`, the default) or not.
    pub(crate) fn set_synchronous_commit(&self, on: bool) {
        self.synchronous.store(on, Ordering::Relaxed);
    }

    /// A connection, waiting while `max` are in use, its `synchronous_commit` as chosen.
    pub(crate) fn get(&self) -> Result<Lease<'_>> {
        let lease = self.take()?;
        let wanted = self.synchronous.load(Ordering::Relaxed);
        let session = lease.session();
        if session.synchronous.get() != wanted {
            session.batch(if wanted {
                "SET synchronous_commit = on"
            } else {
                "SET synchronous_commit = off"
            })?;
            session.synchronous.set(wanted);
        }
        Ok(lease)
    }

    fn take(&self) -> Result<Lease<'_>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(session) = idle.0.pop() {
                return Ok(Lease {
                    pool: self,
                    session: Some(session),
                    open: None,
                });
            }
            if idle.1 < self.max {
                idle.1 += 1;
                drop(idle);
                return match Client::connect_bounded(&self.url, self.bounds) {
                    Ok(client) => Ok(Lease {
                        pool: self,
                        session: Some(Session {
                            client: RefCell::new(client),
                            in_transaction: std::cell::Cell::new(false),
                            synchronous: std::cell::Cell::new(true),
                            statements: RefCell::new(HashMap::new()),
                            conflicted: std::cell::Cell::new(None),
                            name: self.name.clone(),
                        }),
                        open: None,
                    }),
                    Err(source) => {
                        self.release(None);
                        Err(Error::Postgres {
                            database: self.name.to_string(),
                            source,
                        })
                    }
                };
            }
            idle = self.freed.wait(idle).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn release(&self, session: Option<Session>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        match session {
            Some(s) if !s.client.borrow().is_closed() => idle.0.push(s),
            _ => idle.1 -= 1,
        }
        self.freed.notify_one();
    }

    /// Runs `op` in one write transaction at `isolation`, committing when it returns `Ok` and
    /// rolling back otherwise. A transaction PostgreSQL could not serialize (or that deadlocked)
    /// is rolled back and `op` runs again, after a short random pause, until it commits or the
    /// lock bound (`OpenOptions::busy_timeout`) has passed; then its error, of kind `Busy`,
    /// is returned. One that met a unique key runs again a few times (see
    /// [`Conflict::Unique`]).
    pub(crate) fn write<T>(
        &self,
        isolation: Isolation,
        mut op: impl FnMut(&Session) -> Result<T>,
    ) -> Result<T> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(500);
        let mut unique_retries = 0;
        loop {
            let mut lease = self.get()?;
            lease.session().conflicted.set(None);
            lease.begin(match isolation {
                Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
                // The hot writes' statements are lookups by key: one generic plan each, kept
                // by the connection, instead of a plan per call (the claim's took longer to
                // plan than to run). Sent with the BEGIN, so it costs no round trip.
                Isolation::RowLocks => {
                    "BEGIN ISOLATION LEVEL READ COMMITTED;                      SET LOCAL plan_cache_mode = force_generic_plan"
                }
            })?;
            let outcome = op(lease.session()).and_then(|value| lease.commit().map(|()| value));
            let error = match outcome {
                Ok(value) => {
                    self.writes.fetch_add(1, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(error) => error,
            };
            let again = match lease.session().conflicted.take() {
                Some(Conflict::Serialization) => started.elapsed() < self.bounds.lock,
                Some(Conflict::Unique) => {
                    unique_retries += 1;
                    unique_retries <= UNIQUE_RETRIES && started.elapsed() < self.bounds.lock
                }
                None => false,
            };
            drop(lease); // rolls back
            if !again {
                return Err(error);
            }
            // Random, so that the writes that conflicted do not meet again in step.
            use rand::Rng;
            std::thread::sleep(pause.mul_f64(rand::thread_rng().gen_range(0.5..1.5)));
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }

    /// Writes committed through this pool: each is its own commit (there is no group commit
    /// on PostgreSQL, whose server batches log flushes itself).
    pub(crate) fn stats(&self) -> crate::CommitStats {
        let n = self.writes.load(Ordering::Relaxed);
        crate::CommitStats {
            batches: n,
            operations: n,
        }
    }
}

/// A PostgreSQL connection out of the store's pool (see [`crate::Reading`]), returned when
/// dropped; a transaction it opened is rolled back first.
pub struct Lease<'a> {
    pool: &'a Pool,
    session: Option<Session>,
    /// The transaction this lease opened and has not ended.
    open: Option<()>,
}

impl Lease<'_> {
    /// The connection.
    pub(crate) fn session(&self) -> &Session {
        self.session.as_ref().expect("held until drop")
    }

    /// Opens a transaction (`BEGIN ...`) that dropping the lease rolls back, also when `sql`
    /// fails after its `BEGIN` (a lock wait that timed out): the connection goes back to the
    /// pool out of the aborted transaction, not in it.
    pub(crate) fn begin(&mut self, sql: &str) -> Result<()> {
        self.session().in_transaction.set(true);
        self.open = Some(());
        self.session().batch(sql)
    }

    /// Commits the transaction [`Lease::begin`] opened.
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.open = None;
        self.session().in_transaction.set(false);
        self.session().batch("COMMIT")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut session = self.session.take();
        if self.open.is_some() {
            if let Some(s) = &session {
                s.in_transaction.set(false);
                if s.batch("ROLLBACK").is_err() {
                    // A connection that cannot end its transaction is not reused.
                    session = None;
                }
            }
        }
        self.pool.release(session);
    }
}
