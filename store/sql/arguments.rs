//! The arguments of a checked statement, as the macros hand them over.
//!
//! A statement's arguments arrive either as a slice of `&dyn ToSql` (the generated helpers, a
//! statement with no arguments or very many) or as a tuple of references ([`Arguments`]), which
//! SQLite binds by each value's own type: on a hot write the binding is most of what a checked
//! statement costs beyond hand-written rusqlite, and a tuple binds as rusqlite's own tuples do.
//! PostgreSQL takes them as a slice either way.
//!
//! Invariant: each argument is evaluated once, by the caller, before it is bound; both ways
//! bind the same values in the same order.

use rusqlite::types::ToSql;

/// A tuple of references to a statement's arguments, in parameter order (the macros build it).
#[doc(hidden)]
pub trait Arguments {
    /// Binds every argument to `stmt`, parameter 1 first.
    ///
    /// # Errors
    /// As `rusqlite::Statement::raw_bind_parameter`.
    fn bind(&self, stmt: &mut rusqlite::Statement<'_>) -> rusqlite::Result<()>;

    /// The same arguments as trait objects, for a backend that takes them so.
    fn values(&self) -> Vec<&dyn ToSql>;
}

/// The arguments of one statement.
#[derive(Clone, Copy)]
pub(crate) enum Params<'a> {
    Slice(&'a [&'a dyn ToSql]),
    Typed(&'a dyn Arguments),
}

impl Params<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Params::Slice(params) => params.len(),
            Params::Typed(args) => args.values().len(),
        }
    }
}

macro_rules! tuple_arguments {
    ($(($($t:ident $i:tt),+))+) => {$(
        impl<$($t: ToSql + ?Sized),+> Arguments for ($(&$t,)+) {
            fn bind(&self, stmt: &mut rusqlite::Statement<'_>) -> rusqlite::Result<()> {
                $(stmt.raw_bind_parameter($i + 1, self.$i)?;)+
                Ok(())
            }

            fn values(&self) -> Vec<&dyn ToSql> {
                vec![$(&self.$i as &dyn ToSql),+]
            }
        }
    )+};
}

tuple_arguments! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value;

    fn first_row(mut rows: rusqlite::Rows<'_>) -> Vec<Value> {
        let n = rows.as_ref().map_or(0, |stmt| stmt.column_count());
        let row = rows.next().unwrap().unwrap();
        (0..n).map(|i| row.get(i).unwrap()).collect()
    }

    /// A tuple binds the values a slice of the same arguments binds, in the same places, and
    /// hands PostgreSQL that slice.
    #[test]
    fn a_tuple_binds_what_the_same_slice_binds() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let sql = "SELECT ?1, ?2, ?3, ?4, ?5, typeof(?3)";
        let (n, none, blob, real) = (7_i64, None::<String>, vec![1_u8, 2], 1.5_f64);
        let args = (&n, "sess-é", &none, &blob, &real);
        let mut typed = conn.prepare(sql).unwrap();
        args.bind(&mut typed).unwrap();
        let got = first_row(typed.raw_query());
        let mut sliced = conn.prepare(sql).unwrap();
        let expected = first_row(sliced.query(&args.values()[..]).unwrap());
        assert_eq!(got, expected);
        assert_eq!(
            got,
            vec![
                Value::Integer(7),
                Value::Text("sess-é".into()),
                Value::Null,
                Value::Blob(vec![1, 2]),
                Value::Real(1.5),
                Value::Text("null".into()),
            ]
        );
        assert_eq!(Params::Typed(&args).len(), 5);
    }
}
