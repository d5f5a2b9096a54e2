//! Compile-time checked SQL for seed-agents-store. A thin shell: parsing, checking and expansion
//! live in `seed_agents_codegen::query`; this crate holds the schema and the entry points.
//!
//! Every statement is prepared against an in-memory database built from the store's schema.sql
//! (built once per compiler process), so no database, cache or network is involved. Use the
//! macros through the store's re-exports: `seed_agents_store::query!`, `query_as!` and
//! `derive(Row)`.

use proc_macro::TokenStream;
use seed_agents_codegen::query::Checker;
use seed_agents_codegen::Baseline;
use std::cell::RefCell;
use std::collections::HashMap;

/// schema.sql, from the crate that owns it: editing it recompiles that crate, this one and so
/// every checked query.
use seed_agents_schema::SCHEMA_SQL;

thread_local! {
    static CHECKER: Result<Checker, String> = store_checker().map_err(|e| e.to_string());
    /// The checkers of extensions, by (name, schema.sql, module path): one per extension a
    /// crate declares, built on its first statement.
    static EXTENDED: RefCell<HashMap<ExtensionKey, Result<Checker, String>>> = RefCell::default();
}

/// An extension's name, `schema.sql` and module path.
type ExtensionKey = (String, String, String);

fn store_checker() -> seed_agents_codegen::Result<Checker> {
    Baseline::from_sql("schema.sql", SCHEMA_SQL).and_then(|b| {
        Checker::new(
            b,
            "::seed_agents_store::__private",
            "::seed_agents_store::schema",
        )
    })
}

fn expand(
    input: TokenStream,
    f: fn(&Checker, proc_macro2::TokenStream) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    CHECKER
        .with(|checker| match checker {
            Ok(c) => f(c, input.into()).unwrap_or_else(syn::Error::into_compile_error),
            Err(e) => syn::Error::new(
                proc_macro2::Span::call_site(),
                format!("schema.sql cannot be loaded: {e}"),
            )
            .into_compile_error(),
        })
        .into()
}

/// The input of an extension's macros: `"name", "schema.sql", "module path"; rest`.
struct Extended {
    key: ExtensionKey,
    rest: proc_macro2::TokenStream,
}

impl syn::parse::Parse for Extended {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let name: syn::LitStr = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let sql: syn::LitStr = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let module: syn::LitStr = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        Ok(Extended {
            key: (name.value(), sql.value(), module.value()),
            rest: input.parse()?,
        })
    }
}

/// [`expand`] with the checker of the extension the input names.
fn expand_extended(
    input: TokenStream,
    f: fn(&Checker, proc_macro2::TokenStream) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    let Extended { key, rest } = match syn::parse::<Extended>(input) {
        Ok(parsed) => parsed,
        Err(e) => return e.into_compile_error().into(),
    };
    EXTENDED
        .with(|cache| {
            let mut cache = cache.borrow_mut();
            let checker = cache.entry(key).or_insert_with_key(|(name, sql, module)| {
                store_checker()
                    .and_then(|c| c.with_extension(name, sql, module))
                    .map_err(|e| format!("extension {name}'s schema.sql cannot be loaded: {e}"))
            });
            match checker {
                Ok(c) => f(c, rest).unwrap_or_else(syn::Error::into_compile_error),
                Err(e) => syn::Error::new(proc_macro2::Span::call_site(), e).into_compile_error(),
            }
        })
        .into()
}

/// An extension's `query!`, which its generated module wraps (`db::query!`): not called
/// directly. The input is `"name", "schema.sql", "module path"; ` then `query!`'s.
#[doc(hidden)]
#[proc_macro]
pub fn query_in(input: TokenStream) -> TokenStream {
    expand_extended(input, Checker::query)
}

/// An extension's `query_as!` (see [`query_in!`]).
#[doc(hidden)]
#[proc_macro]
pub fn query_as_in(input: TokenStream) -> TokenStream {
    expand_extended(input, Checker::query_as)
}

/// `query!("SQL", args...)`: a statement checked against schema.sql whose rows are a record typed
/// from the schema. Run it with `.fetch_all(conn)`, `.fetch_optional(conn)`, `.fetch_one(conn)` or
/// `.execute(conn)`. (The README's section on checked SQL runs these examples as doctests; a
/// proc-macro crate cannot.)
///
/// # Arguments
///
/// Each argument is checked against the column its parameter binds to: one it is compared with,
/// on either side and in parentheses or not (`=`, `<>`, `<`, `>=`, ..., `[NOT] BETWEEN .. AND ..`,
/// `[NOT] IN (..)`, `[NOT] LIKE`, `GLOB`, `IS [NOT]`, row values), assigned to (`SET col = ?`)
/// or inserted into (`INSERT INTO t (cols) VALUES (..)` or `SELECT ..`). A column name resolves in its own subquery
/// first, then outward. `CAST(? AS INTEGER)` (or `TEXT`, `REAL`, `BLOB`) checks the argument
/// against the cast's type (a generated enum casts as `TEXT`, a `bool` as `INTEGER`).
///
/// ```ignore
/// // `attempt` and `depth` are INTEGER: 1, 5 and 0 must be integers; `id` is TEXT.
/// query!("SELECT id FROM runs WHERE attempt BETWEEN ?1 AND ?2 AND ?3 <= depth", 1, 5, 0)
/// query!("SELECT r.id FROM runs r WHERE (r.id) = ?1 OR r.id IN (?2, ?3)", "a", "b", "c")
/// query!("SELECT id FROM runs WHERE title LIKE ?1", "fix%")
/// // A parameter tested for NULL may be `None`.
/// query!("SELECT id FROM runs WHERE ?1 IS NULL OR session_id = ?1", None::<&str>)
/// // A CTE's column has no type the macro knows: without the CAST this is refused.
/// query!(
///     "WITH t AS (SELECT id, attempt FROM runs) SELECT id FROM t WHERE t.attempt > CAST(?1 AS INTEGER)",
///     3
/// )
/// ```
///
/// A parameter compared with a column of a CTE or subquery is refused unless it is cast ("the type
/// of this argument cannot be checked: parameter `?1` is compared with `t.attempt`, a column of
/// `t`, ..."); one inside a larger expression (`lower(col) = ?`, `col + ? > 3`, `LIMIT ?`) is not
/// checked.
///
/// # Nullability overrides
///
/// A result column from a table column has its type (`Option` when it is nullable or under an
/// outer join); an expression is `Option` of its CAST's type, or `Option<Value>`. A quoted alias
/// ending in `!` makes the column never NULL (not an `Option`; a NULL read through it is the
/// store's `Error::Sqlite(InvalidColumnType)`), one ending in `?` makes it an `Option`. The field
/// is named without the suffix. `!` on an expression needs a CAST to give it a type.
///
/// ```ignore
/// let n: i64 = query!(r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM runs"#).fetch_one(conn)?.n;
/// let row = query!(
///     r#"SELECT r.id AS "id!", s.title AS "title?" FROM runs r
///        LEFT JOIN sessions s ON s.id = r.session_id WHERE r.id = ?1"#,
///     "run-1"
/// )
/// .fetch_one(conn)?;
/// let (id, title): (String, Option<String>) = (row.id, row.title);
/// ```
#[proc_macro]
pub fn query(input: TokenStream) -> TokenStream {
    expand(input, Checker::query)
}

/// `query_as!(Type, "SQL", args...)`: like `query!`, filling `Type` field by field. Each result
/// column fills the field of its name, an alias's `!` or `?` left out (`AS "n!"` fills `n`, and
/// `n` may then be non-`Option`).
///
/// ```ignore
/// struct Count {
///     n: i64,
/// }
/// let c = query_as!(Count, r#"SELECT CAST(count(*) AS INTEGER) AS "n!" FROM runs"#).fetch_one(conn)?;
/// ```
#[proc_macro]
pub fn query_as(input: TokenStream) -> TokenStream {
    expand(input, Checker::query_as)
}

/// `#[derive(Row)]` with `#[row(table = "...")]`: a partial projection of one table, with
/// `COLUMN_LIST` and `from_row`.
#[proc_macro_derive(Row, attributes(row))]
pub fn derive_row(input: TokenStream) -> TokenStream {
    expand(input, Checker::derive_row)
}
