//! Parsing the macro input: a string literal of SQL, then the arguments (`query!`), with the
//! target type first (`query_as!`); and the Rust field name of a result column, with the
//! nullability override its alias may end with (`AS "n!"`, `AS "n?"`, as in sqlx).

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, LitStr, Token, Type};

/// What a result column's alias says about NULL, overriding what the schema says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nullability {
    /// `AS "n!"`: never NULL, so not an `Option` (a NULL is an error when the row is decoded).
    NonNull,
    /// `AS "n?"`: may be NULL, so an `Option`.
    Nullable,
}

/// The Rust field of a result column named `name`, and the override its name ends with.
///
/// # Errors
/// The message for a name that is not a field name, or that ends with both `!` and `?`.
pub(super) fn result_field(name: &str) -> Result<(syn::Ident, Option<Nullability>), String> {
    let (base, nullability) = if let Some(base) = name.strip_suffix('!') {
        (base, Some(Nullability::NonNull))
    } else if let Some(base) = name.strip_suffix('?') {
        (base, Some(Nullability::Nullable))
    } else {
        (name, None)
    };
    if nullability.is_some() && base.ends_with(['!', '?']) {
        let field = base.trim_end_matches(['!', '?']);
        return Err(format!(
            "result column `{name}` ends with more than one nullability override; alias it \
             `\"{field}!\"` (never NULL) or `\"{field}?\"` (may be NULL)"
        ));
    }
    let field = field_ident(base).ok_or_else(|| {
        format!("result column `{name}` is not a Rust field name; name it with `AS name`")
    })?;
    Ok((field, nullability))
}

/// A Rust field name for a result column name, or `None` when it is not one.
fn field_ident(name: &str) -> Option<syn::Ident> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return None;
    }
    syn::parse_str::<syn::Ident>(name)
        .ok()
        .or_else(|| Some(syn::Ident::new_raw(name, Span::call_site())))
}

/// `query!`'s input: the SQL, then the arguments.
pub(super) struct QueryInput {
    pub(super) lit: LitStr,
    pub(super) args: Vec<Expr>,
}

impl Parse for QueryInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lit: LitStr = input.parse()?;
        let args = parse_args(input)?;
        Ok(QueryInput { lit, args })
    }
}

/// `query_as!`'s input: the target type, the SQL, then the arguments.
pub(super) struct QueryAsInput {
    pub(super) ty: Type,
    pub(super) lit: LitStr,
    pub(super) args: Vec<Expr>,
}

impl Parse for QueryAsInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let ty: Type = input.parse()?;
        input.parse::<Token![,]>()?;
        let lit: LitStr = input.parse()?;
        let args = parse_args(input)?;
        Ok(QueryAsInput { ty, lit, args })
    }
}

/// The arguments after the SQL literal: none, or a comma and a comma-separated list.
fn parse_args(input: ParseStream<'_>) -> syn::Result<Vec<Expr>> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    input.parse::<Token![,]>()?;
    let args: Punctuated<Expr, Token![,]> = Punctuated::parse_terminated(input)?;
    Ok(args.into_iter().collect())
}
