//! One PostgreSQL connection serving one operation at a time: how a statement's SQLite values
//! are bound and how its rows come back as SQLite values.
//!
//! Invariants: parameters are typed by the value bound (an integer is `bigint`, a text `text`,
//! a blob `bytea`, a real `double precision`; a NULL takes the type its place in the statement
//! gives it), so a statement means on PostgreSQL what it means on SQLite; a result column comes
//! back as the SQLite value of the same meaning (a `boolean` as 0 or 1, a `numeric` sum as an
//! integer when whole). A statement that failed because of another transaction says so
//! ([`Conflict`]), whatever error the operation makes of it, so its write can run again.

use super::client::Client;
use crate::db::Columns;
use crate::error::{Error, Result};
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type};
use postgres::Statement;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use std::cell::RefCell;
use std::collections::HashMap;

use std::sync::Arc;

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

/// A prepared statement's key: its static text's address and length, and its parameter types.
type StatementKey = (usize, usize, Vec<u32>);

/// One connection and its prepared statements.
pub(crate) struct Session {
    pub(super) client: RefCell<Client>,
    /// Whether a transaction is open on it (a failed statement then aborts it, so a retry
    /// needs a savepoint).
    pub(super) in_transaction: std::cell::Cell<bool>,
    /// The `synchronous_commit` this connection has (`on` when opened).
    pub(super) synchronous: std::cell::Cell<bool>,
    /// Prepared statements by (the static text's address and length, the parameter types).
    pub(super) statements: RefCell<HashMap<StatementKey, Statement>>,
    /// Why a statement failed, when another transaction caused it: the write is run again,
    /// whatever error the operation made of it.
    pub(super) conflicted: std::cell::Cell<Option<Conflict>>,
    pub(super) name: Arc<str>,
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
            .client()?
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

    /// The connection, unless a streaming statement holds it (see [`Session::rows`]).
    fn client(&self) -> Result<std::cell::RefMut<'_, Client>> {
        self.client
            .try_borrow_mut()
            .map_err(|_| Error::Unsupported {
                what: "a statement while another one's rows are being read on the same connection",
                backend: "PostgreSQL",
            })
    }

    /// Runs statements without parameters (transaction control).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        self.client()?.batch_execute(sql).map_err(|e| self.fail(e))
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
        let mut prepared = self.client()?.prepare_typed(sql, &types);
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
            prepared = self.client()?.prepare_typed(sql, &typed);
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
        use postgres::fallible_iterator::FallibleIterator;
        // The names once per result, not once per row.
        let names: Vec<String> = statement
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let mut client = self.client()?;
        let mut rows = client
            .query_raw(statement, values.iter().map(|v| v as &dyn ToSql))
            .map_err(|e| self.fail(e))?;
        while let Some(row) = rows.next().map_err(|e| self.fail(e))? {
            let row = Row::read(&row, &names).map_err(|e| self.fail(e))?;
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
