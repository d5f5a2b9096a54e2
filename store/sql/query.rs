//! Runtime side of the compile-time checked SQL macros (`query!`, `query_as!`, `derive(Row)`).
//!
//! The macros check a statement against schema.sql while the crate compiles; what reaches run
//! time is a [`Query`]: the checked SQL, its bound arguments and the decoder of its rows. Values
//! are decoded by [`FromColumn`], the same decoding the generated row structs use, so a stored
//! value outside an enum's set or a bool other than 0/1 is the same typed error everywhere.

use crate::error::{Error, Result};
use crate::sql::arguments::{Arguments, Params};
use crate::sql::db::{Columns, Executor};
use rusqlite::types::{FromSql, ToSql, Value};

/// A statement checked at compile time, ready to run on a connection.
pub struct Query<'a, R> {
    sql: &'static str,
    postgres: &'static str,
    params: Params<'a>,
    decode: fn(&dyn Columns) -> Result<R>,
}

impl<R> std::fmt::Debug for Query<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("sql", &self.sql)
            .field("params", &self.params.len())
            .finish()
    }
}

impl<'a, R> Query<'a, R> {
    /// Used by the macros: the checked SQL, its PostgreSQL translation, the arguments in
    /// parameter order and the decoder.
    #[doc(hidden)]
    pub fn new(
        sql: &'static str,
        postgres: &'static str,
        params: &'a [&'a dyn ToSql],
        decode: fn(&dyn Columns) -> Result<R>,
    ) -> Self {
        Query {
            sql,
            postgres,
            params: Params::Slice(params),
            decode,
        }
    }

    /// Used by the macros: [`Query::new`] with the arguments as a tuple of references, which
    /// SQLite binds by each one's own type.
    #[doc(hidden)]
    pub fn typed(
        sql: &'static str,
        postgres: &'static str,
        args: &'a dyn Arguments,
        decode: fn(&dyn Columns) -> Result<R>,
    ) -> Self {
        Query {
            sql,
            postgres,
            params: Params::Typed(args),
            decode,
        }
    }

    /// The SQL as checked (SQLite's dialect).
    pub fn sql(&self) -> &'static str {
        self.sql
    }

    /// The same statement in PostgreSQL's dialect, as the macro translated and parsed it.
    pub fn postgres_sql(&self) -> &'static str {
        self.postgres
    }

    /// The statement as `conn`'s backend runs it.
    fn text(&self, conn: &impl Executor) -> &'static str {
        if conn.db().is_postgres() {
            self.postgres
        } else {
            self.sql
        }
    }

    /// Every row.
    ///
    /// # Errors
    /// [`Error::Sqlite`] when SQLite fails, or a decoding error of a value (see [`FromColumn`]).
    pub fn fetch_all(self, conn: &impl Executor) -> Result<Vec<R>> {
        let decode = self.decode;
        let mut out = Vec::new();
        conn.db()
            .each_row(self.text(conn), self.params, &mut |row| {
                out.push(decode(row)?);
                Ok(true)
            })?;
        Ok(out)
    }

    /// Hands every row to `f` in order, without collecting them: a walk over a large table in
    /// constant memory.
    ///
    /// # Errors
    /// As [`Query::fetch_all`], or the first error `f` returns (which stops the walk).
    pub fn for_each(self, conn: &impl Executor, mut f: impl FnMut(R) -> Result<()>) -> Result<()> {
        let decode = self.decode;
        conn.db()
            .each_row(self.text(conn), self.params, &mut |row| {
                f(decode(row)?)?;
                Ok(true)
            })
    }

    /// The first row, if any.
    ///
    /// # Errors
    /// As [`Query::fetch_all`].
    pub fn fetch_optional(self, conn: &impl Executor) -> Result<Option<R>> {
        let decode = self.decode;
        let mut out = None;
        conn.db()
            .each_row(self.text(conn), self.params, &mut |row| {
                out = Some(decode(row)?);
                Ok(false)
            })?;
        Ok(out)
    }

    /// The first row.
    ///
    /// # Errors
    /// [`Error::NoRows`] when the statement returns none; otherwise as [`Query::fetch_all`].
    pub fn fetch_one(self, conn: &impl Executor) -> Result<R> {
        let sql = self.sql;
        self.fetch_optional(conn)?.ok_or(Error::NoRows { sql })
    }

    /// Runs the statement and returns the number of rows it changed.
    ///
    /// # Errors
    /// [`Error::Sqlite`] when SQLite fails (including when the statement returns rows).
    pub fn execute(self, conn: &impl Executor) -> Result<usize> {
        conn.db().execute(self.text(conn), self.params)
    }

    /// [`Query::execute`] without waiting for the reply where the backend allows it (see
    /// [`crate::sql::db::Db::execute_later`]): for the statements of a write whose counts nothing reads.
    pub(crate) fn execute_later(self, conn: &impl Executor) -> Result<()> {
        conn.db().execute_later(self.text(conn), self.params)
    }
}

/// Reads column `idx` of `row` as `T`, failing as the row's backend says it
/// ([`Columns::decode_error`]).
fn get<T: FromSql>(row: &dyn Columns, idx: usize, column: &str) -> Result<T> {
    let value = row.value(idx)?;
    T::column_result(value).map_err(|e| row.decode_error(idx, column, e, value.data_type()))
}

/// Decodes one column of a result row into a field type, naming the table and column in errors.
pub trait FromColumn: Sized {
    /// Reads column `idx` of `row`; `table` and `column` name where the value came from (empty
    /// for an expression).
    ///
    /// # Errors
    /// [`Error::Sqlite`] for a NULL into a non-`Option` or a value of the wrong storage class,
    /// [`Error::UnknownEnumValue`] and [`Error::InvalidBool`] for values outside their set.
    fn from_column(
        row: &dyn Columns,
        idx: usize,
        table: &'static str,
        column: &'static str,
    ) -> Result<Self>;
}

macro_rules! from_sql_column {
    ($($t:ty),*) => {$(
        impl FromColumn for $t {
            fn from_column(row: &dyn Columns, idx: usize, _: &'static str, column: &'static str) -> Result<Self> {
                get(row, idx, column)
            }
        }
    )*};
}
from_sql_column!(i64, f64, String, Vec<u8>, Value);

impl<T: 'static> FromColumn for crate::values::cbor::Cbor<T> {
    fn from_column(
        row: &dyn Columns,
        idx: usize,
        _: &'static str,
        column: &'static str,
    ) -> Result<Self> {
        get(row, idx, column)
    }
}

impl FromColumn for bool {
    fn from_column(
        row: &dyn Columns,
        idx: usize,
        table: &'static str,
        column: &'static str,
    ) -> Result<Self> {
        match get::<i64>(row, idx, column)? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(Error::InvalidBool {
                table,
                column,
                value,
            }),
        }
    }
}

impl<T: FromColumn> FromColumn for Option<T> {
    fn from_column(
        row: &dyn Columns,
        idx: usize,
        table: &'static str,
        column: &'static str,
    ) -> Result<Self> {
        match row.value(idx)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            _ => T::from_column(row, idx, table, column).map(Some),
        }
    }
}

/// Decodes an `@enum` column with the enum's `parse` (used by generated enums).
///
/// # Errors
/// [`Error::UnknownEnumValue`] for a text outside the set; [`Error::Sqlite`] for a non-text.
#[doc(hidden)]
pub fn enum_from_column<E>(
    row: &dyn Columns,
    idx: usize,
    table: &'static str,
    column: &'static str,
    parse: fn(&str) -> Option<E>,
) -> Result<E> {
    let value: String = get(row, idx, column)?;
    parse(&value).ok_or(Error::UnknownEnumValue {
        table,
        column,
        value,
    })
}

/// "An argument of this type can be bound to a column typed `C`": what `query!` checks each
/// argument against, where the column it binds to is known.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be bound to a column of type `{C}`",
    label = "this argument binds to a column of type `{C}`"
)]
pub trait BindsTo<C: ?Sized> {}

impl<C: ?Sized, U: BindsTo<C> + ?Sized> BindsTo<C> for &U {}

impl<C, U: BindsTo<C>> BindsTo<Option<C>> for Option<U> {}

macro_rules! binds {
    ($column:ty: $($arg:ty),*) => {
        $(
            impl BindsTo<$column> for $arg {}
            impl BindsTo<Option<$column>> for $arg {}
            impl CastsTo<$column> for $arg {}
        )*
    };
}
binds!(String: String, str);
binds!(i64: i64, i32, i16, i8, u32, u16, u8);
binds!(f64: f64, f32);
binds!(bool: bool);
// A bool is bound as 0 or 1, so `CAST(? AS INTEGER)` takes it too.
impl CastsTo<i64> for bool {}
binds!(Vec<u8>: Vec<u8>, [u8]);
impl<T> BindsTo<crate::values::cbor::Cbor<T>> for crate::values::cbor::Cbor<T> {}
impl<T> BindsTo<Option<crate::values::cbor::Cbor<T>>> for crate::values::cbor::Cbor<T> {}

/// Compile-time check that `arg` can be bound to a column of type `C`.
#[doc(hidden)]
pub fn bind_check<C: ?Sized, U: BindsTo<C> + ?Sized>(_arg: &U) {}

/// "An argument of this type can be bound where the statement casts its parameter to `C`"
/// (`CAST(? AS INTEGER)` is `i64`): the arguments a column of type `C` takes, or `None`, since
/// a cast of NULL is NULL.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be bound where the statement casts its parameter to `{C}`",
    label = "the statement casts this argument's parameter to `{C}`"
)]
pub trait CastsTo<C: ?Sized> {}

impl<C: ?Sized, U: CastsTo<C> + ?Sized> CastsTo<C> for &U {}

impl<C, U: CastsTo<C>> CastsTo<C> for Option<U> {}

/// Compile-time check that `arg` can be bound where the statement casts it to `C`.
#[doc(hidden)]
pub fn cast_check<C: ?Sized, U: CastsTo<C> + ?Sized>(_arg: &U) {}

/// "A field of this type can hold a column typed `C`": the same type, or `Option` of it.
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot hold a column of type `{C}`",
    label = "this field must be `{C}` (or an `Option` of a non-null column's type)"
)]
pub trait Holds<C> {}

impl<T> Holds<T> for T {}
impl<T> Holds<T> for Option<T> {}

/// Compile-time check that a field of type `F` can hold a column of type `C`.
#[doc(hidden)]
pub fn field_check<C, F: Holds<C>>() {}

/// [`Holds`] for a field reached through an accessor, with a marker type `N` named after the
/// field so the message can say which field (`query_as!` cannot see the user type's fields).
#[diagnostic::on_unimplemented(
    message = "field `{N}` of type `{Self}` cannot hold its column, which is `{C}`",
    label = "field `{N}` must be `{C}` (or an `Option` of a non-null column's type)"
)]
pub trait HoldsField<C, N> {}

impl<T, N> HoldsField<T, N> for T {}
impl<T, N> HoldsField<T, N> for Option<T> {}

/// The field check of `query_as!`, through an accessor of the field.
#[doc(hidden)]
pub fn field_check_by<C, S, F: HoldsField<C, N>, N>(_field: fn(&S) -> &F, _name: N) {}

/// Decodes a whole result row into a tuple of field types, one column per element: the macros'
/// records share these few instantiations instead of each decoding field by field.
pub trait FromColumns: Sized {
    /// Reads columns `0..N` of `row`; `origins[i]` names where column `i` came from.
    ///
    /// # Errors
    /// As [`FromColumn::from_column`] for the first column that fails.
    fn from_columns(row: &dyn Columns, origins: &[(&'static str, &'static str)]) -> Result<Self>;
}

macro_rules! from_columns_tuple {
    ($($t:ident $i:tt),+) => {
        impl<$($t: FromColumn),+> FromColumns for ($($t,)+) {
            fn from_columns(row: &dyn Columns, origins: &[(&'static str, &'static str)]) -> Result<Self> {
                Ok(($($t::from_column(row, $i, origins[$i].0, origins[$i].1)?,)+))
            }
        }
    };
}
from_columns_tuple!(A 0);
from_columns_tuple!(A 0, B 1);
from_columns_tuple!(A 0, B 1, C 2);
from_columns_tuple!(A 0, B 1, C 2, D 3);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
from_columns_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
