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

/// schema.sql, from the crate that owns it: editing it recompiles that crate, this one and so
/// every checked query.
use seed_agents_schema::SCHEMA_SQL;

thread_local! {
    static CHECKER: Result<Checker, String> = Baseline::from_sql("schema.sql", SCHEMA_SQL)
        .and_then(|b| Checker::new(b, "::seed_agents_store::__private", "::seed_agents_store::schema"))
        .map_err(|e| e.to_string());
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

/// `query!("SQL", args...)`: a statement checked against schema.sql whose rows are a record typed
/// from the schema. Run it with `.fetch_all(conn)`, `.fetch_optional(conn)`, `.fetch_one(conn)` or
/// `.execute(conn)`.
#[proc_macro]
pub fn query(input: TokenStream) -> TokenStream {
    expand(input, Checker::query)
}

/// `query_as!(Type, "SQL", args...)`: like `query!`, filling `Type` field by field.
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
