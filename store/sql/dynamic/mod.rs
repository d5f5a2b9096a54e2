//! Statements built at run time with sea-query: a listing whose filters, sort and page a client
//! chooses. They run on the read connection and decode into the generated row types.
//!
//! Invariant: only `SELECT` statements run here, on the `query_only` connection, so a dynamic
//! query reads and never writes; values travel as bound parameters, never spliced into the text.

mod rules;

use rusqlite::types::Value as Sql;
use sea_query::{SelectStatement, SqliteQueryBuilder, Value};

use crate::error::{Error, Result};
use crate::Store;

/// A type a whole result row decodes into: every table's generated `Row` (select
/// `Column::ALL`, in that order).
pub trait FromRow: Sized {
    /// Decodes `row`, reading its columns by index.
    ///
    /// # Errors
    /// When a value does not fit its field (a text outside an enum's set, a bool other than 0
    /// or 1, a value of the wrong storage class).
    fn from_row(row: &dyn crate::Columns) -> Result<Self>;
}

impl Store {
    /// Runs a sea-query `SELECT` on the read connection, its values bound as parameters, and
    /// decodes every row into `R`. The statement means the same on both backends: what SQLite
    /// and PostgreSQL would evaluate differently is refused on both (raw SQL, `*`, `/`, window
    /// functions, functions other than `count`, `sum`, `coalesce`/`ifnull`, one-argument
    /// `max`/`min`, `lower`/`upper`), and on PostgreSQL `LIKE` and `lower`/`upper` fold ASCII
    /// case only and a sort key that may be NULL sorts its NULLs as SQLite does (first when
    /// ascending).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`statement`) for a construct the two backends do not agree on, naming
    /// it, or a bound value SQLite has no type for;
    /// [`Error::Sqlite`] when SQLite refuses the statement; a decode error as
    /// [`FromRow::from_row`].
    ///
    /// # Examples
    /// ```
    /// use sea_query::{Expr, ExprTrait, Order, Query};
    /// use seed_agents_store::schema::runs;
    /// use seed_agents_store::Store;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("agents.sqlite"))?;
    /// // Queued runs of an account, oldest first, one page of 20.
    /// let page: Vec<runs::Row> = store.select(
    ///     Query::select()
    ///         .columns(runs::Column::ALL.iter().copied())
    ///         .from(runs::Column::Table)
    ///         .and_where(Expr::col(runs::Column::AccountId).eq("acct-1"))
    ///         .and_where(Expr::col(runs::Column::Status).eq(runs::Status::Queued))
    ///         .order_by(runs::Column::CreatedAt, Order::Asc)
    ///         .limit(20),
    /// )?;
    /// assert!(page.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn select<R: FromRow>(&self, statement: &SelectStatement) -> Result<Vec<R>> {
        self.select_bound(Bound::of(statement)?)
    }

    /// Runs a rendered statement: the I/O half of [`Store::select`].
    pub(crate) fn select_bound<R: FromRow>(&self, bound: Bound) -> Result<Vec<R>> {
        let mut out = Vec::new();
        let params: Vec<&dyn rusqlite::ToSql> = bound
            .params
            .iter()
            .map(|p| p as &dyn rusqlite::ToSql)
            .collect();
        let reading = self.reading()?;
        let db = reading.db();
        #[cfg(feature = "postgres")]
        let sql = if db.is_postgres() {
            &bound.postgres
        } else {
            &bound.sql
        };
        #[cfg(not(feature = "postgres"))]
        let sql = &bound.sql;
        db.each_row_once(sql, &params, &mut |row| {
            out.push(R::from_row(row)?);
            Ok(true)
        })?;
        Ok(out)
    }
}

/// A statement rendered to SQL text and SQLite values: what runs, and (unlike a sea-query
/// statement) `Send`, so the async handle renders on the caller and runs on the blocking pool.
pub(crate) struct Bound {
    sql: String,
    /// The same statement rendered for PostgreSQL (same values, same order).
    #[cfg(feature = "postgres")]
    postgres: String,
    params: Vec<Sql>,
}

impl Bound {
    /// Renders `statement`.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`statement`) for a construct the backends do not agree on (see
    /// [`Store::select`]) or a bound value SQLite has no type for.
    pub(crate) fn of(statement: &SelectStatement) -> Result<Bound> {
        rules::check(statement)?;
        let (sql, values) = statement.build(SqliteQueryBuilder);
        #[cfg(feature = "postgres")]
        let postgres = rules::postgres(statement, &values)?;
        let params = values
            .0
            .into_iter()
            .map(to_sql)
            .collect::<Result<Vec<_>>>()?;
        Ok(Bound {
            sql,
            #[cfg(feature = "postgres")]
            postgres,
            params,
        })
    }
}

/// The SQLite value of a sea-query value (`None` of any type is `NULL`).
fn to_sql(value: Value) -> Result<Sql> {
    let int = |v: Option<i64>| v.map_or(Sql::Null, Sql::Integer);
    Ok(match value {
        Value::Bool(v) => int(v.map(i64::from)),
        Value::TinyInt(v) => int(v.map(i64::from)),
        Value::SmallInt(v) => int(v.map(i64::from)),
        Value::Int(v) => int(v.map(i64::from)),
        Value::BigInt(v) => int(v),
        Value::TinyUnsigned(v) => int(v.map(i64::from)),
        Value::SmallUnsigned(v) => int(v.map(i64::from)),
        Value::Unsigned(v) => int(v.map(i64::from)),
        Value::BigUnsigned(Some(v)) => Sql::Integer(i64::try_from(v).map_err(|_| {
            unsupported(format!(
                "the unsigned value {v} does not fit SQLite's 64-bit integer"
            ))
        })?),
        Value::BigUnsigned(None) => Sql::Null,
        Value::Float(v) => v.map_or(Sql::Null, |f| Sql::Real(f64::from(f))),
        Value::Double(v) => v.map_or(Sql::Null, Sql::Real),
        Value::String(v) => v.map_or(Sql::Null, Sql::Text),
        Value::Char(v) => v.map_or(Sql::Null, |c| Sql::Text(c.to_string())),
        Value::Bytes(v) => v.map_or(Sql::Null, Sql::Blob),
        // Database enum types (PostgreSQL), and the variants other crates' sea-query features add
        // (JSON, dates, decimals, ...): SQLite has no type for them here.
        #[allow(unreachable_patterns)]
        other => {
            return Err(unsupported(format!(
                "a value of this type cannot be bound: {other:?}"
            )))
        }
    })
}

fn unsupported(reason: String) -> Error {
    crate::values::check::invalid("statement", reason)
}
