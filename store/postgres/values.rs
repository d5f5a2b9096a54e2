//! How a statement's SQLite values are bound on PostgreSQL, and how its rows come back as
//! SQLite values.
//!
//! Invariants: a parameter is typed by the value bound (an integer is `bigint`, a text `text`,
//! a blob `bytea`, a real `double precision`; a NULL takes the type its place in the statement
//! gives it), so a statement means on PostgreSQL what it means on SQLite; a result column comes
//! back as the SQLite value of the same meaning (a `boolean` as 0 or 1, a `numeric` sum as an
//! integer when whole).

use crate::error::{Error, Result};
use crate::sql::db::Columns;
use rusqlite::types::{FromSqlError, ToSqlOutput, Value, ValueRef};
use tokio_postgres::types::{FromSql, IsNull, Kind, ToSql, Type};

/// A bound value: the SQLite value, bound as the PostgreSQL type of the same meaning.
pub(super) enum Param<'a> {
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
    /// The value, owning its text or bytes (for a statement sent later).
    pub(super) fn owned(self) -> Param<'static> {
        match self {
            Param::Null => Param::Null,
            Param::Integer(i) => Param::Integer(i),
            Param::Real(r) => Param::Real(r),
            Param::Text(t) => Param::Text(t.into_owned().into()),
            Param::Blob(b) => Param::Blob(b.into_owned().into()),
        }
    }

    pub(super) fn declared(&self) -> Type {
        match self {
            Param::Null => unspecified(),
            Param::Integer(_) => Type::INT8,
            Param::Real(_) => Type::FLOAT8,
            Param::Text(_) => Type::TEXT,
            Param::Blob(_) => Type::BYTEA,
        }
    }
}

pub(super) fn values<'a>(params: &'a [&'a dyn rusqlite::ToSql]) -> Result<Vec<Param<'a>>> {
    params
        .iter()
        .map(|p| {
            let out = p.to_sql()?;
            let value = match &out {
                ToSqlOutput::Borrowed(v) => *v,
                ToSqlOutput::Owned(v) => ValueRef::from(v),
                _ => {
                    return Err(crate::values::check::invalid(
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
                            crate::values::check::invalid(
                                "params",
                                "text that is not UTF-8".to_string(),
                            )
                        })?
                        .into(),
                ),
                ValueRef::Blob(b) => Param::Blob(b.to_vec().into()),
            })
        })
        .collect()
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

    tokio_postgres::types::to_sql_checked!();
}

/// A result row as SQLite values, with its statement's column names.
pub(super) struct Row<'a> {
    values: Vec<Value>,
    names: &'a [String],
}

impl<'a> Row<'a> {
    pub(super) fn read(
        row: &tokio_postgres::Row,
        names: &'a [String],
    ) -> std::result::Result<Row<'a>, tokio_postgres::Error> {
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
            .ok_or_else(|| Error::Decode {
                backend: "PostgreSQL",
                index: idx,
                column: String::new(),
                detail: format!("the row has {} columns", self.values.len()),
            })
    }

    fn name(&self, idx: usize) -> Option<&str> {
        self.names.get(idx).map(String::as_str)
    }

    fn decode_error(
        &self,
        idx: usize,
        column: &str,
        error: FromSqlError,
        found: rusqlite::types::Type,
    ) -> Error {
        let detail = match error {
            FromSqlError::InvalidType => format!("a {found} value is not of the type asked for"),
            FromSqlError::OutOfRange(i) => format!("{i} is out of range for the type asked for"),
            other => other.to_string(),
        };
        Error::Decode {
            backend: "PostgreSQL",
            index: idx,
            column: self.name(idx).unwrap_or(column).to_string(),
            detail,
        }
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
